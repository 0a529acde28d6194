//! Landing a reviewed proposal, all or nothing. In order: tern's repository lock,
//! git's `index.lock` (refused, naming it, when another process holds it), git's state
//! (no merge, rebase or conflicts), the proposal's preflight (staleness, refusals,
//! permissions, confirmations), files git would need an external filter for, who
//! commits and whether the key signs; then the commit message (asked for before
//! anything is written, from the diff about to be written). Only then the commit of
//! the user's own changes to those files and the writes, and the commit of exactly the
//! bytes written. Both commits become visible together at the end (see
//! [`Committer`](super::commit::Committer)); a failure after the writes puts every
//! written file back as it was, and a kill after them is settled by the next tern from
//! the landing's journal, written before the first write (`journal`): rolled back
//! while the branch has not moved, finished once it has. `tern apply` and the engine
//! both land through here.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use git2::Repository;

use super::commit::Committer;
use super::failpoint::{Failpoints, Step, die_at};
use super::index_lock::IndexLock;
use super::journal::{Journal, Plan};
use super::{Commit, CommitOptions, GitError, RepoLock, lock_wait};
use crate::edit::{Applied, ApplyOutcome, Proposal, Ready, WriteFailure};

/// Which commits to make.
#[derive(Debug, Clone)]
pub struct LandOptions<'a> {
    /// Commit the written hunks (`auto_commits`).
    pub commit: bool,
    /// Commit the user's own changes to those files first (`dirty_commits`).
    pub dirty_commits: bool,
    pub commit_options: CommitOptions<'a>,
    /// Where replaced gitignored files are backed up (one folder per landing under it);
    /// None: such files are not written.
    pub backup_root: Option<PathBuf>,
    /// Set to give up (a signal, or the user quitting): honoured until the first
    /// write; from there the landing goes to its end.
    pub cancel: Option<&'a AtomicBool>,
}

/// What landing did.
#[derive(Debug)]
pub enum Landed {
    /// Nothing was written: files changed on disk (their hunks were found again in the
    /// new content; review again) or a gitignored file needs confirmation.
    NotWritten(ApplyOutcome),
    /// Nothing was written (or committed): no repository, another tern or git process
    /// holds its lock, git is in the middle of a merge or rebase, no identity to commit
    /// with, the key does not sign, or cancelled.
    Refused(GitError),
    /// Nothing was written because the user's own changes could not be committed first.
    DirtyCommitFailed(GitError),
    /// The files were written but the commit failed (a hook refused it, HEAD moved):
    /// nothing was committed, not even the user's own changes, and the files were put
    /// back as they were, except those listed (changed since tern wrote them, or that
    /// could not be written back).
    RolledBack {
        error: GitError,
        not_restored: Vec<WriteFailure>,
    },
    Written {
        /// The commit of the user's own changes, made first.
        dirty: Option<Commit>,
        applied: Applied,
        /// The commit of the written hunks: None when commits are off or nothing
        /// differed from HEAD.
        commit: Option<Commit>,
    },
}

/// Where this landing backs up the files git ignores that it replaces: a folder of its
/// own under `root`.
fn backup_dir(root: Option<&Path>) -> Option<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    root.map(|r| r.join(stamp.to_string()))
}

/// Lands the accepted hunks of `proposal` (see the module's doc for the order).
/// `message` turns the diff about to be written into a commit message; it is only
/// called when commits are made, before anything is written. Outside a repository
/// nothing is written: without git, nothing could be undone.
pub fn land(
    repo: Option<&Repository>,
    proposal: &mut Proposal,
    options: LandOptions<'_>,
    message: impl FnOnce(&str) -> String,
) -> Landed {
    let Some(repo) = repo else {
        return Landed::Refused(GitError::NoRepository);
    };
    let lock = match RepoLock::acquire_unless(repo.path(), lock_wait(), options.cancel) {
        Ok(lock) => lock,
        Err(e) => return Landed::Refused(e),
    };
    let mut fail = Failpoints::new(options.commit_options.fail_at);
    let index_lock = match fail
        .check(Step::IndexLock)
        .and_then(|()| IndexLock::acquire(repo.path()))
    {
        Ok(lock) => lock,
        Err(e) => return Landed::Refused(e),
    };
    if let Err(e) = super::ensure_idle(repo) {
        return Landed::Refused(e);
    }
    let mut ready = match proposal.preflight() {
        Ok(ready) => ready,
        Err(outcome) => return Landed::NotWritten(outcome),
    };
    ready.exclude(|path| super::commit::external_filter(repo, path));
    // Without commits, git's lock is still held while the files are written.
    let (mut committer, _held) = match options.commit {
        true => match Committer::new(
            repo,
            index_lock,
            &options.commit_options,
            fail,
            options.cancel,
        ) {
            Ok(committer) => (Some(committer), None),
            Err(e) => return Landed::Refused(e),
        },
        false => (None, Some(index_lock)),
    };
    let planned = proposal.planned_diff(&ready);
    let text = match committer.is_some() && !planned.is_empty() {
        true => Some(message(&planned)),
        false => None,
    };
    if options.cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
        return Landed::Refused(GitError::Interrupted);
    }
    let mut dirty = None;
    if let Some(committer) = committer.as_mut().filter(|_| options.dirty_commits) {
        match committer.commit_users(&ready.paths(), None) {
            Ok(made) => dirty = made,
            Err(GitError::Interrupted) => return Landed::Refused(GitError::Interrupted),
            Err(e) => return Landed::DirtyCommitFailed(e),
        }
    }
    if let Some(committer) = committer.as_mut() {
        committer.writing();
    }
    // Written down before the first write: a tern killed from here on is rolled back
    // or finished by the next one (`journal`).
    let from = match &committer {
        Some(committer) => Ok(committer.head()),
        None => super::head::Head::read(repo).map(|head| head.id),
    };
    let files = proposal.planned_files(&ready);
    let journal = from.and_then(|from| {
        Journal::write(
            repo,
            Plan::Landing {
                from,
                files: &files,
            },
        )
    });
    let mut journal = match journal {
        Ok(journal) => journal,
        Err(e) => return Landed::Refused(e),
    };
    let landed = write_and_commit(
        repo,
        &lock,
        proposal,
        ready,
        committer,
        &mut journal,
        Decided {
            planned,
            text,
            dirty,
            dirty_commits: options.dirty_commits,
            backups: backup_dir(options.backup_root.as_deref()),
        },
    );
    // Done, or put back: nothing is left for the next tern to settle.
    journal.remove();
    landed
}

/// What the landing decided before its first write.
struct Decided {
    /// The diff planned, and the message written for it.
    planned: String,
    text: Option<String>,
    /// The commit of the user's own changes, made (as objects) first.
    dirty: Option<Commit>,
    dirty_commits: bool,
    backups: Option<PathBuf>,
}

/// Writes the files and makes the commits visible; on a failure after the writes,
/// puts the files back and `proposal` as it was.
fn write_and_commit(
    repo: &Repository,
    lock: &RepoLock,
    proposal: &mut Proposal,
    ready: Ready,
    committer: Option<Committer<'_>>,
    journal: &mut Journal,
    decided: Decided,
) -> Landed {
    let Decided {
        planned,
        text,
        dirty,
        dirty_commits,
        backups,
    } = decided;
    let before = proposal.clone();
    let applied = match proposal.write(ready, Some(lock.tmp_dir()), backups.as_deref()) {
        Ok(applied) => applied,
        // Saved since the preflight: the user's own commit made above is dropped too.
        Err(outcome) => return Landed::NotWritten(outcome),
    };
    let Some(mut committer) = committer.filter(|_| !applied.written.is_empty()) else {
        // Without commits the landing ends with its writes (tests kill it after them);
        // with nothing written, the user's own changes are not committed either.
        die_at(Step::Written);
        return Landed::Written {
            dirty: None,
            applied,
            commit: None,
        };
    };
    // A file that could not be written leaves the planned message naming too much.
    let text = match text {
        Some(text) if applied.diff == planned => text,
        _ => super::message::fallback(&applied.diff),
    };
    let made = committer
        .check(Step::Written)
        .and_then(|()| super::undo::undo_lines(repo, &applied, !dirty_commits))
        .and_then(|lines| {
            let changes = committer.written_changes(&applied.written)?;
            committer.commit(&changes, &text, Some(&lines))
        });
    let committed = made.and_then(|commit| {
        // From here a kill is finished once the branch points at the tip.
        if let Some(tip) = committer.tip() {
            journal.landing_at(repo.path(), tip)?;
        }
        committer.finish().map(|()| commit)
    });
    match committed {
        Ok(commit) => Landed::Written {
            dirty,
            applied,
            commit,
        },
        Err(error) => {
            let not_restored = applied.put_back();
            *proposal = before;
            Landed::RolledBack {
                error,
                not_restored,
            }
        }
    }
}
