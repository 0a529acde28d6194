; C tags for tern's repo map: the grammar crate's definitions plus macros and enum
; constants. No reference patterns: every identifier counts as a reference.

(struct_specifier name: (type_identifier) @name.definition.class body: (_))
(union_specifier name: (type_identifier) @name.definition.class body: (_))
(function_declarator declarator: (identifier) @name.definition.function)
(type_definition declarator: (type_identifier) @name.definition.type)
(enum_specifier name: (type_identifier) @name.definition.type)
(enumerator name: (identifier) @name.definition.constant)
(preproc_def name: (identifier) @name.definition.macro)
(preproc_function_def name: (identifier) @name.definition.macro)
