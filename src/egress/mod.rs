//! Egress: everything tern writes out goes through here, so that the API key never
//! leaves in any of it. The key is registered once it is known (an
//! [`ApiKey`](crate::llm::ApiKey) registers itself when made: from the environment, a
//! flag, a config file or `api_key_cmd`), and every sink redacts with the same
//! matcher (`matcher.rs`: split-aware, and blind to control, escape and invisible
//! characters put inside the key):
//!
//! - the terminal: headless stdout and stderr ([`stdout`], [`stderr`]) and the
//!   workspace (events, through [`terminal`]) are redacted, then have their control
//!   characters made visible (`terminal_text`); only terminal sinks are;
//! - `--json` and the session file: every string of the JSON ([`redact_json`]);
//! - `--record`: the request, the streamed reply as a whole and error bodies;
//! - the log file ([`LogFile`]);
//! - commit messages, and the engine's streamed replies ([`Redactor`]);
//! - the engine's events: every text of each ([`redacted`]), and made visible as well
//!   when a terminal shows it ([`visible`]), through `texts.rs`'s visitors.
//!
//! Keys shorter than [`MIN_SECRET_CHARS`] are a local server's placeholder (`ollama`,
//! `test`) and not secret: hunting them would mangle every text and guard nothing.

mod matcher;
mod sink;
mod texts;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::RwLock;

pub use matcher::{MARKER, Redactor};
pub(crate) use sink::stdout_styled;
pub use sink::{LogFile, Sink, stderr, stdout};
pub use texts::{redacted, visible};

use matcher::{Pattern, Patterns};

/// The shortest key treated as a secret.
pub const MIN_SECRET_CHARS: usize = 8;

/// The secrets of this process, as matched.
static SECRETS: RwLock<Option<Patterns>> = RwLock::new(None);

/// Registers `secret`: from now on every sink redacts it. Keys shorter than
/// [`MIN_SECRET_CHARS`] (without the characters the matcher skips) are not secret.
pub fn register(secret: &str) {
    let pattern = Pattern::new(secret);
    if pattern.len() < MIN_SECRET_CHARS {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    let known = secrets.clone().unwrap_or_default();
    if !known.contains(&pattern) {
        *secrets = Some(known.with(pattern));
    }
}

/// The registered secrets, now.
fn patterns() -> Patterns {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    secrets.clone().unwrap_or_default()
}

/// Secrets to look for: those registered now ([`secrets`]), for a sink that takes
/// its text apart itself (the record's streamed texts, see `llm::recorded`).
#[derive(Clone)]
pub struct Secrets(Patterns);

/// The secrets registered now.
pub fn secrets() -> Secrets {
    Secrets(patterns())
}

impl Secrets {
    /// `secret` alone, registered or not: for tests over any key.
    #[cfg(test)]
    pub(crate) fn of(secret: &str) -> Secrets {
        Secrets(Patterns::new(vec![Pattern::new(secret)]))
    }

    /// Where the secrets are in `text`, as the matcher sees them (byte ranges, in
    /// order, never overlapping).
    pub fn find(&self, text: &str) -> Vec<Range<usize>> {
        self.0.find(text, true).0
    }

    /// `text` with every secret replaced by [`MARKER`]; borrowed when there is none.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.0.is_empty() {
            return Cow::Borrowed(text);
        }
        self.0.scan(text, true).0
    }

    /// Redacts every string of `value`, object keys too; returns whether any changed.
    /// JSON escapes control characters, so a JSON sink redacts before it serializes.
    pub(crate) fn redact_json(&self, value: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::String(text) => match self.redact(text) {
                Cow::Owned(clean) => {
                    *text = clean;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |any, v| self.redact_json(v) | any),
            Value::Object(fields) => {
                let mut changed = false;
                let old = std::mem::take(fields);
                for (mut name, mut field) in old {
                    changed |= self.redact_json(&mut field);
                    if let Cow::Owned(clean) = self.redact(&name) {
                        name = clean;
                        changed = true;
                    }
                    fields.insert(name, field);
                }
                changed
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }
}

/// `text` with every registered secret replaced by [`MARKER`]; borrowed when there
/// is none in it.
pub fn redact(text: &str) -> Cow<'_, str> {
    secrets().redact(text)
}

/// `text` redacted in place.
pub(crate) fn redact_in_place(text: &mut String) {
    if let Cow::Owned(clean) = redact(text) {
        *text = clean;
    }
}

/// `text`, which was cut short, redacted: an end that may be the start of a secret is
/// dropped too (the rest of the secret was cut off, but its start would still show).
pub(crate) fn redact_cut(text: &str) -> String {
    redactor().push(text)
}

/// What an error says, with its causes: each cause once, and none its message
/// already ends with (`{:#}` repeats a cause a message quotes: "cannot read F: a FIFO,
/// not a file: a FIFO, not a file").
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Whether `text` holds a registered secret, in any of the forms the matcher sees.
pub(crate) fn holds_secret(text: &str) -> bool {
    patterns().found_in(text)
}

/// `text` as a terminal may show it: redacted, then its control characters made
/// visible (redacting first: a key with an escape inside is still the key).
pub fn terminal(text: &str) -> Cow<'_, str> {
    match redact(text) {
        Cow::Borrowed(text) => crate::terminal_text::visible(text),
        Cow::Owned(text) => Cow::Owned(crate::terminal_text::visible(&text).into_owned()),
    }
}

/// A redactor for text that arrives in pieces, over the secrets registered now.
pub(crate) fn redactor() -> Redactor {
    Redactor::with(patterns())
}

/// [`Secrets::redact_json`] with the secrets registered now.
pub(crate) fn redact_json(value: &mut serde_json::Value) -> bool {
    secrets().redact_json(value)
}

/// `value` serialized as JSON with every string redacted.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(value)?;
    redact_json(&mut value);
    Ok(value)
}

/// `println!` through [`stdout`]: redacted, control characters made visible on a
/// terminal. A write that fails (a closed pipe) is dropped, never a panic.
macro_rules! outln {
    () => { $crate::egress::outln!("") };
    ($($arg:tt)*) => {{
        let _ = ::std::io::Write::write_fmt(
            &mut $crate::egress::stdout(),
            format_args!("{}\n", format_args!($($arg)*)),
        );
    }};
}

/// `eprintln!` through [`stderr`], as [`outln!`] is `println!`.
macro_rules! errln {
    () => { $crate::egress::errln!("") };
    ($($arg:tt)*) => {{
        let _ = ::std::io::Write::write_fmt(
            &mut $crate::egress::stderr(),
            format_args!("{}\n", format_args!($($arg)*)),
        );
    }};
}

/// `print!` through [`stdout`] (a question whose answer follows on the line).
macro_rules! out {
    ($($arg:tt)*) => {{
        let _ = ::std::io::Write::write_fmt(&mut $crate::egress::stdout(), format_args!($($arg)*));
    }};
}

/// `eprint!` through [`stderr`].
macro_rules! err {
    ($($arg:tt)*) => {{
        let _ = ::std::io::Write::write_fmt(&mut $crate::egress::stderr(), format_args!($($arg)*));
    }};
}

pub(crate) use {err, errln, out, outln};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A key registered for the tests of this crate (the registry is process-wide).
    pub(crate) const KEY: &str = "sk-egress-unit-test-0123456789";

    pub(crate) fn register_test_key() {
        register(KEY);
    }

    #[test]
    fn an_error_says_each_cause_once() {
        let io = std::io::Error::other("a FIFO, not a file");
        let quoted = anyhow::Error::new(std::io::Error::other(format!("cannot read F: {io}")))
            .context("opening the session");
        assert_eq!(
            error_text(&quoted),
            "opening the session: cannot read F: a FIFO, not a file"
        );
        let chained = anyhow::Error::new(io).context("cannot read F");
        assert_eq!(error_text(&chained), "cannot read F: a FIFO, not a file");
    }

    /// Escape sequences a key may be dressed in.
    const ESCAPES: &[&str] = &[
        "\u{1b}[31m",
        "\u{1b}[0;1m",
        "\u{9b}2K",
        "\u{1b}]0;title\u{7}",
        "\u{1b}]8;;x\u{1b}\\",
        "\u{1b}(B",
    ];

    /// Every character the matcher sees through, found with the definitions it uses
    /// (every control, and what `terminal_text` may hide): without the tag characters,
    /// and all of them, so that a case picks from the few hundred others as often as
    /// from the four thousand tags.
    pub(crate) fn skipped() -> &'static (Vec<char>, Vec<char>) {
        static SKIPPED: std::sync::OnceLock<(Vec<char>, Vec<char>)> = std::sync::OnceLock::new();
        SKIPPED.get_or_init(|| {
            let all: Vec<char> = (0..=u32::from(char::MAX))
                .filter_map(char::from_u32)
                .filter(|&c| c.is_control() || crate::terminal_text::may_hide(c))
                .collect();
            let untagged = all.iter().copied().filter(|&c| c < '\u{e0000}').collect();
            (untagged, all)
        })
    }

    /// Junk number `which`: an escape sequence, or a character the matcher skips.
    fn junk(which: usize) -> String {
        let (untagged, all) = skipped();
        match which % 3 {
            0 => ESCAPES[which / 3 % ESCAPES.len()].to_string(),
            1 => untagged[which / 3 % untagged.len()].to_string(),
            _ => all[which / 3 % all.len()].to_string(),
        }
    }

    /// `key` with junk put between some of its characters: `(at, which)` puts junk
    /// number `which` before character `at` (modulo the key's length).
    pub(crate) fn dressed(key: &str, junk: &[(usize, usize)]) -> String {
        let mut out = String::new();
        for (i, c) in key.chars().enumerate() {
            if i > 0 {
                for &(at, which) in junk {
                    if at % key.chars().count() == i {
                        out.push_str(&self::junk(which));
                    }
                }
            }
            out.push(c);
        }
        out
    }

    #[test]
    fn every_sink_function_redacts_the_registered_key() {
        register_test_key();
        let dressed = "sk-egress-unit\u{1b}[1m-test-0123456789";
        assert_eq!(redact(&format!("a {KEY} b")), format!("a {MARKER} b"));
        assert_eq!(
            terminal(&format!("\u{1b}]0;{dressed}\u{7}")),
            format!("\\u{{1b}}]0;{MARKER}\\u{{7}}")
        );
        assert!(holds_secret(&format!("Bearer {dressed}")));
        assert!(!holds_secret("Bearer sk-egress-unit"));
        let mut value = serde_json::json!({ "a": [dressed, 1, null], KEY: { "b": "fine" } });
        assert!(redact_json(&mut value));
        assert_eq!(
            value,
            serde_json::json!({ "a": [MARKER, 1, null], MARKER: { "b": "fine" } })
        );
        assert!(!redact_json(&mut value));
        register("short");
        assert_eq!(redact("short"), "short", "a placeholder is not a secret");
    }
}
