//! Hunks as lines for a diff view, and as unified diff text (for the terminal, the
//! commit-message prompt and the model's rejected-hunks summary).

use std::fmt::Write;
use std::path::PathBuf;

use similar::DiffOp;

use super::hunks::{CONTEXT, Decision, Hunk};
use super::proposal::{FileProposal, Proposal};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Removed,
    Added,
}

/// One line of a hunk as a diff view shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine<'a> {
    pub kind: LineKind,
    /// 1-based line number in the original, for context and removed lines.
    pub old: Option<usize>,
    /// 1-based line number in the proposed content, for context and added lines.
    pub new: Option<usize>,
    /// The line without its line ending.
    pub text: &'a str,
    /// The line has no newline (the file's last line).
    pub no_newline: bool,
}

impl FileProposal {
    /// The lines of hunk `index`, with up to `context` unchanged lines on each side (never
    /// reaching into the neighbouring hunks).
    pub fn hunk_lines(&self, index: usize, context: usize) -> Vec<DiffLine<'_>> {
        Sides::of(self).hunk(self, index, context)
    }

    /// The lines of every hunk (splitting the file once, for views of many hunks).
    pub fn all_hunk_lines(&self, context: usize) -> Vec<Vec<DiffLine<'_>>> {
        let sides = Sides::of(self);
        (0..self.hunks().len())
            .map(|i| sides.hunk(self, i, context))
            .collect()
    }
}

impl Proposal {
    /// For the model's next turn: the hunks the user rejected (or left undecided) and
    /// so were not applied. None when every hunk was accepted.
    /// Hunks the user rewrote (`e`) are not the model's: they are only counted.
    pub fn rejected_summary(&self) -> Option<String> {
        let mut body = String::new();
        for file in self.files() {
            let diff = unified_diff(file, |h| h.decision != Decision::Accept && !h.edited, false);
            body.push_str(&diff);
        }
        let rewritten = self
            .files()
            .iter()
            .flat_map(|f| f.hunks())
            .filter(|h| h.decision != Decision::Accept && h.edited)
            .count();
        let mut out = String::new();
        if !body.is_empty() {
            out = format!("{}\n\n```diff\n{body}```\n", crate::prompts::REJECTED_HUNKS);
        }
        if rewritten > 0 {
            out.push_str(&crate::prompts::rejected_rewritten(rewritten));
            out.push('\n');
        }
        (!out.is_empty()).then_some(out)
    }

    /// The accepted hunks the user wrote themselves (`e`), as a diff per file: once
    /// written, the model is told that the files hold the user's version there, not
    /// its own.
    pub fn rewritten_diffs(&self) -> Vec<(PathBuf, String)> {
        self.files()
            .iter()
            .map(|f| {
                let diff = unified_diff(f, |h| h.decision == Decision::Accept && h.edited, false);
                (f.path().to_path_buf(), diff)
            })
            .filter(|(_, diff)| !diff.is_empty())
            .collect()
    }
}

/// The original and proposed content split into lines.
struct Sides<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
}

impl<'a> Sides<'a> {
    fn of(file: &'a FileProposal) -> Self {
        Sides {
            old: file.original().text().split_inclusive('\n').collect(),
            new: file.proposed().split_inclusive('\n').collect(),
        }
    }

    fn line(&self, kind: LineKind, o: Option<usize>, n: Option<usize>) -> DiffLine<'a> {
        let text = match kind {
            LineKind::Added => self.new[n.unwrap_or_default()],
            _ => self.old[o.unwrap_or_default()],
        };
        DiffLine {
            kind,
            old: o.map(|i| i + 1),
            new: n.map(|i| i + 1),
            text: text.trim_end_matches('\n').trim_end_matches('\r'),
            no_newline: !text.ends_with('\n'),
        }
    }

    fn hunk(&self, file: &FileProposal, index: usize, context: usize) -> Vec<DiffLine<'a>> {
        let hunks = file.hunks();
        let h = &hunks[index];
        let prev_end = index.checked_sub(1).map_or(0, |i| hunks[i].old.end);
        let next_start = hunks.get(index + 1).map_or(self.old.len(), |n| n.old.start);
        let mut out = Vec::new();
        let before = context.min(h.old.start - prev_end);
        for i in h.old.start - before..h.old.start {
            out.push(self.line(
                LineKind::Context,
                Some(i),
                Some(i + h.new.start - h.old.start),
            ));
        }
        for op in h.ops() {
            let (o, n) = (op.old_range(), op.new_range());
            match op {
                DiffOp::Equal { .. } => {
                    out.extend(
                        o.zip(n)
                            .map(|(a, b)| self.line(LineKind::Context, Some(a), Some(b))),
                    );
                }
                _ => {
                    out.extend(o.map(|a| self.line(LineKind::Removed, Some(a), None)));
                    out.extend(n.map(|b| self.line(LineKind::Added, None, Some(b))));
                }
            }
        }
        let after = context.min(next_start - h.old.end);
        for i in h.old.end..h.old.end + after {
            out.push(self.line(LineKind::Context, Some(i), Some(i + h.new.end - h.old.end)));
        }
        out
    }
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
/// Where a hidden character is (its marker): yellow, reversed, so it reads as no text.
const WARN: &str = "\x1b[33;7m";
const RESET: &str = "\x1b[0m";

/// The file's hunks that `show` selects as a unified diff, each `@@` header followed by
/// the hunk's id. Empty when no hunk is selected. `color` (the diff is for a terminal)
/// adds ANSI colours and makes the files' control characters visible.
pub fn unified_diff(file: &FileProposal, show: impl Fn(&Hunk) -> bool, color: bool) -> String {
    let sides = Sides::of(file);
    let hunks = file
        .hunks()
        .iter()
        .enumerate()
        .filter(|(_, hunk)| show(hunk))
        .map(|(index, hunk)| HunkText {
            label: hunk.id.to_string(),
            old_start: hunk.old.start,
            new_start: hunk.new.start,
            lines: sides.hunk(file, index, CONTEXT),
        });
    let path = file.path().display().to_string();
    let mut out = String::new();
    write_unified(&mut out, &path, file.is_new(), hunks, color);
    out
}

/// A hunk as a unified diff writes it.
pub struct HunkText<'a> {
    /// What follows the `@@` header: the hunk's id.
    pub label: String,
    /// 0-based first lines, for the header of a side with no lines.
    pub old_start: usize,
    pub new_start: usize,
    pub lines: Vec<DiffLine<'a>>,
}

/// Appends one file's hunks to `out` as a unified diff (nothing when there are none).
/// The one writer of tern's diffs, for the model and for the terminal alike; `color`
/// adds ANSI colours and makes control characters visible.
pub fn write_unified<'a>(
    out: &mut String,
    path: &str,
    created: bool,
    hunks: impl IntoIterator<Item = HunkText<'a>>,
    color: bool,
) {
    let paint = |code: &'static str| if color { code } else { "" };
    let reset = paint(RESET);
    let mut header = true;
    for hunk in hunks {
        if std::mem::take(&mut header) {
            let path = crate::terminal_text::for_terminal(path, color);
            let old = if created {
                "/dev/null".to_string()
            } else {
                format!("a/{path}")
            };
            let _ = writeln!(out, "{}--- {old}\n+++ b/{path}{reset}", paint(BOLD));
        }
        let lines = &hunk.lines;
        let span = |pick: fn(&DiffLine<'_>) -> Option<usize>, fallback: usize| {
            let mut numbers = lines.iter().filter_map(pick);
            match numbers.next() {
                Some(first) => format!("{first},{}", 1 + numbers.count()),
                None => format!("{fallback},0"),
            }
        };
        let _ = writeln!(
            out,
            "{}@@ -{} +{} @@{reset} {}",
            paint(CYAN),
            span(|l| l.old, hunk.old_start),
            span(|l| l.new, hunk.new_start),
            hunk.label
        );
        for l in lines {
            let (mark, code) = match l.kind {
                LineKind::Context => (' ', ""),
                LineKind::Removed => ('-', RED),
                LineKind::Added => ('+', GREEN),
            };
            let (start, end) = if code.is_empty() {
                ("", "")
            } else {
                (paint(code), reset)
            };
            let text = crate::terminal_text::for_terminal(l.text, color);
            let text = match color {
                true => paint_markers(&text, start),
                false => text.into_owned(),
            };
            let _ = writeln!(out, "{start}{mark}{text}{end}");
            if l.no_newline {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
}

/// Visible `text` with each hidden character's marker painted [`WARN`], then back to
/// the line's colour `line`.
fn paint_markers(text: &str, line: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in crate::terminal_text::markers(text) {
        out.push_str(text.get(at..range.start).unwrap_or_default());
        out.push_str(WARN);
        out.push_str(text.get(range.clone()).unwrap_or_default());
        out.push_str(RESET);
        out.push_str(line);
        at = range.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_painted_and_the_line_colour_comes_back() {
        let shown = crate::terminal_text::visible("a\u{202e}b ⟨U+0041⟩").into_owned();
        assert_eq!(
            paint_markers(&shown, GREEN),
            format!("a{WARN}⟨U+202E⟩{RESET}{GREEN}b ⟨U+0041⟩")
        );
    }
}
