//! A model reply → the edits it asks for, the blocks that are broken, and the shell
//! commands it suggests.

use std::path::PathBuf;

use super::block::Edit;
use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::scan::ShellSuggestion;
use super::{EditFormat, editblock, udiff, whole};

/// Everything a reply asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedReply {
    pub edits: Vec<Edit>,
    /// Blocks that could not be parsed or have no file.
    pub errors: Vec<EditError>,
    /// Commands the model suggests; shown, never run.
    pub shell: Vec<ShellSuggestion>,
}

impl ParsedReply {
    /// How many blocks the reply has, parsed or not.
    pub fn blocks(&self) -> usize {
        self.edits.len() + self.errors.len()
    }
}

/// Parses a reply written in `format`. File names are resolved against `files`: a
/// block without one takes the previous block's file (or the only chat file).
pub fn parse_reply(reply: &str, format: EditFormat, files: &FileSet) -> ParsedReply {
    let reply = reply.replace("\r\n", "\n");
    let lines: Vec<&str> = reply.split('\n').collect();
    let parsed = match format {
        EditFormat::Editblock => editblock::parse(&lines, files),
        EditFormat::Udiff => udiff::parse(&lines, files),
        EditFormat::Whole => whole::parse(&lines, files),
    };
    let mut out = ParsedReply {
        errors: parsed.errors,
        shell: parsed.shell,
        ..ParsedReply::default()
    };
    let mut previous: Option<PathBuf> = None;
    for raw in parsed.edits {
        let creating = raw.kind.creates();
        let path = match &raw.filename {
            Some(name) => Some(files.resolve(name, creating)),
            None => previous
                .clone()
                .or_else(|| files.only_chat_file().filter(|_| !creating)),
        };
        match path {
            Some(path) => {
                previous = Some(path.clone());
                out.edits.push(Edit {
                    block: raw.block,
                    path,
                    kind: raw.kind,
                    source: raw.source,
                });
            }
            None => out.errors.push(EditError::new(
                raw.block,
                None,
                Problem::MissingFilename,
                &raw.source,
            )),
        }
    }
    out.errors.sort_by_key(|e| e.block);
    out
}
