; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a definition is its name and shape, never a string or a number it holds.
(line_string_literal) @literal
(multi_line_string_literal) @literal
(raw_string_literal) @literal
(integer_literal) @literal
(real_literal) @literal
(hex_literal) @literal
(oct_literal) @literal
(bin_literal) @literal
; A string that never closes (a file mid-edit): its opening quote in the error the
; parser recovered with; the line is elided from it to its end.
(ERROR "\"" @literal.unclosed)
