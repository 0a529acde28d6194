//! Failures injected into a session's saves by the tests (compiled in tests only): a
//! disk that fills up half-way through writing the state or the record, and a save
//! that panics. Each is armed for one session directory, once, so tests that run at
//! the same time never meet each other's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where a save fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Writing `state.json`'s temporary file: half of it is written, then the disk is
    /// full.
    State,
    /// Appending to the turn record: half of it is written, then the disk is full.
    Record,
    /// The save panics before it writes anything.
    Panic,
}

static ARMED: Mutex<Vec<(PathBuf, Step)>> = Mutex::new(Vec::new());

/// Makes the next save in `dir` fail at `step`.
pub(super) fn arm(dir: &Path, step: Step) {
    ARMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((dir.to_path_buf(), step));
}

/// Whether `step` in `dir` was armed (it is disarmed by being met).
pub(super) fn met(dir: &Path, step: Step) -> bool {
    let mut armed = ARMED.lock().unwrap_or_else(|e| e.into_inner());
    match armed.iter().position(|(d, s)| d == dir && *s == step) {
        Some(i) => {
            armed.remove(i);
            true
        }
        None => false,
    }
}

/// Whether a failure is armed in `dir` and not yet met.
pub(super) fn armed(dir: &Path) -> bool {
    let armed = ARMED.lock().unwrap_or_else(|e| e.into_inner());
    armed.iter().any(|(d, _)| d == dir)
}

/// The error a full disk gives.
pub(super) fn disk_full() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::StorageFull)
}
