; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a definition is its name and shape, never a string or a number it holds.
(string) @literal
(raw_string) @literal
(ansi_c_string) @literal
(translated_string) @literal
(heredoc_body) @literal
(number) @literal
; An unquoted value is a string too: `API_KEY=sk_live_…`.
(variable_assignment value: (word) @literal)
; A string that never closes (a file mid-edit): its opening quote in the error the
; parser recovered with; the line is elided from it to its end.
(ERROR "\"" @literal.unclosed)
