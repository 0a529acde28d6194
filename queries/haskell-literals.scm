; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a definition is its name and shape, never a string or a number it holds.
(string) @literal
(char) @literal
(integer) @literal
(float) @literal
; A string that never closes (a file mid-edit) is an error token from its quote on; the
; line is elided from the quote to its end.
((ERROR) @literal.unclosed (#match? @literal.unclosed "^\""))
