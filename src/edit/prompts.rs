//! The prompts tern sends (from `assets/prompts/`, embedded at build time): for each
//! edit format and mode the `system`, `examples` and `reminder` sections of the token
//! budget, and the commit-message request for the weak model.

use crate::llm::Message;

use super::EditFormat;

/// Whether the model may edit files.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Edits in the session's edit format.
    #[default]
    Code,
    /// Questions only; no edits.
    Ask,
}

/// The fixed parts of every request in one format and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    pub system: &'static str,
    /// Few-shot example exchanges, alternating user and assistant.
    pub examples: Vec<Message>,
    /// Restates the format at the end of the request, where models attend most.
    pub reminder: &'static str,
}

const EDITBLOCK: &str = include_str!("../../assets/prompts/editblock.md");
const EDITBLOCK_EXAMPLES: &str = include_str!("../../assets/prompts/editblock-examples.md");
const EDITBLOCK_REMINDER: &str = include_str!("../../assets/prompts/editblock-reminder.md");
const UDIFF: &str = include_str!("../../assets/prompts/udiff.md");
const UDIFF_EXAMPLES: &str = include_str!("../../assets/prompts/udiff-examples.md");
const UDIFF_REMINDER: &str = include_str!("../../assets/prompts/udiff-reminder.md");
const WHOLE: &str = include_str!("../../assets/prompts/whole.md");
const WHOLE_EXAMPLES: &str = include_str!("../../assets/prompts/whole-examples.md");
const WHOLE_REMINDER: &str = include_str!("../../assets/prompts/whole-reminder.md");
const ASK: &str = include_str!("../../assets/prompts/ask.md");
const ASK_REMINDER: &str = include_str!("../../assets/prompts/ask-reminder.md");
const COMMIT: &str = include_str!("../../assets/prompts/commit.md");

/// The prompts for `format` in `mode` (ask mode is the same in every format).
pub fn prompts(format: EditFormat, mode: Mode) -> Prompts {
    let (system, examples, reminder) = match (mode, format) {
        (Mode::Ask, _) => (ASK, "", ASK_REMINDER),
        (Mode::Code, EditFormat::Editblock) => (EDITBLOCK, EDITBLOCK_EXAMPLES, EDITBLOCK_REMINDER),
        (Mode::Code, EditFormat::Udiff) => (UDIFF, UDIFF_EXAMPLES, UDIFF_REMINDER),
        (Mode::Code, EditFormat::Whole) => (WHOLE, WHOLE_EXAMPLES, WHOLE_REMINDER),
    };
    Prompts {
        system: system.trim_end(),
        examples: examples_of(examples),
        reminder: reminder.trim_end(),
    }
}

/// Splits an examples file at its `<!-- user -->` / `<!-- assistant -->` lines.
fn examples_of(text: &str) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for line in text.lines() {
        match line.trim() {
            "<!-- user -->" => out.push(Message::user("")),
            "<!-- assistant -->" => out.push(Message::assistant("")),
            _ => {
                if let Some(last) = out.last_mut() {
                    last.content.push_str(line);
                    last.content.push('\n');
                }
            }
        }
    }
    for m in &mut out {
        let kept = m.content.trim_end().len();
        crate::chars::truncate(&mut m.content, kept);
    }
    out
}

/// The most diff sent for a commit message; a commit's gist is in its first hunks.
const COMMIT_DIFF_CHARS: usize = 24_000;

/// The request that asks the weak model for a commit message for `diff`. Clean its
/// answer with `git::message::clean`, and fall back to `git::message::fallback`.
pub fn commit_message_request(diff: &str) -> Vec<Message> {
    let (sent, cut) = diff
        .split_at_checked(crate::chars::floor_char_boundary(diff, COMMIT_DIFF_CHARS))
        .unwrap_or((diff, ""));
    let note = if cut.is_empty() {
        ""
    } else {
        "\n(diff truncated)\n"
    };
    vec![
        Message::system(COMMIT.trim_end()),
        Message::user(format!("```diff\n{sent}{note}```")),
    ]
}

const UNDONE: &str = include_str!("../../assets/prompts/undone.md");

/// What the model is told after the user undid its commit `id`: the commit's diff
/// (clipped by the caller) is gone.
pub fn undone_note(id: &str, summary: &str, diff: &str) -> String {
    fill(
        UNDONE.trim_end(),
        &[("id", id), ("summary", summary), ("diff", diff)],
    )
}

/// `template` with each `{name}` replaced by its value, in one pass: a value that
/// happens to hold `{name}` is left as it is.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(rest.get(..open).unwrap_or_default());
        let from = rest.get(open..).unwrap_or_default();
        let value = from.find('}').and_then(|close| {
            let name = from.get(1..close)?;
            let (_, value) = values.iter().find(|(n, _)| *n == name)?;
            Some((value, close + 1))
        });
        match value {
            Some((value, used)) => {
                out.push_str(value);
                rest = from.get(used..).unwrap_or_default();
            }
            None => {
                out.push('{');
                rest = from.get(1..).unwrap_or_default();
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod fill_tests {
    use super::fill;

    #[test]
    fn values_are_put_in_once_and_never_filled_again() {
        assert_eq!(
            fill("{a} and {b} {c", &[("a", "{b}"), ("b", "x")]),
            "{b} and x {c"
        );
        assert_eq!(fill("é{a}ü", &[("a", "日本")]), "é日本ü");
    }
}
