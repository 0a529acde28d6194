//! Undoing a whole turn: every commit that one user message led to (the first reply's
//! edits, a reflection's, auto-test rounds'), newest first, each with exactly the checks
//! of a single undo.

use git2::{Oid, Repository};

use std::path::PathBuf;

use super::failpoint::Failpoints;
use super::head_move::{Held, Move, move_head};
use super::index_lock::IndexLock;
use super::undo::{TurnRefusal, check, undo_head};
use super::{UndoError, Undone};

/// What a turn's undo did: the commits it undid, newest first, and, when a check
/// refused one, that commit, why, and the older ones it left alone.
#[derive(Debug)]
pub struct TurnUndone {
    pub undone: Vec<Undone>,
    pub stopped: Option<Stopped>,
}

/// Where a turn's undo stopped.
#[derive(Debug)]
pub struct Stopped {
    /// The commit that could not be undone.
    pub at: Oid,
    pub why: UndoError,
    /// The turn's commits still in place, newest first (`at` included).
    pub left: Vec<Oid>,
}

impl std::fmt::Display for TurnUndone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, undone) in self.undone.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{undone}")?;
        }
        if let Some(stopped) = &self.stopped {
            if !self.undone.is_empty() {
                writeln!(f)?;
            }
            write!(f, "{stopped}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let left: Vec<String> = self.left.iter().map(|id| super::short_id(*id)).collect();
        write!(
            f,
            "stopped at {}: {}; not undone: {}",
            super::short_id(self.at),
            self.why,
            left.join(", ")
        )
    }
}

/// Undoes `commits` (a turn's, oldest first, as they were made): only while they are
/// the newest commits on HEAD's first-parent line, in that order (else refused with
/// nothing changed); then one by one, newest first, under one hold of the lock. A
/// commit a check refuses stops the undo there: what was undone stays undone, the
/// rest stays committed, and nothing of the user's is lost either way.
pub fn undo_turn(repo: &Repository, commits: &[Oid]) -> Result<TurnUndone, UndoError> {
    if commits.is_empty() {
        return Err(TurnRefusal::NoTurn.into());
    }
    let _lock = super::undo::lock(repo)?;
    check_newest(repo, commits)?;
    Ok(undo_each(repo, commits))
}

/// Undoes `commits` (oldest first, as they were made) as a rewind does: all or none.
/// They must be the newest commits on HEAD's first-parent line, and every check of a
/// single undo must pass for each of them, against the work tree as it is, before
/// anything changes; so a file of the user's that any of them touches refuses the
/// whole rewind with nothing changed. Then HEAD moves past all of them at once (one
/// move, rolled back whole if it fails or the process is killed: `head_move`).
/// Returns what each undid, newest first, and the move's journal with the lock, to be
/// dropped once the session records the rewind (`Held`); no commits: nothing to do.
pub fn undo_since(
    repo: &Repository,
    commits: &[Oid],
) -> Result<(Vec<Undone>, Option<Held>), UndoError> {
    let Some(oldest) = commits.first() else {
        return Ok((Vec::new(), None));
    };
    let repo_lock = super::undo::lock(repo)?;
    let lock = IndexLock::acquire(repo.path())?;
    super::ensure_idle(repo)?;
    check_newest(repo, commits)?;
    let head = repo.find_commit(*commits.last().unwrap_or(oldest))?;
    let mut checked = Vec::new();
    for id in commits.iter().rev() {
        checked.push((*id, check(repo, &repo.find_commit(*id)?)?));
    }
    // The files each commit replaced come back as they were before it: an older
    // commit's word is the last.
    let mut restore: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for (_, c) in &checked {
        for (path, content) in c.restore() {
            restore.retain(|(p, _)| p != path);
            restore.push((path.clone(), content.clone()));
        }
    }
    let to = match checked.last() {
        Some((_, c)) => c.parent().clone(),
        None => return Ok((Vec::new(), None)),
    };
    let paths = super::undo::changed_paths(repo, &to, &head)?;
    let journal = move_head(
        repo,
        lock,
        Move {
            from: &head,
            to: &to,
            paths: &paths,
            restore: &restore,
            message: &format!(
                "tern rewind: {}",
                crate::plural::count(commits.len(), "commit")
            ),
        },
        &mut Failpoints::default(),
    )?;
    let undone = checked.into_iter().map(|(id, c)| c.undone(id)).collect();
    Ok((undone, Some(Held::new(journal, repo_lock))))
}

/// Why `undo_since` would refuse `commits` now, if it would (a preview's answer;
/// changes nothing).
pub fn check_all(repo: &Repository, commits: &[Oid]) -> Result<(), UndoError> {
    check_newest(repo, commits)?;
    for id in commits {
        check(repo, &repo.find_commit(*id)?)?;
    }
    Ok(())
}

/// The files `commits` changed, each once, in the order first changed.
pub fn files_of(repo: &Repository, commits: &[Oid]) -> Result<Vec<std::path::PathBuf>, UndoError> {
    let mut files = Vec::new();
    for id in commits {
        let commit = repo.find_commit(*id)?;
        let Some(parent) = commit.parents().next() else {
            continue;
        };
        for path in super::undo::changed_paths(repo, &parent, &commit)? {
            if !files.contains(&path) {
                files.push(path);
            }
        }
    }
    Ok(files)
}

/// Undoes `commits`, newest first, with the lock held and their order checked; a
/// commit a check refuses (a git error midway) stops there.
fn undo_each(repo: &Repository, commits: &[Oid]) -> TurnUndone {
    let mut undone = Vec::new();
    for (i, expected) in commits.iter().rev().enumerate() {
        match undo_head(repo, &mut Failpoints::default()) {
            Ok((done, journal)) => {
                journal.remove();
                undone.push(done);
            }
            Err(why) => {
                let left = commits.iter().rev().skip(i).copied().collect();
                return TurnUndone {
                    undone,
                    stopped: Some(Stopped {
                        at: *expected,
                        why,
                        left,
                    }),
                };
            }
        }
    }
    TurnUndone {
        undone,
        stopped: None,
    }
}

/// Refuses unless HEAD's first-parent line starts with `commits`, newest first: the
/// user may have committed since, or undone some by hand.
pub(crate) fn check_newest(repo: &Repository, commits: &[Oid]) -> Result<(), UndoError> {
    let mut at = super::commit::head_commit(repo)?;
    for expected in commits.iter().rev() {
        let Some(commit) = at else {
            return Err(TurnRefusal::Gone {
                expected: super::short_id(*expected),
            }
            .into());
        };
        if commit.id() != *expected {
            return Err(TurnRefusal::NotNewest {
                found: super::short_id(commit.id()),
                summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
                    .into_owned(),
                expected: super::short_id(*expected),
                on_top: repo
                    .graph_descendant_of(commit.id(), *expected)
                    .unwrap_or(false),
            }
            .into());
        }
        at = commit.parents().next();
    }
    Ok(())
}
