; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a definition is its name and shape, never a string or a number it holds.
(string_literal) @literal
(concatenated_string) @literal
(char_literal) @literal
(number_literal) @literal
; A macro's value is raw text: `#define STRIPE_KEY "sk_live_…"`.
(preproc_def value: (preproc_arg) @literal)
; A string that never closes (a file mid-edit): its opening quote in the error the
; parser recovered with; the line is elided from it to its end.
(ERROR "\"" @literal.unclosed)
