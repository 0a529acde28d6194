; Julia's tags, tern's own after aider's (tree-sitter-languages/julia-tags.scm at
; Aider-AI/aider@5dc9490bb35f, Apache-2.0; from tree-sitter-julia, MIT), whose node
; names are those of an older tree-sitter-julia; the crate ships no tags query.

(module_definition name: (identifier) @name.definition.module) @definition.module
(struct_definition (type_head (identifier) @name.definition.class)) @definition.class
(struct_definition (type_head (parametrized_type_expression (identifier) @name.definition.class))) @definition.class
(struct_definition (type_head (binary_expression . (identifier) @name.definition.class))) @definition.class
(abstract_definition (type_head (identifier) @name.definition.class)) @definition.class
(function_definition (signature (call_expression . (identifier) @name.definition.function))) @definition.function
(function_definition (signature (typed_expression (call_expression . (identifier) @name.definition.function)))) @definition.function
(function_definition (signature (where_expression (call_expression . (identifier) @name.definition.function)))) @definition.function
(assignment . (call_expression . (identifier) @name.definition.function)) @definition.function
(macro_definition (signature (call_expression . (identifier) @name.definition.macro))) @definition.macro
(const_statement (assignment . (identifier) @name.definition.constant)) @definition.constant

(call_expression . (identifier) @name.reference.call) @reference.call
(call_expression . (field_expression (identifier) @name.reference.call .)) @reference.call
(macrocall_expression (macro_identifier (identifier) @name.reference.call)) @reference.call
(type_head (binary_expression (identifier) @name.reference.type .)) @reference.type
