//! Undoing the last tern commit, only when that cannot lose or rewrite anyone's work.

use std::path::PathBuf;

use git2::{Oid, Repository};

use super::commit::head_commit;
use super::failpoint::{FailAt, Failpoints, Step};
use super::head_move::{Held, Move, move_head};
use super::index_lock::IndexLock;
use super::journal::Journal;
use super::notes::NOTES_REF;
use super::{GitError, RepoLock, commit::dirty_paths, lock_wait};

/// Why `undo` did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UndoRefusal {
    #[error("there are no commits to undo")]
    NoCommits,
    #[error("{id} {summary:?} is not a commit tern made; tern only undoes its own commits")]
    NotTern { id: String, summary: String },
    #[error("HEAD is a merge commit; tern does not undo merges")]
    Merge,
    #[error("HEAD is the repository's first commit; tern does not undo it")]
    Root,
    #[error("these files have changes that are not in tern's commits; commit or stash them first: {}", list(.0))]
    Dirty(Vec<PathBuf>),
    #[error("the commit is already on {}; undoing it would rewrite published history", .0.join(", "))]
    Published(Vec<String>),
    #[error("what tern saved to restore {} is gone (a deleted backup, or an object pruned by git gc), so undoing would lose that content; nothing was changed: revert the commit by hand (git revert)", list(.0))]
    Unrestorable(Vec<PathBuf>),
}

/// Why a turn's undo did not start (nothing was changed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnRefusal {
    #[error("no turn of this session made a commit that is left to undo")]
    NoTurn,
    #[error(
        "this turn's commits are no longer the newest on this branch: {found} {summary:?} {} its commit {expected}; undo or move those commits first",
        if *.on_top { "was committed on top of" } else { "stands in the place of" }
    )]
    NotNewest {
        found: String,
        summary: String,
        expected: String,
        /// `found` was committed after the expected commit (else it replaced it).
        on_top: bool,
    },
    #[error("this turn's commit {expected} is no longer on this branch")]
    Gone { expected: String },
}

#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error(transparent)]
    Refused(#[from] UndoRefusal),
    /// A turn's undo did not start.
    #[error(transparent)]
    Turn(#[from] TurnRefusal),
    #[error(transparent)]
    Git(#[from] GitError),
    /// A signal came while it waited for another tern's lock.
    #[error("cancelled: nothing was undone")]
    Interrupted,
}

impl From<git2::Error> for UndoError {
    fn from(e: git2::Error) -> Self {
        UndoError::Git(e.into())
    }
}

/// What `undo` reverted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    pub commit: Oid,
    pub summary: String,
    /// HEAD now.
    pub head: Oid,
    /// Files restored to their content before the commit.
    pub paths: Vec<PathBuf>,
    /// Files git ignores, put back from tern's backups.
    pub from_backups: Vec<PathBuf>,
    /// Files whose uncommitted changes tern's commit had taken along (dirty commits
    /// off): put back as the user left them, uncommitted.
    pub users_versions: Vec<PathBuf>,
}

impl std::fmt::Display for Undone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "undid {} {}", super::short_id(self.commit), self.summary)?;
        for p in &self.paths {
            writeln!(f, "  restored {}", p.display())?;
        }
        for p in &self.from_backups {
            writeln!(
                f,
                "  restored {} from tern's backup (git ignores it)",
                p.display()
            )?;
        }
        for p in &self.users_versions {
            writeln!(
                f,
                "  kept your own uncommitted changes to {} (still uncommitted)",
                p.display()
            )?;
        }
        write!(f, "HEAD is now {}", super::short_id(self.head))
    }
}

/// Reverts the last tern commit: its files go back to their previous content (in the
/// work tree and the index) and HEAD moves to its parent. Refused unless HEAD is a
/// tern commit, not a merge or the first commit, its files have not changed since,
/// and no remote-tracking branch contains it.
pub fn undo(repo: &Repository) -> Result<Undone, UndoError> {
    undo_failing(repo, None)
}

/// [`undo`], failing on purpose at `fail_at` (for tests; debug builds only).
pub fn undo_failing(repo: &Repository, fail_at: Option<FailAt>) -> Result<Undone, UndoError> {
    undo_held(repo, fail_at).map(|(undone, _recorded)| undone)
}

/// [`undo_failing`], the move's journal and the lock kept until the session records
/// the undo (`Held`): a kill before then is rolled back by the next tern.
pub fn undo_held(repo: &Repository, fail_at: Option<FailAt>) -> Result<(Undone, Held), UndoError> {
    // Another tern landing edits meanwhile would commit on top of, or stage over, what
    // this undo restores.
    let repo_lock = lock(repo)?;
    let (undone, journal) = undo_head(repo, &mut Failpoints::new(fail_at))?;
    Ok((undone, Held::new(journal, repo_lock)))
}

/// The repository lock for an undo, given up for a signal (`signals`): a signal while
/// another tern writes means "never mind", not "undo when you can".
pub(super) fn lock(repo: &Repository) -> Result<RepoLock, UndoError> {
    RepoLock::acquire_unless(repo.path(), lock_wait(), None).map_err(|e| match e {
        GitError::Interrupted => UndoError::Interrupted,
        other => other.into(),
    })
}

/// `undo`'s work, with the repository lock already held (a turn's undo holds it for
/// all of its commits), and the move's journal, for the caller to remove.
pub(super) fn undo_head(
    repo: &Repository,
    fail: &mut Failpoints,
) -> Result<(Undone, Journal), UndoError> {
    // git's lock first: a git command running meanwhile could change what is checked.
    fail.check(Step::IndexLock)?;
    let lock = IndexLock::acquire(repo.path())?;
    super::ensure_idle(repo)?;
    let commit = head_commit(repo)?.ok_or(UndoRefusal::NoCommits)?;
    let checked = check(repo, &commit)?;
    let message = format!("tern undo: {}", checked.summary);
    let journal = move_head(
        repo,
        lock,
        Move {
            from: &commit,
            to: &checked.parent,
            paths: &checked.paths,
            restore: &checked.restore,
            message: &message,
        },
        fail,
    )?;
    Ok((checked.undone(commit.id()), journal))
}

/// What `check` found of a commit that may be undone.
pub(super) struct Checked<'r> {
    summary: String,
    parent: git2::Commit<'r>,
    /// The files it changed.
    paths: Vec<PathBuf>,
    backups: Vec<crate::edit::Backup>,
    users: Vec<(PathBuf, Oid)>,
    /// What to put back after the checkout (`saved_contents`).
    restore: Vec<(PathBuf, Vec<u8>)>,
}

impl<'r> Checked<'r> {
    pub(super) fn parent(&self) -> &git2::Commit<'r> {
        &self.parent
    }

    pub(super) fn restore(&self) -> &[(PathBuf, Vec<u8>)] {
        &self.restore
    }

    /// What undoing `commit` (the commit checked) did, once HEAD moved past it.
    pub(super) fn undone(self, commit: Oid) -> Undone {
        Undone {
            commit,
            summary: self.summary,
            head: self.parent.id(),
            paths: self.paths,
            from_backups: self.backups.into_iter().map(|b| b.path).collect(),
            users_versions: self.users.into_iter().map(|(path, _)| path).collect(),
        }
    }
}

/// Every refusal of an undo of `commit`, checked against the work tree as it is now:
/// it must be tern's, not a merge or the first commit, its files (and the ignored
/// files it replaced) unchanged since, and on no remote-tracking branch. Changes
/// nothing, so a rewind checks all of its commits before it undoes the first.
pub(super) fn check<'r>(
    repo: &'r Repository,
    commit: &git2::Commit<'r>,
) -> Result<Checked<'r>, UndoError> {
    let summary = String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned();
    if repo.find_note(Some(NOTES_REF), commit.id()).is_err() {
        return Err(UndoRefusal::NotTern {
            id: super::short_id(commit.id()),
            summary,
        }
        .into());
    }
    let parent = match commit.parent_count() {
        0 => return Err(UndoRefusal::Root.into()),
        1 => commit.parent(0)?,
        _ => return Err(UndoRefusal::Merge.into()),
    };
    let paths = changed_paths(repo, &parent, commit)?;
    let mut dirty = dirty_paths(repo, &paths)?;
    let backups = noted_backups(repo, commit.id());
    dirty.extend(
        backups
            .iter()
            .filter(|b| !still_as_written(repo, b))
            .map(|b| b.path.clone()),
    );
    if !dirty.is_empty() {
        return Err(UndoRefusal::Dirty(dirty).into());
    }
    let published = remote_branches_containing(repo, commit.id())?;
    if !published.is_empty() {
        return Err(UndoRefusal::Published(published).into());
    }
    // Everything to put back is read before anything changes: found missing after the
    // checkout, the user's content would be gone with nothing to restore it from.
    let users = noted_users_changes(repo, commit.id());
    let restore = saved_contents(repo, &backups, &users)?;
    Ok(Checked {
        summary,
        parent,
        paths,
        backups,
        users,
        restore,
    })
}

/// The files that differ between two commits' trees, each once.
pub(super) fn changed_paths(
    repo: &Repository,
    from: &git2::Commit<'_>,
    to: &git2::Commit<'_>,
) -> Result<Vec<PathBuf>, GitError> {
    super::journal::changed(repo, from.tree_id(), to.tree_id())
}

fn remote_branches_containing(repo: &Repository, id: Oid) -> Result<Vec<String>, GitError> {
    let mut found = Vec::new();
    for reference in repo.references_glob("refs/remotes/*")? {
        let reference = reference?;
        let Ok(resolved) = reference.resolve() else {
            continue;
        };
        let Some(tip) = resolved.target() else {
            continue;
        };
        if tip == id || repo.graph_descendant_of(tip, id)? {
            let name = reference
                .shorthand()
                .unwrap_or("a remote branch")
                .to_string();
            if !found.contains(&name) {
                found.push(name);
            }
        }
    }
    Ok(found)
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tern note line recording a backup: `backup <sha256 of what tern wrote>\t<path
/// in the repository>\t<where the previous content was saved>`.
const BACKUP: &str = "backup ";

/// Lines of backups of ignored files a landing replaced, for its commit's tern note, so
/// that undo restores them.
fn backup_lines(backups: &[crate::edit::Backup]) -> String {
    backups
        .iter()
        .map(|b| {
            format!(
                "{BACKUP}{}\t{}\t{}\n",
                b.written_sha256,
                b.path.display(),
                b.saved_at.display()
            )
        })
        .collect()
}

/// What undo will need to know about a landing beyond its commit, as lines for the
/// commit's tern note: the backups of replaced ignored files and, when `users` (dirty
/// commits are off), the user's own uncommitted version of each written file. Made
/// before the commit, against HEAD (the commit's parent to be).
pub(crate) fn undo_lines(
    repo: &Repository,
    applied: &crate::edit::Applied,
    users: bool,
) -> Result<String, GitError> {
    let mut lines = backup_lines(&applied.backups);
    if users {
        lines.push_str(&users_lines(repo, applied)?);
    }
    Ok(lines)
}

/// The rest of each line of `commit`'s tern note that starts with `prefix`.
fn note_lines(repo: &Repository, commit: Oid, prefix: &str) -> Vec<String> {
    let Ok(note) = repo.find_note(Some(NOTES_REF), commit) else {
        return Vec::new();
    };
    note.message()
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix(prefix).map(str::to_string))
        .collect()
}

pub(super) fn noted_backups(repo: &Repository, commit: Oid) -> Vec<crate::edit::Backup> {
    note_lines(repo, commit, BACKUP)
        .into_iter()
        .filter_map(|rest| {
            let mut parts = rest.splitn(3, '\t');
            Some(crate::edit::Backup {
                written_sha256: parts.next()?.to_string(),
                path: PathBuf::from(parts.next()?),
                saved_at: PathBuf::from(parts.next()?),
            })
        })
        .collect()
}

/// Whether the ignored file still holds what tern wrote (else the user changed it
/// since, and restoring the backup would lose that).
fn still_as_written(repo: &Repository, backup: &crate::edit::Backup) -> bool {
    let Some(workdir) = repo.workdir() else {
        return false;
    };
    crate::regular_file::read(
        &workdir.join(&backup.path),
        crate::regular_file::MAX_TEXT_BYTES,
    )
    .is_ok_and(|now| crate::digest::sha256_hex(&now) == backup.written_sha256)
}

/// The content undo puts back after the checkout, per path: ignored files from their
/// backups, then the user's own versions (`users`, blobs). Refused when any of it can
/// no longer be read.
fn saved_contents(
    repo: &Repository,
    backups: &[crate::edit::Backup],
    users: &[(PathBuf, Oid)],
) -> Result<Vec<(PathBuf, Vec<u8>)>, UndoError> {
    let mut contents = Vec::new();
    let mut missing = Vec::new();
    for b in backups {
        match crate::regular_file::read(&b.saved_at, crate::regular_file::MAX_TEXT_BYTES) {
            Ok(bytes) => contents.push((b.path.clone(), bytes)),
            Err(_) => missing.push(b.path.clone()),
        }
    }
    for (path, blob) in users {
        match repo.find_blob(*blob) {
            Ok(blob) => contents.push((path.clone(), blob.content().to_vec())),
            Err(_) => missing.push(path.clone()),
        }
    }
    match missing.is_empty() {
        true => Ok(contents),
        false => Err(UndoRefusal::Unrestorable(missing).into()),
    }
}

/// The tern note line recording the user's own uncommitted version of a file that a
/// commit made without a dirty commit took along: `users <blob id>\t<path>`.
const USERS: &str = "users ";

/// With dirty commits off, a tern commit of a file the user had changed holds their
/// changes too. Their version (as a blob) goes into the note, so that undo takes back
/// only what tern wrote and leaves the user's changes uncommitted, as they were.
/// Ignored files are not committed (their backups restore them).
fn users_lines(repo: &Repository, applied: &crate::edit::Applied) -> Result<String, GitError> {
    let head_tree = head_commit(repo)?.map(|c| c.tree()).transpose()?;
    let mut lines = String::new();
    for w in &applied.written {
        let Some(before) = &w.before else { continue };
        if applied.backups.iter().any(|b| b.path == w.path) {
            continue;
        }
        let committed = head_tree
            .as_ref()
            .and_then(|t| t.get_path(&w.real).ok())
            .and_then(|entry| repo.find_blob(entry.id()).ok())
            .map(|blob| blob.content().to_vec());
        if committed.as_deref() != Some(before.as_slice()) {
            let blob = repo.blob(before)?;
            lines.push_str(&format!("{USERS}{blob}\t{}\n", w.real.display()));
        }
    }
    Ok(lines)
}

fn noted_users_changes(repo: &Repository, commit: Oid) -> Vec<(PathBuf, Oid)> {
    note_lines(repo, commit, USERS)
        .into_iter()
        .filter_map(|rest| {
            let (blob, path) = rest.split_once('\t')?;
            Some((PathBuf::from(path), Oid::from_str(blob).ok()?))
        })
        .collect()
}
