//! The one model of file text and of diffs, shared by the edit review, the branch review,
//! the map and the front ends: a file's text and its numbered lines, git's binary rule.

mod text;

pub use text::{Binary, Encoding, FileText, HasNul, LineEnding, is_binary};
