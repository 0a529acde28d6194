//! Writing the accepted hunks: each file becomes its original plus only the accepted
//! hunks, written atomically (a temporary file in the same directory, then a rename),
//! and only if the file still holds what the proposal was made from.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::EditError;
use super::proposal::{Decision, FileProposal, HunkId, Proposal};
use super::safety::{self, Target};
use super::text::FileText;

/// What applying did.
#[derive(Debug)]
pub enum ApplyOutcome {
    /// Accepted hunks were written (see `failed` for files that could not be).
    Applied(Applied),
    /// Nothing was written: these files changed on disk since the proposal. Their
    /// hunks were recomputed against the new content (hunks that did not change keep
    /// their ids and decisions) and must be reviewed again.
    Stale(Vec<StaleFile>),
    /// Nothing was written: these new files are ignored by git and need
    /// [`Proposal::confirm`] (or their hunks rejected) first.
    NeedsConfirmation(Vec<PathBuf>),
}

#[derive(Debug, Default)]
pub struct Applied {
    pub written: Vec<Written>,
    pub failed: Vec<WriteFailure>,
    /// Unified diff of everything written, for the commit message.
    pub diff: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: PathBuf,
    /// The file really written, relative to the root (differs from `path` when that is
    /// a symlink): the path to commit.
    pub real: PathBuf,
    pub hunks: Vec<HunkId>,
    pub created: bool,
}

#[derive(Debug)]
pub struct WriteFailure {
    pub path: PathBuf,
    pub error: String,
}

#[derive(Debug)]
pub struct StaleFile {
    pub path: PathBuf,
    /// Blocks that no longer apply to the file's new content.
    pub errors: Vec<EditError>,
}

impl Proposal {
    /// Writes every file with accepted hunks. Afterwards the proposal describes what is
    /// left: each written file's original is its new content and its remaining hunks
    /// are those not accepted, so applying again later writes only newly accepted ones.
    pub fn apply(&mut self) -> ApplyOutcome {
        let wanted: Vec<usize> = (0..self.files.len())
            .filter(|&i| self.files[i].accepted().next().is_some())
            .collect();
        let unconfirmed: Vec<PathBuf> = wanted
            .iter()
            .map(|&i| &self.files[i])
            .filter(|f| f.needs_confirmation())
            .map(|f| f.path.clone())
            .collect();
        if !unconfirmed.is_empty() {
            return ApplyOutcome::NeedsConfirmation(unconfirmed);
        }
        let mut applied = Applied::default();
        let mut targets = Vec::new();
        let mut stale = Vec::new();
        for &i in &wanted {
            let file = &self.files[i];
            let target = match safety::resolve(&self.root, &file.path) {
                Ok(t) => t,
                Err(refusal) => {
                    applied.failed.push(WriteFailure {
                        path: file.path.clone(),
                        error: refusal.to_string(),
                    });
                    continue;
                }
            };
            match on_disk(&target) {
                Ok(current) if current == expected(file) => targets.push((i, target)),
                Ok(current) => stale.push((i, current)),
                Err(e) => applied.failed.push(WriteFailure {
                    path: file.path.clone(),
                    error: e.to_string(),
                }),
            }
        }
        if !stale.is_empty() {
            return ApplyOutcome::Stale(self.rebase_stale(stale));
        }
        for (i, target) in targets {
            let file = &self.files[i];
            let bytes = file.content_with(|h| h.decision == Decision::Accept);
            match write_atomic(&target, &bytes) {
                Ok(()) => {
                    applied.diff.push_str(&super::render::unified_diff(
                        file,
                        |h| h.decision == Decision::Accept,
                        false,
                    ));
                    applied.written.push(Written {
                        path: file.path.clone(),
                        real: target
                            .abs
                            .strip_prefix(&self.root)
                            .map_or_else(|_| file.path.clone(), Path::to_path_buf),
                        hunks: file.accepted().map(|h| h.id).collect(),
                        created: !target.exists,
                    });
                    self.settle(i, bytes);
                }
                Err(e) => applied.failed.push(WriteFailure {
                    path: file.path.clone(),
                    error: e.to_string(),
                }),
            }
        }
        self.files.retain(|f| !f.hunks.is_empty());
        ApplyOutcome::Applied(applied)
    }

    /// Re-diffs the files that changed on disk against their new content.
    fn rebase_stale(&mut self, stale: Vec<(usize, Option<Vec<u8>>)>) -> Vec<StaleFile> {
        let mut out = Vec::new();
        for (i, current) in stale {
            let mut taken = self.ids_except(i);
            let file = &mut self.files[i];
            let (text, existed) = match current.map(FileText::decode) {
                None => (FileText::new_file(), false),
                Some(Ok(text)) => (text, true),
                Some(Err(_)) => {
                    // Now binary: nothing of the proposal can apply.
                    file.hunks.clear();
                    out.push(StaleFile {
                        path: file.path.clone(),
                        errors: Vec::new(),
                    });
                    continue;
                }
            };
            let errors = file.rebase(text, existed, &mut taken);
            out.push(StaleFile {
                path: file.path.clone(),
                errors,
            });
        }
        self.files.retain(|f| !f.hunks.is_empty());
        out
    }

    /// After writing file `i`: its written content becomes the original and only the
    /// hunks not accepted remain.
    fn settle(&mut self, i: usize, written: Vec<u8>) {
        let mut taken = self.ids_except(i);
        if let Ok(text) = FileText::decode(written) {
            self.files[i].settle(text, &mut taken);
        }
    }
}

/// The bytes the proposal was made from (None: the file did not exist).
fn expected(file: &FileProposal) -> Option<Vec<u8>> {
    file.existed.then(|| file.original.raw().to_vec())
}

fn on_disk(target: &Target) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(&target.abs) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `bytes` to a temporary file next to the target and renames it over the
/// target, keeping the target's permissions. A new file must still not exist.
fn write_atomic(target: &Target, bytes: &[u8]) -> io::Result<()> {
    let dir = target.abs.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tern-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Like any new file: 0666 less the umask (the OS applies it at creation).
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if target.exists {
        let perms = std::fs::metadata(&target.abs)?.permissions();
        tmp.as_file().set_permissions(perms)?;
        tmp.persist(&target.abs).map_err(|e| e.error)?;
    } else {
        tmp.persist_noclobber(&target.abs).map_err(|e| e.error)?;
    }
    Ok(())
}
