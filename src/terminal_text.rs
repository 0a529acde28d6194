//! Untrusted text (a model's reply, a file name, a repository's file) made safe to
//! show on a terminal. Two kinds of character are never drawn as they are:
//!
//! - **Controls**: every C0 control but newline and tab, DEL, and the C1 range
//!   (U+0080–U+009F, where U+009B is a CSI) would let the text drive the terminal (set
//!   the clipboard with OSC 52, clear the screen, move the cursor), so each is shown as
//!   a visible escape (`\u{1b}`). A CR right before a newline is a CRLF line ending and
//!   is dropped.
//! - **Hidden characters** ([`is_hidden`]): those a terminal draws as nothing, or that
//!   make the text read differently from what a compiler sees (the Trojan Source
//!   attacks: a bidi override turns a line around; U+2028 ends a JavaScript comment on
//!   what looks like the same line). Each is shown as a marker, `⟨U+202E⟩`, which front
//!   ends draw in a warning colour ([`markers`] finds them).
//!
//! Only what is shown changes: the bytes written to a file stay the file's or the
//! model's. This is the one definition of both kinds: the review, the chat, headless
//! output, the command check and the hunk cautions all use it.

use std::borrow::Cow;
use std::ops::Range;

/// Whether `c` is a control character a terminal would act on.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

/// Whether `c`, between `prev` and `next` on its line (`None`: the text's start or
/// end), is a hidden character: U+2028 and U+2029 (line breaks to JavaScript that
/// editors and terminals draw inside one line), and Unicode's
/// Default_Ignorable_Code_Point set, which renderers draw as nothing. That set holds
/// the Trojan Source paper's bidi controls (U+202A–U+202E, U+2066–U+2069, with the
/// marks U+200E, U+200F and U+061C), the zero-width characters (U+200B–U+200D,
/// U+2060–U+2064, U+FEFF), the soft hyphen, U+180E, the Hangul fillers that make
/// invisible JavaScript identifiers (U+3164, U+FFA0, U+115F, U+1160), and the tag
/// characters (U+E0000–U+E0FFF) that smuggle ASCII past a reader. U+FEFF is hidden
/// wherever it is: a file's own byte-order mark is kept apart from its text
/// (`diff::FileText`), so one in the text was put there.
///
/// Two exceptions keep emoji and scripts that need them whole, where the character
/// shows in what it joins: a variation selector right after a visible non-ASCII
/// character (`⚠️` is U+26A0 U+FE0F), and a zero-width joiner or non-joiner between two
/// (`👩‍💻`, Persian's ZWNJ). Next to ASCII they are hidden: `isAdmin` and `isAdmin︀` would
/// be two identifiers that look alike. So is a run of selectors (each hides a byte).
pub(crate) fn is_hidden(prev: Option<char>, c: char, next: Option<char>) -> bool {
    let visible_non_ascii = |c: Option<char>| c.is_some_and(joins);
    match c {
        '\u{2028}' | '\u{2029}' => true,
        '\u{200c}' | '\u{200d}' => !(visible_non_ascii(prev) && visible_non_ascii(next)),
        c if is_variation_selector(c) => !visible_non_ascii(prev),
        c => is_default_ignorable(c),
    }
}

/// Whether `c` is hidden in some place ([`is_hidden`] next to what hides it): the
/// characters a reader may not see, wherever they stand. The secret matcher
/// (`egress`) sees through these.
pub(crate) fn may_hide(c: char) -> bool {
    is_hidden(None, c, None)
}

fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{180b}'..='\u{180d}' | '\u{180f}' | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}

/// Whether a selector or joiner next to `c` belongs to what it shows with.
fn joins(c: char) -> bool {
    !c.is_ascii() && !c.is_whitespace() && !c.is_control() && !is_default_ignorable(c)
}

/// Unicode 15's Default_Ignorable_Code_Point (DerivedCoreProperties.txt).
fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// Each character of `text` with whether it is hidden (see [`is_hidden`]).
fn classified(text: &str) -> impl Iterator<Item = (char, bool)> + '_ {
    let mut prev = None;
    let mut chars = text.chars().peekable();
    std::iter::from_fn(move || {
        let c = chars.next()?;
        let hidden = is_hidden(prev, c, chars.peek().copied());
        prev = Some(c);
        Some((c, hidden))
    })
}

/// The hidden characters of `text`, in order (see [`is_hidden`]).
pub fn hidden(text: &str) -> impl Iterator<Item = char> + '_ {
    classified(text).filter_map(|(c, hidden)| hidden.then_some(c))
}

/// Whether `text` holds a hidden character.
pub fn has_hidden(text: &str) -> bool {
    hidden(text).next().is_some()
}

/// How a hidden character is shown: `⟨U+202E⟩`.
pub fn marker(c: char) -> String {
    format!("⟨U+{:04X}⟩", u32::from(c))
}

/// Where the markers of hidden characters are in text that [`visible`] made (byte
/// ranges), for a front end to draw them in a warning colour. Only markers that stand
/// for a hidden character count (`⟨U+0041⟩` written in a file is text).
pub fn markers(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    text.match_indices("⟨U+").filter_map(move |(start, open)| {
        let rest = text.get(start + open.len()..)?;
        let (hex, _) = rest.split_once('⟩')?;
        let code = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)?;
        let end = start + open.len() + hex.len() + '⟩'.len_utf8();
        // Whatever was around it, a joiner or selector with a marker of its own was hidden.
        (may_hide(code) && text.get(start..end) == Some(marker(code).as_str()))
            .then_some(start..end)
    })
}

/// `text` with every unsafe control character shown as `\u{..}` (and CRs of CRLF
/// endings dropped) and every hidden character as its marker; borrowed when there is
/// nothing to change. Made text stays as it is when made visible again.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) && !has_hidden(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = classified(text).peekable();
    while let Some((c, hidden)) = chars.next() {
        match c {
            '\r' if chars.peek().is_some_and(|&(next, _)| next == '\n') => {}
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c if hidden => out.push_str(&marker(c)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` without its unsafe controls and hidden characters, for text that cannot show
/// an escape (a commit subject).
pub(crate) fn without_unsafe(text: &str) -> String {
    classified(text)
        .filter(|&(c, hidden)| !hidden && !is_unsafe(c))
        .map(|(c, _)| c)
        .collect()
}

/// `text` made visible when it goes to a terminal (`tty`), as it is otherwise.
pub(crate) fn for_terminal(text: &str, tty: bool) -> Cow<'_, str> {
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

    #[test]
    fn hidden_characters_become_markers() {
        assert_eq!(
            visible("// ok\u{2028}execSync(x)"),
            "// ok⟨U+2028⟩execSync(x)"
        );
        assert_eq!(visible("a\u{202e}b\u{2066}c"), "a⟨U+202E⟩b⟨U+2066⟩c");
        assert_eq!(visible("\u{feff}x\u{e0041}"), "⟨U+FEFF⟩x⟨U+E0041⟩");
        assert_eq!(visible("\u{3164} = 1"), "⟨U+3164⟩ = 1");
        // Emoji keep their selectors; a selector on ASCII or in a run does not hide.
        assert!(matches!(visible("⚠️ done ❤️"), Cow::Borrowed(_)));
        assert_eq!(visible("isAdmin\u{fe00}"), "isAdmin⟨U+FE00⟩");
        assert_eq!(visible("😀\u{fe0f}\u{fe0f}"), "😀\u{fe0f}⟨U+FE0F⟩");
        assert_eq!(visible("\u{fe0f}x"), "⟨U+FE0F⟩x");
        // Joiners inside an emoji or between letters of a script that needs them stay.
        assert!(matches!(
            visible("👩\u{200d}💻 می\u{200c}خواهم"),
            Cow::Borrowed(_)
        ));
        assert_eq!(visible("is\u{200d}Admin"), "is⟨U+200D⟩Admin");
        assert_eq!(visible("👩\u{200d}"), "👩⟨U+200D⟩");
    }

    #[test]
    fn visible_text_stays_as_it_is() {
        for text in ["a\u{202e}b\x1b[2J", "\u{fe0f}\u{fe0f}", "x\r\ny\u{2029}"] {
            let once = visible(text).into_owned();
            assert_eq!(visible(&once), once);
        }
    }

    #[test]
    fn markers_are_found_only_for_hidden_characters() {
        let shown = visible("a\u{202e}b").into_owned();
        let found: Vec<&str> = markers(&shown).filter_map(|r| shown.get(r)).collect();
        assert_eq!(found, ["⟨U+202E⟩"]);
        assert_eq!(markers("⟨U+0041⟩ ⟨U+12⟩ ⟨U+202E").count(), 0);
    }
}
