; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a definition is its name and shape, never a string or a number it holds.
; A block's labels (`resource "aws_vpc" "main"`) are its names, not values: they stay.
(literal_value (string_lit) @literal)
(numeric_lit) @literal
(template_expr) @literal
; A string that never closes (a file mid-edit): its opening quote in the error the
; parser recovered with; the line is elided from it to its end.
(ERROR (quoted_template_start) @literal.unclosed)
