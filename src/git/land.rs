//! Landing a reviewed proposal: the user's own uncommitted changes to the files about to
//! be written are committed first, then the accepted hunks are written, then they are
//! committed. `tern apply` and the engine both land through here.

use std::path::PathBuf;

use git2::Repository;

use super::{Commit, CommitOptions, GitError, commit_dirty, commit_edits};
use crate::edit::{Applied, ApplyOutcome, Proposal};

/// Which commits to make.
#[derive(Debug, Clone, Copy)]
pub struct LandOptions<'a> {
    /// Commit the written hunks (`auto_commits`).
    pub commit: bool,
    /// Commit the user's own changes to those files first (`dirty_commits`).
    pub dirty_commits: bool,
    pub commit_options: CommitOptions<'a>,
}

/// What landing did.
#[derive(Debug)]
pub enum Landed {
    /// Nothing was written: files changed on disk (the proposal was re-diffed; review
    /// again) or a gitignored new file needs confirmation.
    NotWritten(ApplyOutcome),
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

/// Lands the accepted hunks of `proposal`. `message` turns the written diff into a
/// commit message; it is only called when a commit will be made.
pub fn land(
    repo: Option<&Repository>,
    proposal: &mut Proposal,
    options: LandOptions<'_>,
    message: impl FnOnce(&str) -> String,
) -> Landed {
    let repo = repo.filter(|_| options.commit);
    let mut dirty = None;
    if let Some(repo) = repo.filter(|_| options.dirty_commits) {
        match commit_dirty(repo, &proposal.paths_to_write(), &options.commit_options) {
            Ok(made) => dirty = made,
            Err(e) => return Landed::DirtyCommitFailed(e),
        }
    }
    let applied = match proposal.apply() {
        ApplyOutcome::Applied(applied) => applied,
        other => return Landed::NotWritten(other),
    };
    let commit = match repo {
        Some(repo) if !applied.written.is_empty() => {
            let paths: Vec<PathBuf> = applied.written.iter().map(|w| w.real.clone()).collect();
            commit_edits(
                repo,
                &paths,
                &message(&applied.diff),
                &options.commit_options,
            )
        }
        _ => Ok(None),
    };
    Landed::Written {
        dirty,
        applied,
        commit,
    }
}
