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
//! - commit messages, and the engine's events and streamed replies ([`Redactor`]).
//!
//! Keys shorter than [`MIN_SECRET_CHARS`] are a local server's placeholder (`ollama`,
//! `test`) and not secret: hunting them would mangle every text and guard nothing.

mod matcher;
mod sink;

use std::borrow::Cow;
use std::sync::RwLock;

pub use matcher::{MARKER, Redactor};
pub use sink::{LogFile, Sink, stderr, stdout, stdout_styled};

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

/// `text` with every registered secret replaced by [`MARKER`]; borrowed when there
/// is none in it.
pub fn redact(text: &str) -> Cow<'_, str> {
    let patterns = patterns();
    if patterns.is_empty() {
        return Cow::Borrowed(text);
    }
    patterns.scan(text, true).0
}

/// `text` redacted in place.
pub fn redact_in_place(text: &mut String) {
    if let Cow::Owned(clean) = redact(text) {
        *text = clean;
    }
}

/// `text`, which was cut short, redacted: an end that may be the start of a secret is
/// dropped too (the rest of the secret was cut off, but its start would still show).
pub fn redact_cut(text: &str) -> String {
    redactor().push(text)
}

/// Whether `text` holds a registered secret, in any of the forms the matcher sees.
pub fn holds_secret(text: &str) -> bool {
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
pub fn redactor() -> Redactor {
    Redactor::with(patterns())
}

/// Redacts every string of `value`, object keys too; returns whether any changed.
/// JSON escapes control characters, so a JSON sink redacts before it serializes.
pub fn redact_json(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(text) => match redact(text) {
            Cow::Owned(clean) => {
                *text = clean;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |any, v| redact_json(v) | any),
        Value::Object(fields) => {
            let mut changed = false;
            let old = std::mem::take(fields);
            for (mut name, mut field) in old {
                changed |= redact_json(&mut field);
                if let Cow::Owned(clean) = redact(&name) {
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
