//! The text the model sees for one file: a `## File: '<path>'` header and its hunks,
//! either as a unified diff or in PR-Agent's line-numbered format.

use std::fmt::Write;

use super::change::{FileChange, FileStatus, GitHunk, TextDiff};
use crate::diff::LineKind;

/// `## File: 'path'`, with what happened to the file when it is not a plain edit.
pub(crate) fn file_header(file: &FileChange) -> String {
    let mut h = format!("## File: '{}'", file.path);
    match (file.status, &file.old_path) {
        (FileStatus::Added, _) => h.push_str(" (new file)"),
        (FileStatus::Deleted, _) => h.push_str(" (deleted)"),
        (FileStatus::Renamed, Some(old)) => {
            let _ = write!(h, " (renamed from '{old}')");
        }
        _ => {}
    }
    h
}

/// One file's section, ending in a newline.
///
/// With `line_numbers`, each hunk is PR-Agent's pair: `__new hunk__` holds the new
/// version (context and added lines, each prefixed with its new-file line number), and
/// `__old hunk__`, only when the hunk removes something, the old version (context and
/// removed lines, unnumbered).
pub fn section(
    file: &FileChange,
    diff: &TextDiff,
    hunks: &[GitHunk],
    line_numbers: bool,
) -> String {
    let size: usize = hunks.iter().map(|h| h.lines.len() * 48).sum();
    let mut out = String::with_capacity(size + 64);
    out.push_str(&file_header(file));
    out.push_str("\n\n");
    for hunk in hunks {
        out.push_str(&hunk.header());
        out.push('\n');
        if line_numbers {
            numbered_hunk(diff, hunk, &mut out);
        } else {
            for line in &hunk.lines {
                out.push(line.kind.sign());
                out.push_str(diff.text(line));
                out.push('\n');
            }
        }
    }
    out
}

fn numbered_hunk(diff: &TextDiff, hunk: &GitHunk, out: &mut String) {
    let removes = hunk.lines.iter().any(|l| l.kind == LineKind::Removed);
    let new_side = hunk.lines.iter().filter(|l| l.kind != LineKind::Removed);
    if new_side.clone().next().is_some() {
        out.push_str("__new hunk__\n");
        for line in new_side {
            let _ = writeln!(out, "{} {}{}", line.new, line.kind.sign(), diff.text(line));
        }
    }
    if removes {
        out.push_str("__old hunk__\n");
        for line in hunk.lines.iter().filter(|l| l.kind != LineKind::Added) {
            out.push(line.kind.sign());
            out.push_str(diff.text(line));
            out.push('\n');
        }
    }
}
