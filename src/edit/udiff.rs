//! Unified diffs. Line numbers in `@@` headers are ignored: each hunk becomes a
//! search/replace of its context and removed lines by its context and added lines, and
//! must match exactly one place in the file (never "all occurrences", and no context
//! line is ever invented).

use super::block::{EditKind, Parsed, RawEdit};
use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::matching::Occurrence;
use super::scan::{self, is_file_header, join_lines};

/// Parses the diffs among `lines`. `strict`: the reply was asked for another format,
/// so only a diff that cannot be mistaken counts: `---`/`+++` headers followed by an
/// `@@` hunk.
pub(crate) fn parse(lines: &[&str], files: &FileSet, strict: bool) -> Parsed {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < lines.len() {
        if let Some((suggestion, next)) = scan::shell_fence(lines, i) {
            out.shell.push(suggestion);
            out.taken.push(i..next);
            i = next;
            continue;
        }
        if !is_file_header(lines, i)
            || (strict && !lines.get(i + 2).is_some_and(|l| l.starts_with("@@")))
        {
            i += 1;
            continue;
        }
        let start = i;
        let old = diff_path(lines[i].get(4..).unwrap_or_default(), files);
        let new = diff_path(lines[i + 1].get(4..).unwrap_or_default(), files);
        let header = &lines[i..i + 2];
        i += 2;
        let mut hunks: Vec<(usize, &[&str], &[&str])> = Vec::new();
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
            hunks.push((
                head_start,
                &lines[head_start..body_start],
                &lines[body_start..i],
            ));
        }
        out.taken.push(start..i);
        let source = |head: &[&str], body: &[&str]| [header, head, body].concat().join("\n");
        match (old, new) {
            (old, None) => {
                let all: Vec<&str> = hunks
                    .iter()
                    .flat_map(|(_, h, b)| h.iter().chain(*b))
                    .copied()
                    .collect();
                out.errors.push((
                    start,
                    EditError::new(0, old.map(Into::into), Problem::Delete, &source(&[], &all)),
                ));
            }
            (None, Some(path)) => {
                let body: Vec<&str> = hunks
                    .iter()
                    .flat_map(|(_, _, b)| b.iter())
                    .copied()
                    .collect();
                let (_, after) = sides(&body);
                out.edits.push(RawEdit {
                    line: start,
                    filename: Some(path),
                    kind: EditKind::Whole {
                        content: join_lines(&after),
                        new_file: true,
                    },
                    source: source(&[], &body),
                });
            }
            (Some(_), Some(path)) => {
                for (line, head, body) in hunks {
                    let (before, after) = sides(body);
                    if before == after {
                        continue;
                    }
                    out.edits.push(RawEdit {
                        line,
                        filename: Some(path.clone()),
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

/// The path of a `---`/`+++` line: `None` for `/dev/null`; git's quoting, its `a/` and
/// `b/` prefixes and a trailing timestamp removed.
fn diff_path(raw: &str, files: &FileSet) -> Option<String> {
    let path = raw.split('\t').next().unwrap_or(raw).trim();
    let path = unquote(path).unwrap_or_else(|| path.trim_matches('"').to_string());
    if path == "/dev/null" {
        return None;
    }
    let stripped = path.strip_prefix("a/").or_else(|| path.strip_prefix("b/"));
    Some(match stripped {
        Some(rest) if !files.knows(&path) => rest.to_string(),
        _ => path,
    })
}

/// A path in git's C-style quotes, as `git diff` writes names with non-ASCII or special
/// bytes (`"a/caf\303\251.md"` for `a/café.md`), decoded. `None` when `quoted` is not
/// such a string or its bytes are not UTF-8.
fn unquote(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        }
        let escaped = chars.next()?;
        let byte = match escaped {
            'a' => 0x07,
            'b' => 0x08,
            't' => b'\t',
            'n' => b'\n',
            'v' => 0x0b,
            'f' => 0x0c,
            'r' => b'\r',
            '"' | '\\' => escaped as u8,
            '0'..='3' => {
                let digits = [escaped, chars.next()?, chars.next()?];
                let value = digits
                    .iter()
                    .try_fold(0u32, |n, d| d.to_digit(8).map(|v| n * 8 + v))?;
                u8::try_from(value).ok()?
            }
            _ => return None,
        };
        bytes.push(byte);
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::unquote;

    #[test]
    fn git_quoted_paths_decode() {
        assert_eq!(
            unquote(r#""a/caf\303\251.md""#).as_deref(),
            Some("a/café.md")
        );
        assert_eq!(
            unquote(r#""a/say \"hi\"\tnow\\.txt""#).as_deref(),
            Some("a/say \"hi\"\tnow\\.txt")
        );
        assert_eq!(unquote("a/plain.md"), None);
        // Not UTF-8, a bad escape, a cut octal escape: not a path tern can name.
        assert_eq!(unquote(r#""a/\377.md""#), None);
        assert_eq!(unquote(r#""a/\q.md""#), None);
        assert_eq!(unquote(r#""a/\30""#), None);
        assert_eq!(unquote(r#""日本\"#), None);
    }
}
