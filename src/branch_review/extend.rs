//! Extra context around git's hunks, read from the real file: N lines before (default
//! 5) and 1 after, on top of git's 3, never past either end of the file and never
//! repeating a line another hunk already shows.
//!
//! Dynamic context (PR-Agent's `allow_dynamic_context`): when the enclosing function or
//! class header lies within [`MAX_CONTEXT`] lines above a hunk, the hunk starts at that
//! header instead, so the model sees which function a change is in. "Enclosing" is
//! cheap: the nearest line above that [`is_header`] accepts and that is indented no
//! deeper than the hunk's least indented line.

use super::change::{GitHunk, HunkLine, TextDiff};
use super::lang::{Language, is_header};
use crate::diff::LineKind;

/// The most extra lines before or after a hunk, and how far up dynamic context looks.
pub const MAX_CONTEXT: u32 = 10;

/// How much extra context each hunk gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextOptions {
    /// Extra lines before each hunk, at most [`MAX_CONTEXT`].
    pub before: u32,
    /// Extra lines after each hunk, at most [`MAX_CONTEXT`].
    pub after: u32,
    /// Start at the enclosing function/class header when it is within reach.
    pub dynamic: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            before: 5,
            after: 1,
            dynamic: true,
        }
    }
}

/// `diff`'s hunks with extra context lines, clamped to the file and to the gaps between
/// hunks. Context lines lie in unchanged regions, where the old and new files agree, so
/// they are read from the old file and numbered on both sides.
pub fn extend(diff: &TextDiff, lang: Language, opts: ContextOptions) -> Vec<GitHunk> {
    let before_max = opts.before.min(MAX_CONTEXT);
    let after_max = opts.after.min(MAX_CONTEXT);
    let old_total = diff.old.line_count();
    let mut out: Vec<GitHunk> = Vec::with_capacity(diff.hunks.len());
    // Last old line already shown by an earlier (extended) hunk.
    let mut shown_until = 0u32;
    for (i, hunk) in diff.hunks.iter().enumerate() {
        let room_before = hunk.old_first.saturating_sub(1 + shown_until);
        let mut before = before_max.min(room_before);
        if opts.dynamic
            && let Some(distance) = header_distance(diff, hunk, lang, room_before)
        {
            before = distance;
        }
        let old_end = hunk.old_first + hunk.old_len; // first old line after the hunk
        let next_first = diff
            .hunks
            .get(i + 1)
            .map_or(old_total + 1, |next| next.old_first);
        let after = after_max.min(next_first.saturating_sub(old_end));
        let after = after.min((old_total + 1).saturating_sub(old_end));

        let context = |old: u32| HunkLine {
            kind: LineKind::Context,
            old,
            new: old + hunk.new_first - hunk.old_first,
        };
        let tail_offset = (hunk.new_first + hunk.new_len) as i64 - old_end as i64;
        let mut lines = Vec::with_capacity(hunk.lines.len() + (before + after) as usize);
        lines.extend((hunk.old_first - before..hunk.old_first).map(context));
        lines.extend_from_slice(&hunk.lines);
        lines.extend((old_end..old_end + after).map(|old| HunkLine {
            kind: LineKind::Context,
            old,
            new: (old as i64 + tail_offset) as u32,
        }));
        shown_until = old_end + after - 1;
        out.push(GitHunk {
            old_first: hunk.old_first - before,
            old_len: hunk.old_len + before + after,
            new_first: hunk.new_first - before,
            new_len: hunk.new_len + before + after,
            section: hunk.section.clone(),
            lines,
        });
    }
    out
}

/// How many lines above `hunk` its enclosing header is, if it is within reach and the
/// hunk does not already start with one.
fn header_distance(diff: &TextDiff, hunk: &GitHunk, lang: Language, room: u32) -> Option<u32> {
    let indent = |s: &str| s.len() - s.trim_start().len();
    let texts = hunk
        .lines
        .iter()
        .map(|l| diff.text(l))
        .filter(|t| !t.trim().is_empty());
    let min_indent = texts.clone().map(indent).min()?;
    let first = texts.clone().next()?;
    if indent(first) == min_indent && is_header(lang, first) {
        return None;
    }
    (1..=MAX_CONTEXT.min(room)).find(|&d| {
        let line = diff.old.line(hunk.old_first - d);
        !line.trim().is_empty() && indent(line) <= min_indent && is_header(lang, line)
    })
}
