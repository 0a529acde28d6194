//! Landing a reviewed proposal: the user's own uncommitted changes to the files about to
//! be written are committed first, then the accepted hunks are written, then they are
//! committed. `tern apply` and the engine both land through here.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use git2::Repository;

use super::commit::commit_landing;
use super::{Commit, CommitOptions, GitError, RepoLock, commit_dirty, lock_wait};
use crate::edit::{Applied, ApplyOutcome, Proposal};

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
    /// Set (by a signal handler) to give up while waiting for another tern's lock;
    /// once the lock is held, the landing goes to its end.
    pub cancel: Option<&'a AtomicBool>,
}

/// What landing did.
#[derive(Debug)]
pub enum Landed {
    /// Nothing was written: files changed on disk (their hunks were found again in the
    /// new content; review again) or a gitignored file needs confirmation.
    NotWritten(ApplyOutcome),
    /// Nothing was written (or committed): no repository, another tern holds the lock,
    /// or git is in the middle of a merge or rebase.
    Refused(GitError),
    /// Nothing was written because the user's own changes could not be committed first.
    DirtyCommitFailed(GitError),
    Written {
        /// The commit of the user's own changes, made first.
        dirty: Option<Commit>,
        applied: Applied,
        /// The commit of the written hunks: None when commits are off or nothing
        /// differed from HEAD; an error (a hook refused, say) leaves the files written.
        commit: Result<Option<Commit>, GitError>,
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

/// Lands the accepted hunks of `proposal`, in an order that never leaves a half state:
/// the repository lock, the repository's state (no merge, rebase or conflicts), the
/// proposal's preflight (staleness, refusals, permissions, confirmations), files git
/// would need an external filter for; only then the commit of the user's own changes,
/// the writes, and the commit of what was written (with tern's note, whole, for undo). `message` turns the written
/// diff into a commit message; it is only called when a commit will be made. Outside a
/// repository nothing is written: without git, nothing could be undone.
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
    if let Err(e) = super::ensure_idle(repo) {
        return Landed::Refused(e);
    }
    let mut ready = match proposal.preflight() {
        Ok(ready) => ready,
        Err(outcome) => return Landed::NotWritten(outcome),
    };
    ready.exclude(|path| super::commit::external_filter(repo, path));
    let mut dirty = None;
    if options.commit && options.dirty_commits {
        match commit_dirty(repo, &ready.paths(), &options.commit_options) {
            Ok(made) => dirty = made,
            Err(e) => return Landed::DirtyCommitFailed(e),
        }
    }
    let backups = backup_dir(options.backup_root.as_deref());
    let applied = proposal.write(ready, Some(lock.tmp_dir()), backups.as_deref());
    let commit = match options.commit && !applied.written.is_empty() {
        true => {
            let paths: Vec<PathBuf> = applied.written.iter().map(|w| w.real.clone()).collect();
            super::undo::undo_lines(repo, &applied, !options.dirty_commits).and_then(|lines| {
                commit_landing(
                    repo,
                    &paths,
                    &message(&applied.diff),
                    &options.commit_options,
                    &lines,
                )
            })
        }
        false => Ok(None),
    };
    Landed::Written {
        dirty,
        applied,
        commit,
    }
}
