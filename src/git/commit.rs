//! Making commits, the one way every commit of tern's is made (a landing's, the user's
//! own changes committed first, `/commit`): under git's `index.lock`, each commit is
//! built as objects only, so nothing is visible yet: blobs from given bytes, a tree
//! that is its parent's with exactly those paths changed (like `git commit --only`:
//! whatever else the user staged stays staged), the commit object, signed when
//! configured. Then the new index goes into the lock file, tern's notes are written,
//! the branch moves by compare and swap from where it was read, and the lock file is
//! renamed over the index. A failure before that last step leaves the repository as
//! it was.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, IndexEntry, Oid, Repository, Status};

use super::failpoint::{Failpoints, Step};
use super::head::Head;
use super::identity::Identity;
use super::index_lock::{IndexLock, entry};
use super::journal::{Journal, Plan};
use super::notes::{NOTES_REF, restore_notes, write_notes};
use super::sign::Signer;
use super::{CommitOptions, GitError, RepoLock, hooks, lock_wait, message};
use crate::edit::WriteError;

/// A commit tern made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub id: Oid,
    /// The message's first line.
    pub summary: String,
    pub paths: Vec<PathBuf>,
    /// Made on a detached HEAD: no branch holds it (git says `[detached HEAD abc1234]`).
    pub detached: bool,
}

impl Commit {
    pub fn short_id(&self) -> String {
        super::short_id(self.id)
    }

    /// What git's `[detached HEAD abc1234]` says, when no branch holds the commit.
    pub fn detached_note(&self) -> Option<&'static str> {
        self.detached
            .then_some("on a detached HEAD: no branch holds it (`git switch -c NAME` makes one)")
    }

    /// Its id and subject as a commit line says them, with [`Commit::detached_note`].
    pub fn line(&self) -> String {
        match self.detached_note() {
            Some(note) => format!("{} {} ({note})", self.short_id(), self.summary),
            None => format!("{} {}", self.short_id(), self.summary),
        }
    }
}

/// Of `paths`, those with changes git has not committed: staged, unstaged, or
/// untracked (and not ignored). A file outside the sparse checkout is absent on disk
/// by git's doing, not the user's: libgit2 would call it deleted.
pub fn dirty_paths(repo: &Repository, paths: &[PathBuf]) -> Result<Vec<PathBuf>, GitError> {
    let mut index = repo.index()?;
    // The repository's index object is cached: git may have changed the file since.
    index.read(false)?;
    let mut dirty = Vec::new();
    for p in paths {
        if index
            .get_path(p, 0)
            .is_some_and(|e| crate::edit::not_checked_out(&e))
        {
            continue;
        }
        let status = match repo.status_file(p) {
            Ok(s) => s,
            Err(e) if e.code() == git2::ErrorCode::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        if !status.is_empty() && !status.contains(Status::IGNORED) {
            dirty.push(p.clone());
        }
    }
    Ok(dirty)
}

/// Commits the user's own uncommitted changes to `paths` (the files tern is about to
/// edit) in a commit of their own, so they never mix with the model's. Not a tern
/// commit: `undo` will not revert it. None when the paths are clean.
pub fn commit_dirty(
    repo: &Repository,
    paths: &[PathBuf],
    opts: &CommitOptions<'_>,
) -> Result<Option<Commit>, GitError> {
    alone(repo, opts, |c| c.commit_users(paths, None))
}

/// `/commit [MESSAGE]`: the user's uncommitted changes to `paths`, with their message
/// or, without one, a subject naming the files. Not a tern commit either.
pub fn commit_user_changes(
    repo: &Repository,
    paths: &[PathBuf],
    message: Option<&str>,
    opts: &CommitOptions<'_>,
) -> Result<Option<Commit>, GitError> {
    // Every `git log` shows the message: no control or hidden character of the user's
    // text may reach it (as for the model's subjects, `message::clean`).
    let message = crate::terminal_text::without_unsafe(message.unwrap_or_default());
    alone(repo, opts, |c| c.commit_users(paths, Some(&message)))
}

/// Commits the working-tree content of `paths` on top of HEAD with `message` (plus
/// the co-author trailer), marked as a tern commit. Paths that are untracked and
/// ignored are not committed. None when nothing differs from HEAD.
pub fn commit_edits(
    repo: &Repository,
    paths: &[PathBuf],
    message: &str,
    opts: &CommitOptions<'_>,
) -> Result<Option<Commit>, GitError> {
    alone(repo, opts, |c| {
        let changes = c.worktree_changes(paths)?;
        c.commit(&changes, message, Some(""))
    })
}

/// One commit made on its own: tern's lock, git's, the commit, the rest.
fn alone(
    repo: &Repository,
    opts: &CommitOptions<'_>,
    make: impl FnOnce(&mut Committer<'_>) -> Result<Option<Commit>, GitError>,
) -> Result<Option<Commit>, GitError> {
    let _lock = RepoLock::acquire(repo.path(), lock_wait())?;
    let mut fail = Failpoints::new(opts.fail_at);
    fail.check(Step::IndexLock)?;
    let lock = IndexLock::acquire(repo.path())?;
    super::ensure_idle(repo)?;
    let mut committer = Committer::new(repo, lock, opts, fail, None)?;
    let made = make(&mut committer)?;
    // A tern killed between the branch's move and the index's is finished by the next.
    let journal = match committer.tip() {
        Some(tip) => {
            let plan = Plan::Landing {
                from: committer.head(),
                files: &[],
            };
            let mut journal = Journal::write(repo, plan)?;
            if let Err(e) = journal.landing_at(repo.path(), tip) {
                journal.remove();
                return Err(e);
            }
            Some(journal)
        }
        None => None,
    };
    let finished = committer.finish();
    if let Some(journal) = journal {
        journal.remove();
    }
    finished?;
    Ok(made)
}

/// A path's new content in a commit (an index entry: blob, mode and the file's stat),
/// or its removal.
#[derive(Debug)]
pub(crate) enum Change {
    Put(IndexEntry),
    Remove(PathBuf),
}

impl Change {
    fn path(&self) -> PathBuf {
        match self {
            Change::Put(entry) => entry_path(entry),
            Change::Remove(path) => path.clone(),
        }
    }
}

fn entry_path(entry: &IndexEntry) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&entry.path).into_owned())
}

/// Commits in the making, under git's index lock; nothing is visible until
/// [`finish`](Committer::finish), and dropping it changes nothing.
pub(crate) struct Committer<'r> {
    repo: &'r Repository,
    lock: IndexLock,
    /// The index as it will be written.
    index: git2::Index,
    head: Head,
    /// The parent of the next commit: HEAD, then the last commit made.
    tip: Option<Oid>,
    signer: Option<Signer>,
    opts: CommitOptions<'r>,
    fail: Failpoints,
    made: Vec<Oid>,
    /// tern's notes, by commit.
    notes: Vec<(Oid, String)>,
    /// Set to give up: kills the hooks and the signing program run before the first
    /// write (see [`writing`](Committer::writing)).
    cancel: Option<&'r AtomicBool>,
}

impl<'r> Committer<'r> {
    /// Starts making commits while `lock` is held: checks who commits and, when
    /// commits are signed, that the key signs (a probe), before anything is written.
    pub(crate) fn new(
        repo: &'r Repository,
        lock: IndexLock,
        opts: &CommitOptions<'r>,
        mut fail: Failpoints,
        cancel: Option<&'r AtomicBool>,
    ) -> Result<Committer<'r>, GitError> {
        fail.check(Step::Identity)?;
        let identity = Identity::resolve(repo)?;
        fail.check(Step::Signing)?;
        let signer = Signer::configured(repo, &identity.committer, cancel)?;
        if let Some(signer) = &signer {
            signer.probe(cancel)?;
        }
        let head = Head::read(repo)?;
        let index = lock.open()?;
        Ok(Committer {
            repo,
            lock,
            index,
            tip: head.id,
            head,
            signer,
            opts: *opts,
            fail,
            made: Vec::new(),
            notes: Vec::new(),
            cancel,
        })
    }

    /// The files are about to be written: from here the commit goes to its end (or
    /// rolls back), so a cancel no longer stops its hooks or signing.
    pub(crate) fn writing(&mut self) {
        self.cancel = None;
    }

    /// Where HEAD was when the commits began (None: an unborn branch).
    pub(crate) fn head(&self) -> Option<Oid> {
        self.head.id
    }

    /// The last commit made, once one is.
    pub(crate) fn tip(&self) -> Option<Oid> {
        self.tip.filter(|_| !self.made.is_empty())
    }

    /// Fails (or dies) at `step` when a test asks for it.
    pub(crate) fn check(&mut self, step: Step) -> Result<(), GitError> {
        self.fail.check(step)
    }

    /// The user's uncommitted changes to `paths`, in a commit of their own: with
    /// `message` None, before tern's edits land (the body says so); with Some, at the
    /// user's request (an empty one names the files). None when the paths are clean.
    pub(crate) fn commit_users(
        &mut self,
        paths: &[PathBuf],
        message: Option<&str>,
    ) -> Result<Option<Commit>, GitError> {
        let dirty = dirty_paths(self.repo, paths)?;
        let subject = match dirty.as_slice() {
            [] => return Ok(None),
            [one] => format!("chore: save local changes to {}", one.display()),
            many => format!("chore: save local changes to {} files", many.len()),
        };
        let list = dirty
            .iter()
            .map(|p| format!("- {}", p.display()))
            .collect::<Vec<_>>()
            .join("\n");
        let text = match message.map(str::trim) {
            None => format!(
                "{}\n\nCommitted by tern before applying edits to:\n{list}",
                message::fit(&subject)
            ),
            Some("") => format!("{}\n\n{list}", message::fit(&subject)),
            Some(given) => given.to_string(),
        };
        let changes = self.worktree_changes(&dirty)?;
        self.commit(&changes, &text, None)
    }

    /// `paths` as the work tree holds them now (the user's content): each file's
    /// bytes read once, with the stat taken before the read (a save in between makes
    /// git look at the file again rather than trust it).
    pub(crate) fn worktree_changes(&mut self, paths: &[PathBuf]) -> Result<Vec<Change>, GitError> {
        self.fail.check(Step::Blobs)?;
        let workdir = self.repo.workdir().ok_or(GitError::Bare)?.to_path_buf();
        let mut changes = Vec::new();
        for path in self.committable(paths) {
            let abs = workdir.join(&path);
            let Ok(meta) = abs.symlink_metadata() else {
                let entry = self.index.get_path(&path, 0);
                if entry.is_some_and(|e| !crate::edit::not_checked_out(&e)) {
                    changes.push(Change::Remove(path));
                }
                continue;
            };
            let (id, mode) = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&abs)?;
                let bytes = target.as_os_str().as_encoded_bytes();
                (self.repo.blob(bytes)?, 0o120000)
            } else if meta.is_file() {
                let bytes = std::fs::read(&abs)?;
                (self.blob(&path, &bytes)?, self.mode(&path, &meta))
            } else {
                continue;
            };
            changes.push(Change::Put(entry(&path, id, mode, Some(&meta))));
        }
        Ok(changes)
    }

    /// The files a landing wrote, from the bytes it wrote (never read back from disk:
    /// a save by the user since is theirs, not part of tern's commit).
    pub(crate) fn written_changes(
        &mut self,
        written: &[crate::edit::Written],
    ) -> Result<Vec<Change>, GitError> {
        self.fail.check(Step::Blobs)?;
        let paths: Vec<PathBuf> = written.iter().map(|w| w.real.clone()).collect();
        let keep = self.committable(&paths);
        let mut changes = Vec::new();
        for w in written.iter().filter(|w| keep.contains(&w.real)) {
            let id = self.blob(&w.real, &w.bytes)?;
            let mode = self.mode(&w.real, &w.metadata);
            changes.push(Change::Put(entry(&w.real, id, mode, Some(&w.metadata))));
        }
        Ok(changes)
    }

    /// Of `paths`, those to commit. Tracked means in the index: a file still in HEAD
    /// that the user untracked (`git rm --cached .env`, then ignored it) must not be
    /// committed again, nor its staged removal undone.
    fn committable(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        paths
            .iter()
            .filter(|p| {
                self.index.get_path(p, 0).is_some()
                    || !self.repo.is_path_ignored(p).unwrap_or(false)
            })
            .cloned()
            .collect()
    }

    /// A blob of `bytes` as git would store the file at `path`: through the
    /// repository's built-in filters (end-of-line conversion, `ident`).
    fn blob(&self, path: &Path, bytes: &[u8]) -> Result<Oid, GitError> {
        use std::io::Write;
        let mut writer = self.repo.blob_writer(Some(path))?;
        writer.write_all(bytes)?;
        Ok(writer.commit()?)
    }

    /// The mode git records for a regular file: executable or not, from its
    /// permissions, unless `core.fileMode` is off (then the index's mode stays).
    fn mode(&self, path: &Path, meta: &std::fs::Metadata) -> u32 {
        let trust = self
            .repo
            .config()
            .and_then(|c| c.get_bool("core.filemode"))
            .unwrap_or(true);
        let known = self.index.get_path(path, 0).map(|e| e.mode);
        match (trust, known) {
            (false, Some(mode)) if mode == 0o100644 || mode == 0o100755 => mode,
            _ if executable(meta) => 0o100755,
            _ => 0o100644,
        }
    }

    /// Makes the commit of `changes` on top of the last one (HEAD at first) with
    /// `text`, as objects only; `tern_note` (lines for the note) marks a tern commit.
    /// None when the tree would not change.
    pub(crate) fn commit(
        &mut self,
        changes: &[Change],
        text: &str,
        tern_note: Option<&str>,
    ) -> Result<Option<Commit>, GitError> {
        let repo = self.repo;
        self.fail.check(Step::Tree)?;
        let parent = self.tip.map(|id| repo.find_commit(id)).transpose()?;
        let base = match &parent {
            Some(c) => c.tree()?,
            None => repo.find_tree(repo.treebuilder(None)?.write()?)?,
        };
        let mut update = TreeUpdateBuilder::new();
        for change in changes {
            match change {
                Change::Put(e) => update.upsert(entry_path(e), e.id, file_mode(e.mode)),
                Change::Remove(path) => update.remove(path),
            };
        }
        let tree = repo.find_tree(update.create_updated(repo, &base)?)?;
        if tree.id() == base.id() {
            return Ok(None);
        }
        let co_author = self
            .opts
            .model
            .filter(|_| tern_note.is_some() && self.opts.co_author_trailer);
        // Redacted (`egress`): the model writing the message may have put the key in
        // it, and so may a commit-msg hook.
        let mut text = message::with_trailer(text, co_author);
        crate::egress::redact_in_place(&mut text);
        if self.opts.verify_hooks {
            text = run_commit_hooks(repo, &tree, text, self.cancel)?;
            crate::egress::redact_in_place(&mut text);
        }
        self.fail.check(Step::CommitObject)?;
        let identity = Identity::resolve(repo)?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let buffer = repo.commit_create_buffer(
            &identity.author,
            &identity.committer,
            &text,
            &tree,
            &parents,
        )?;
        let buffer = std::str::from_utf8(&buffer)
            .map_err(|_| GitError::BadIdentity("the commit is not UTF-8 text".into()))?;
        let buffer = &Identity::as_git_writes(buffer);
        let id = match &self.signer {
            Some(signer) => repo.commit_signed(buffer, &signer.sign(buffer, self.cancel)?, None)?,
            None => repo
                .odb()?
                .write(git2::ObjectType::Commit, buffer.as_bytes())?,
        };
        for change in changes {
            match change {
                Change::Put(e) => self.index.add(e)?,
                Change::Remove(path) => match self.index.remove_path(path) {
                    Err(e) if e.code() != git2::ErrorCode::NotFound => return Err(e.into()),
                    _ => {}
                },
            }
        }
        if let Some(extra) = tern_note {
            let note = match self.opts.model {
                Some(model) => format!("tern\nmodel: {model}\n{extra}"),
                None => format!("tern\n{extra}"),
            };
            self.notes.push((id, note));
        }
        self.tip = Some(id);
        self.made.push(id);
        let commit = repo.find_commit(id)?;
        Ok(Some(Commit {
            id,
            summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
                .into_owned(),
            paths: changes.iter().map(Change::path).collect(),
            detached: self.head.is_detached(),
        }))
    }

    /// Makes the commits visible: the index into git's lock file, tern's notes, the
    /// branch moved from where it was read (compare and swap), the lock renamed over
    /// the index; then the post-commit hooks. Any failure puts back what moved, so the
    /// repository is as it was.
    pub(crate) fn finish(self) -> Result<(), GitError> {
        let Some(tip) = self.tip() else {
            return Ok(());
        };
        let Committer {
            repo,
            mut lock,
            mut index,
            head,
            opts,
            mut fail,
            made,
            notes,
            ..
        } = self;
        fail.check(Step::Index)?;
        lock.prepare(&mut index)?;
        let notes_before = repo.refname_to_id(NOTES_REF).ok();
        let noted = fail
            .check(Step::Notes)
            .and_then(|()| write_notes(repo, &notes));
        if let Err(e) = noted {
            restore_notes(repo, notes_before);
            return Err(e);
        }
        let summary = repo
            .find_commit(tip)
            .map(|c| String::from_utf8_lossy(c.summary_bytes().unwrap_or_default()).into_owned())
            .unwrap_or_default();
        let log = match head.id {
            Some(_) => format!("commit: {summary}"),
            None => format!("commit (initial): {summary}"),
        };
        if let Err(e) = fail
            .check(Step::Ref)
            .and_then(|()| lock.check_held())
            .and_then(|()| head.swap(repo, tip, &log))
        {
            restore_notes(repo, notes_before);
            return Err(e);
        }
        if let Err(e) = fail.check(Step::IndexCommit).and_then(|()| lock.commit()) {
            if let Err(back) = head.swap_back(repo, tip) {
                tracing::warn!("could not move {} back: {back}", head.name);
            }
            restore_notes(repo, notes_before);
            return Err(e);
        }
        if opts.verify_hooks {
            for _ in &made {
                // Like git, a failing post-commit hook does not undo the commit.
                if let Err(e) = hooks::run(repo, "post-commit", &[], None, None) {
                    tracing::warn!("{e}");
                }
            }
        }
        Ok(())
    }
}

/// Runs pre-commit (with `GIT_INDEX_FILE` at an index holding exactly `tree`, as
/// `git commit --only` does) and commit-msg; returns the message as commit-msg left it.
fn run_commit_hooks(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    text: String,
    cancel: Option<&AtomicBool>,
) -> Result<String, GitError> {
    let index_path = repo
        .path()
        .join(format!("tern-index-{}", std::process::id()));
    let pre = (|| {
        let mut hook_index = git2::Index::open(&index_path)?;
        hook_index.read_tree(tree)?;
        hook_index.write()?;
        hooks::run(repo, "pre-commit", &[], Some(&index_path), cancel)
    })();
    let _ = std::fs::remove_file(&index_path);
    pre?;
    let msg_path = repo.path().join("COMMIT_EDITMSG");
    // A new file: whatever was there (a FIFO would block the write) goes.
    let _ = std::fs::remove_file(&msg_path);
    std::fs::write(&msg_path, &text)?;
    hooks::run(repo, "commit-msg", &[OsStr::new(&msg_path)], None, cancel)?;
    Ok(crate::regular_file::read_to_string(
        &msg_path,
        crate::regular_file::MAX_SETTINGS_BYTES,
    )?)
}

fn executable(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o100 != 0
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Why tern cannot commit `path` correctly, if it cannot: `.gitattributes` sends it
/// through a filter driver the repository configures (`filter=lfs`, say). git2 does
/// not run external filters, so the commit would hold the file's checked-out content
/// instead of what the filter makes of it (an LFS pointer).
pub(crate) fn external_filter(repo: &Repository, path: &Path) -> Option<WriteError> {
    let value = repo
        .get_attr(path, "filter", git2::AttrCheckFlags::FILE_THEN_INDEX)
        .ok()?;
    let git2::AttrValue::String(name) = git2::AttrValue::from_string(value) else {
        return None;
    };
    let config = repo.config().ok()?;
    let configured = ["clean", "process"]
        .iter()
        .any(|key| config.get_string(&format!("filter.{name}.{key}")).is_ok());
    configured.then(|| WriteError::ExternalFilter(name.to_string()))
}

/// HEAD's commit; None on an unborn branch.
pub(crate) fn head_commit(repo: &Repository) -> Result<Option<git2::Commit<'_>>, GitError> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_commit()?)),
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

fn file_mode(mode: u32) -> FileMode {
    match mode {
        0o100755 => FileMode::BlobExecutable,
        0o120000 => FileMode::Link,
        0o160000 => FileMode::Commit,
        _ => FileMode::Blob,
    }
}
