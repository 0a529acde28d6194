//! What the work tree holds beyond HEAD: for `/diff` and `/commit`.

use std::path::{Path, PathBuf};

use git2::{Delta, DiffFormat, DiffOptions, Repository, StatusOptions};

use super::GitError;

/// Tracked files with uncommitted changes (staged or not), relative to the root. Not
/// those outside the sparse checkout, which libgit2 calls deleted.
pub(crate) fn modified_tracked_paths(repo: &Repository) -> Result<Vec<PathBuf>, GitError> {
    let mut options = StatusOptions::new();
    options.include_untracked(false).include_ignored(false);
    let statuses = repo.statuses(Some(&mut options))?;
    let paths: Vec<PathBuf> = statuses
        .iter()
        .filter(|s| !s.status().is_empty())
        .filter_map(|s| s.path().ok().map(PathBuf::from))
        .collect();
    super::dirty_paths(repo, &paths)
}

/// The uncommitted changes to tracked files as a unified diff against HEAD; a file
/// outside the sparse checkout is not shown deleted.
pub(crate) fn worktree_diff(root: &Path) -> Result<String, GitError> {
    let repo = Repository::open(root)?;
    let mut index = repo.index()?;
    index.read(false)?;
    let not_checked_out = |path: Option<&Path>| {
        path.and_then(|p| index.get_path(p, 0))
            .is_some_and(|e| crate::edit::not_checked_out(&e))
    };
    let head = match repo.head() {
        Ok(head) => Some(head.peel_to_tree()?),
        Err(_) => None,
    };
    let mut options = DiffOptions::new();
    let diff = repo.diff_tree_to_workdir_with_index(head.as_ref(), Some(&mut options))?;
    let mut text = String::new();
    diff.print(DiffFormat::Patch, |delta, _, line| {
        if delta.status() == Delta::Deleted && not_checked_out(delta.old_file().path()) {
            return true;
        }
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin());
        }
        text.push_str(&String::from_utf8_lossy(line.content()));
        true
    })?;
    Ok(text)
}
