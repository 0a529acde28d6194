; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a binding is its name and shape, never a string, a URI or a number it holds.
(string_expression) @literal
(indented_string_expression) @literal
(uri_expression) @literal
(integer_expression) @literal
(float_expression) @literal
; A string that never closes (a file mid-edit): the parser ends it at once with a
; missing quote and reads what follows as code; the line is elided from its opening.
((string_expression (MISSING)) @literal.unclosed)
