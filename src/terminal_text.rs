//! Untrusted text (a model's reply, a file name, a repository's file) made safe to
//! show on a terminal: every C0 control but newline and tab, DEL, and the C1 range
//! (U+0080–U+009F, where U+009B is a CSI) would let the text drive the terminal (set
//! the clipboard with OSC 52, clear the screen, move the cursor), so each is shown as a
//! visible escape instead. A CR right before a newline is a CRLF line ending and is
//! dropped.

use std::borrow::Cow;

/// Whether `c` is a control character a terminal would act on.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

/// `text` with every unsafe control character shown as `\u{..}` (and CRs of CRLF
/// endings dropped); borrowed when there is nothing to change.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` made visible when it goes to a terminal (`tty`), as it is otherwise.
pub fn for_terminal(text: &str, tty: bool) -> Cow<'_, str> {
    if tty {
        visible(text)
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible_and_text_stays() {
        assert!(matches!(visible("plain\ttext\n日本"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\x1b]52;c;aGk=\x07b\x1b[2J\u{9b}31m\x7f"),
            "a\\u{1b}]52;c;aGk=\\u{7}b\\u{1b}[2J\\u{9b}31m\\u{7f}"
        );
        assert_eq!(
            visible("one\r\ntwo\rthree\x00"),
            "one\ntwo\\u{d}three\\u{0}"
        );
    }
}
