//! SEARCH/REPLACE blocks:
//!
//! ```text
//! src/main.rs
//! <<<<<<< SEARCH
//! old lines
//! =======
//! new lines
//! >>>>>>> REPLACE
//! ```
//!
//! inside or outside code fences, the file named on the nearest lines before the block.

use super::block::{EditKind, Parsed, RawEdit};
use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::matching::Occurrence;
use super::scan::{self, filename_before, is_divider, is_replace, is_search, join_lines};

pub(crate) fn parse(lines: &[&str], files: &FileSet) -> Parsed {
    let mut out = Parsed::default();
    // Where the previous block ended: file names are not looked for before it.
    let mut floor = 0;
    let mut i = 0;
    while i < lines.len() {
        if let Some((suggestion, next)) = scan::shell_fence(lines, i) {
            out.shell.push(suggestion);
            out.taken.push(i..next);
            i = next;
            floor = next;
            continue;
        }
        let line = lines[i];
        if is_replace(line) {
            out.errors.push((
                i,
                malformed(
                    &lines[i..=i],
                    format!(
                        "`{}` on reply line {} has no `<<<<<<< SEARCH` before it",
                        line.trim(),
                        i + 1
                    ),
                ),
            ));
            out.taken.push(i..i + 1);
            i += 1;
            floor = i;
            continue;
        }
        if !is_search(line) {
            i += 1;
            continue;
        }
        let filename = filename_before(lines, floor, i, files);
        let start = i;
        match block_at(lines, i) {
            Ok((divider, end)) => {
                let search = join_lines(&lines[i + 1..divider]);
                let replace = join_lines(&lines[divider + 1..end]);
                out.edits.push(RawEdit {
                    line: i,
                    filename,
                    kind: EditKind::SearchReplace {
                        search,
                        replace,
                        occurrence: Occurrence::First,
                    },
                    source: lines[i..=end].join("\n"),
                });
                i = end + 1;
            }
            Err((stop, why)) => {
                let mut err = malformed(&lines[i..stop], why);
                err.path = filename.map(Into::into);
                out.errors.push((i, err));
                // Resume at the line that broke the block: it may start the next one.
                i = stop.max(i + 1);
            }
        }
        out.taken.push(start..i);
        floor = i;
    }
    out
}

/// The divider and end-marker lines of the block whose SEARCH marker is `lines[start]`,
/// or the line where the block broke off and why.
fn block_at(lines: &[&str], start: usize) -> Result<(usize, usize), (usize, String)> {
    let opened = start + 1;
    let mut divider = None;
    for (j, line) in lines.iter().enumerate().skip(start + 1) {
        let here = j + 1;
        match divider {
            None if is_divider(line) => divider = Some(j),
            None if is_search(line) => {
                return Err((
                    j,
                    format!(
                        "the block opened on reply line {opened} has no `=======` before the next `<<<<<<< SEARCH` on line {here}"
                    ),
                ));
            }
            None if is_replace(line) => {
                return Err((
                    j + 1,
                    format!(
                        "the block opened on reply line {opened} has no `=======` before its `>>>>>>> REPLACE` on line {here}"
                    ),
                ));
            }
            Some(d) if is_replace(line) => return Ok((d, j)),
            Some(d) if is_divider(line) => {
                // Never file content: which of the two divides SEARCH from REPLACE is a
                // guess. The whole block is skipped, up to its end marker.
                let end = lines[j..]
                    .iter()
                    .position(|l| is_replace(l) || is_search(l))
                    .map_or(lines.len(), |k| {
                        j + k + usize::from(is_replace(lines[j + k]))
                    });
                return Err((
                    end,
                    format!(
                        "the block opened on reply line {opened} has a second `=======` on line {here} (the first is on line {}); a block has exactly one, between the SEARCH and the REPLACE lines",
                        d + 1
                    ),
                ));
            }
            Some(_) if is_search(line) => {
                return Err((
                    j,
                    format!(
                        "the block opened on reply line {opened} has no `>>>>>>> REPLACE` before the next `<<<<<<< SEARCH` on line {here}"
                    ),
                ));
            }
            _ => {}
        }
    }
    let missing = if divider.is_none() {
        "`=======` and `>>>>>>> REPLACE`"
    } else {
        "`>>>>>>> REPLACE`"
    };
    Err((
        lines.len(),
        format!("the block opened on reply line {opened} ends without {missing}"),
    ))
}

fn malformed(source: &[&str], why: String) -> EditError {
    EditError::new(0, None, Problem::Malformed(why), &source.join("\n"))
}
