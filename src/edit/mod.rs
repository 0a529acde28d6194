//! Turning model replies into proposed edits, reviewing them hunk by hunk, and writing
//! only what the user accepted.

mod format;

pub use format::EditFormat;
