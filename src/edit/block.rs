//! The edits a reply asks for, as the format parsers find them (`RawEdit`, `Parsed`) and
//! as `parse_reply` resolves them (`Edit`): the vocabulary of the parsers and of the
//! proposal that applies their edits.

use std::ops::Range;
use std::path::PathBuf;

use super::error::EditError;
use super::matching::Occurrence;
use super::scan::ShellSuggestion;

/// One edit the model asked for, its file resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// 1-based position of the block in the reply.
    pub block: usize,
    /// Relative to the repository root.
    pub path: PathBuf,
    pub kind: EditKind,
    /// The block as the model wrote it, quoted back if it fails.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditKind {
    /// Replace `search` by `replace`. An empty `search` creates the file, or appends to
    /// it when it exists.
    SearchReplace {
        search: String,
        replace: String,
        occurrence: Occurrence,
    },
    /// The file's complete new content. `new_file`: a diff from `/dev/null`, refused
    /// when the file already has content.
    Whole { content: String, new_file: bool },
}

impl EditKind {
    /// Whether the block can create its file (which changes how its name resolves).
    pub(crate) fn creates(&self) -> bool {
        match self {
            EditKind::SearchReplace { search, .. } => search.is_empty(),
            EditKind::Whole { .. } => true,
        }
    }
}

/// A block as a parser found it, before its file name is resolved.
#[derive(Debug)]
pub(crate) struct RawEdit {
    /// The reply line (0-based) where it starts: blocks are numbered by it once every
    /// format's parser has run.
    pub line: usize,
    pub filename: Option<String>,
    pub kind: EditKind,
    pub source: String,
}

/// What one format's parser found.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub edits: Vec<RawEdit>,
    /// Broken blocks, each with the reply line where it starts (its `block` is set
    /// when the blocks are numbered).
    pub errors: Vec<(usize, EditError)>,
    pub shell: Vec<ShellSuggestion>,
    /// The reply lines its blocks and shell fences took: no other parser reads them.
    pub taken: Vec<Range<usize>>,
}
