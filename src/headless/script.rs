//! `tern --script FILE`: a conversation written down in advance, sent one message at a
//! time, each after the previous one is done (for long sessions reproduced without the
//! TUI, and for tests).
//!
//! The format:
//! - Messages are separated by a line that is exactly `---` (trailing spaces allowed).
//! - A line `\---` stands for a literal `---` line inside a message.
//! - Blank lines around a message are dropped; a message may span any number of lines.
//! - A message that starts with `/` is a slash command, as typed in the chat
//!   (`/add src/lib.rs`, `/ask why?`, `/compact`, `/tokens`); `//` sends a message that
//!   starts with `/`.
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
//! Each message is sent when the engine reports `Idle` after the previous one: its reply,
//! any reflections, the landing of its edits and any history summary it waits for are
//! all done by then.

use std::path::Path;

const SEPARATOR: &str = "---";
const ESCAPED_SEPARATOR: &str = "\\---";

/// The messages of a script file (`-`: standard input, as `tern apply -` reads it),
/// in order.
pub fn load(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = match path == Path::new("-") {
        true => std::io::read_to_string(std::io::stdin()),
        false => std::fs::read_to_string(path),
    }
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
}
