; Zig's tags, tern's own: tree-sitter-zig ships no tags query, and aider's
; (tree-sitter-languages/zig-tags.scm) names the nodes of another grammar.

(function_declaration name: (identifier) @name.definition.function) @definition.function
(variable_declaration (identifier) @name.definition.constant) @definition.constant
(container_field name: (identifier) @name.definition.field) @definition.field
(test_declaration (identifier) @name.definition.test) @definition.test

(call_expression function: (identifier) @name.reference.call) @reference.call
(call_expression function: (field_expression member: (identifier) @name.reference.call)) @reference.call
(field_expression member: (identifier) @name.reference.field) @reference.field
