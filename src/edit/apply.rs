//! Writing the accepted hunks: each file becomes its original plus only the accepted
//! hunks, written atomically (a temporary file in the same directory, then a rename),
//! and only if the file still holds what the proposal was made from.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::{EditError, Problem};
use super::hunks::{Decision, HunkId};
use super::proposal::{FileProposal, Proposal};
use super::safety::{self, Refusal, Target};
use crate::diff::FileText;

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
    /// Files git ignores that were replaced, with where their previous content was
    /// saved (git cannot bring it back) and the new content's SHA-256.
    pub backups: Vec<Backup>,
    /// Files that changed on disk in the instant between their last check and their
    /// write: not written, their hunks found again in the new content (back to
    /// pending), as a preflight does with a stale file.
    pub stale: Vec<StaleFile>,
}

/// The previous content of a replaced file that git ignores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    pub path: PathBuf,
    pub saved_at: PathBuf,
    pub written_sha256: String,
}

#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    /// The file really written, relative to the root (differs from `path` when that is
    /// a symlink): the path to commit.
    pub real: PathBuf,
    /// Where it was written.
    pub abs: PathBuf,
    pub hunks: Vec<HunkId>,
    pub created: bool,
    /// The file's bytes before tern wrote it (None: it did not exist).
    pub before: Option<Vec<u8>>,
    /// The bytes tern wrote: what its commit holds, whatever the file holds by then.
    pub bytes: Vec<u8>,
    /// The written file's metadata, taken from tern's own handle before it replaced
    /// the file, so it describes `bytes` and never a later save by the user.
    pub metadata: std::fs::Metadata,
    /// Directories created for a new file, deepest first.
    pub created_dirs: Vec<PathBuf>,
}

/// A file a landing is about to write.
#[derive(Debug)]
pub struct Planned {
    /// The file that will be written, relative to the root (see [`Written::real`]).
    pub real: PathBuf,
    /// What it holds now (None: no file).
    pub before: Option<Vec<u8>>,
    /// What tern will write.
    pub bytes: Vec<u8>,
    /// The directories a new file needs created, relative to the root, deepest first.
    pub new_dirs: Vec<PathBuf>,
}

#[derive(Debug)]
pub struct WriteFailure {
    pub path: PathBuf,
    pub error: WriteError,
}

/// Why an accepted file was not written, or not put back after a failed commit.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the file is read-only (its permissions forbid writing); tern does not replace it")]
    ReadOnlyFile,
    #[error(
        "the directory {} is read-only (its permissions forbid writing); tern does not write into it",
        .0.display()
    )]
    ReadOnlyDir(PathBuf),
    /// The file could not be read just before writing, to see it had not changed.
    #[error("it could not be read again before writing: {0}; not written")]
    Reread(io::Error),
    #[error(
        "git ignores this file, so git cannot restore it, and there is nowhere to back it up; not written"
    )]
    NowhereToBackUp,
    #[error("git ignores this file and it could not be backed up to {}: {source}; not written", to.display())]
    BackUp { to: PathBuf, source: io::Error },
    /// Not put back: someone saved it after tern wrote it.
    #[error("it changed after tern wrote it, so tern left it as it is now")]
    ChangedSince,
    /// `.gitattributes` sends the file through a filter driver (`lfs`) that git2
    /// cannot run, so a commit would hold the wrong content.
    #[error(
        "git stores it through the `{0}` filter (.gitattributes), which tern cannot run, so tern's commit would hold the wrong content; edit it yourself"
    )]
    ExternalFilter(String),
}

#[derive(Debug)]
pub struct StaleFile {
    pub path: PathBuf,
    /// Blocks that no longer apply to the file's new content.
    pub errors: Vec<EditError>,
}

/// The files a preflight cleared for writing (see [`Proposal::preflight`]).
#[derive(Debug)]
pub struct Ready {
    targets: Vec<(usize, Target)>,
    failed: Vec<WriteFailure>,
    root: PathBuf,
}

impl Ready {
    /// The files that will be written, relative to the root: the real files, not the
    /// symlinks the proposal names (their dirty changes are what must be committed
    /// first).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.targets
            .iter()
            .map(|(_, t)| t.real(&self.root))
            .collect()
    }

    /// Takes the files `why` objects to (given their real path, relative to the root)
    /// out of the landing, as failures: for checks only the caller can make, such as
    /// git's view of a path, before anything is committed or written.
    pub fn exclude(&mut self, why: impl Fn(&Path) -> Option<WriteError>) {
        let root = &self.root;
        let failed = &mut self.failed;
        self.targets.retain(|(_, t)| match why(&t.real(root)) {
            None => true,
            Some(error) => {
                failed.push(WriteFailure {
                    path: t.rel.clone(),
                    error,
                });
                false
            }
        });
    }
}

impl Proposal {
    /// Checks everything that can stop the accepted hunks from landing, without writing
    /// anything: confirmations, staleness (the stale files' hunks are found again in
    /// their new content, to review again), refusals and permissions. Only then may the
    /// caller commit the user's own changes and [`write`](Proposal::write).
    pub fn preflight(&mut self) -> Result<Ready, ApplyOutcome> {
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
            return Err(ApplyOutcome::NeedsConfirmation(unconfirmed));
        }
        let mut failed = Vec::new();
        let mut targets = Vec::new();
        let mut stale = Vec::new();
        for &i in &wanted {
            let file = &self.files[i];
            let fail = |error: WriteError| WriteFailure {
                path: file.path.clone(),
                error,
            };
            let target = match safety::resolve(&self.root, &file.path) {
                Ok(t) => t,
                Err(refusal) => {
                    failed.push(fail(refusal.into()));
                    continue;
                }
            };
            match on_disk(&target) {
                Ok(current) if current != expected(file) => stale.push((i, current)),
                Ok(_) => match writable(&target) {
                    Ok(()) => targets.push((i, target)),
                    Err(why) => failed.push(fail(why)),
                },
                Err(e) => failed.push(fail(e.into())),
            }
        }
        if !stale.is_empty() {
            return Err(ApplyOutcome::Stale(self.rebase_stale(stale)));
        }
        Ok(Ready {
            targets,
            failed,
            root: self.root.clone(),
        })
    }

    /// Writes every file with accepted hunks. Afterwards the proposal describes what is
    /// left: each written file's original is its new content and its remaining hunks
    /// are those not accepted, so applying again later writes only newly accepted ones.
    pub fn apply(&mut self) -> ApplyOutcome {
        match self
            .preflight()
            .and_then(|ready| self.write(ready, None, None))
        {
            Ok(applied) => ApplyOutcome::Applied(applied),
            Err(outcome) => outcome,
        }
    }

    /// Writes the files `ready` cleared, each atomically (a temporary file in `tmp`,
    /// else next to it, renamed over it). The preflight may be a while ago (a commit
    /// message is asked for in between): a file saved since makes the whole write
    /// stale, as at the preflight (nothing written, its hunks found again in the new
    /// content). An existing file git ignores is first copied under `backups` (and
    /// not written when that fails, or when there is nowhere to back it up).
    pub fn write(
        &mut self,
        ready: Ready,
        tmp: Option<&Path>,
        backups: Option<&Path>,
    ) -> Result<Applied, ApplyOutcome> {
        let stale: Vec<(usize, Option<Vec<u8>>)> = ready
            .targets
            .iter()
            .filter_map(|(i, target)| match on_disk(target) {
                Ok(now) if now != expected(&self.files[*i]) => Some((*i, now)),
                _ => None,
            })
            .collect();
        if !stale.is_empty() {
            return Err(ApplyOutcome::Stale(self.rebase_stale(stale)));
        }
        let mut applied = Applied {
            failed: ready.failed,
            ..Applied::default()
        };
        for (i, target) in ready.targets {
            let file = &self.files[i];
            match on_disk(&target) {
                Ok(now) if now == expected(file) => {}
                Ok(now) => {
                    // Saved in the instant since the check above.
                    let stale = self.rebase_file(i, now);
                    applied.stale.push(stale);
                    continue;
                }
                Err(e) => {
                    applied.failed.push(WriteFailure {
                        path: file.path.clone(),
                        error: WriteError::Reread(e),
                    });
                    continue;
                }
            }
            let bytes = accepted_content(file);
            let backup = match file.is_ignored_existing() {
                false => None,
                true => match back_up(file, backups, &bytes) {
                    Ok(backup) => Some(backup),
                    Err(error) => {
                        applied.failed.push(WriteFailure {
                            path: file.path.clone(),
                            error,
                        });
                        continue;
                    }
                },
            };
            let created_dirs = missing_dirs(&target.abs);
            match write_atomic(&target, &bytes, tmp) {
                Ok(metadata) => {
                    applied.backups.extend(backup);
                    applied.diff.push_str(&accepted_diff(file));
                    applied.written.push(Written {
                        path: file.path.clone(),
                        real: target.real(&self.root),
                        abs: target.abs.clone(),
                        hunks: file.accepted().map(|h| h.id).collect(),
                        created: !target.exists,
                        before: expected(file),
                        bytes: bytes.clone(),
                        metadata,
                        created_dirs,
                    });
                    self.settle(i, bytes);
                }
                Err(e) => {
                    if let Some(b) = &backup {
                        let _ = std::fs::remove_file(&b.saved_at);
                    }
                    applied.failed.push(WriteFailure {
                        path: file.path.clone(),
                        error: e.into(),
                    });
                }
            }
        }
        self.files.retain(|f| !f.hunks.is_empty());
        Ok(applied)
    }

    /// The unified diff of what writing `ready` would write: the accepted hunks of the
    /// files it cleared (for a commit message asked for before anything is written).
    pub(crate) fn planned_diff(&self, ready: &Ready) -> String {
        ready
            .targets
            .iter()
            .map(|(i, _)| accepted_diff(&self.files[*i]))
            .collect()
    }

    /// What writing `ready` would write, for a landing to write down before its first
    /// write.
    pub(crate) fn planned_files(&self, ready: &Ready) -> Vec<Planned> {
        ready
            .targets
            .iter()
            .map(|(i, target)| {
                let file = &self.files[*i];
                Planned {
                    real: target.real(&ready.root),
                    before: expected(file),
                    bytes: accepted_content(file),
                    new_dirs: missing_dirs(&target.abs)
                        .iter()
                        .filter_map(|d| d.strip_prefix(&ready.root).ok())
                        .map(Path::to_path_buf)
                        .collect(),
                }
            })
            .collect()
    }

    /// Re-diffs the files that changed on disk against their new content.
    fn rebase_stale(&mut self, stale: Vec<(usize, Option<Vec<u8>>)>) -> Vec<StaleFile> {
        let out = stale
            .into_iter()
            .map(|(i, current)| self.rebase_file(i, current))
            .collect();
        self.files.retain(|f| !f.hunks.is_empty());
        out
    }

    /// Re-diffs file `i` against its `current` content (None: it is gone); its hunks
    /// that no longer apply are dropped and returned (the file stays in the list).
    fn rebase_file(&mut self, i: usize, current: Option<Vec<u8>>) -> StaleFile {
        let mut taken = self.ids_except(i);
        let file = &mut self.files[i];
        let (text, existed) = match current.map(FileText::decode) {
            None => (FileText::new_file(), false),
            Some(Ok(text)) => (text, true),
            Some(Err(_)) => {
                // Now binary: nothing of the proposal can apply.
                let hunks = file.hunk_snapshots();
                let why = EditError::new(0, None, Problem::Binary, "").reason();
                return StaleFile {
                    path: file.path.clone(),
                    errors: file.fail_all(&hunks, &why),
                };
            }
        };
        let errors = file.rebase(text, existed, &mut taken);
        StaleFile {
            path: file.path.clone(),
            errors,
        }
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

/// A file's content with its accepted hunks, as written.
fn accepted_content(file: &FileProposal) -> Vec<u8> {
    file.content_with(|h| h.decision == Decision::Accept)
}

fn accepted_diff(file: &FileProposal) -> String {
    super::render::unified_diff(file, |h| h.decision == Decision::Accept, false)
}

impl Applied {
    /// Puts every written file back as it was before (its previous bytes, or no file
    /// and none of the directories made for it) and removes the backups taken, when a
    /// landing fails after writing. A file that no longer holds what tern wrote was
    /// saved by someone since: it is left alone and listed, with the files that could
    /// not be put back.
    pub(crate) fn put_back(&self) -> Vec<WriteFailure> {
        let mut failed = Vec::new();
        for w in self.written.iter().rev() {
            let now = std::fs::read(&w.abs).ok();
            if now.as_deref() != Some(w.bytes.as_slice()) {
                failed.push(WriteFailure {
                    path: w.path.clone(),
                    error: WriteError::ChangedSince,
                });
                continue;
            }
            let restored = match &w.before {
                Some(before) => {
                    let target = Target {
                        rel: w.path.clone(),
                        abs: w.abs.clone(),
                        exists: true,
                    };
                    write_atomic(&target, before, None).map(|_| ())
                }
                None => std::fs::remove_file(&w.abs).map(|()| {
                    for dir in &w.created_dirs {
                        if std::fs::remove_dir(dir).is_err() {
                            break;
                        }
                    }
                }),
            };
            if let Err(e) = restored {
                failed.push(WriteFailure {
                    path: w.path.clone(),
                    error: e.into(),
                });
            }
        }
        for b in &self.backups {
            let _ = std::fs::remove_file(&b.saved_at);
        }
        failed
    }
}

/// The directories `path`'s parent needs created, deepest first.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect()
}

/// The bytes the proposal was made from (None: the file did not exist).
fn expected(file: &FileProposal) -> Option<Vec<u8>> {
    file.existed.then(|| file.original.raw().to_vec())
}

fn on_disk(target: &Target) -> io::Result<Option<Vec<u8>>> {
    match crate::regular_file::read(&target.abs, crate::regular_file::MAX_TEXT_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Copies the current content of an ignored `file` under `dir` (same relative path).
fn back_up(file: &FileProposal, dir: Option<&Path>, new: &[u8]) -> Result<Backup, WriteError> {
    let dir = dir.ok_or(WriteError::NowhereToBackUp)?;
    let saved_at = dir.join(&file.path);
    let saved = saved_at
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&saved_at, file.original.raw()));
    saved.map_err(|source| WriteError::BackUp {
        to: saved_at.clone(),
        source,
    })?;
    Ok(Backup {
        path: file.path.clone(),
        saved_at,
        written_sha256: crate::digest::sha256_hex(new),
    })
}

/// Whether the file may be replaced or created: permissions that forbid writing the
/// file, or the directory its new content is renamed into (or created in), are the
/// user's statement that it must not change (root ignores the bits, tern does not).
/// Checked before anything is written or committed, not discovered halfway.
fn writable(target: &Target) -> Result<(), WriteError> {
    let read_only = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.permissions().readonly());
    if target.exists && read_only(&target.abs) {
        return Err(WriteError::ReadOnlyFile);
    }
    let dir = target.abs.ancestors().skip(1).find(|d| d.exists());
    if let Some(dir) = dir.filter(|d| read_only(d)) {
        return Err(WriteError::ReadOnlyDir(dir.to_path_buf()));
    }
    Ok(())
}

/// Writes `bytes` to a temporary file (in `tmp` when given and on the same disk, else
/// next to the target) and renames it over the target, keeping the target's
/// permissions. A new file must still not exist. Returns the metadata of what was
/// written, read through the temporary file's own handle before the rename.
fn write_atomic(
    target: &Target,
    bytes: &[u8],
    tmp: Option<&Path>,
) -> io::Result<std::fs::Metadata> {
    let dir = target.abs.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    if let Some(tmp) = tmp {
        match write_via(target, bytes, tmp) {
            Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {}
            done => return done,
        }
    }
    write_via(target, bytes, dir)
}

fn write_via(target: &Target, bytes: &[u8], dir: &Path) -> io::Result<std::fs::Metadata> {
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
    }
    let metadata = tmp.as_file().metadata()?;
    if target.exists {
        tmp.persist(&target.abs).map_err(|e| e.error)?;
    } else {
        tmp.persist_noclobber(&target.abs).map_err(|e| e.error)?;
    }
    Ok(metadata)
}
