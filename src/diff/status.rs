//! What a diff did to a file.

use derive_visitor::DriveMut;

/// How a file changed. A rename (with or without edits) is `Renamed`; lists of files left
/// out of a review count it as modified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
}
