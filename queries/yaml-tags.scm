; YAML's keys, tern's own (the crate ships no tags query): the key of every pair of a
; block mapping, at the top or nested (a workflow's jobs and their steps' names, a
; chart's values), is a definition. Nothing is a reference.

(block_mapping_pair
  key: (flow_node [(plain_scalar) (double_quote_scalar) (single_quote_scalar)] @name.definition.constant)) @definition.constant
