; TypeScript and TSX tags for tern's repo map. The grammar crate's query only knows
; signatures and abstract classes; this one covers the JavaScript forms plus TypeScript's
; interfaces, type aliases, enums and namespaces, and type references.

(function_declaration name: (identifier) @name.definition.function)
(generator_function_declaration name: (identifier) @name.definition.function)
(function_signature name: (identifier) @name.definition.function)
(class_declaration name: (type_identifier) @name.definition.class)
(abstract_class_declaration name: (type_identifier) @name.definition.class)
(method_definition name: (property_identifier) @name.definition.method (#not-eq? @name.definition.method "constructor"))
(method_signature name: (property_identifier) @name.definition.method)
(abstract_method_signature name: (property_identifier) @name.definition.method)
(interface_declaration name: (type_identifier) @name.definition.interface)
(type_alias_declaration name: (type_identifier) @name.definition.type)
(enum_declaration name: (identifier) @name.definition.enum)
(module name: (identifier) @name.definition.module)
(internal_module name: (identifier) @name.definition.module)
(lexical_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression)]))
(variable_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression)]))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name.definition.constant))))

(call_expression function: (identifier) @name.reference.call)
(call_expression function: (member_expression property: (property_identifier) @name.reference.call))
(new_expression constructor: (identifier) @name.reference.class)
(type_identifier) @name.reference.type
(nested_type_identifier module: (identifier) @name.reference.module)
(import_specifier name: (identifier) @name.reference.import)
