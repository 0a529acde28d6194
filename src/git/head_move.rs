//! Moving HEAD along its first-parent line with the files that change: an undo (to
//! the parent), a rewind (past several commits at once), its redo (forward again).
//!
//! A move writes the files first and moves the branch last, so a tern killed in
//! between would leave files that look like the user's own changes, HEAD where it was
//! and git's index behind. So the move is written down before anything changes
//! (`.git/tern-move.json`: where HEAD was and goes, the files, and what the files it
//! restores held, kept as blobs), removed once the move is done or undone, and the
//! next tern to take the repository lock rolls back a move it finds (`roll_back`):
//! all or nothing, across a kill too.

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::GitError;
use super::failpoint::{Failpoints, Step};
use super::head::Head;
use super::index_lock::IndexLock;

/// HEAD moved from one commit to another along the first-parent line, with `paths`
/// (what changed between them) checked out of `to` and `restore`d after.
pub(super) struct Move<'a, 'r> {
    pub(super) from: &'a git2::Commit<'r>,
    pub(super) to: &'a git2::Commit<'r>,
    pub(super) paths: &'a [PathBuf],
    pub(super) restore: &'a [(PathBuf, Vec<u8>)],
    pub(super) message: &'a str,
}

/// Does a `Move`, with git's index lock held and the checks passed: the work tree's
/// `paths` and the index follow `to`, then HEAD moves (compare and swap); on any
/// failure the files go back as `from` has them and the others as they were, and a
/// kill on the way is rolled back by the next tern (`roll_back`).
pub(super) fn move_head(
    repo: &Repository,
    mut lock: IndexLock,
    m: Move<'_, '_>,
    fail: &mut Failpoints,
) -> Result<(), GitError> {
    let workdir = repo.workdir().ok_or(GitError::Bare)?.to_path_buf();
    // What the restored files hold now, to put back if the move fails.
    let now: Vec<(PathBuf, Option<Vec<u8>>)> = m
        .restore
        .iter()
        .map(|(path, _)| (path.clone(), std::fs::read(workdir.join(path)).ok()))
        .collect();
    let head = Head::read(repo)?;
    let journal = Journal::write(repo, &m, &now)?;
    let moved = (|| {
        checkout(repo, m.to, m.paths)?;
        // The files git ignores come back from their backups, and the user's own
        // uncommitted changes that tern's commit took along come back as they were.
        for (path, content) in m.restore {
            std::fs::write(workdir.join(path), content)?;
        }
        let mut index = lock.open()?;
        follow(&mut index, m.to, m.paths)?;
        fail.check(Step::Index)?;
        lock.prepare(&mut index)?;
        fail.check(Step::Ref)?;
        // Not over a git lock that took the place of tern's (see `IndexLock`).
        lock.check_held()?;
        head.swap(repo, m.to.id(), m.message)?;
        if let Err(e) = fail.check(Step::IndexCommit).and_then(|()| lock.commit()) {
            let _ = head.swap_back(repo, m.to.id());
            return Err(e);
        }
        Ok(())
    })();
    if moved.is_err() {
        let _ = checkout(repo, m.from, m.paths);
        for (path, content) in &now {
            let _ = match content {
                Some(bytes) => std::fs::write(workdir.join(path), bytes),
                None => std::fs::remove_file(workdir.join(path)),
            };
        }
    }
    // Done, or put back: either way nothing is left for the next tern to roll back.
    journal.remove();
    moved
}

/// The index's entries for `paths` as `commit` has them (removed where it has none).
fn follow(
    index: &mut git2::Index,
    commit: &git2::Commit<'_>,
    paths: &[PathBuf],
) -> Result<(), GitError> {
    let tree = commit.tree()?;
    for path in paths {
        match tree.get_path(path) {
            Ok(entry) => index.add(&super::index_lock::entry(
                path,
                entry.id(),
                u32::try_from(entry.filemode()).unwrap_or(0o100644),
                None,
            ))?,
            Err(_) => {
                let _ = index.remove_path(path);
            }
        }
    }
    Ok(())
}

/// Checks out `paths` of `commit` into the work tree only (the index is written by the
/// caller, through git's lock). Paths are literal: as pathspecs, `src/*.rs` or
/// `pages/[id].tsx` would match and overwrite other files, with the user's
/// uncommitted work in them.
fn checkout(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    paths: &[PathBuf],
) -> Result<(), GitError> {
    let mut checkout = CheckoutBuilder::new();
    checkout
        .force()
        .disable_pathspec_match(true)
        .update_index(false)
        .remove_untracked(false);
    for p in paths {
        checkout.path(p);
    }
    repo.checkout_tree(commit.as_object(), Some(&mut checkout))?;
    Ok(())
}

/// The journal's file name in the git directory.
pub(super) const JOURNAL: &str = "tern-move.json";

/// A move under way, as written down before it starts. Paths are kept as bytes: a
/// file name need not be UTF-8.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// Where HEAD was, and where the move takes it.
    from: String,
    to: String,
    paths: Vec<Vec<u8>>,
    /// The files the move restores (beyond `from`'s content of `paths`), with what
    /// they held before it: a blob, or None when the file did not exist.
    before: Vec<(Vec<u8>, Option<String>)>,
}

/// The journal of a move under way, removed when the move is over.
struct Written(PathBuf);

impl Written {
    fn remove(self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Journal {
    /// Writes the journal of `m` durably (the blobs, then the file, renamed into place
    /// and synced) before anything of the move is written.
    fn write(
        repo: &Repository,
        m: &Move<'_, '_>,
        now: &[(PathBuf, Option<Vec<u8>>)],
    ) -> Result<Written, GitError> {
        let mut before = Vec::new();
        for (path, content) in now {
            let blob = match content {
                Some(bytes) => Some(repo.blob(bytes)?.to_string()),
                None => None,
            };
            before.push((bytes(path), blob));
        }
        let journal = Journal {
            from: m.from.id().to_string(),
            to: m.to.id().to_string(),
            paths: m.paths.iter().map(|p| bytes(p)).collect(),
            before,
        };
        let text = serde_json::to_vec(&journal).map_err(std::io::Error::other)?;
        let path = repo.path().join(JOURNAL);
        let tmp = repo
            .path()
            .join(format!("{JOURNAL}.{}", std::process::id()));
        {
            let mut file = std::fs::File::create(&tmp)?;
            std::io::Write::write_all(&mut file, &text)?;
            file.sync_all()?;
        }
        std::fs::rename(&tmp, &path)?;
        if let Ok(dir) = std::fs::File::open(repo.path()) {
            let _ = dir.sync_all();
        }
        Ok(Written(path))
    }
}

fn bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

fn path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// Rolls back the move a killed tern left in `git_dir`, if any (called with the
/// repository lock held, after git's stale lock of that tern was removed): the files
/// go back as they were before it, the index follows where HEAD was, and HEAD goes
/// back if it had moved. Returns what it did, to be said; an error when a move was
/// found and could not be rolled back (nothing should be written over it then).
pub(super) fn roll_back(git_dir: &Path) -> Result<Option<String>, GitError> {
    let file = git_dir.join(JOURNAL);
    let Ok(text) = std::fs::read(&file) else {
        return Ok(None);
    };
    let Ok(journal) = serde_json::from_slice::<Journal>(&text) else {
        // Cut short before the rename could happen? The rename is atomic, so this
        // is not tern's: leave it, and say so.
        return Err(GitError::HalfMove(format!(
            "{} is not a move tern wrote; remove it if no tern is running",
            file.display()
        )));
    };
    let repo = Repository::open(git_dir)?;
    let (Ok(from), Ok(to)) = (Oid::from_str(&journal.from), Oid::from_str(&journal.to)) else {
        return Err(GitError::HalfMove(format!(
            "{} names no commits; remove it if no tern is running",
            file.display()
        )));
    };
    let workdir = repo.workdir().ok_or(GitError::Bare)?.to_path_buf();
    let outside = (journal.paths.iter().map(|p| (p, false)))
        .chain(journal.before.iter().map(|(p, blob)| (p, blob.is_some())))
        .find(|(p, written)| !in_work_tree(&workdir, &path(p), *written));
    if let Some((p, _)) = outside {
        return Err(GitError::HalfMove(format!(
            "{} names {:?}, which is not a file of the work tree tern would write (a path outside it, in .git, or through a symlink): it is not a move tern wrote, so nothing was done; it is kept for you to look at (remove it if no tern is running)",
            file.display(),
            path(p)
        )));
    }
    let head = Head::read(&repo)?;
    if head.id != Some(from) && head.id != Some(to) {
        // HEAD moved since (by the user, with git): the move is not tern's to finish.
        let _ = std::fs::remove_file(&file);
        return Ok(Some(format!(
            "a tern killed while moving HEAD from {} to {} left its journal; HEAD has moved since, so nothing was rolled back",
            super::short_id(from),
            super::short_id(to)
        )));
    }
    let mut lock = IndexLock::acquire(git_dir)?;
    let from_commit = repo.find_commit(from)?;
    let paths: Vec<PathBuf> = journal.paths.iter().map(|p| path(p)).collect();
    let mut changed: Vec<PathBuf> = Vec::new();
    let trees = [from_commit.tree()?, repo.find_commit(to)?.tree()?];
    for p in paths
        .iter()
        .cloned()
        .chain(journal.before.iter().map(|(p, _)| path(p)))
    {
        if !changed.contains(&p) && !still_as_left(&workdir, &trees, &journal.before, &p) {
            changed.push(p);
        }
    }
    if !changed.is_empty() {
        return Err(GitError::HalfMove(changed_since(
            &file, &head, from, to, &changed,
        )));
    }
    checkout(&repo, &from_commit, &paths)?;
    for (p, blob) in &journal.before {
        let target = workdir.join(path(p));
        match blob {
            Some(id) => std::fs::write(&target, repo.find_blob(Oid::from_str(id)?)?.content())?,
            None => match std::fs::remove_file(&target) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            },
        }
    }
    let mut index = lock.open()?;
    follow(&mut index, &from_commit, &paths)?;
    lock.prepare(&mut index)?;
    lock.check_held()?;
    if head.id == Some(to) && from != to {
        head.swap(&repo, from, "tern: rolled back a move a killed tern left")?;
    }
    lock.commit()?;
    std::fs::remove_file(&file)?;
    Ok(Some(format!(
        "rolled back a move of HEAD from {} to {} that a killed tern left half done ({} put back as they were)",
        super::short_id(from),
        super::short_id(to),
        crate::plural::count(paths.len(), "file")
    )))
}

/// Whether `p` names a file in the work tree at `workdir` that a move may write: a
/// relative path of plain names, none of them `.git`, through no symlinked directory
/// (nor, when the rollback `written` its content, a symlink itself, which the write
/// would follow). A journal's paths are checked so, for it may be foreign or corrupt.
fn in_work_tree(workdir: &Path, p: &Path, written: bool) -> bool {
    use std::path::Component;
    let mut at = workdir.to_path_buf();
    let mut names = p.components().peekable();
    if names.peek().is_none() {
        return false;
    }
    while let Some(name) = names.next() {
        let Component::Normal(name) = name else {
            return false;
        };
        if name.eq_ignore_ascii_case(".git") {
            return false;
        }
        at.push(name);
        let last = names.peek().is_none();
        if (!last || written)
            && std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
        {
            return false;
        }
    }
    true
}

/// Whether the work tree's `path` holds what the move a tern was killed in could have
/// left there: what `from` or `to` has (absent where one has none), or what `before`
/// says it held before the move. Anything else was written since, maybe by the user,
/// and a rollback would lose it.
fn still_as_left(
    workdir: &Path,
    trees: &[git2::Tree<'_>],
    before: &[(Vec<u8>, Option<String>)],
    p: &Path,
) -> bool {
    trees
        .iter()
        .any(|tree| super::holds::holds(workdir, tree, p))
        || before.iter().any(|(b, blob)| {
            path(b) == p
                && blob
                    .as_deref()
                    .map(Oid::from_str)
                    .transpose()
                    .is_ok_and(|blob| super::holds::holds_blob(workdir, p, blob))
        })
}

/// Why a move's rollback was refused: `changed` hold what its journal (`file`) does
/// not name, and what the user can do.
fn changed_since(file: &Path, head: &Head, from: Oid, to: Oid, changed: &[PathBuf]) -> String {
    let list = changed
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let (holds, them) = match changed.len() {
        1 => ("it holds", "it"),
        _ => ("they hold", "them"),
    };
    format!(
        "it was moving HEAD from {} to {}, and {list} changed since: {holds} what that move's journal ({}) does not name, maybe your work, so nothing was rolled back. Keep your change elsewhere and put {them} back as HEAD ({}) has {them} (`git checkout HEAD -- {list}`), then run tern again to roll the move back; or remove the journal to keep the files as they are now",
        super::short_id(from),
        super::short_id(to),
        file.display(),
        head.id.map_or("none".into(), super::short_id),
    )
}
