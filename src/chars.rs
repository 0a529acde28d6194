//! String helpers that never cut a UTF-8 character: model, user and repository text
//! is arbitrary Unicode, and slicing it at a byte index that falls inside a character
//! panics (`clippy::string_slice` is denied for that reason).

/// `s` without `prefix` at its start, compared ignoring ASCII case.
pub(crate) fn strip_prefix_ignore_ascii_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    let rest = s.get(prefix.len()..)?;
    head.eq_ignore_ascii_case(prefix).then_some(rest)
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
}
