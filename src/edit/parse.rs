//! A model reply → the edits it asks for, the blocks that are broken, and the shell
//! commands it suggests.
//!
//! The format the model was asked for is a hint, not a wall: blocks whose structure
//! cannot be mistaken (SEARCH/REPLACE markers; a diff with `---`/`+++` headers and `@@`
//! hunks) are read whatever the format, so a reply in another one is not silently
//! dropped. Whole-file blocks are read only in the whole format, where they go first
//! but leave alone a fence that holds those other edits: anywhere else a code example
//! would become a file's new content. Each parser reads only the lines the ones before
//! it left, and what is left at the end that still looks like a diff is reported.

use std::path::{Path, PathBuf};

use super::block::{Edit, Parsed, RawEdit};
use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::scan::{Fence, ShellSuggestion, is_file_header, is_hunk_header};
use super::{EditFormat, editblock, udiff, whole};

/// Everything a reply asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedReply {
    pub edits: Vec<Edit>,
    /// Blocks that could not be parsed or have no file.
    pub errors: Vec<EditError>,
    /// Commands the model suggests; shown, never run.
    pub shell: Vec<ShellSuggestion>,
    /// The formats the reply's blocks were written in, the one asked for first.
    pub formats: Vec<EditFormat>,
    /// Each file name the reply gave that names no file, with the file it was taken
    /// as (`FileSet::resolve`: the same basename, or a close spelling).
    pub taken_as: Vec<(String, PathBuf)>,
}

impl ParsedReply {
    /// How many blocks the reply has, parsed or not.
    pub fn blocks(&self) -> usize {
        self.edits.len() + self.errors.len()
    }
}

/// One block, parsed or broken, before blocks are numbered.
enum Found {
    Edit(RawEdit),
    Broken(EditError),
}

/// Parses a reply asked for in `format` (see the module's doc for the others). File
/// names are resolved against `files`: a block without one takes the previous block's
/// file (or the only chat file).
pub(crate) fn parse_reply(reply: &str, format: EditFormat, files: &FileSet) -> ParsedReply {
    let reply = reply.replace("\r\n", "\n");
    let lines: Vec<&str> = reply.split('\n').collect();
    // The lines no parser took yet; taken ones read as blank.
    let mut left = lines.clone();
    let mut taken = vec![false; lines.len()];
    let order = match format {
        EditFormat::Editblock => [EditFormat::Editblock, EditFormat::Udiff].as_slice(),
        EditFormat::Udiff => &[EditFormat::Udiff, EditFormat::Editblock],
        EditFormat::Whole => &[EditFormat::Whole, EditFormat::Editblock, EditFormat::Udiff],
    };
    let mut found: Vec<(usize, Found)> = Vec::new();
    let mut shell = Vec::new();
    let mut formats = Vec::new();
    for &parser in order {
        let parsed: Parsed = match parser {
            EditFormat::Editblock => editblock::parse(&left, files),
            EditFormat::Udiff => udiff::parse(&left, files, parser != format),
            EditFormat::Whole => whole::parse(&left, files),
        };
        if !(parsed.edits.is_empty() && parsed.errors.is_empty()) {
            formats.push(parser);
        }
        for line in parsed.taken.into_iter().flatten() {
            taken[line] = true;
            left[line] = "";
        }
        found.extend(parsed.edits.into_iter().map(|e| (e.line, Found::Edit(e))));
        found.extend(
            parsed
                .errors
                .into_iter()
                .map(|(l, e)| (l, Found::Broken(e))),
        );
        shell.extend(parsed.shell);
    }
    found.extend(
        unparsed_diffs(&left, &taken)
            .into_iter()
            .map(|(l, e)| (l, Found::Broken(e))),
    );
    if formats.first() != Some(&format) && formats.contains(&format) {
        formats.retain(|f| *f != format);
        formats.insert(0, format);
    }
    // Blocks are numbered by their place in the reply, whichever parser found them.
    found.sort_by_key(|(line, _)| *line);
    let mut out = ParsedReply {
        shell,
        formats,
        ..ParsedReply::default()
    };
    let mut previous: Option<PathBuf> = None;
    for (index, (_, item)) in found.into_iter().enumerate() {
        let block = index + 1;
        let raw = match item {
            Found::Broken(mut error) => {
                error.block = block;
                out.errors.push(error);
                continue;
            }
            Found::Edit(raw) => raw,
        };
        let creating = raw.kind.creates();
        let path = match &raw.filename {
            Some(name) => {
                let path = files.resolve(name, creating);
                let named = super::filename::normalize(name);
                if Path::new(&named) != path && !out.taken_as.iter().any(|(n, _)| *n == named) {
                    out.taken_as.push((named, path.clone()));
                }
                Some(path)
            }
            None => previous
                .clone()
                .or_else(|| files.only_chat_file().filter(|_| !creating)),
        };
        match path {
            Some(path) => {
                previous = Some(path.clone());
                out.edits.push(Edit {
                    block,
                    path,
                    kind: raw.kind,
                    source: raw.source,
                });
            }
            None => out.errors.push(EditError::new(
                block,
                None,
                Problem::MissingFilename,
                &raw.source,
            )),
        }
    }
    out
}

/// What no parser took but still reads as a diff: a ```` ```diff ```` fence, or `@@`
/// hunks or `---`/`+++` headers, that are not a diff tern can apply (no file headers,
/// or no hunks). Each is a broken block, so that the reply is not taken for one
/// without edits.
fn unparsed_diffs(lines: &[&str], taken: &[bool]) -> Vec<(usize, EditError)> {
    let why = |what: String| {
        Problem::Malformed(format!(
            "{what} is not a diff tern can apply: a diff needs `--- a/PATH` and `+++ b/PATH` lines, then `@@` hunks of ` ` (unchanged), `-` and `+` lines"
        ))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if taken[i] {
            i += 1;
            continue;
        }
        if let Some(fence) = Fence::open(lines[i]) {
            let end = fence.close_in(lines, i + 1).unwrap_or(lines.len());
            let body = &lines[(i + 1).min(end)..end];
            // A fence around blocks that were parsed holds nothing more.
            let holds_parsed = taken[(i + 1).min(end)..end].iter().any(|t| *t);
            let diff = !holds_parsed
                && ["diff", "patch", "udiff"]
                    .iter()
                    .any(|d| fence.language().eq_ignore_ascii_case(d))
                || (0..body.len()).any(|k| is_hunk_header(body[k]) || is_file_header(body, k));
            if diff {
                let source = lines[i..(end + 1).min(lines.len())].join("\n");
                let what = format!("the code block on reply line {}", i + 1);
                out.push((i, EditError::new(0, None, why(what), &source)));
            }
            i = end + 1;
            continue;
        }
        if is_hunk_header(lines[i]) || is_file_header(lines, i) {
            let start = i;
            i += 1;
            while i < lines.len() && !taken[i] && lines[i].starts_with([' ', '-', '+', '@', '\\']) {
                i += 1;
            }
            let what = format!("the diff on reply line {}", start + 1);
            out.push((
                start,
                EditError::new(0, None, why(what), &lines[start..i].join("\n")),
            ));
            continue;
        }
        i += 1;
    }
    out
}
