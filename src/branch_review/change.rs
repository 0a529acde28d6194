//! What changed: files, their old and new text, and git's hunks over them.
//!
//! Hunk lines refer to lines of the file texts by number instead of holding copies, so a
//! 50,000-line diff costs a few hundred kilobytes and extending a hunk with more context
//! is just more line numbers.

pub use crate::diff::FileStatus;
use crate::diff::{Counts, FileText, LineKind, hunk_header};

/// The files of one diff, in git's order, with a line saying what was compared.
#[derive(Debug, Clone)]
pub struct ChangeSet {
    /// For example "`feature` (HEAD 1a2b3c4) against its merge base with `main` (5d6e7f8)".
    pub description: String,
    pub files: Vec<FileChange>,
}

#[derive(Debug, Clone)]
pub struct FileChange {
    /// The path after the change (before it, for a deleted file), `/`-separated.
    pub path: String,
    /// The path before a rename.
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub body: Body,
}

/// What can be shown of a file's change.
#[derive(Debug, Clone)]
pub enum Body {
    Text(Box<TextDiff>),
    /// Listed, never diffed.
    Binary,
    /// A gitlink: the submodule moved to another commit.
    Submodule,
}

/// A text file's two versions and git's hunks between them (3 lines of context).
#[derive(Debug, Clone)]
pub struct TextDiff {
    pub old: FileText,
    pub new: FileText,
    pub hunks: Vec<GitHunk>,
}

/// A hunk as git computes it, with the function context of its header (a proposal's
/// hunk, with its id and decision, is `edit::Hunk`). `*_first` is the first line of the
/// hunk's span on that side (1-based); when a side has no lines, it is where they would
/// start (git's header shows `first - 1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitHunk {
    pub old_first: u32,
    pub old_len: u32,
    pub new_first: u32,
    pub new_len: u32,
    /// The function context git prints after the second `@@`.
    pub section: String,
    pub lines: Vec<HunkLine>,
}

/// A line of a hunk: its kind and its number in the old and new file (0 on the side
/// where it does not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HunkLine {
    pub kind: LineKind,
    pub old: u32,
    pub new: u32,
}

impl GitHunk {
    /// True when the hunk adds nothing: it only removes lines.
    pub(crate) fn only_removes(&self) -> bool {
        !self.lines.iter().any(|l| l.kind == LineKind::Added)
    }

    /// `@@ -a,b +c,d @@ section`, as git writes it (`,1` left out, `a - 1` for a side
    /// with no lines).
    pub fn header(&self) -> String {
        let side = |first: u32, len: u32| (first as usize, len as usize);
        let mut h = hunk_header(
            side(self.old_first, self.old_len),
            side(self.new_first, self.new_len),
            Counts::Git,
        );
        if !self.section.is_empty() {
            h.push(' ');
            h.push_str(&self.section);
        }
        h
    }
}

impl TextDiff {
    /// The text of a hunk line, from the side it belongs to.
    pub fn text(&self, line: &HunkLine) -> &str {
        match line.kind {
            LineKind::Added => self.new.line(line.new),
            LineKind::Removed | LineKind::Context => self.old.line(line.old),
        }
    }

    /// The hunks a compressed review shows: every hunk that adds something.
    pub fn adding_hunks(&self) -> Vec<GitHunk> {
        self.hunks
            .iter()
            .filter(|h| !h.only_removes())
            .cloned()
            .collect()
    }

    /// Lines added and lines removed.
    pub(crate) fn line_counts(&self) -> (usize, usize) {
        let mut counts = (0, 0);
        for line in self.hunks.iter().flat_map(|h| &h.lines) {
            match line.kind {
                LineKind::Added => counts.0 += 1,
                LineKind::Removed => counts.1 += 1,
                LineKind::Context => {}
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_uses_gits_convention_for_empty_sides() {
        let h = GitHunk {
            old_first: 1,
            old_len: 0,
            new_first: 1,
            new_len: 2,
            section: String::new(),
            lines: vec![],
        };
        assert_eq!(h.header(), "@@ -0,0 +1,2 @@");
        let one = GitHunk {
            old_first: 4,
            old_len: 1,
            new_len: 1,
            section: "fn main()".into(),
            ..h
        };
        assert_eq!(one.header(), "@@ -4 +1 @@ fn main()");
    }
}
