//! The prompts tern sends, built from the texts of `crate::prompts`: for each edit
//! format and mode the `system`, `examples` and `reminder` sections of the token
//! budget, and the commit-message request for the weak model.

use crate::llm::Message;
use crate::prompts;
use derive_visitor::DriveMut;

use super::EditFormat;

/// Whether the model may edit files.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize, DriveMut,
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

/// The prompts for `format` in `mode` (ask mode is the same in every format).
pub fn prompts(format: EditFormat, mode: Mode) -> Prompts {
    let sections = match mode {
        Mode::Ask => prompts::ASK,
        Mode::Code => prompts::edit_format(format),
    };
    Prompts {
        system: sections.system,
        examples: examples_of(sections.examples),
        reminder: sections.reminder,
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
        String::new()
    } else {
        format!("\n{}\n", prompts::COMMIT_DIFF_TRUNCATED)
    };
    vec![
        Message::system(prompts::COMMIT),
        Message::user(format!("```diff\n{sent}{note}```")),
    ]
}
