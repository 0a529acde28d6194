//! The one model of file text and of diffs, shared by the edit review, the branch review,
//! the map and the front ends: a file's text and its numbered lines, git's binary rule,
//! a diff's lines, its `@@` header and the unified diff tern writes.

mod line;
mod status;
mod text;
mod unified;

pub use line::{DiffLine, LineKind};
pub use status::FileStatus;
pub(crate) use text::is_binary;
pub use text::{Binary, Encoding, FileText, HasNul, LineEnding};
pub use unified::{Counts, HunkText};
pub(crate) use unified::{hunk_header, shown_side, write_unified};
