//! The directory edits apply to: a repository's work tree (or a plain directory), with
//! the repository's ignore rules and file list when there is one.

use std::io;
use std::path::{Path, PathBuf};

pub struct Workspace {
    root: PathBuf,
    repo: Option<git2::Repository>,
}

impl Workspace {
    /// The work tree of the repository containing `dir`, or `dir` itself outside one.
    pub fn discover(dir: &Path) -> io::Result<Workspace> {
        match git2::Repository::discover(dir) {
            Ok(repo) if repo.workdir().is_some() => {
                let root = repo.workdir().unwrap_or(dir).canonicalize()?;
                Ok(Workspace {
                    root,
                    repo: Some(repo),
                })
            }
            _ => Ok(Workspace {
                root: dir.canonicalize()?,
                repo: None,
            }),
        }
    }

    /// Canonical, so paths under it compare reliably.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The submodule (a gitlink in the index) that `rel` lies in, checked out or not.
    pub fn submodule_of(&self, rel: &Path) -> Option<PathBuf> {
        let index = self.repo.as_ref()?.index().ok()?;
        index
            .iter()
            .filter(|e| e.mode == 0o160000)
            .filter_map(|e| std::str::from_utf8(&e.path).ok().map(PathBuf::from))
            .find(|sub| rel.starts_with(sub) && rel != sub.as_path())
    }

    /// Whether `rel` is tracked but outside the sparse checkout (skip-worktree in the
    /// index): absent on disk without the user having deleted it.
    pub fn is_not_checked_out(&self, rel: &Path) -> bool {
        // The repository's index object is cached: git may have changed the file since.
        let index = self.repo.as_ref().and_then(|r| {
            let mut index = r.index().ok()?;
            index.read(false).ok()?;
            Some(index)
        });
        index.is_some_and(|i| i.get_path(rel, 0).is_some_and(|e| not_checked_out(&e)))
    }

    /// Whether git ignores `rel`, or the file a symlink at `rel` leads to, and does not
    /// track it (a tracked file is git's to restore, whatever the ignore rules say).
    /// A tracked `config -> .env` symlink writes `.env`, which git cannot restore.
    pub(crate) fn is_ignored_untracked(&self, rel: &Path) -> bool {
        let index = self.repo.as_ref().and_then(|r| r.index().ok());
        let untracked = |p: &Path| index.as_ref().is_none_or(|i| i.get_path(p, 0).is_none());
        let untracked_ignored = |p: &Path| untracked(p) && self.is_ignored(p);
        let real = super::safety::resolve(&self.root, rel)
            .ok()
            .map(|t| t.real(&self.root));
        untracked_ignored(rel) || real.is_some_and(|r| r != rel && untracked_ignored(&r))
    }

    /// Whether git ignores `rel`. False outside a repository. libgit2 reads the
    /// `.gitignore` of every directory above it and `info/exclude`, and would block on
    /// a FIFO there: such a path counts as ignored, unasked.
    pub(crate) fn is_ignored(&self, rel: &Path) -> bool {
        self.repo.as_ref().is_some_and(|r| {
            let blocked = rel.ancestors().skip(1).any(|dir| {
                crate::regular_file::would_block(&self.root.join(dir).join(".gitignore"))
            }) || crate::regular_file::would_block(&r.path().join("info/exclude"));
            blocked || r.is_path_ignored(rel).unwrap_or(false)
        })
    }

    /// Every file the repository tracks (its index) and has checked out, relative to
    /// the root; outside a repository, every file not hidden or ignored.
    pub fn files(&self) -> Vec<PathBuf> {
        match &self.repo {
            Some(repo) => repo
                .index()
                .map(|index| {
                    index
                        .iter()
                        .filter(|e| !not_checked_out(e))
                        .filter_map(|e| std::str::from_utf8(&e.path).ok().map(PathBuf::from))
                        .collect()
                })
                .unwrap_or_default(),
            None if !crate::regular_file::walkable(&self.root, &[]) => Vec::new(),
            None => ignore::WalkBuilder::new(&self.root)
                .filter_entry(|e| {
                    !e.file_type().is_some_and(|t| t.is_dir())
                        || crate::regular_file::walkable(e.path(), &[])
                })
                .build()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .filter_map(|e| {
                    e.path()
                        .strip_prefix(&self.root)
                        .ok()
                        .map(Path::to_path_buf)
                })
                .collect(),
        }
    }
}

/// Whether an index entry is outside the sparse checkout (skip-worktree): git keeps it
/// tracked without a file on disk, and its absence is no change of the user's.
pub fn not_checked_out(entry: &git2::IndexEntry) -> bool {
    git2::IndexEntryExtendedFlag::from_bits_truncate(entry.flags_extended).is_skip_worktree()
}
