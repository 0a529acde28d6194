//! git's own lock on the index, `index.lock`, held for a whole landing, commit or undo:
//! meanwhile git's commands that write the index refuse to run ("Another git process
//! seems to be running"), and tern refuses to start while another process holds it.
//! The new index goes into the lock file and is renamed over the index, as git does it;
//! dropped before that, the lock file is removed and the index is as it was.
//!
//! A tern killed while it holds the lock would leave it behind, and git would refuse
//! to run until someone removed it. So the lock file's identity is written into
//! `tern.lock` before the file takes git's name and while it is held, and the next
//! tern to take `tern.lock` (the kernel released it: the holder is gone) removes that
//! very file if it is still there.

use std::io;
use std::path::{Path, PathBuf};

use git2::{IndexEntry, IndexTime, Oid};

use super::GitError;

#[derive(Debug)]
pub(crate) struct IndexLock {
    /// The open lock file: the new index is written through it, so its identity in
    /// `tern.lock` stays true.
    file: std::fs::File,
    git_dir: PathBuf,
    lock: PathBuf,
    index: PathBuf,
    /// Where the new index is built before it replaces the lock file's content.
    next: PathBuf,
    held: bool,
}

impl IndexLock {
    /// Takes `index.lock` in `git_dir`, with tern's repository lock (`tern.lock`)
    /// held; refused, naming the file, when it exists.
    pub(crate) fn acquire(git_dir: &Path) -> Result<IndexLock, GitError> {
        let lock = git_dir.join("index.lock");
        let made = made_and_recorded(git_dir)?;
        // git's name last, by a link (which, as git's own open, fails when the name
        // exists): a tern killed at any point leaves no `index.lock` of its making
        // that `tern.lock` does not name.
        let taken = match std::fs::hard_link(&made.1, &lock) {
            Ok(()) => Ok(made.0),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
            // A file system without hard links: made under git's name, and recorded
            // just after.
            Err(_) => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock),
        };
        let _ = std::fs::remove_file(&made.1);
        let file = match taken {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let _ = record(git_dir, None);
                return Err(GitError::IndexLocked(lock));
            }
            Err(e) => {
                return Err(GitError::Io(io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", lock.display()),
                )));
            }
        };
        let held = IndexLock {
            index: git_dir.join("index"),
            next: git_dir.join(format!("tern-index-next-{}", std::process::id())),
            git_dir: git_dir.to_path_buf(),
            lock,
            file,
            held: true,
        };
        record(git_dir, Some(&held.file.metadata()?))?;
        Ok(held)
    }

    /// The index as it is now, to change in memory and hand to [`prepare`]: a copy
    /// (libgit2 would take the lock this holds to write the index in place).
    ///
    /// [`prepare`]: IndexLock::prepare
    pub(crate) fn open(&self) -> Result<git2::Index, GitError> {
        match std::fs::remove_file(&self.next) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
        if self.index.exists() {
            std::fs::copy(&self.index, &self.next)?;
        }
        Ok(git2::Index::open(&self.next)?)
    }

    /// Writes `index` (from [`open`](IndexLock::open)) into the lock file; the index
    /// itself changes only at [`commit`](IndexLock::commit).
    pub(crate) fn prepare(&mut self, index: &mut git2::Index) -> Result<(), GitError> {
        use std::io::Write;
        index.write()?;
        let bytes = std::fs::read(&self.next)?;
        self.file.write_all(&bytes)?;
        self.file.sync_all()?;
        // The write changed the file's change time: `tern.lock` names it as it is now,
        // so that the next tern knows it as this one's if this one is killed.
        record(&self.git_dir, Some(&self.file.metadata()?))?;
        Ok(())
    }

    /// Whether `index.lock` is still the file tern created. Someone may have removed
    /// it (git's own refusal says "remove the file manually") and a git command taken
    /// a new one: renaming that over the index would install the other process's index
    /// under tern's commit.
    pub(crate) fn check_held(&self) -> Result<(), GitError> {
        let taken = |how: &str| GitError::IndexLockTaken {
            lock: self.lock.clone(),
            how: how.to_string(),
        };
        match std::fs::symlink_metadata(&self.lock) {
            Ok(now) if same_file(&self.file.metadata()?, &now) => Ok(()),
            Ok(_) => Err(taken(
                "it was removed and another process holds a new one in its place",
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(taken("it was removed")),
            Err(e) => Err(GitError::Io(io::Error::new(
                e.kind(),
                format!("cannot look at {}: {e}", self.lock.display()),
            ))),
        }
    }

    /// Renames the lock file over the index, which releases the lock; refused when
    /// the lock file is no longer tern's (see [`check_held`](IndexLock::check_held)).
    pub(crate) fn commit(mut self) -> Result<(), GitError> {
        self.check_held()?;
        std::fs::rename(&self.lock, &self.index).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot rename {} over {}: {e}",
                    self.lock.display(),
                    self.index.display()
                ),
            )
        })?;
        self.held = false;
        Ok(())
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.next);
        // Only tern's own lock file: one in its place is another process's.
        if self.held && self.check_held().is_ok() {
            let _ = std::fs::remove_file(&self.lock);
        }
        let _ = record(&self.git_dir, None);
    }
}

/// The lock file to be, made under a name of tern's own (`tern-index-lock-PID`, a
/// leftover the next tern removes) and named in `tern.lock` before it takes git's
/// name: its identity survives the link (see `identity`).
fn made_and_recorded(git_dir: &Path) -> Result<(std::fs::File, PathBuf), GitError> {
    let made = git_dir.join(format!("tern-index-lock-{}", std::process::id()));
    let _ = std::fs::remove_file(&made);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&made)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", made.display())))?;
    record(git_dir, Some(&file.metadata()?))?;
    Ok((file, made))
}

/// Whether two stats are of one file.
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (a.dev(), a.ino()) == (b.dev(), b.ino())
    }
    #[cfg(not(unix))]
    {
        identity(a) == identity(b)
    }
}

/// The line of `tern.lock` that names the `index.lock` its holder holds.
const HELD: &str = "index.lock ";

/// Writes `tern.lock`: this process, and the identity of the `index.lock` it holds.
/// In place and never emptied first (it cannot be renamed over: the flock is on the
/// file): a tern killed in the middle leaves the new text first, and at worst the
/// old text's tail after it, which no reader takes for the first line or identity.
fn record(git_dir: &Path, held: Option<&std::fs::Metadata>) -> io::Result<()> {
    use std::io::Write;
    let mut text = std::process::id().to_string();
    if let Some(meta) = held {
        text.push_str(&format!("\n{HELD}{}\n", identity(meta)));
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(git_dir.join("tern.lock"))?;
    file.write_all(text.as_bytes())?;
    file.set_len(text.len() as u64)
}

/// Device, inode and birth time: a file made later in its place differs, and a link
/// or a write leaves it as it was. Where the file system keeps no birth time, the
/// change time, which they change: the identity is recorded again after each.
fn identity(meta: &std::fs::Metadata) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let born = meta
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        match born {
            Some(born) => format!(
                "{} {} born {} {}",
                meta.dev(),
                meta.ino(),
                born.as_secs(),
                born.subsec_nanos()
            ),
            None => format!(
                "{} {} {} {}",
                meta.dev(),
                meta.ino(),
                meta.ctime(),
                meta.ctime_nsec()
            ),
        }
    }
    #[cfg(not(unix))]
    {
        format!("{:?}", meta.created().ok())
    }
}

/// With `tern.lock` just taken: removes the `index.lock` that `previous` (the lock
/// file's content before) says a tern held when it died, if that very file is still
/// there. Any other `index.lock` is another process's, and stays.
pub(crate) fn remove_stale(git_dir: &Path, previous: &str) {
    let Some(held) = previous.lines().find_map(|l| l.strip_prefix(HELD)) else {
        return;
    };
    let lock = git_dir.join("index.lock");
    if std::fs::symlink_metadata(&lock).is_ok_and(|meta| identity(&meta) == held.trim()) {
        let _ = std::fs::remove_file(&lock);
    }
}

/// An index entry for `path`, with the file's stat when known (else zeros: git then
/// looks at the file's content rather than trust its stat). A written file's stat is
/// taken before its rename (which changes its ctime): git may look at its content once,
/// but never takes a save made after tern wrote it for tern's bytes.
pub(crate) fn entry(
    path: &Path,
    id: Oid,
    mode: u32,
    meta: Option<&std::fs::Metadata>,
) -> IndexEntry {
    let path = path.to_string_lossy().replace('\\', "/").into_bytes();
    let mut entry = IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path,
    };
    #[cfg(unix)]
    if let Some(meta) = meta {
        use std::os::unix::fs::MetadataExt;
        // The index keeps 32 bits of each; git truncates them the same way.
        entry.ctime = IndexTime::new(meta.ctime() as i32, meta.ctime_nsec() as u32);
        entry.mtime = IndexTime::new(meta.mtime() as i32, meta.mtime_nsec() as u32);
        entry.dev = meta.dev() as u32;
        entry.ino = meta.ino() as u32;
        entry.uid = meta.uid();
        entry.gid = meta.gid();
        entry.file_size = meta.size() as u32;
    }
    #[cfg(not(unix))]
    if let Some(meta) = meta {
        entry.file_size = meta.len() as u32;
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tern killed after it wrote the new index into `index.lock` (a rewind's
    /// SIGKILL) leaves a lock file the next tern still knows as that tern's.
    #[test]
    fn a_lock_killed_after_its_write_is_known_as_stale() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let git_dir = repo.path();
        let mut lock = IndexLock::acquire(git_dir).unwrap();
        // Past the kernel's clock tick, as on a busy machine: the write's change
        // time differs from the creation's.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut index = lock.open().unwrap();
        lock.prepare(&mut index).unwrap();
        let previous = std::fs::read_to_string(git_dir.join("tern.lock")).unwrap();
        // SIGKILL: no Drop runs.
        std::mem::forget(lock);
        remove_stale(git_dir, &previous);
        assert!(!git_dir.join("index.lock").exists());
    }

    /// A tern killed the moment its lock file took git's name, before it could do
    /// anything more (`acquire`'s steps up to its link): `tern.lock` already names
    /// that file, so the next tern knows it as a dead tern's and removes it. It used to
    /// hold only the pid then, and the lock was called another git process's
    /// (regression pass 6, #7).
    #[test]
    fn a_lock_killed_as_soon_as_it_is_taken_is_known_as_stale() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let git_dir = repo.path();
        let (file, made) = made_and_recorded(git_dir).unwrap();
        std::fs::hard_link(&made, git_dir.join("index.lock")).unwrap();
        // SIGKILL: nothing more happens (the leftover `made` is the next tern's to
        // clean, with its other `tern-index-*` files).
        drop(file);
        let previous = std::fs::read_to_string(git_dir.join("tern.lock")).unwrap();
        remove_stale(git_dir, &previous);
        assert!(!git_dir.join("index.lock").exists());
    }

    /// git's own lock refuses tern's, and tern leaves nothing of its attempt: no file
    /// of its own, no identity in `tern.lock`, git's lock as it was.
    #[test]
    fn a_lock_refused_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let git_dir = repo.path();
        std::fs::write(git_dir.join("index.lock"), "git's").unwrap();
        let refused = IndexLock::acquire(git_dir);
        assert!(
            matches!(refused, Err(GitError::IndexLocked(_))),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read_to_string(git_dir.join("index.lock")).unwrap(),
            "git's"
        );
        let tern_lock = std::fs::read_to_string(git_dir.join("tern.lock")).unwrap();
        assert!(!tern_lock.contains(HELD), "{tern_lock}");
        let leftovers: Vec<_> = std::fs::read_dir(git_dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("tern-index"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
