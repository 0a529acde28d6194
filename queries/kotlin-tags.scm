; Kotlin's tags, tern's own after aider's (tree-sitter-languages/kotlin-tags.scm at
; Aider-AI/aider@5dc9490bb35f, Apache-2.0), whose node names are those of
; fwcd/tree-sitter-kotlin; tree-sitter-kotlin-ng ships no tags query.

(class_declaration name: (identifier) @name.definition.class) @definition.class
(object_declaration name: (identifier) @name.definition.object) @definition.object
(companion_object name: (identifier) @name.definition.object) @definition.object
(function_declaration name: (identifier) @name.definition.function) @definition.function
(property_declaration (variable_declaration (identifier) @name.definition.property)) @definition.property
(type_alias type: (identifier) @name.definition.type) @definition.type

(call_expression (identifier) @name.reference.call) @reference.call
(call_expression (navigation_expression (identifier) @name.reference.call .)) @reference.call
(user_type (identifier) @name.reference.type) @reference.type
