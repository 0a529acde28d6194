//! String helpers that never cut a UTF-8 character: model, user and repository text
//! is arbitrary Unicode, and slicing it at a byte index that falls inside a character
//! panics (`clippy::string_slice` is denied for that reason).

/// `s` without `prefix` at its start, compared ignoring ASCII case.
pub(crate) fn strip_prefix_ignore_ascii_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    let rest = s.get(prefix.len()..)?;
    head.eq_ignore_ascii_case(prefix).then_some(rest)
}

/// `s` in ASCII lower case, written into `buf`, without an allocation (for lookups
/// made for each of a repository's files); None when `s` does not fit.
pub(crate) fn ascii_lowercase<'b>(s: &str, buf: &'b mut [u8]) -> Option<&'b str> {
    let out = buf.get_mut(..s.len())?;
    out.copy_from_slice(s.as_bytes());
    out.make_ascii_lowercase();
    // ASCII case changes leave UTF-8 valid.
    std::str::from_utf8(out).ok()
}

/// Cuts `s` to at most `at` bytes, at the last character boundary that fits: a cut
/// inside a character panics.
pub fn truncate(s: &mut String, at: usize) {
    let cut = floor_char_boundary(s, at);
    // `cut` is a character boundary: floor_char_boundary found it.
    #[allow(clippy::disallowed_methods)]
    s.truncate(cut);
}

/// The largest character boundary of `s` at or below `at`.
pub(crate) fn floor_char_boundary(s: &str, at: usize) -> usize {
    (0..=at.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_cuts_a_character() {
        assert_eq!(
            strip_prefix_ignore_ascii_case("File: a.rs", "file:"),
            Some(" a.rs")
        );
        assert_eq!(
            strip_prefix_ignore_ascii_case("日本語のファイル", "file:"),
            None
        );
        assert_eq!(strip_prefix_ignore_ascii_case("fi", "file:"), None);
        assert_eq!(floor_char_boundary("aé", 2), 1);
        assert_eq!(floor_char_boundary("aé", 9), 3);
        let mut s = String::from("a日本");
        truncate(&mut s, 5);
        assert_eq!(s, "a日");
        truncate(&mut s, 9);
        assert_eq!(s, "a日");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/chars.txt",
                ),
            )),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any text that fits comes back as `to_ascii_lowercase` makes it; any that
        /// does not is None, never a cut character.
        #[test]
        fn lowercase_in_a_buffer_is_the_allocating_one(s in "\\PC{0,12}") {
            let mut buf = [0u8; 16];
            let lower = ascii_lowercase(&s, &mut buf);
            let expected = s.to_ascii_lowercase();
            if s.len() <= 16 {
                proptest::prop_assert_eq!(lower, Some(expected.as_str()));
            } else {
                proptest::prop_assert_eq!(lower, None);
            }
        }
    }
}
