//! What a command tern ran changed in the work tree: a tree of the work tree (tracked
//! and untracked files, not ignored ones, as `git stash -u` keeps them) before and
//! after it, so that a rewind can put back what the command changed and its redo the
//! command's result, only while those files still hold what the command left (or, for
//! the redo, what the rewind left). Nothing else is touched: not HEAD, not the index.

use std::path::{Path, PathBuf};

use git2::{IndexAddOption, Oid, Repository};

use super::{GitError, UndoError, UndoRefusal};

/// A tree of the work tree as it is now. Its blobs go into the object database (as
/// `git stash -u` writes them); the index on disk is neither read for it nor written.
pub fn snapshot(root: &Path) -> Result<Oid, GitError> {
    // A handle of its own: the index changed here in memory is never written.
    let repo = Repository::discover(root)?;
    // Files whose stat the index has as it is are not read again.
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    Ok(index.write_tree()?)
}

/// Puts the files that differ between the trees `now` and `wanted` back as `wanted`
/// has them, when every one of them still holds what `now` has (else refused, with
/// nothing changed: someone changed them since). Returns the files.
pub fn swap_files(repo: &Repository, now: Oid, wanted: Oid) -> Result<Vec<PathBuf>, UndoError> {
    let paths = super::journal::changed(repo, now, wanted)?;
    let workdir = repo.workdir().ok_or(GitError::Bare)?;
    let wanted_tree = repo.find_tree(wanted)?;
    not_changed_since(repo, now, &paths)?;
    for path in &paths {
        let full = workdir.join(path);
        match wanted_tree.get_path(path) {
            Ok(entry) => {
                let blob = repo.find_blob(entry.id())?;
                if let Some(dir) = full.parent() {
                    std::fs::create_dir_all(dir).map_err(GitError::from)?;
                }
                std::fs::write(&full, blob.content()).map_err(GitError::from)?;
            }
            Err(_) => std::fs::remove_file(&full).map_err(GitError::from)?,
        }
    }
    Ok(paths)
}

/// Refused (`UndoRefusal::Dirty`) unless each of `paths` holds in the work tree what
/// the tree `then` has.
pub fn not_changed_since(repo: &Repository, then: Oid, paths: &[PathBuf]) -> Result<(), UndoError> {
    let workdir = repo.workdir().ok_or(GitError::Bare)?;
    let tree = repo.find_tree(then)?;
    let dirty: Vec<PathBuf> = paths
        .iter()
        .filter(|p| !super::holds::holds(workdir, &tree, p))
        .cloned()
        .collect();
    match dirty.is_empty() {
        true => Ok(()),
        false => Err(UndoRefusal::Dirty(dirty).into()),
    }
}
