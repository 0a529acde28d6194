//! A session is open in one tern at a time: an advisory lock (`flock`) on the `lock`
//! file in its directory, taken when the session is opened or created and held until
//! the process exits, with the holder's pid written in the file so that a refusal can
//! name it. The kernel releases it when the process ends, however it ends, so a tern
//! that crashed never keeps its session from being resumed.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The lock file's name in a session's directory.
pub const FILE: &str = "lock";

/// How long taking a lock rides over another process's brief look at it: `tern
/// sessions`, the notice at start and pruning each hold a lock for an instant to learn
/// whether it is free.
const PATIENCE: Duration = Duration::from_millis(300);

/// A session's lock, held until dropped.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

/// Why a session's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("is open in another tern{}", holder_text(*pid))]
    Held { pid: Option<u32> },
    /// The session was removed (pruned) while the lock was being taken.
    #[error("was removed meanwhile")]
    Gone,
    #[error("cannot be locked: {0}")]
    Io(#[from] std::io::Error),
}

/// ` (pid 4242)`, or nothing when the holder did not say.
pub(crate) fn holder_text(pid: Option<u32>) -> String {
    pid.map_or(String::new(), |pid| format!(" (pid {pid})"))
}

impl SessionLock {
    /// Takes the lock of the session in `dir` for this process and writes its pid in
    /// the lock file.
    pub fn take(dir: &Path) -> Result<SessionLock, LockError> {
        let (mut file, _) = lock(dir, PATIENCE)?;
        file.set_len(0)?;
        write!(file, "{}", std::process::id())?;
        file.sync_data()?;
        Ok(SessionLock { _file: file })
    }

    /// Takes the lock of the session in `dir` if it is free now, without saying who
    /// holds it: for removing the session.
    pub(crate) fn take_now(dir: &Path) -> Result<SessionLock, LockError> {
        let (file, _) = lock(dir, Duration::ZERO)?;
        Ok(SessionLock { _file: file })
    }

    /// Whether another process has the session in `dir` open: `Some` with its pid (if
    /// it wrote one) while the lock is held, `None` when it is free.
    pub fn holder(dir: &Path) -> Option<Option<u32>> {
        let path = dir.join(FILE);
        let file = crate::regular_file::open(&path).ok()?;
        match file.try_lock_shared() {
            Ok(()) => None,
            Err(TryLockError::WouldBlock) => Some(read_pid(&path)),
            Err(TryLockError::Error(_)) => None,
        }
    }
}

/// Locks `dir`'s lock file, waiting up to `patience` for another holder to let go,
/// and checks that the file is still the session's (a session removed meanwhile is
/// `Gone`, not opened).
fn lock(dir: &Path, patience: Duration) -> Result<(File, PathBuf), LockError> {
    let path = dir.join(FILE);
    let file = match OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LockError::Gone),
        Err(e) => return Err(e.into()),
    };
    let deadline = Instant::now() + patience;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    pid: read_pid(&path),
                });
            }
            Err(TryLockError::Error(e)) => return Err(e.into()),
        }
    }
    if !still_linked(&file, &path) {
        return Err(LockError::Gone);
    }
    Ok((file, path))
}

fn read_pid(path: &Path) -> Option<u32> {
    crate::regular_file::read_to_string(path, crate::regular_file::MAX_SETTINGS_BYTES)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether `file` is still the one at `path` (the session was not removed between
/// opening its lock file and locking it).
#[cfg(unix)]
fn still_linked(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_linked(_: &File, path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_the_refusal_names_it() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            SessionLock::holder(dir.path()).is_none(),
            "no lock file yet"
        );
        let held = SessionLock::take(dir.path()).unwrap();
        assert_eq!(
            SessionLock::holder(dir.path()),
            Some(Some(std::process::id()))
        );
        // flock locks belong to open files: a second open in this process conflicts as
        // another process's would.
        match SessionLock::take(dir.path()) {
            Err(LockError::Held { pid }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            SessionLock::take_now(dir.path()),
            Err(LockError::Held { .. })
        ));
        drop(held);
        assert!(SessionLock::holder(dir.path()).is_none());
        let again = SessionLock::take(dir.path()).unwrap();
        drop(again);
    }

    #[test]
    fn a_session_removed_while_its_lock_is_taken_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s");
        std::fs::create_dir(&session).unwrap();
        let remover = SessionLock::take_now(&session).unwrap();
        std::fs::remove_dir_all(&session).unwrap();
        drop(remover);
        assert!(matches!(SessionLock::take(&session), Err(LockError::Gone)));
    }
}
