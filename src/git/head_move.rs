//! Moving HEAD along its first-parent line with the files that change: an undo (to
//! the parent), a rewind (past several commits at once), its redo (forward again).
//!
//! A move writes the files first and moves the branch last, so it is written down
//! before anything changes (`journal`: where HEAD was and goes, the files, and what
//! the files it restores held), and the next tern to take the repository lock rolls
//! back a move a killed tern left: all or nothing, across a kill too.

use std::path::PathBuf;

use git2::Repository;

use super::GitError;
use super::failpoint::{Failpoints, Step};
use super::head::Head;
use super::index_lock::IndexLock;
use super::journal::{Journal, Plan, checkout, follow};
use super::lock::RepoLock;

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
/// kill on the way is rolled back by the next tern (`journal::settle`). Done, its
/// journal is handed back: the caller removes it once whatever records the move (a
/// session) has, so that a kill before then is rolled back too.
pub(super) fn move_head(
    repo: &Repository,
    mut lock: IndexLock,
    m: Move<'_, '_>,
    fail: &mut Failpoints,
) -> Result<Journal, GitError> {
    let workdir = repo.workdir().ok_or(GitError::Bare)?.to_path_buf();
    // What the restored files hold now, to put back if the move fails.
    let now: Vec<(PathBuf, Option<Vec<u8>>)> = m
        .restore
        .iter()
        .map(|(path, _)| (path.clone(), std::fs::read(workdir.join(path)).ok()))
        .collect();
    let head = Head::read(repo)?;
    let journal = Journal::write(
        repo,
        Plan::Move {
            from: m.from.id(),
            to: m.to.id(),
            paths: m.paths,
            now: &now,
        },
    )?;
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
    if let Err(e) = moved {
        let _ = checkout(repo, m.from, m.paths);
        for (path, content) in &now {
            let _ = match content {
                Some(bytes) => std::fs::write(workdir.join(path), bytes),
                None => std::fs::remove_file(workdir.join(path)),
            };
        }
        // Put back: nothing is left for the next tern to roll back.
        journal.remove();
        return Err(e);
    }
    super::failpoint::die_at(Step::Moved);
    Ok(journal)
}

/// A move of HEAD done (a rewind, its redo) whose journal is kept, with the
/// repository lock, until the session has recorded it: dropped then, the journal goes
/// and the lock is released. A tern killed before then leaves the journal, and the
/// next one rolls the move back, so the code and the session never disagree.
#[derive(Debug)]
#[must_use = "dropping it says the move is recorded"]
pub struct Held {
    journal: Option<Journal>,
    _lock: RepoLock,
}

impl Held {
    pub(super) fn new(journal: Journal, lock: RepoLock) -> Held {
        Held {
            journal: Some(journal),
            _lock: lock,
        }
    }
}

impl Drop for Held {
    /// The journal goes before the lock (a field, dropped after this): no other tern
    /// can settle it in between.
    fn drop(&mut self) {
        if let Some(journal) = self.journal.take() {
            journal.remove();
        }
    }
}
