; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a key is its name and the shape of its value, never a scalar it holds (quoted,
; plain or a `|`/`>` block). Keys are names: only values are matched.
(block_mapping_pair
  value: (flow_node [(plain_scalar) (double_quote_scalar) (single_quote_scalar)] @literal))
(block_mapping_pair value: (block_node (block_scalar) @literal))
(block_sequence_item (flow_node [(plain_scalar) (double_quote_scalar) (single_quote_scalar)] @literal))
(block_sequence_item (block_node (block_scalar) @literal))
(flow_sequence (flow_node [(plain_scalar) (double_quote_scalar) (single_quote_scalar)] @literal))
(flow_pair value: (flow_node [(plain_scalar) (double_quote_scalar) (single_quote_scalar)] @literal))
; A quoted scalar that never closes (a file mid-edit) is an error with no tokens in it:
; the line is elided from where the error starts to its end.
(ERROR) @literal.unclosed
