//! Diffs as text: the `@@` header and the unified diff tern writes, for the model and
//! for the terminal alike.

use std::fmt::Write;

use super::line::{DiffLine, LineKind};

/// How a hunk header writes a side of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counts {
    /// As git does: `-4` for one line.
    Git,
    /// `-4,1`: every count written, as the diffs the model reads have always been.
    Always,
}

/// `@@ -a,b +c,d @@` for the old and new side, each given as its first line (1-based)
/// and its length. A side with no lines shows the line before where they would be (0 in
/// an empty file), as git does.
pub(crate) fn hunk_header(old: (usize, usize), new: (usize, usize), counts: Counts) -> String {
    let side = |(first, len): (usize, usize)| match len {
        0 => format!("{},0", first.saturating_sub(1)),
        1 if counts == Counts::Git => first.to_string(),
        _ => format!("{first},{len}"),
    };
    format!("@@ -{} +{} @@", side(old), side(new))
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
/// Where a hidden character is (its marker): yellow, reversed, so it reads as no text.
const WARN: &str = "\x1b[33;7m";
const RESET: &str = "\x1b[0m";

/// A hunk as a unified diff writes it.
pub struct HunkText<T> {
    /// What follows the `@@` header: the hunk's id.
    pub label: String,
    /// First lines (1-based), for the header of a side with no lines.
    pub old_first: usize,
    pub new_first: usize,
    pub lines: Vec<DiffLine<T>>,
}

/// Appends one file's hunks to `out` as a unified diff (nothing when there are none).
/// The one writer of tern's diffs, for the model and for the terminal alike; `color`
/// adds ANSI colours and makes control characters visible; `counts` is git's rule for
/// a person, `Always` for the model (whose texts stay as they were).
pub(crate) fn write_unified<T: AsRef<str>>(
    out: &mut String,
    path: &str,
    created: bool,
    hunks: impl IntoIterator<Item = HunkText<T>>,
    color: bool,
    counts: Counts,
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
        let header = hunk_header(
            shown_side(lines, |l| l.old_line, hunk.old_first),
            shown_side(lines, |l| l.new_line, hunk.new_first),
            counts,
        );
        let _ = writeln!(out, "{}{header}{reset} {}", paint(CYAN), hunk.label);
        for l in lines {
            let code = match l.kind {
                LineKind::Context => "",
                LineKind::Removed => RED,
                LineKind::Added => GREEN,
            };
            let (start, end) = if code.is_empty() {
                ("", "")
            } else {
                (paint(code), reset)
            };
            let text = crate::terminal_text::for_terminal(l.text.as_ref(), color);
            let text = match color {
                true => paint_markers(&text, start),
                false => text.into_owned(),
            };
            let _ = writeln!(out, "{start}{}{text}{end}", l.kind.sign());
            if l.no_newline {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
}

/// A side of the lines shown, for their header: the first line number `pick` finds and
/// how many it finds; `first` (1-based) when the side has none.
pub(crate) fn shown_side<T>(
    lines: &[DiffLine<T>],
    pick: fn(&DiffLine<T>) -> Option<usize>,
    first: usize,
) -> (usize, usize) {
    let mut numbers = lines.iter().filter_map(pick);
    match numbers.next() {
        Some(found) => (found, 1 + numbers.count()),
        None => (first, 0),
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
    fn headers_follow_git_and_the_models_diffs_keep_every_count() {
        assert_eq!(hunk_header((4, 1), (4, 2), Counts::Git), "@@ -4 +4,2 @@");
        assert_eq!(
            hunk_header((4, 1), (4, 2), Counts::Always),
            "@@ -4,1 +4,2 @@"
        );
        // A side with no lines shows the line before; 0 in an empty file.
        assert_eq!(hunk_header((1, 0), (1, 3), Counts::Git), "@@ -0,0 +1,3 @@");
        assert_eq!(
            hunk_header((7, 2), (7, 0), Counts::Always),
            "@@ -7,2 +6,0 @@"
        );
    }

    #[test]
    fn a_side_is_the_numbers_shown_or_where_it_would_start() {
        let line = |old_line, new_line| DiffLine {
            kind: LineKind::Context,
            old_line,
            new_line,
            text: "x",
            no_newline: false,
        };
        let lines = [line(Some(3), None), line(Some(4), Some(9))];
        assert_eq!(shown_side(&lines, |l| l.old_line, 1), (3, 2));
        assert_eq!(shown_side(&lines, |l| l.new_line, 1), (9, 1));
        assert_eq!(shown_side(&lines[..1], |l| l.new_line, 5), (5, 0));
    }

    #[test]
    fn markers_are_painted_and_the_line_colour_comes_back() {
        let shown = crate::terminal_text::visible("a\u{202e}b ⟨U+0041⟩").into_owned();
        assert_eq!(
            paint_markers(&shown, GREEN),
            format!("a{WARN}⟨U+202E⟩{RESET}{GREEN}b ⟨U+0041⟩")
        );
    }
}
