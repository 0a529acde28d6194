//! Whole files: the path on the nearest line before (or in the info string of) a fence
//! holding the file's complete new content.

use super::block::{EditKind, Parsed, RawEdit};
use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::scan::{
    Fence, is_file_header, is_replace, is_search, join_lines, only_path_in_prose, path_line,
    shell_fence,
};
use crate::languages::Language;

pub(crate) fn parse(lines: &[&str], files: &FileSet) -> Parsed {
    let mut out = Parsed::default();
    let mut floor = 0;
    // The first fence that names no file, if no fence names one.
    let mut unnamed = None;
    let mut i = 0;
    while i < lines.len() {
        let Some(fence) = Fence::open(lines[i]) else {
            i += 1;
            continue;
        };
        let close = fence.close_in(lines, i + 1);
        let end = close.unwrap_or(lines.len());
        let body = &lines[(i + 1).min(end)..end];
        if holds_edits(&fence, body) {
            // Left to the parsers of SEARCH/REPLACE blocks and diffs: such a fence is
            // never a file's new content.
            i = end + 1;
            floor = i.min(lines.len());
            continue;
        }
        let filename = fence
            .filename(files)
            .or_else(|| name_line_before(lines, floor, i, &fence, files));
        out.taken.push(i..(end + 1).min(lines.len()));
        match (filename, close) {
            (None, Some(_)) => match shell_fence(lines, i) {
                Some((suggestion, _)) => out.shell.push(suggestion),
                None => unnamed = unnamed.or(Some(i)),
            },
            (None, None) => unnamed = unnamed.or(Some(i)),
            (Some(name), Some(_)) => {
                out.edits.push(RawEdit {
                    line: i,
                    filename: Some(name.clone()),
                    kind: EditKind::Whole {
                        content: join_lines(body),
                        new_file: false,
                    },
                    source: format!("{name}\n{}", lines[i..=end].join("\n")),
                });
            }
            (Some(name), None) => {
                out.errors.push((
                    i,
                    EditError::new(
                        0,
                        Some(name.into()),
                        Problem::Malformed(format!(
                            "the code block opened on reply line {} is never closed",
                            i + 1
                        )),
                        "",
                    ),
                ));
            }
        }
        i = end + 1;
        floor = i.min(lines.len());
    }
    if let Some(line) = unnamed.filter(|_| out.edits.is_empty() && out.errors.is_empty()) {
        out.errors
            .push((line, EditError::new(0, None, Problem::MissingFilename, "")));
    }
    out
}

/// Whether a fence holds edits of the other formats rather than a file: a diff
/// (```` ```diff ````, or a body that starts with `---`/`+++` headers) or a
/// SEARCH/REPLACE marker.
fn holds_edits(fence: &Fence<'_>, body: &[&str]) -> bool {
    let lang = fence.language();
    let first = body.iter().position(|l| !l.trim().is_empty());
    ["diff", "patch", "udiff"]
        .iter()
        .any(|d| lang.eq_ignore_ascii_case(d))
        || body.iter().any(|l| is_search(l) || is_replace(l))
        || first.is_some_and(|at| is_file_header(body, at))
}

/// The file named by the nearest non-blank line before the fence at `lines[at]` (not
/// before `floor`, the end of the previous block): a line that is only a path, however
/// decorated, or one that holds exactly one path, in backticks or as its last word
/// (``Here is the new version of `a.txt`:``). A path mentioned further up never names
/// the block, nor does a line with two: a whole-file block replaces the file entirely.
/// A shell fence is a command to run unless the path is a shell script (``Run it with
/// `python app.py`:`` does not make `python app.py` the new app.py).
fn name_line_before(
    lines: &[&str],
    floor: usize,
    at: usize,
    fence: &Fence<'_>,
    files: &FileSet,
) -> Option<String> {
    let line = lines
        .get(floor..at)?
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())?;
    if let Some(name) = path_line(line, files) {
        return Some(name);
    }
    only_path_in_prose(line, files)
        .filter(|name| !fence.is_shell() || Language::of(name) == Language::Shell)
}
