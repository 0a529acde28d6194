//! Redoing a rewind's code: HEAD moved back to where the rewind found it, the commits
//! it took back restored as they were (the same ids), only while nothing moved since
//! and none of their files changed, so that nothing of the user's is touched.

use std::path::PathBuf;

use git2::{Oid, Repository};

use super::commit::{dirty_paths, head_commit};
use super::failpoint::Failpoints;
use super::head_move::{Held, Move, move_head};
use super::index_lock::IndexLock;
use super::undo::lock;
use super::{GitError, UndoError};

/// Why a redo did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedoRefusal {
    #[error(
        "HEAD is {found}, not {expected} where the rewind left it: something was committed or undone since, so the rewound commits cannot come back as they were"
    )]
    Moved { found: String, expected: String },
    #[error("the rewound commit {0} is gone from the repository (git gc?)")]
    Gone(String),
    #[error("these files changed since the rewind; commit or stash them first: {}", .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    Dirty(Vec<PathBuf>),
    #[error(
        "the rewound commit {0} wrote files git ignores, and what it wrote there is not kept anywhere, so a redo cannot bring it back"
    )]
    Ignored(String),
}

#[derive(Debug, thiserror::Error)]
pub enum RedoError {
    #[error(transparent)]
    Refused(#[from] RedoRefusal),
    #[error(transparent)]
    Undo(#[from] UndoError),
}

impl From<GitError> for RedoError {
    fn from(e: GitError) -> Self {
        RedoError::Undo(e.into())
    }
}

impl From<git2::Error> for RedoError {
    fn from(e: git2::Error) -> Self {
        RedoError::Undo(e.into())
    }
}

/// Moves HEAD from `at` (where the rewind left it) forward to `to` (where it was
/// before), the files the rewound commits changed checked out again. Refused, with
/// nothing changed, when HEAD is not `at`, `to` does not stand on `at`, a commit
/// between them replaced an ignored file, or one of their files changed since.
/// Returns the files brought back, and the move's journal with the lock, to be dropped
/// once the session records the redo (`Held`).
pub fn redo_rewind(repo: &Repository, at: Oid, to: Oid) -> Result<(Vec<PathBuf>, Held), RedoError> {
    let repo_lock = lock(repo)?;
    let index = IndexLock::acquire(repo.path())?;
    super::ensure_idle(repo)?;
    let found = head_commit(repo)?.map(|c| c.id());
    if found != Some(at) {
        return Err(RedoRefusal::Moved {
            found: found.map_or("unborn".into(), super::short_id),
            expected: super::short_id(at),
        }
        .into());
    }
    let gone = || RedoRefusal::Gone(super::short_id(to));
    let from = repo.find_commit(at)?;
    let target = repo.find_commit(to).map_err(|_| gone())?;
    if !repo.graph_descendant_of(to, at)? {
        return Err(gone().into());
    }
    let mut walk = Some(target.clone());
    while let Some(commit) = walk.filter(|c| c.id() != at) {
        if !super::undo::noted_backups(repo, commit.id()).is_empty() {
            return Err(RedoRefusal::Ignored(super::short_id(commit.id())).into());
        }
        walk = commit.parents().next();
    }
    let paths = super::undo::changed_paths(repo, &from, &target)?;
    let dirty = dirty_paths(repo, &paths)?;
    if !dirty.is_empty() {
        return Err(RedoRefusal::Dirty(dirty).into());
    }
    let journal = move_head(
        repo,
        index,
        Move {
            from: &from,
            to: &target,
            paths: &paths,
            restore: &[],
            message: "tern rewind redo",
        },
        &mut Failpoints::default(),
    )?;
    Ok((paths, Held::new(journal, repo_lock)))
}
