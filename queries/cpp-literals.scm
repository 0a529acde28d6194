; C++'s literals beyond C's (queries/c-literals.scm, which comes first): raw strings
; (`R"sql(…)sql"`) and user-defined literals (`12_km`).
(raw_string_literal) @literal
(user_defined_literal) @literal
