//! A proposal's hunks as lines for a diff view, and as unified diff text (for the
//! terminal, the commit-message prompt and the model's rejected-hunks summary).

use std::path::PathBuf;

use similar::DiffOp;

use super::hunks::{CONTEXT, Decision, Hunk};
use super::proposal::{FileProposal, Proposal};
use crate::diff::{Counts, DiffLine, HunkText, LineKind, write_unified};

impl FileProposal {
    /// The lines of hunk `index`, with up to `context` unchanged lines on each side (never
    /// reaching into the neighbouring hunks).
    pub fn hunk_lines(&self, index: usize, context: usize) -> Vec<DiffLine<&str>> {
        Sides::of(self).hunk(self, index, context)
    }

    /// The lines of every hunk (splitting the file once, for views of many hunks).
    pub fn all_hunk_lines(&self, context: usize) -> Vec<Vec<DiffLine<&str>>> {
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

    fn line(&self, kind: LineKind, o: Option<usize>, n: Option<usize>) -> DiffLine<&'a str> {
        let text = match kind {
            LineKind::Added => self.new[n.unwrap_or_default()],
            _ => self.old[o.unwrap_or_default()],
        };
        DiffLine {
            kind,
            old_line: o.map(|i| i + 1),
            new_line: n.map(|i| i + 1),
            text: text.trim_end_matches('\n').trim_end_matches('\r'),
            no_newline: !text.ends_with('\n'),
        }
    }

    fn hunk(&self, file: &FileProposal, index: usize, context: usize) -> Vec<DiffLine<&'a str>> {
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
            old_first: hunk.old.start + 1,
            new_first: hunk.new.start + 1,
            lines: sides.hunk(file, index, CONTEXT),
        });
    let path = file.path().display().to_string();
    let mut out = String::new();
    write_unified(&mut out, &path, file.is_new(), hunks, color, Counts::Always);
    out
}
