; Literals the repo map elides (keeping at most a few characters): what a line shows
; of a key is its name and the shape of its value (an array, an inline table), never a
; string, a number or a date it holds. Quoted keys are names: they stay.
(string) @literal
(integer) @literal
(float) @literal
(offset_date_time) @literal
(local_date_time) @literal
(local_date) @literal
(local_time) @literal
; A string that never closes (a file mid-edit): its opening quote in the error the
; parser recovered with; the line is elided from it to its end.
(ERROR ["\"" "'" "\"\"\"" "'''"] @literal.unclosed)
