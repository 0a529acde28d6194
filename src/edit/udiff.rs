//! Unified diffs. Line numbers in `@@` headers are ignored: each hunk becomes a
//! search/replace of its context and removed lines by its context and added lines, and
//! must match exactly one place in the file (never "all occurrences", and no context
//! line is ever invented).

use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::matching::Occurrence;
use super::parse::{EditKind, Parsed, RawEdit};
use super::scan::{self, join_lines};

pub(crate) fn parse(lines: &[&str], files: &FileSet) -> Parsed {
    let mut out = Parsed::default();
    let mut block = 0;
    let mut i = 0;
    while i < lines.len() {
        if let Some((suggestion, next)) = scan::shell_fence(lines, i) {
            out.shell.push(suggestion);
            i = next;
            continue;
        }
        if !is_file_header(lines, i) {
            i += 1;
            continue;
        }
        let old = diff_path(lines[i].get(4..).unwrap_or_default(), files);
        let new = diff_path(lines[i + 1].get(4..).unwrap_or_default(), files);
        let header = &lines[i..i + 2];
        i += 2;
        let mut hunks: Vec<(&[&str], &[&str])> = Vec::new();
        while i < lines.len() {
            let head_start = i;
            if lines[i].starts_with("@@") {
                i += 1;
            } else if !(hunks.is_empty() && in_hunk(lines, i)) {
                break;
            }
            let body_start = i;
            while i < lines.len()
                && !lines[i].starts_with("@@")
                && !is_file_header(lines, i)
                && in_hunk(lines, i)
            {
                i += 1;
            }
            hunks.push((&lines[head_start..body_start], &lines[body_start..i]));
        }
        let source = |head: &[&str], body: &[&str]| [header, head, body].concat().join("\n");
        match (old, new) {
            (_, None) => {
                block += 1;
                let all: Vec<&str> = hunks
                    .iter()
                    .flat_map(|(h, b)| h.iter().chain(*b))
                    .copied()
                    .collect();
                out.errors.push(EditError::new(
                    block,
                    old.map(Into::into),
                    Problem::Delete,
                    &source(&[], &all),
                ));
            }
            (None, Some(path)) => {
                block += 1;
                let body: Vec<&str> = hunks.iter().flat_map(|(_, b)| b.iter()).copied().collect();
                let (_, after) = sides(&body);
                out.edits.push(RawEdit {
                    block,
                    filename: Some(path.to_string()),
                    kind: EditKind::Whole {
                        content: join_lines(&after),
                        new_file: true,
                    },
                    source: source(&[], &body),
                });
            }
            (Some(_), Some(path)) => {
                for (head, body) in hunks {
                    let (before, after) = sides(body);
                    if before == after {
                        continue;
                    }
                    block += 1;
                    out.edits.push(RawEdit {
                        block,
                        filename: Some(path.to_string()),
                        kind: EditKind::SearchReplace {
                            search: join_lines(&before),
                            replace: join_lines(&after),
                            occurrence: Occurrence::Unique,
                        },
                        source: source(head, body),
                    });
                }
            }
        }
    }
    out
}

/// `--- a/x` followed by `+++ b/x`.
fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

fn is_hunk_line(line: &str) -> bool {
    line.starts_with([' ', '-', '+', '\\'])
}

/// Whether `lines[i]` belongs to a hunk. An empty line counts as an empty context line
/// (editors strip the space) when more hunk lines follow it.
fn in_hunk(lines: &[&str], i: usize) -> bool {
    if !lines[i].is_empty() {
        return is_hunk_line(lines[i]);
    }
    lines[i..]
        .iter()
        .find(|l| !l.is_empty())
        .is_some_and(|l| is_hunk_line(l) && !l.starts_with('\\'))
}

/// The old side (context and `-` lines) and the new side (context and `+` lines).
fn sides<'a>(body: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for line in body {
        let mut chars = line.chars();
        match (chars.next(), chars.as_str()) {
            (None, _) => {
                before.push("");
                after.push("");
            }
            (Some(' '), rest) => {
                before.push(rest);
                after.push(rest);
            }
            (Some('-'), rest) => before.push(rest),
            (Some('+'), rest) => after.push(rest),
            _ => {}
        }
    }
    (before, after)
}

/// The path of a `---`/`+++` line: `None` for `/dev/null`; git's `a/` and `b/`
/// prefixes and a trailing timestamp removed.
fn diff_path<'a>(raw: &'a str, files: &FileSet) -> Option<&'a str> {
    let path = raw
        .split('\t')
        .next()
        .unwrap_or(raw)
        .trim()
        .trim_matches('"');
    if path == "/dev/null" {
        return None;
    }
    let stripped = path.strip_prefix("a/").or_else(|| path.strip_prefix("b/"));
    Some(match stripped {
        Some(rest) if !files.knows(path) => rest,
        _ => path,
    })
}
