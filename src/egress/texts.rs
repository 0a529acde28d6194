//! Every text of a value, rewritten for where it goes. A value that leaves tern
//! (an engine event, and everything an event carries) derives `DriveMut`, which
//! drives a visitor through each of its fields: a field whose type does not drive
//! does not compile until it derives too or is skipped on purpose (`#[drive(skip)]`,
//! with the reason beside it), so no new text goes out unvisited. One gap: a map's
//! keys are not driven (`DriveMut` cannot change a key), so an event carries no map
//! keyed by text.

use derive_visitor::{DriveMut, VisitorMut};

/// `value` with every text redacted: what the engine sends.
pub fn redacted<T: DriveMut>(mut value: T) -> T {
    value.drive_mut(&mut Redact);
    value
}

/// `value` as a terminal may show it: every text redacted, then its control
/// characters made visible ([`super::terminal`]).
pub fn visible<T: DriveMut>(mut value: T) -> T {
    value.drive_mut(&mut Visible);
    value
}

#[derive(VisitorMut)]
#[visitor(String(enter))]
struct Redact;

impl Redact {
    fn enter_string(&mut self, text: &mut String) {
        super::redact_in_place(text);
    }
}

#[derive(VisitorMut)]
#[visitor(String(enter))]
struct Visible;

impl Visible {
    fn enter_string(&mut self, text: &mut String) {
        if let std::borrow::Cow::Owned(shown) = super::terminal(text) {
            *text = shown;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::tests::{KEY, register_test_key};
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq, DriveMut)]
    struct Outer {
        text: String,
        nested: Vec<Option<(String, f64)>>,
        inner: Box<[Inner; 2]>,
        #[drive(skip)]
        exact: String,
    }

    #[derive(Debug, Clone, PartialEq, DriveMut)]
    enum Inner {
        Empty,
        Texts {
            first: String,
            rest: Vec<String>,
            count: usize,
        },
    }

    fn outer(text: &str) -> Outer {
        Outer {
            text: format!("a{text}"),
            nested: vec![None, Some((format!("b{text}"), 1.5))],
            inner: Box::new([
                Inner::Empty,
                Inner::Texts {
                    first: format!("c{text}"),
                    rest: vec![text.to_string(), "plain".to_string()],
                    count: 3,
                },
            ]),
            exact: text.to_string(),
        }
    }

    /// `outer(text)` with `f` applied to each text but the skipped one.
    fn each(text: &str, f: impl Fn(&str) -> String) -> Outer {
        let mut expected = outer(text);
        let Outer {
            text: first,
            nested,
            inner,
            exact: _,
        } = &mut expected;
        *first = f(first);
        for (text, _) in nested.iter_mut().flatten() {
            *text = f(text);
        }
        for inner in inner.iter_mut() {
            if let Inner::Texts { first, rest, .. } = inner {
                *first = f(first);
                rest.iter_mut().for_each(|text| *text = f(text));
            }
        }
        expected
    }

    proptest! {
        #[test]
        fn every_text_but_a_skipped_one_is_rewritten(
            text in "(\\PC|[\\x00-\\x1f\\x7f\\u{9b}\\u{200b}\\u{202e}\\r\\n]){0,40}",
            key in any::<bool>(),
        ) {
            register_test_key();
            let text = if key { format!("{text}{KEY}{text}") } else { text };
            prop_assert_eq!(
                redacted(outer(&text)),
                each(&text, |t| crate::egress::redact(t).into_owned())
            );
            prop_assert_eq!(
                visible(outer(&text)),
                each(&text, |t| crate::egress::terminal(t).into_owned())
            );
        }
    }
}
