; TOML's keys, tern's own (the crate ships no tags query): a table's header (`[a.b]`,
; `[[bin]]`) and the key of each pair at the top or in a table are definitions; the
; keys of an inline table (`{ version = "1" }`) are its shape, not names of their own.
; Nothing is a reference.

(table [(bare_key) (quoted_key) (dotted_key)] @name.definition.module) @definition.module
(table_array_element [(bare_key) (quoted_key) (dotted_key)] @name.definition.module) @definition.module
(document (pair [(bare_key) (quoted_key) (dotted_key)] @name.definition.constant) @definition.constant)
(table (pair [(bare_key) (quoted_key) (dotted_key)] @name.definition.constant) @definition.constant)
(table_array_element (pair [(bare_key) (quoted_key) (dotted_key)] @name.definition.constant) @definition.constant)
