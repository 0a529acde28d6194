//! `tern --script FILE`: a conversation written down in advance, sent one message at a
//! time, each after the previous one is done (for long sessions reproduced without the
//! TUI, and for tests).
//!
//! The format:
//! - Messages are separated by a line that is exactly `---` (trailing spaces allowed).
//! - A line `\---` stands for a literal `---` line inside a message.
//! - Blank lines around a message are dropped; a message may span any number of lines.
//! - A message that starts with `/` is a slash command, as typed in the chat
//!   (`/add src/lib.rs`, `/ask why?`, `/compact`, `/tokens`).
//!
//! ```text
//! Add a --verbose flag to src/cli.rs.
//! ---
//! /ask Which function parses the flags?
//! ---
//! Now write a test for it:
//!
//! - with the flag
//! - without it
//! ```
//!
//! This module also says when one item of a headless run is over, for `-m` and
//! `--script` alike.

use std::path::Path;

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::mpsc::error::SendError;

use crate::engine::commands::{self, Parsed};
use crate::engine::{Event, Op};

const SEPARATOR: &str = "---";
const ESCAPED_SEPARATOR: &str = "\\---";

/// The messages of a script file, in order.
pub fn load(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read the script {}: {e}", path.display()))?;
    let messages = parse(&text);
    if messages.is_empty() {
        anyhow::bail!(
            "the script {} has no messages (separate them with a line `---`)",
            path.display()
        );
    }
    Ok(messages)
}

/// Splits a script into its messages.
pub fn parse(text: &str) -> Vec<String> {
    let mut messages = vec![];
    let mut current: Vec<&str> = vec![];
    for line in text.lines() {
        match line.trim_end() {
            SEPARATOR => messages.push(std::mem::take(&mut current)),
            ESCAPED_SEPARATOR => current.push(SEPARATOR),
            _ => current.push(line),
        }
    }
    messages.push(current);
    messages
        .into_iter()
        .map(|lines| lines.join("\n").trim_matches('\n').trim_end().to_string())
        .filter(|m| !m.trim().is_empty())
        .collect()
}

/// The event that ends one item of a headless run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Await {
    /// A chat message (or `/ask TEXT`, `/code TEXT`): its turn finishes or fails.
    Turn,
    /// `/compact`: its `Output` titled "compact".
    Compact,
    /// Any other command: the `Budget` that answers the `Draft` sent right after it
    /// (the engine handles ops in order, and such commands at once).
    Barrier,
}

impl Await {
    /// What ends `item`.
    pub fn for_item(item: &str) -> Await {
        if !item.trim_start().starts_with('/') {
            return Await::Turn;
        }
        match commands::parse(item) {
            Parsed::Command { spec, .. } if spec.name == "compact" => Await::Compact,
            Parsed::Command { spec, args }
                if matches!(spec.name, "ask" | "code") && !args.is_empty() =>
            {
                Await::Turn
            }
            _ => Await::Barrier,
        }
    }

    pub fn is_done(self, event: &Event) -> bool {
        match self {
            Await::Turn => matches!(event, Event::TurnFinished { .. } | Event::TurnFailed { .. }),
            Await::Compact => matches!(event, Event::Output { title, .. } if title == "compact"),
            Await::Barrier => matches!(event, Event::Budget(_)),
        }
    }
}

/// Sends one item to the engine; returns what ends it.
pub fn submit(ops: &UnboundedSender<Op>, item: String) -> Result<Await, SendError<Op>> {
    let wait = Await::for_item(&item);
    ops.send(Op::Submit { text: item })?;
    if wait == Await::Barrier {
        ops.send(Op::Draft {
            text: String::new(),
        })?;
    }
    Ok(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_on_separator_lines_only() {
        let script = "\nfirst line\nsecond line\n---\n\n/compact\n---  \n\nmulti\n\n  indented\n\\---\nafter a literal rule\n---\n---\n--- not a separator\n";
        assert_eq!(
            parse(script),
            vec![
                "first line\nsecond line".to_string(),
                "/compact".into(),
                "multi\n\n  indented\n---\nafter a literal rule".into(),
                "--- not a separator".into(),
            ]
        );
        assert!(parse("\n---\n \n---\n").is_empty());
    }

    #[test]
    fn each_item_waits_for_its_own_end() {
        assert_eq!(Await::for_item("fix the bug"), Await::Turn);
        assert_eq!(Await::for_item("/ask why?"), Await::Turn);
        assert_eq!(Await::for_item("/ask"), Await::Barrier);
        assert_eq!(Await::for_item("/compact"), Await::Compact);
        assert_eq!(Await::for_item("/tokens"), Await::Barrier);
        assert_eq!(Await::for_item("/nonsense"), Await::Barrier);
        let compact_done = Event::Output {
            title: "compact".into(),
            text: String::new(),
        };
        assert!(Await::Compact.is_done(&compact_done));
        assert!(!Await::Turn.is_done(&compact_done));
    }
}
