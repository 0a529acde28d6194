//! ChatChunks: the sections of a request, in the order they are sent, assembled by one
//! function that returns both the messages and their token counts, so what the budget
//! shows is exactly what is sent.

use derive_visitor::DriveMut;
use serde::Serialize;

use crate::llm::{Message, Role};
use crate::prompts::{
    CHAT_ACK, CHAT_INTRO, OUTPUT_ACK, OUTPUT_INTRO, READONLY_ACK, READONLY_INTRO, REPO_ACK,
    REPO_INTRO, REVIEW_DIFF_ACK,
};
use crate::tokens::TokenCounter;

/// A section of the request. The order of the variants is the order sent: stable
/// content first, so provider prefix caches hit as often as possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, DriveMut)]
pub enum Section {
    System,
    Examples,
    ReadonlyFiles,
    Repo,
    /// History: earlier turns, including any summary.
    Done,
    ChatFiles,
    /// What commands the user ran printed (`/run`, `/test`, `/lint`), as the model reads
    /// it: after the files it is about, not copied into the history.
    CommandOutput,
    /// A review request's diff (review mode only).
    ReviewDiff,
    /// The current message (and this turn's reflections).
    Cur,
    Reminder,
}

impl Section {
    pub const ALL: [Section; 10] = [
        Section::System,
        Section::Examples,
        Section::ReadonlyFiles,
        Section::Repo,
        Section::Done,
        Section::ChatFiles,
        Section::CommandOutput,
        Section::ReviewDiff,
        Section::Cur,
        Section::Reminder,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Section::System => "system",
            Section::Examples => "examples",
            Section::ReadonlyFiles => "read-only files",
            Section::Repo => "repo map",
            Section::Done => "history",
            Section::ChatFiles => "editable files",
            Section::CommandOutput => "command output",
            Section::Cur => "current",
            Section::Reminder => "reminder",
            Section::ReviewDiff => "review diff",
        }
    }
}

/// A file as it is shown to the model.
#[derive(Debug, Clone)]
pub struct PromptFile {
    /// Path relative to the repository root, with `/` separators.
    pub path: String,
    pub text: String,
}

/// A command's output as it is shown to the model: already clipped to its budget.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize)]
pub struct CommandText {
    pub command: String,
    /// How it ended ("exit 1 after 3.2 s").
    pub outcome: String,
    pub text: String,
    /// A test run's (`/test`): a passing run of the configured test command replaces
    /// it, whatever command it was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
}

/// What an output's label puts before its command.
const LABEL_PREFIX: &str = "$ ";

/// The command an output's label (`CommandText::label`) names.
pub fn output_command(label: &str) -> &str {
    label.strip_prefix(LABEL_PREFIX).unwrap_or(label)
}

impl CommandText {
    /// How the output is named in `/tokens` and the advice: the command as typed.
    pub fn label(&self) -> String {
        format!("{LABEL_PREFIX}{}", self.command)
    }

    /// The block the model reads: the command, how it ended, and the output fenced.
    pub fn block(&self) -> String {
        let fence = fence_for(&self.text);
        let mut block = format!(
            "\n$ {}\n({})\n{fence}\n{}",
            self.command, self.outcome, self.text
        );
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            block.push('\n');
        }
        block.push_str(&fence);
        block.push('\n');
        block
    }
}

/// Everything a request is made of, before assembly.
#[derive(Debug, Clone, Default)]
pub struct ChunkInputs {
    pub system: String,
    /// Few-shot examples: alternating user / assistant messages.
    pub examples: Vec<Message>,
    pub readonly_files: Vec<PromptFile>,
    pub repo_map: Option<String>,
    /// History, starting with a user message and ending with an assistant message.
    pub done: Vec<Message>,
    pub chat_files: Vec<PromptFile>,
    /// Command outputs kept in the context, oldest first.
    pub command_outputs: Vec<CommandText>,
    /// The current turn: ends with a user message (the first is the user's own).
    pub cur: Vec<Message>,
    /// Appended to the last user message, so it is the last thing the model reads.
    pub reminder: Option<String>,
    /// A review diff, sent as its own user message before `cur`.
    pub review_diff: Option<String>,
}

/// Tokens of one section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionCount {
    pub section: Section,
    pub tokens: usize,
    pub messages: usize,
}

/// Tokens of one file's block as shown to the model (its share of its section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCount {
    pub path: String,
    pub section: Section,
    pub tokens: usize,
}

/// The assembled request and its accounting.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub messages: Vec<Message>,
    /// Every section in `Section::ALL` order, empty ones included; their tokens sum to
    /// `total` together with the request's own overhead (the primed reply), which is
    /// counted in `Section::System`.
    pub sections: Vec<SectionCount>,
    pub files: Vec<FileCount>,
    /// Predicted `usage.prompt_tokens`.
    pub total: usize,
}

impl Assembled {
    pub fn section(&self, section: Section) -> usize {
        self.sections
            .iter()
            .find(|s| s.section == section)
            .map_or(0, |s| s.tokens)
    }
}

/// How a file is shown: its path, then its content in a fence long enough that no line
/// of the content can close it.
pub(crate) fn file_block(file: &PromptFile) -> String {
    let fence = fence_for(&file.text);
    let mut block = String::with_capacity(file.text.len() + file.path.len() + 16);
    block.push('\n');
    block.push_str(&file.path);
    block.push('\n');
    block.push_str(&fence);
    block.push('\n');
    block.push_str(&file.text);
    if !file.text.is_empty() && !file.text.ends_with('\n') {
        block.push('\n');
    }
    block.push_str(&fence);
    block.push('\n');
    block
}

fn fence_for(text: &str) -> String {
    let longest = text
        .lines()
        .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count())
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// What `outputs` take in a request: the command output section alone, as assembled.
pub(crate) fn outputs_tokens(outputs: &[CommandText], counter: &TokenCounter) -> usize {
    let inputs = ChunkInputs {
        command_outputs: outputs.to_vec(),
        ..ChunkInputs::default()
    };
    assemble(&inputs, counter).section(Section::CommandOutput)
}

/// Builds the messages of a request and counts every section and file.
pub fn assemble(inputs: &ChunkInputs, counter: &TokenCounter) -> Assembled {
    let mut builder = Builder {
        counter,
        messages: Vec::new(),
        sections: Vec::new(),
        files: Vec::new(),
    };

    builder.push(
        Section::System,
        vec![Message::system(inputs.system.clone())],
    );
    builder.push(Section::Examples, inputs.examples.clone());
    builder.mark_breakpoint();
    builder.push_files(
        Section::ReadonlyFiles,
        READONLY_INTRO,
        READONLY_ACK,
        &inputs.readonly_files,
    );
    if let Some(map) = inputs.repo_map.as_ref().filter(|m| !m.trim().is_empty()) {
        builder.push(
            Section::Repo,
            vec![
                Message::user(format!("{REPO_INTRO}\n\n{map}")),
                Message::assistant(REPO_ACK),
            ],
        );
    } else {
        builder.push(Section::Repo, vec![]);
    }
    builder.mark_breakpoint();
    builder.push(Section::Done, inputs.done.clone());
    builder.push_files(Section::ChatFiles, CHAT_INTRO, CHAT_ACK, &inputs.chat_files);
    builder.mark_breakpoint();
    builder.push_outputs(&inputs.command_outputs);
    if let Some(diff) = &inputs.review_diff {
        builder.push(
            Section::ReviewDiff,
            vec![
                Message::user(diff.clone()),
                Message::assistant(REVIEW_DIFF_ACK),
            ],
        );
    } else {
        builder.push(Section::ReviewDiff, vec![]);
    }
    builder.push(Section::Cur, inputs.cur.clone());
    builder.push_reminder(inputs.reminder.as_deref());

    // Reply priming belongs to no section; it is billed with the system prompt.
    if let Some(system) = builder
        .sections
        .iter_mut()
        .find(|s| s.section == Section::System)
    {
        system.tokens += counter.per_request();
    }
    builder.sections.sort_by_key(|s| s.section);
    let total = builder.sections.iter().map(|s| s.tokens).sum();
    Assembled {
        messages: builder.messages,
        sections: builder.sections,
        files: builder.files,
        total,
    }
}

struct Builder<'a> {
    counter: &'a TokenCounter,
    messages: Vec<Message>,
    sections: Vec<SectionCount>,
    files: Vec<FileCount>,
}

impl Builder<'_> {
    fn push(&mut self, section: Section, messages: Vec<Message>) {
        let tokens = messages
            .iter()
            .map(|m| self.counter.count_message(&m.content))
            .sum();
        self.sections.push(SectionCount {
            section,
            tokens,
            messages: messages.len(),
        });
        self.messages.extend(messages);
    }

    fn push_files(&mut self, section: Section, intro: &str, ack: &str, files: &[PromptFile]) {
        let blocks = files.iter().map(|f| (f.path.clone(), file_block(f)));
        self.push_blocks(section, intro, ack, blocks);
    }

    fn push_outputs(&mut self, outputs: &[CommandText]) {
        let blocks = outputs.iter().map(|o| (o.label(), o.block()));
        self.push_blocks(Section::CommandOutput, OUTPUT_INTRO, OUTPUT_ACK, blocks);
    }

    /// One user message of `blocks` opened by `intro`, answered by `ack`; each block is
    /// counted under its name (a file's path, a command).
    fn push_blocks(
        &mut self,
        section: Section,
        intro: &str,
        ack: &str,
        blocks: impl Iterator<Item = (String, String)>,
    ) {
        let mut content = format!("{intro}\n");
        let mut any = false;
        for (name, block) in blocks {
            any = true;
            self.files.push(FileCount {
                path: name,
                section,
                tokens: self.counter.count(&block),
            });
            content.push_str(&block);
        }
        if !any {
            self.push(section, vec![]);
            return;
        }
        self.push(
            section,
            vec![Message::user(content), Message::assistant(ack)],
        );
    }

    /// Appends the reminder to the last user message. Its tokens are the difference it
    /// makes to that message, so the sections still sum to the exact total.
    fn push_reminder(&mut self, reminder: Option<&str>) {
        let Some(reminder) = reminder.filter(|r| !r.trim().is_empty()) else {
            self.sections.push(SectionCount {
                section: Section::Reminder,
                tokens: 0,
                messages: 0,
            });
            return;
        };
        let Some(last_user) = self
            .messages
            .iter_mut()
            .rev()
            .find(|m| m.role == Role::User)
        else {
            // No user message at all: the reminder stands alone.
            self.push(Section::Reminder, vec![Message::system(reminder)]);
            return;
        };
        let before = self.counter.count(&last_user.content);
        last_user.content.push_str("\n\n");
        last_user.content.push_str(reminder);
        let after = self.counter.count(&last_user.content);
        self.sections.push(SectionCount {
            section: Section::Reminder,
            tokens: after.saturating_sub(before),
            messages: 0,
        });
    }

    /// Marks the last message so far as the end of a cacheable prefix (no-op when the
    /// previous breakpoint is already there).
    fn mark_breakpoint(&mut self) {
        if let Some(last) = self.messages.last_mut() {
            last.cache_breakpoint = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    fn counter() -> TokenCounter {
        TokenCounter::new(Encoding::O200kBase, false)
    }

    fn inputs() -> ChunkInputs {
        ChunkInputs {
            system: "You are tern.".into(),
            examples: vec![Message::user("example q"), Message::assistant("example a")],
            readonly_files: vec![PromptFile {
                path: "docs/a.md".into(),
                text: "# A\n".into(),
            }],
            repo_map: Some("src/lib.rs:\n│fn x()\n".into()),
            done: vec![Message::user("earlier"), Message::assistant("reply")],
            chat_files: vec![PromptFile {
                path: "src/main.rs".into(),
                text: "fn main() {}\n".into(),
            }],
            cur: vec![Message::user("please change main")],
            reminder: Some("Use SEARCH/REPLACE blocks.".into()),
            review_diff: None,
            command_outputs: vec![CommandText {
                command: "cargo test".into(),
                outcome: "exit 101 after 2.0 s".into(),
                text: "test x ... FAILED\n".into(),
                test: true,
            }],
        }
    }

    #[test]
    fn sections_sum_to_the_count_of_the_messages_sent() {
        let c = counter();
        let a = assemble(&inputs(), &c);
        let sent = c.count_request(a.messages.iter().map(|m| m.content.as_str()));
        assert_eq!(a.total, sent);
        assert!(
            a.sections
                .iter()
                .all(|s| s.tokens > 0 || s.section == Section::ReviewDiff)
        );
    }

    #[test]
    fn roles_alternate_after_the_system_prompt() {
        let a = assemble(&inputs(), &counter());
        assert_eq!(a.messages[0].role, Role::System);
        for pair in a.messages[1..].windows(2) {
            assert_ne!(pair[0].role, pair[1].role, "{pair:?}");
        }
        assert_eq!(a.messages.last().unwrap().role, Role::User);
        assert!(
            a.messages
                .last()
                .unwrap()
                .content
                .ends_with("Use SEARCH/REPLACE blocks.")
        );
    }

    #[test]
    fn three_cache_breakpoints_at_the_stable_prefix_ends() {
        let a = assemble(&inputs(), &counter());
        let marked: Vec<&str> = a
            .messages
            .iter()
            .filter(|m| m.cache_breakpoint)
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(marked, vec!["example a", REPO_ACK, CHAT_ACK]);
    }

    #[test]
    fn fences_outgrow_backticks_in_the_file() {
        let block = file_block(&PromptFile {
            path: "README.md".into(),
            text: "```rust\nfn x() {}\n```\n".into(),
        });
        assert!(block.contains("\n````\n```rust"));
        assert!(block.ends_with("```\n````\n"));
    }
}
