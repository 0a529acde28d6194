//! A hunk that stands on its own: the lines it replaces, the unchanged lines around
//! them and how it changes them, without line numbers. Placing such hunks in a file's
//! current content is how a proposal follows a file that changed on disk (each hunk is
//! found again by its own lines, or fails with a reason) and how a saved session's
//! proposal is restored.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use super::doc::Span;
use super::hunks::Decision;

/// One hunk, by content. Lines keep their `\n` (the last line of a file may lack it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HunkSnapshot {
    /// Unchanged lines right before the hunk; `at_start`: they begin the file.
    pub before: Vec<String>,
    pub at_start: bool,
    /// The lines it replaces.
    pub old: Vec<String>,
    /// Unchanged lines right after the hunk; `at_end`: they end the file.
    pub after: Vec<String>,
    pub at_end: bool,
    /// How `old` becomes the new lines.
    pub parts: Vec<Part>,
    pub decision: Decision,
    /// The user wrote its new lines (`e` in the review).
    #[serde(default)]
    pub edited: bool,
}

/// A step of a hunk, through its `old` lines in order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Part {
    /// The next lines of `old`, unchanged (they keep the file's bytes).
    Keep(usize),
    /// The next lines of `old`, removed.
    Remove(usize),
    /// New lines.
    Add(Vec<String>),
}

/// One file of a saved proposal.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileSnapshot {
    pub path: PathBuf,
    pub existed: bool,
    /// xxh3 of the bytes the proposal was made from: when the file still holds them,
    /// the decisions made stay; otherwise every hunk is reviewed again.
    pub original_hash: u64,
    pub confirmed: bool,
    pub hunks: Vec<HunkSnapshot>,
}

/// A whole proposal, to save with a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProposalSnapshot {
    pub files: Vec<FileSnapshot>,
    /// Ids that split or edited hunks had, with the ids they became (as shown), so
    /// that they still name them after `tern --resume`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<(String, Vec<String>)>,
}

impl ProposalSnapshot {
    /// How many hunks it holds.
    pub fn hunk_count(&self) -> usize {
        self.files.iter().map(|f| f.hunks.len()).sum()
    }
}

impl HunkSnapshot {
    fn pattern(&self) -> impl Iterator<Item = &str> {
        self.before
            .iter()
            .chain(&self.old)
            .chain(&self.after)
            .map(String::as_str)
    }

    fn pattern_len(&self) -> usize {
        self.before.len() + self.old.len() + self.after.len()
    }
}

/// Why a hunk cannot be placed in a file's new content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Misplaced {
    #[error("the lines it changes, or the lines around them, are no longer in the file")]
    Gone,
    #[error("it now overlaps another hunk")]
    Overlaps,
    #[error("the lines it changes now occur at several places in the file")]
    Ambiguous,
}

/// Finds each hunk in `lines` (a file split after each `\n`): where its `old` lines
/// start, or why it cannot be placed. A hunk must match exactly one place, with its
/// surrounding lines, and must not overlap a hunk placed before it.
pub(crate) fn place(lines: &[&str], hunks: &[HunkSnapshot]) -> Vec<Result<usize, Misplaced>> {
    let firsts: HashSet<&str> = hunks.iter().filter_map(|h| h.pattern().next()).collect();
    let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        if firsts.contains(line) {
            at.entry(line).or_default().push(i);
        }
    }
    let mut placed_end = 0;
    let mut out = Vec::with_capacity(hunks.len());
    for hunk in hunks {
        let n = hunk.pattern_len();
        let fits = |start: usize| {
            start + n <= lines.len()
                // A hunk at the very start or end of the file stays there; one with
                // lines around it is found by them.
                && (!(hunk.at_start && hunk.before.is_empty()) || start == 0)
                && (!(hunk.at_end && hunk.after.is_empty()) || start + n == lines.len())
                && lines[start..start + n].iter().copied().eq(hunk.pattern())
        };
        let found: Vec<usize> = match hunk.pattern().next() {
            None => (0..=lines.len()).filter(|&s| fits(s)).take(2).collect(),
            Some(first) => at
                .get(first)
                .map(|starts| {
                    starts
                        .iter()
                        .copied()
                        .filter(|&s| fits(s))
                        .take(2)
                        .collect()
                })
                .unwrap_or_default(),
        };
        let result = match found.as_slice() {
            [] => Err(Misplaced::Gone),
            [start] if start + hunk.before.len() < placed_end => Err(Misplaced::Overlaps),
            [start] => {
                let start = start + hunk.before.len();
                placed_end = start + hunk.old.len();
                Ok(start)
            }
            _ => Err(Misplaced::Ambiguous),
        };
        out.push(result);
    }
    out
}

/// The document's spans for `placed` hunks (where each one's `old` lines start, in
/// order) applied to `lines`, and whether it ends with a newline.
pub(crate) fn spans_of(
    lines: &[&str],
    placed: &[(usize, &HunkSnapshot)],
) -> (Vec<Span<'static>>, bool) {
    let mut spans = Vec::new();
    // The document's last line so far, with its `\n` if it has one.
    let mut last: Option<&str> = None;
    let mut cursor = 0;
    for &(start, hunk) in placed {
        keep(&mut spans, &mut last, lines, cursor..start);
        let mut at = start;
        for part in &hunk.parts {
            match part {
                Part::Keep(n) => {
                    keep(&mut spans, &mut last, lines, at..at + n);
                    at += n;
                }
                Part::Remove(n) => at += n,
                Part::Add(new) => {
                    if let Some(l) = new.last() {
                        last = Some(l);
                    }
                    spans.push(Span::New(
                        new.iter()
                            .map(|l| l.strip_suffix('\n').unwrap_or(l).to_string().into())
                            .collect(),
                    ));
                }
            }
        }
        cursor = start + hunk.old.len();
    }
    keep(&mut spans, &mut last, lines, cursor..lines.len());
    (spans, last.is_none_or(|l| l.ends_with('\n')))
}

/// Adds original lines `r` to `spans`, noting the last one.
fn keep<'l>(
    spans: &mut Vec<Span<'static>>,
    last: &mut Option<&'l str>,
    lines: &[&'l str],
    r: std::ops::Range<usize>,
) {
    if let Some(end) = r.end.checked_sub(1).filter(|_| !r.is_empty()) {
        *last = Some(lines[end]);
    }
    spans.push(Span::Orig(r));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(before: &[&str], old: &[&str], after: &[&str]) -> HunkSnapshot {
        let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        HunkSnapshot {
            before: lines(before),
            at_start: false,
            old: lines(old),
            after: lines(after),
            at_end: false,
            parts: vec![Part::Remove(old.len())],
            decision: Decision::Pending,
            edited: false,
        }
    }

    #[test]
    fn a_hunk_is_placed_once_or_says_why_not() {
        let lines = ["a\n", "b\n", "c\n", "a\n", "b\n", "c\n", "x\n", "y\n"];
        let placed = place(
            &lines,
            &[
                hunk(&["x\n"], &["y\n"], &[]),
                hunk(&["a\n"], &["b\n"], &["c\n"]),
                hunk(&["q\n"], &["b\n"], &[]),
            ],
        );
        assert_eq!(
            placed,
            [Ok(7), Err(Misplaced::Ambiguous), Err(Misplaced::Gone)]
        );
        let overlapping = place(
            &lines,
            &[
                hunk(&["x\n"], &["y\n"], &[]),
                hunk(&[], &["c\n", "x\n"], &[]),
            ],
        );
        assert_eq!(overlapping, [Ok(7), Err(Misplaced::Overlaps)]);
        assert_eq!(
            Misplaced::Overlaps.to_string(),
            "it now overlaps another hunk"
        );
    }
}
