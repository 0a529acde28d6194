//! Whole files: the path on the line before (or in the info string of) a fence holding
//! the file's complete new content.

use super::block::{EditKind, Parsed, RawEdit};
use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::scan::{Fence, join_lines, path_line, shell_fence};

pub(crate) fn parse(lines: &[&str], files: &FileSet) -> Parsed {
    let mut out = Parsed::default();
    let mut block = 0;
    let mut floor = 0;
    let mut unnamed = 0;
    let mut i = 0;
    while i < lines.len() {
        let Some(fence) = Fence::open(lines[i]) else {
            i += 1;
            continue;
        };
        let filename = fence
            .filename(files)
            .or_else(|| name_line_before(lines, floor, i, files));
        let close = fence.close_in(lines, i + 1);
        let end = close.unwrap_or(lines.len());
        let body = &lines[(i + 1).min(end)..end];
        match (filename, close) {
            (None, Some(_)) => match shell_fence(lines, i) {
                Some((suggestion, _)) => out.shell.push(suggestion),
                None => unnamed += 1,
            },
            (None, None) => unnamed += 1,
            (Some(name), Some(_)) => {
                block += 1;
                out.edits.push(RawEdit {
                    block,
                    filename: Some(name.clone()),
                    kind: EditKind::Whole {
                        content: join_lines(body),
                        new_file: false,
                    },
                    source: format!("{name}\n{}", lines[i..=end].join("\n")),
                });
            }
            (Some(name), None) => {
                block += 1;
                out.errors.push(EditError::new(
                    block,
                    Some(name.into()),
                    Problem::Malformed(format!(
                        "the code block opened on reply line {} is never closed",
                        i + 1
                    )),
                    "",
                ));
            }
        }
        i = end + 1;
        floor = i.min(lines.len());
    }
    if block == 0 && unnamed > 0 {
        out.errors
            .push(EditError::new(1, None, Problem::MissingFilename, ""));
    }
    out
}

/// The file named by the nearest non-blank line before the fence at `lines[at]` (not
/// before `floor`, the end of the previous block), when that line is only a path. A
/// whole-file block replaces the file entirely, so a path mentioned in prose, earlier
/// or on that very line (``Here is a snippet from `app.py`:``), must not pick it.
fn name_line_before(lines: &[&str], floor: usize, at: usize, files: &FileSet) -> Option<String> {
    let line = lines
        .get(floor..at)?
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())?;
    path_line(line, files)
}
