; Haskell's tags, tern's own: tree-sitter-haskell ships no tags query, and aider's
; (tree-sitter-languages/haskell-tags.scm) names the nodes of an older grammar.

(function name: (variable) @name.definition.function) @definition.function
(bind name: (variable) @name.definition.function) @definition.function
(signature name: (variable) @name.definition.function) @definition.function
(data_type name: (name) @name.definition.type) @definition.type
(newtype name: (name) @name.definition.type) @definition.type
(type_synonym name: (name) @name.definition.type) @definition.type
(type_family name: (name) @name.definition.type) @definition.type
(class name: (name) @name.definition.class) @definition.class
(data_constructor constructor: (prefix (constructor) @name.definition.constructor)) @definition.constructor
(data_constructor constructor: (record (constructor) @name.definition.constructor)) @definition.constructor

(variable) @name.reference.call @reference.call
(constructor) @name.reference.class @reference.class
(name) @name.reference.type @reference.type
