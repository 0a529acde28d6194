; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a definition is its name and shape, never a string or a number it holds.
(string) @literal
(interpolated_string_expression) @literal
(character_literal) @literal
(integer_literal) @literal
(floating_point_literal) @literal
; A string that never closes (a file mid-edit): its opening quote in the error the
; parser recovered with; the line is elided from it to its end.
(ERROR "\"" @literal.unclosed)
; or the quote alone as the error token.
((ERROR) @literal.unclosed (#eq? @literal.unclosed "\""))
