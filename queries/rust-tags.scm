; Rust tags for tern's repo map. The grammar crate's query misses constants, statics,
; trait method signatures and nearly every reference (types, paths, `use`), so tern
; ships its own.

(struct_item name: (type_identifier) @name.definition.class)
(enum_item name: (type_identifier) @name.definition.class)
(union_item name: (type_identifier) @name.definition.class)
(type_item name: (type_identifier) @name.definition.type)
(trait_item name: (type_identifier) @name.definition.interface)
(function_item name: (identifier) @name.definition.function)
(function_signature_item name: (identifier) @name.definition.function)
(mod_item name: (identifier) @name.definition.module)
(macro_definition name: (identifier) @name.definition.macro)
(const_item name: (identifier) @name.definition.constant)
(static_item name: (identifier) @name.definition.constant)

(call_expression function: (identifier) @name.reference.call)
(call_expression function: (field_expression field: (field_identifier) @name.reference.call))
(call_expression function: (scoped_identifier name: (identifier) @name.reference.call))
(call_expression function: (generic_function function: (identifier) @name.reference.call))
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @name.reference.call)))
(call_expression function: (generic_function function: (field_expression field: (field_identifier) @name.reference.call)))
(scoped_identifier path: (identifier) @name.reference.module)
(scoped_identifier name: (identifier) @name.reference.path)
(scoped_type_identifier path: (identifier) @name.reference.module)
(macro_invocation macro: (identifier) @name.reference.macro)
(macro_invocation macro: (scoped_identifier name: (identifier) @name.reference.macro))
(use_list (identifier) @name.reference.use)
(type_identifier) @name.reference.type
