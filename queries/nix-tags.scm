; Nix's tags, tern's own after the crate's (tree-sitter-nix queries/tags.scm, MIT): a
; binding (in an attribute set, a `rec` set or a `let`) defines its first attribute,
; a function when it binds one. Nested sets' bindings are definitions too, so a
; module's options and a flake's outputs show. No reference patterns: every identifier
; counts as a reference.

(binding
  attrpath: (attrpath . attr: (identifier) @name.definition.function)
  expression: (function_expression)) @definition.function
(binding
  attrpath: (attrpath . attr: (identifier) @name.definition.constant)) @definition.constant
