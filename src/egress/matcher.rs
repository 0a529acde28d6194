//! The one matcher for secrets: it finds a secret in text as a reader would see it,
//! also when control characters, terminal escape sequences (`ESC [31m`, an OSC title)
//! or invisible characters (zero-width, bidirectional marks: Unicode's default
//! ignorable code points) stand between its characters, and in text that arrives in
//! pieces, which may split one.
//!
//! What it sees through is one set: every control character (a line break too: a key
//! a proxy wrapped, or cut by U+2028, is still the key once put back together) and
//! every character `terminal_text` may show as a `⟨U+…⟩` marker (its one definition
//! of hidden characters: zero-width, bidi, U+2028/U+2029, tags).
//!
//! A match starts at a secret's first character and may skip such characters only
//! between the secret's own; it is replaced whole, what it skipped included. Matches
//! are leftmost-first, longest secret first, never overlapping.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// What a secret found in text becomes.
pub const MARKER: &str = "[API key redacted]";

/// The most text a stream holds back. Only a match that skips more than this inside
/// a key (an unterminated OSC string, a sea of zero-width spaces) could be missed
/// for it, and only in a stream.
const MAX_HELD: usize = 64 * 1024;

/// A secret as it is matched: its characters, without those a match would skip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pattern(Box<[char]>);

impl Pattern {
    pub(crate) fn new(secret: &str) -> Pattern {
        Pattern(secret.chars().filter(|&c| !skippable(c)).collect())
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The secrets to look for, longest first (so that of two secrets where one begins
/// the other, the longer is taken).
#[derive(Debug, Clone, Default)]
pub(crate) struct Patterns(Arc<[Pattern]>);

impl Patterns {
    pub(crate) fn new(mut patterns: Vec<Pattern>) -> Patterns {
        patterns.retain(|p| p.len() > 0);
        patterns.sort_by_key(|p| std::cmp::Reverse(p.len()));
        patterns.dedup();
        Patterns(patterns.into())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn contains(&self, pattern: &Pattern) -> bool {
        self.0.contains(pattern)
    }

    /// These secrets and `pattern`.
    pub(crate) fn with(&self, pattern: Pattern) -> Patterns {
        let mut all = self.0.to_vec();
        all.push(pattern);
        Patterns::new(all)
    }

    /// `text` with every secret replaced by [`MARKER`]. With `at_end` false more text
    /// may follow: the scan stops where a secret may begin but not yet end, and
    /// returns that position too (the text's length when there is none).
    pub(crate) fn scan<'t>(&self, text: &'t str, at_end: bool) -> (Cow<'t, str>, usize) {
        let (found, held_from) = self.find(text, at_end);
        let upto = text.get(..held_from).unwrap_or_default();
        (replace(upto, &found), held_from)
    }

    /// Where the secrets are in `text` (byte ranges, in order, never overlapping),
    /// and, with `at_end` false, where one may begin but not yet end (see `scan`).
    ///
    /// Every way of reading the text from each possible start runs at once (a Pike
    /// VM): the first match to end is taken (of those ending together, the one that
    /// began first, then the longest secret), and no later match overlaps it. Ways of
    /// reading that reach the same point of the same secret go on alike, so only the
    /// earliest is kept: the work per character is bounded by the secrets' lengths,
    /// whatever the text.
    pub(crate) fn find(&self, text: &str, at_end: bool) -> (Vec<Range<usize>>, usize) {
        let mut found = Vec::new();
        // In priority order: earliest start first, then the longest secret.
        let mut threads: Vec<Thread> = Vec::new();
        let mut next: Vec<Thread> = Vec::new();
        let mut seen: Option<Seen> = None;
        let mut at = 0;
        loop {
            if threads.is_empty() {
                match self.next_start(text, at) {
                    Some(start) => at = start,
                    None => break,
                }
            }
            let Some(c) = text.get(at..).and_then(|rest| rest.chars().next()) else {
                break;
            };
            for (pattern, p) in self.0.iter().enumerate() {
                if p.0.first() == Some(&c) {
                    threads.push(Thread {
                        start: at,
                        pattern,
                        matched: 0,
                        escape: Escape::None,
                    });
                }
            }
            at += c.len_utf8();
            if threads.is_empty() {
                continue;
            }
            let seen = seen.get_or_insert_with(|| Seen::new(&self.0));
            seen.clear();
            next.clear();
            for thread in &threads {
                thread.step(c, &self.0[thread.pattern].0, &mut |t| {
                    if seen.first(&t) {
                        next.push(t);
                    }
                });
            }
            std::mem::swap(&mut threads, &mut next);
            if let Some(done) = threads
                .iter()
                .find(|t| t.matched == self.0[t.pattern].len())
            {
                found.push(done.start..at);
                threads.clear();
            }
        }
        let held_from = match threads.iter().map(|t| t.start).min() {
            Some(start) if !at_end => start,
            _ => text.len(),
        };
        (found, held_from)
    }

    /// Where the next character that begins a secret is, from byte `from` on.
    fn next_start(&self, text: &str, from: usize) -> Option<usize> {
        let rest = text.get(from..)?;
        let first = self.0.first()?.0.first().copied()?;
        let found = if self.0.iter().all(|p| p.0.first() == Some(&first)) {
            rest.find(first)
        } else {
            rest.find(|c| self.0.iter().any(|p| p.0.first() == Some(&c)))
        };
        found.map(|i| from + i)
    }

    /// Whether `text` holds a secret.
    pub(crate) fn found_in(&self, text: &str) -> bool {
        !self.find(text, true).0.is_empty()
    }
}

/// `text` with the ranges `found` (in order, not overlapping) replaced by [`MARKER`];
/// borrowed when there is none.
pub(crate) fn replace<'t>(text: &'t str, found: &[Range<usize>]) -> Cow<'t, str> {
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for range in found {
        out.push_str(text.get(copied..range.start).unwrap_or_default());
        out.push_str(MARKER);
        copied = range.end;
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Cow::Owned(out)
}

/// Redacts text that arrives in pieces: what could be the start of a secret at a
/// piece's end waits for the next piece (at most a secret's length and the skips a
/// match skipped). Whatever the pieces, the text given out is the whole text
/// redacted (unless more than `MAX_HELD` had to wait).
#[derive(Debug, Clone)]
pub struct Redactor {
    patterns: Patterns,
    held: String,
}

impl Redactor {
    pub(crate) fn with(patterns: Patterns) -> Redactor {
        Redactor {
            patterns,
            held: String::new(),
        }
    }

    /// The redacted text that can be given out now.
    pub fn push(&mut self, text: &str) -> String {
        if self.patterns.is_empty() {
            return text.to_string();
        }
        let mut all = std::mem::take(&mut self.held);
        all.push_str(text);
        let (out, held_from) = self.patterns.scan(&all, false);
        let mut out = out.into_owned();
        self.held = all.get(held_from..).unwrap_or_default().to_string();
        if self.held.len() > MAX_HELD {
            out.push_str(&self.finish());
        }
        out
    }

    /// What was held back, redacted now that no more text follows.
    pub fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        self.patterns.scan(&held, true).0.into_owned()
    }
}

/// Whether a match skips `c` between a secret's characters (see the module's doc).
fn skippable(c: char) -> bool {
    c.is_control() || crate::terminal_text::may_hide(c)
}

/// Where a way of reading is in an escape sequence it skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// In text: the next character is the secret's or skipped.
    None,
    /// After ESC.
    Start,
    /// In a CSI's parameters (`ESC [ 3 1`).
    Csi,
    /// In an escape's intermediate bytes (`ESC ( `).
    Intermediate,
    /// In a string (OSC, DCS, APC, PM, SOS), up to BEL or ST.
    String,
    /// After ESC in a string: `\` ends it.
    StringEsc,
}

const ESCAPES: usize = 6;

impl Escape {
    fn index(self) -> usize {
        self as usize
    }
}

/// One way of reading the text from a possible start: how much of which secret it
/// has matched, and where in an escape sequence it is.
#[derive(Debug, Clone, Copy)]
struct Thread {
    start: usize,
    pattern: usize,
    matched: usize,
    escape: Escape,
}

impl Thread {
    /// Hands `go` the ways of reading that go on after `c`.
    fn step(self, c: char, pattern: &[char], go: &mut impl FnMut(Thread)) {
        let mut to = |matched: usize, escape: Escape| {
            go(Thread {
                matched,
                escape,
                ..self
            })
        };
        let matched = self.matched;
        match self.escape {
            Escape::None => {
                if pattern.get(matched) == Some(&c) {
                    to(matched + 1, Escape::None);
                }
                if matched > 0 && skippable(c) {
                    to(matched, Escape::None);
                }
                match c {
                    _ if matched == 0 => {}
                    '\u{1b}' => to(matched, Escape::Start),
                    '\u{9b}' => to(matched, Escape::Csi),
                    '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                        to(matched, Escape::String)
                    }
                    _ => {}
                }
            }
            Escape::Start | Escape::StringEsc => match c {
                '\\' if self.escape == Escape::StringEsc => to(matched, Escape::None),
                '[' => to(matched, Escape::Csi),
                ']' | 'P' | 'X' | '^' | '_' => to(matched, Escape::String),
                ' '..='/' => to(matched, Escape::Intermediate),
                '0'..='~' => to(matched, Escape::None),
                _ => {}
            },
            Escape::Csi => match c {
                ' '..='?' => to(matched, Escape::Csi),
                '@'..='~' => to(matched, Escape::None),
                _ => {}
            },
            Escape::Intermediate => match c {
                ' '..='/' => to(matched, Escape::Intermediate),
                '0'..='~' => to(matched, Escape::None),
                _ => {}
            },
            Escape::String => match c {
                '\u{7}' | '\u{9c}' => to(matched, Escape::None),
                '\u{1b}' => to(matched, Escape::StringEsc),
                _ => to(matched, Escape::String),
            },
        }
    }
}

/// Which points (secret, characters matched, escape state) a step has reached
/// already: a later way of reading that reaches one goes on exactly as the earlier.
struct Seen {
    /// Where each secret's points begin.
    offsets: Vec<usize>,
    /// The step each point was last reached in.
    stamps: Vec<u32>,
    step: u32,
}

impl Seen {
    fn new(patterns: &[Pattern]) -> Seen {
        let mut offsets = Vec::with_capacity(patterns.len());
        let mut total = 0;
        for p in patterns {
            offsets.push(total);
            total += (p.len() + 1) * ESCAPES;
        }
        Seen {
            offsets,
            stamps: vec![0; total],
            step: 0,
        }
    }

    fn clear(&mut self) {
        self.step += 1;
    }

    /// Whether `t` is the first to reach its point in this step.
    fn first(&mut self, t: &Thread) -> bool {
        let Some(&offset) = self.offsets.get(t.pattern) else {
            return false;
        };
        let i = offset + t.matched * ESCAPES + t.escape.index();
        match self.stamps.get_mut(i) {
            Some(stamp) if *stamp != self.step => {
                *stamp = self.step;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::tests::{dressed, skipped};

    const KEY: &str = "sk-proj-Abc123_xyz";

    fn patterns() -> Patterns {
        Patterns::new(vec![Pattern::new(KEY)])
    }

    fn redact(text: &str) -> String {
        patterns().scan(text, true).0.into_owned()
    }

    #[test]
    fn the_key_is_found_however_it_is_dressed() {
        for dressed in [
            KEY.to_string(),
            "sk-proj-\u{200b}Abc123_xyz".into(),
            "sk-pr\u{1b}[31moj-Abc123\u{1b}[0m_xyz".into(),
            "sk-\u{1b}]0;a title\u{7}proj-Abc123_xyz".into(),
            "sk-proj\u{1b}]8;;http://x.test/\u{1b}\\-Abc123_xyz".into(),
            "s\u{202e}k-proj-Abc\u{2066}123_x\u{feff}yz".into(),
            "sk-proj-Abc1\r23_xyz".into(),
            "sk-proj-Abc1\u{9b}2K23_xyz".into(),
            "sk-proj-\u{e0041}Abc123_xyz".into(),
            // Line breaks, to JavaScript and to a terminal alike.
            "sk-proj-Abc1\u{2028}23_xyz".into(),
            "sk-proj-Abc1\u{2029}23_xyz".into(),
            "sk-proj-Abc123\n_xyz".into(),
            "sk-proj-\r\nAbc123_xyz".into(),
            "sk-proj-Abc123_x\u{85}yz".into(),
        ] {
            let text = format!("before {dressed} after");
            assert_eq!(
                redact(&text),
                format!("before {MARKER} after"),
                "{dressed:?}"
            );
        }
        // An escape sequence whose final byte is the key's first character: the key is
        // still there to read.
        assert_eq!(redact(&format!("\u{1b}[{KEY}")), format!("\u{1b}[{MARKER}"));
    }

    #[test]
    fn what_is_not_the_key_stays() {
        for text in [
            "sk-proj-Abc123_xy",
            "sk-proj-Abc123 _xyz",
            "sk-proj-Abc123\u{a0}_xyz",
            "plain text, no key",
            "",
        ] {
            assert!(matches!(patterns().scan(text, true).0, Cow::Borrowed(t) if t == text));
        }
        let many = format!("{}{KEY}", "\u{200b}".repeat(600));
        assert_eq!(redact(&many), format!("{}{MARKER}", "\u{200b}".repeat(600)));
        let spread = format!("sk-proj-{}Abc123_xyz", "\u{200b}".repeat(600));
        assert_eq!(redact(&spread), MARKER);
    }

    #[test]
    fn a_stream_holds_back_only_what_may_begin_a_key() {
        let mut r = Redactor::with(patterns());
        assert_eq!(r.push("tests pass\nsk-pr"), "tests pass\n");
        assert_eq!(r.push("oj-Abc123_xyz and sk"), format!("{MARKER} and "));
        // A line break may stand inside the key: the start waits across it.
        assert_eq!(r.push("\n"), "");
        assert_eq!(r.push("x\n"), "sk\nx\n");
        assert_eq!(r.push("ends with s"), "ends with ");
        assert_eq!(r.finish(), "s");
    }

    #[test]
    fn the_skipped_set_is_terminal_texts_hidden_one_with_every_control() {
        let (untagged, all) = skipped();
        for c in [
            '\n', '\r', '\t', '\u{0}', '\u{1b}', '\u{7f}', '\u{85}', '\u{2028}', '\u{2029}',
            '\u{200b}', '\u{200d}', '\u{202e}', '\u{2066}', '\u{fe0f}', '\u{3164}',
        ] {
            assert!(untagged.contains(&c) && skippable(c), "{c:?}");
        }
        assert!(all.contains(&'\u{e0041}') && skippable('\u{e0041}'));
        for c in [' ', 'a', '\u{a0}', '日', '\u{301}', '\u{fffd}'] {
            assert!(!skippable(c), "{c:?}");
        }
    }

    /// Free text, whether the (dressed) key follows it, and where junk goes inside it.
    type Piece = (String, bool, Vec<(usize, usize)>);

    fn text_with_keys(key: &str, pieces: &[Piece]) -> String {
        let mut text = String::new();
        for (free, with_key, junk) in pieces {
            text.push_str(free);
            if *with_key {
                text.push_str(&dressed(key, junk));
            }
        }
        text
    }

    /// `text` with controls and invisible characters removed: what a terminal shows
    /// of it, escape sequences aside.
    fn shown(text: &str) -> String {
        text.chars().filter(|&c| !skippable(c)).collect()
    }

    proptest::proptest! {
        // Failures are kept with the integration tests' (the crate root holds only
        // what the project is made of).
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512,
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/egress_matcher.txt",
                ),
            )),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any text holding the key (dressed or not) or parts of it, cut anywhere:
        /// streaming gives exactly the whole text redacted, and no key is left in it.
        #[test]
        fn streaming_equals_whole_text_and_no_key_survives(
            key in "[A-Za-z0-9_-]{8,24}",
            pieces in proptest::collection::vec(
                ("(\\PC|[\u{0}-\u{1f}\u{7f}-\u{9f}\u{200b}-\u{200f}]|sk-|s){0,12}", proptest::bool::ANY,
                 proptest::collection::vec((0usize..30, 0usize..100_000), 0..4)),
                0..6,
            ),
            cuts in proptest::collection::vec(0usize..400, 0..8),
        ) {
            let patterns = Patterns::new(vec![Pattern::new(&key)]);
            let text = text_with_keys(&key, &pieces);
            let whole = patterns.scan(&text, true).0.into_owned();
            let mut bounds: Vec<usize> = cuts
                .iter()
                .map(|&c| crate::chars::floor_char_boundary(&text, c))
                .collect();
            bounds.push(text.len());
            bounds.sort_unstable();
            let mut streamed = String::new();
            let mut r = Redactor::with(patterns.clone());
            let mut from = 0;
            for to in bounds {
                streamed.push_str(&r.push(text.get(from..to).unwrap_or_default()));
                from = to;
            }
            streamed.push_str(&r.finish());
            proptest::prop_assert_eq!(&streamed, &whole);
            proptest::prop_assert!(!patterns.found_in(&whole), "{:?}", whole);
            proptest::prop_assert!(!shown(&whole).contains(&key), "{:?}", whole);
            let keys = pieces.iter().filter(|p| p.1).count();
            proptest::prop_assert!(whole.matches(MARKER).count() >= keys.min(1));
        }
    }
}
