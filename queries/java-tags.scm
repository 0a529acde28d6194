; Java tags for tern's repo map: the grammar crate's query plus enums, records,
; annotation types, constants, and every type name as a reference.

(class_declaration name: (identifier) @name.definition.class)
(interface_declaration name: (identifier) @name.definition.interface)
(enum_declaration name: (identifier) @name.definition.enum)
(record_declaration name: (identifier) @name.definition.class)
(annotation_type_declaration name: (identifier) @name.definition.interface)
(method_declaration name: (identifier) @name.definition.method)
(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator name: (identifier) @name.definition.constant))

(method_invocation name: (identifier) @name.reference.call)
(method_invocation object: (identifier) @name.reference.class)
(object_creation_expression type: (type_identifier) @name.reference.class)
(type_identifier) @name.reference.type
(method_reference (identifier) @name.reference.call)
