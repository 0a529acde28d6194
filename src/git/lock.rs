//! One tern at a time writes to a repository: an advisory lock (`flock`) on
//! `.git/tern.lock` held while edits are checked, written and committed, and while a
//! commit is undone. The kernel releases it when the process ends, however it ends, so
//! a tern killed with SIGKILL never blocks the next one (a lock file alone would).
//! Whoever takes the lock removes what a killed tern left behind: its temporary files
//! in `.git/tern-tmp/`, its hook index `.git/tern-index-*`, and git's `index.lock` when
//! it died holding it (see `index_lock`), and rolls back a move of HEAD it was half
//! way through (see `head_move`).

use std::fs::{File, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::GitError;

/// How long to wait for another tern to finish before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// [`LOCK_WAIT`], or `$TERN_LOCK_WAIT_MS` milliseconds (for tests, and for scripts that
/// would rather fail at once than wait).
pub(crate) fn lock_wait() -> Duration {
    std::env::var("TERN_LOCK_WAIT_MS")
        .ok()
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(LOCK_WAIT, Duration::from_millis)
}

/// The lock, held until dropped. While it is held a landing (or an undo) is under
/// way: a signal lets it finish before the process exits (`signals`).
#[derive(Debug)]
pub struct RepoLock {
    _file: File,
    tmp: PathBuf,
    _landing: crate::signals::Landing,
}

impl RepoLock {
    /// Takes the lock of the repository whose git directory is `git_dir`, waiting up
    /// to `wait` for another tern to release it.
    pub fn acquire(git_dir: &Path, wait: Duration) -> Result<RepoLock, GitError> {
        RepoLock::take(git_dir, wait, || false)
    }

    /// [`acquire`](RepoLock::acquire), giving up with [`GitError::Interrupted`] once
    /// `cancel` is set or a signal arrived (`signals`): a Ctrl-C while waiting for
    /// another tern means "never mind", not "do it when you can".
    pub(crate) fn acquire_unless(
        git_dir: &Path,
        wait: Duration,
        cancel: Option<&AtomicBool>,
    ) -> Result<RepoLock, GitError> {
        RepoLock::take(git_dir, wait, || {
            cancel.is_some_and(|c| c.load(Ordering::SeqCst)) || crate::signals::arrived().is_some()
        })
    }

    fn take(
        git_dir: &Path,
        wait: Duration,
        cancelled: impl Fn() -> bool,
    ) -> Result<RepoLock, GitError> {
        let path = git_dir.join("tern.lock");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)?;
        // A wait past what the clock can count (`TERN_LOCK_WAIT_MS` may say anything)
        // has no deadline.
        let deadline = Instant::now().checked_add(wait);
        loop {
            if cancelled() {
                return Err(GitError::Interrupted);
            }
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if deadline.is_none_or(|d| Instant::now() < d) => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(TryLockError::WouldBlock) => {
                    let holder =
                        crate::regular_file::read_to_string(&path, 4096).unwrap_or_default();
                    let pid = holder.lines().next().unwrap_or_default();
                    return Err(GitError::Locked(pid.trim().to_string()));
                }
                Err(TryLockError::Error(e)) => return Err(e.into()),
            }
        }
        if cancelled() {
            return Err(GitError::Interrupted);
        }
        let mut previous = String::new();
        std::io::Read::read_to_string(&mut file, &mut previous)?;
        super::index_lock::remove_stale(git_dir, &previous);
        let landing = crate::signals::landing();
        file.set_len(0)?;
        write!(file, "{}", std::process::id())?;
        let tmp = git_dir.join("tern-tmp");
        clean_leftovers(git_dir, &tmp);
        if let Some(said) = super::head_move::roll_back(git_dir)? {
            tracing::warn!("{said}");
            untold().push(said);
        }
        std::fs::create_dir_all(&tmp)?;
        Ok(RepoLock {
            _file: file,
            tmp,
            _landing: landing,
        })
    }

    /// Where temporary files go while the lock is held: on the repository's disk, and
    /// cleaned by the next tern if this one is killed.
    pub(crate) fn tmp_dir(&self) -> &Path {
        &self.tmp
    }
}

/// What rollbacks of moves killed terns left did in this process, not yet told.
static UNTOLD: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn untold() -> std::sync::MutexGuard<'static, Vec<String>> {
    UNTOLD.lock().unwrap_or_else(|e| e.into_inner())
}

/// What taking the lock did to a move a killed tern left (rolled it back, or dropped
/// its journal), since last asked: the lock is taken deep in a landing or an undo, and
/// the front end tells the user (a line on stderr, a notice in the chat).
pub fn rolled_back() -> Vec<String> {
    std::mem::take(&mut *untold())
}

/// Rolls back, now, a move of HEAD a killed tern left half done, if there is one (it
/// takes the repository lock, which does it): for readers that decide from HEAD and
/// the work tree without the lock (a rewind's plan, its preview).
pub fn recover(repo: &git2::Repository) -> Result<(), GitError> {
    if repo.path().join(super::head_move::JOURNAL).exists() {
        drop(RepoLock::acquire(repo.path(), lock_wait())?);
    }
    Ok(())
}

/// Removes the temporary files of a tern that died holding the lock.
fn clean_leftovers(git_dir: &Path, tmp: &Path) {
    if let Ok(entries) = std::fs::read_dir(tmp) {
        for entry in entries.flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    if let Ok(entries) = std::fs::read_dir(git_dir) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with("tern-index-")
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}
