; C# tags for tern's repo map: the grammar crate's query plus structs, enums, records,
; delegates, properties and more references (direct calls, static access, parameter,
; property and generic types).

(class_declaration name: (identifier) @name.definition.class)
(struct_declaration name: (identifier) @name.definition.class)
(record_declaration name: (identifier) @name.definition.class)
(interface_declaration name: (identifier) @name.definition.interface)
(enum_declaration name: (identifier) @name.definition.enum)
(delegate_declaration name: (identifier) @name.definition.type)
(method_declaration name: (identifier) @name.definition.method)
(property_declaration name: (identifier) @name.definition.property)
(namespace_declaration name: (identifier) @name.definition.module)
(file_scoped_namespace_declaration name: (identifier) @name.definition.module)

(base_list (identifier) @name.reference.class)
(base_list (generic_name (identifier) @name.reference.class))
(object_creation_expression type: (identifier) @name.reference.class)
(object_creation_expression type: (generic_name (identifier) @name.reference.class))
(variable_declaration type: (identifier) @name.reference.class)
(parameter type: (identifier) @name.reference.type)
(property_declaration type: (identifier) @name.reference.type)
(method_declaration returns: (identifier) @name.reference.type)
(type_argument_list (identifier) @name.reference.type)
(invocation_expression function: (identifier) @name.reference.call)
(invocation_expression function: (member_access_expression name: (identifier) @name.reference.call))
(member_access_expression expression: (identifier) @name.reference.class)
