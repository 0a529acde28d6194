//! Every text the model reads, from `assets/prompts/` (embedded at build time), and the
//! values put into the few that are templates. Only the words live here: the layout
//! around them (blank lines between parts, fences, diff markup, the names of a reply's
//! blocks) stays with the code that builds the request. A text is its file without the
//! trailing line break; the code that places it adds the breaks it needs (only
//! `SUMMARY_PREFIX` keeps its blank line, to stay one constant).
//!
//! Changing a text changes what every request costs and what provider caches hold, so
//! the files are the one place to do it.

use crate::edit_format::EditFormat;

/// A prompt file's text, without its trailing line break.
macro_rules! text {
    ($file:literal) => {
        include_str!(concat!("../assets/prompts/", $file)).trim_ascii_end()
    };
}

/// The fixed sections of a request in one edit format (or in ask mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    pub system: &'static str,
    /// Few-shot exchanges, each message after a `<!-- user -->` or
    /// `<!-- assistant -->` line; empty for none.
    pub examples: &'static str,
    /// Restates the format at the end of the request, where models attend most.
    pub reminder: &'static str,
}

/// The sections of a request whose replies edit in `format`.
pub fn edit_format(format: EditFormat) -> Sections {
    match format {
        EditFormat::Editblock => Sections {
            system: text!("editblock.md"),
            examples: text!("editblock-examples.md"),
            reminder: text!("editblock-reminder.md"),
        },
        EditFormat::Udiff => Sections {
            system: text!("udiff.md"),
            examples: text!("udiff-examples.md"),
            reminder: text!("udiff-reminder.md"),
        },
        EditFormat::Whole => Sections {
            system: text!("whole.md"),
            examples: text!("whole-examples.md"),
            reminder: text!("whole-reminder.md"),
        },
    }
}

/// A shorter system prompt for `format`, where it has one: for a window too small for
/// the long one (the reminder restates the format).
pub fn short_system(format: EditFormat) -> Option<&'static str> {
    match format {
        EditFormat::Editblock => Some(text!("editblock-short.md")),
        EditFormat::Udiff | EditFormat::Whole => None,
    }
}

/// The sections of a request in ask mode, whatever the edit format: no edits, no
/// examples.
pub const ASK: Sections = Sections {
    system: text!("ask.md"),
    examples: "",
    reminder: text!("ask-reminder.md"),
};

// The request's sections (`context::chunks`): each group of files or the map is a user
// message opened by an intro, answered by an acknowledgement so that roles alternate.

pub const READONLY_INTRO: &str = text!("context-readonly-intro.md");
pub const READONLY_ACK: &str = text!("context-readonly-ack.md");
pub const REPO_INTRO: &str = text!("context-repo-intro.md");
pub const REPO_ACK: &str = text!("context-repo-ack.md");
pub const CHAT_INTRO: &str = text!("context-chat-intro.md");
pub const CHAT_ACK: &str = text!("context-chat-ack.md");
pub const OUTPUT_INTRO: &str = text!("context-output-intro.md");
pub const OUTPUT_ACK: &str = text!("context-output-ack.md");
/// Answers a review diff sent as its own message.
pub const REVIEW_DIFF_ACK: &str = text!("context-review-ack.md");

// History summaries (`context::history`).

/// The summarizer's system prompt, asking for at most `words` words.
pub fn summarize(words: usize) -> String {
    fill(text!("summarize.md"), &[("words", &words.to_string())])
}

/// Goes before the summarize prompt when partial summaries are merged.
pub const SUMMARIZE_MERGE: &str = text!("summarize_merge.md");
/// Opens the summary that stands for the earlier history, up to the blank line after
/// which the summary follows (a constant whole, so that tests can find the summary).
pub const SUMMARY_PREFIX: &str = concat!(include_str!("../assets/prompts/summary-prefix.md"), "\n");
/// The assistant's answer to the summary, so that roles keep alternating.
pub const SUMMARY_ACK: &str = text!("summary-ack.md");
/// Stands for turns dropped without a summary (`/forget`, when summarizing fails), and
/// the assistant's answer to it.
pub const FORGOTTEN: &str = text!("forgotten.md");
pub const FORGOTTEN_ACK: &str = text!("forgotten-ack.md");
/// Stands in the history for a reply that came back empty, so the question stays.
pub const EMPTY_REPLY: &str = text!("empty-reply.md");

// Edits (`edit`): the commit message, failed blocks sent back, rejected hunks.

/// The weak model's system prompt for a commit message.
pub const COMMIT: &str = text!("commit.md");
/// Follows a diff cut short for the commit-message request.
pub const COMMIT_DIFF_TRUNCATED: &str = text!("commit-truncated.md");

/// Opens the reflection message when none of `failed` blocks applied.
pub fn reflection_none_applied(failed: usize) -> String {
    fill(
        text!("reflection-none-applied.md"),
        &[("failed", &failed.to_string())],
    )
}

/// Opens the reflection message when `applied` blocks applied and `failed` did not.
pub fn reflection_some_applied(failed: usize, applied: usize) -> String {
    fill(
        text!("reflection-some-applied.md"),
        &[
            ("failed", &failed.to_string()),
            ("applied", &applied.to_string()),
        ],
    )
}

/// Offers the lines of `path` from `line` on that a failed block probably meant.
pub fn reflection_near(path: &str, line: usize) -> String {
    fill(
        text!("reflection-near.md"),
        &[("path", path), ("line", &line.to_string())],
    )
}

/// Ends the reflection message: what to send again, in `format`.
pub fn reflection_retry(format: EditFormat) -> &'static str {
    match format {
        EditFormat::Editblock => text!("reflection-editblock.md"),
        EditFormat::Udiff => text!("reflection-udiff.md"),
        EditFormat::Whole => text!("reflection-whole.md"),
    }
}

/// Precedes the diff of the hunks the user rejected, in the next message.
pub const REJECTED_HUNKS: &str = text!("rejected-hunks.md");

/// Follows the rejected hunks: `n` more hunks the user rewrote and then did not apply
/// (their text is the user's, so it is not shown as the model's).
pub fn rejected_rewritten(n: usize) -> String {
    fill(text!("rejected-rewritten.md"), &[("n", &n.to_string())])
}

/// Precedes the diff of hunks the user rewrote before they were applied.
pub const USER_EDITED_HUNKS: &str = text!("user-edited-hunks.md");

// Branch review (`branch_review`, and the history line the engine keeps of a review).

/// The review's system prompt.
pub const REVIEW_SYSTEM: &str = text!("review.md");
/// Added to the system prompt for PR-Agent's `__new hunk__` / `__old hunk__` format.
pub const REVIEW_LINE_NUMBERS: &str = text!("review_line_numbers.md");

/// Opens a review request: what is compared.
pub fn review_preamble(description: &str) -> String {
    fill(text!("review-preamble.md"), &[("description", description)])
}

/// Says the diff is complete, with extra context.
pub const REVIEW_EXTENDED: &str = text!("review-extended.md");
/// Says the diff is compressed and some files are only listed.
pub const REVIEW_COMPRESSED: &str = text!("review-compressed.md");

/// Says which part of a split review a request is.
pub fn review_part(part: usize, parts: usize) -> String {
    fill(
        text!("review-part.md"),
        &[("part", &part.to_string()), ("parts", &parts.to_string())],
    )
}

/// Titles of the lists of files not shown; the system prompt explains them.
pub const REVIEW_ADDED_TITLE: &str = text!("review-added-title.md");
pub const REVIEW_MODIFIED_TITLE: &str = text!("review-modified-title.md");
pub const REVIEW_DELETED_TITLE: &str = text!("review-deleted-title.md");
/// Ends a list clipped to the budget.
pub const REVIEW_TRUNCATED: &str = text!("review-truncated.md");

/// What stands in the history for a finished review's request (the diff itself would
/// crowd the history).
pub fn review_history(description: &str) -> String {
    fill(text!("review-history.md"), &[("description", description)])
}

/// Leads the reasons the user gave for rejecting hunks, one `- hunk ID: reason` line
/// each, after the rejected hunks.
pub const REJECTED_REASONS: &str = text!("rejected-reasons.md");

/// The reason given for a hunk accepted in an editor (`tern acp`) that tern did not
/// land, since the editor held unsaved changes to its file.
pub const UNSAVED_IN_EDITOR: &str = text!("unsaved-in-editor.md");

// Git (`Engine::command`, `engine/mod.rs`).

/// What the model is told after the user undid its commit `id`; the commit's diff
/// follows it.
pub fn undone(id: &str, summary: &str) -> String {
    fill(text!("undone.md"), &[("id", id), ("summary", summary)])
}

// Command output (`run`): what stands where a command's output was cut.

/// Stands for the middle of a command's output that was never kept in memory.
pub fn command_bytes_omitted(lines: u64, bytes: u64) -> String {
    fill(
        text!("command-bytes-omitted.md"),
        &[("lines", &lines.to_string()), ("bytes", &bytes.to_string())],
    )
}

/// Stands for the lines of a command's output clipped to fit its token budget.
pub fn command_lines_omitted(lines: usize) -> String {
    fill(
        text!("command-lines-omitted.md"),
        &[("lines", &lines.to_string())],
    )
}

/// What the model is asked when a command run to check its work (`/test`, `/lint`, the
/// auto-test loop) failed; the output is in the command output section, not here.
pub fn command_failed(command: &str, outcome: &str) -> String {
    fill(
        text!("command-failed.md"),
        &[("command", command), ("outcome", outcome)],
    )
}

// Files a reply asked for (`engine::needed`).

/// Goes with the user's question when it is asked again with the files it needed
/// (`files` comma-separated, `mode` "read-only" or "editable").
pub fn needed_added(files: &str, mode: &str) -> String {
    fill(
        text!("needed-added.md"),
        &[("files", files), ("mode", mode)],
    )
}

/// What the model is told after `/undo turn` undid `count` of its commits (`ids`,
/// newest first); their diffs follow it.
pub fn undone_turn(count: usize, ids: &str) -> String {
    fill(
        text!("undone-turn.md"),
        &[("count", &count.to_string()), ("ids", ids)],
    )
}

/// `template` with each `{key}` of `values` replaced by its value, in one pass, so a
/// value is never read as a template; any other braces stay as written.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some((before, after)) = rest.split_once('{') {
        out.push_str(before);
        let filled = after.split_once('}').and_then(|(key, tail)| {
            let (_, value) = values.iter().find(|(k, _)| *k == key)?;
            Some((*value, tail))
        });
        match filled {
            Some((value, tail)) => {
                out.push_str(value);
                rest = tail;
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_keys_once_and_leaves_other_braces() {
        let filled = fill(
            "{a} and {b}: fn f() {} {c} {a}",
            &[("a", "{b}"), ("b", "two")],
        );
        assert_eq!(filled, "{b} and two: fn f() {} {c} {b}");
        assert_eq!(fill("tail {", &[("a", "x")]), "tail {");
        assert_eq!(fill("é{a}é", &[("a", "ü")]), "éüé");
    }

    /// The `{key}`s of a template.
    fn keys(template: &str) -> Vec<&str> {
        template
            .split('{')
            .skip(1)
            .filter_map(|s| s.split_once('}').map(|(key, _)| key))
            .filter(|key| !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase()))
            .collect()
    }

    #[test]
    fn every_template_gets_exactly_its_keys() {
        // Each template file's keys are the ones its function fills, so a key renamed
        // in a file (or in the code) fails here rather than reaching the model.
        let templates: [(&str, &[&str]); 13] = [
            (text!("summarize.md"), &["words"]),
            (text!("reflection-none-applied.md"), &["failed"]),
            (text!("reflection-some-applied.md"), &["failed", "applied"]),
            (text!("reflection-near.md"), &["path", "line"]),
            (text!("review-preamble.md"), &["description"]),
            (text!("review-part.md"), &["part", "parts"]),
            (text!("review-history.md"), &["description"]),
            (text!("undone.md"), &["id", "summary"]),
            (text!("needed-added.md"), &["mode", "files"]),
            (text!("undone-turn.md"), &["count", "ids"]),
            (text!("command-failed.md"), &["command", "outcome"]),
            (text!("command-bytes-omitted.md"), &["lines", "bytes"]),
            (text!("command-lines-omitted.md"), &["lines"]),
        ];
        for (template, expected) in templates {
            assert_eq!(keys(template), expected, "{template}");
        }
        for text in [
            summarize(10),
            reflection_none_applied(1),
            reflection_some_applied(1, 2),
            reflection_near("src/a.rs", 3),
            review_preamble("a"),
            review_part(1, 2),
            review_history("a"),
            undone("abc1234", "fix: x"),
            needed_added("a.rs, b.rs", "read-only"),
            undone_turn(2, "abc1234, def5678"),
            command_failed("cargo test", "exit 101 after 2.0 s"),
            command_bytes_omitted(3, 40),
            command_lines_omitted(7),
        ] {
            assert!(keys(&text).is_empty(), "{text}");
        }
    }

    #[test]
    fn the_summary_prefix_is_its_line_and_a_blank_line() {
        assert_eq!(
            SUMMARY_PREFIX,
            format!("{}\n\n", text!("summary-prefix.md"))
        );
    }
}
