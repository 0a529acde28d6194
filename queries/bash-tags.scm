; Bash's tags: aider's query (aider/queries/tree-sitter-language-pack/bash-tags.scm at
; Aider-AI/aider@5dc9490bb35f, Apache-2.0); tree-sitter-bash ships none.
(function_definition
  name: (word) @name.definition.function) @definition.function

(variable_assignment
  name: (variable_name) @name.definition.variable) @definition.variable

(command
  name: (command_name) @name.reference.call) @reference.call
