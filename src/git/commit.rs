//! Committing exactly some paths: the commit's tree is HEAD's tree with those paths'
//! working-tree content, and only those paths' index entries are updated, so whatever
//! else the user has staged or changed stays as it was (like `git commit --only`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, Oid, Repository, Status};

use super::{CommitOptions, GitError, hooks, message};

/// The notes ref that marks commits tern made, so `undo` recognizes them whatever
/// their message says (the trailer can be turned off).
pub const NOTES_REF: &str = "refs/notes/tern";

/// A commit tern made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub id: Oid,
    /// The message's first line.
    pub summary: String,
    pub paths: Vec<PathBuf>,
}

impl Commit {
    pub fn short_id(&self) -> String {
        super::short_id(self.id)
    }
}

/// Of `paths`, those with changes git has not committed: staged, unstaged, or
/// untracked (and not ignored).
pub fn dirty_paths(repo: &Repository, paths: &[PathBuf]) -> Result<Vec<PathBuf>, GitError> {
    let mut dirty = Vec::new();
    for p in paths {
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
    commit_users(repo, paths, None, opts)
}

/// `/commit [MESSAGE]`: the user's uncommitted changes to `paths`, with their message
/// or, without one, a subject naming the files. Not a tern commit either.
pub fn commit_user_changes(
    repo: &Repository,
    paths: &[PathBuf],
    message: Option<&str>,
    opts: &CommitOptions<'_>,
) -> Result<Option<Commit>, GitError> {
    commit_users(repo, paths, Some(message.unwrap_or_default()), opts)
}

/// The user's changes to `paths`: with `message` None, before tern's edits land (the
/// body says so); with Some, at the user's request (an empty one names the files).
fn commit_users(
    repo: &Repository,
    paths: &[PathBuf],
    message: Option<&str>,
    opts: &CommitOptions<'_>,
) -> Result<Option<Commit>, GitError> {
    let dirty = dirty_paths(repo, paths)?;
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
    commit_paths(repo, &dirty, &text, opts, None)
}

/// Commits the working-tree content of `paths` (the files tern wrote) on top of HEAD
/// with `message` (plus the co-author trailer), marked as a tern commit. Paths that are
/// untracked and ignored are written but not committed. None when nothing differs from
/// HEAD.
pub fn commit_edits(
    repo: &Repository,
    paths: &[PathBuf],
    message: &str,
    opts: &CommitOptions<'_>,
) -> Result<Option<Commit>, GitError> {
    commit_paths(repo, paths, message, opts, Some(""))
}

/// [`commit_edits`], with `undo_lines` (what undo needs beyond the commit itself:
/// backups, the user's own versions) in tern's note. The note is written whole, right
/// after the commit and before any post-commit hook, so a tern killed at any point
/// leaves either no note (undo refuses: not tern's) or all of it, never a note that
/// would let undo drop the user's lines.
pub(crate) fn commit_landing(
    repo: &Repository,
    paths: &[PathBuf],
    message: &str,
    opts: &CommitOptions<'_>,
    undo_lines: &str,
) -> Result<Option<Commit>, GitError> {
    commit_paths(repo, paths, message, opts, Some(undo_lines))
}

/// Commits `paths`; `tern_note` (lines to add to the note) marks a tern commit.
fn commit_paths(
    repo: &Repository,
    paths: &[PathBuf],
    text: &str,
    opts: &CommitOptions<'_>,
    tern_note: Option<&str>,
) -> Result<Option<Commit>, GitError> {
    let workdir = repo.workdir().ok_or(GitError::Bare)?.to_path_buf();
    super::ensure_idle(repo)?;
    let head = head_commit(repo)?;
    let head_tree = match &head {
        Some(c) => c.tree()?,
        None => repo.find_tree(repo.treebuilder(None)?.write()?)?,
    };
    let mut index = repo.index()?;
    // Tracked means in the index: a file still in HEAD that the user untracked
    // (`git rm --cached .env`, then ignored it) must not be committed again, nor its
    // staged removal undone.
    let paths: Vec<&PathBuf> = paths
        .iter()
        .filter(|p| index.get_path(p, 0).is_some() || !repo.is_path_ignored(p).unwrap_or(false))
        .collect();
    // Stage in memory only; the index is written once the commit exists.
    let staged = stage(&mut index, &workdir, &paths);
    let tree = staged.and_then(|()| {
        let mut update = TreeUpdateBuilder::new();
        for p in &paths {
            match index.get_path(p, 0) {
                Some(entry) => update.upsert(p.as_path(), entry.id, file_mode(entry.mode)),
                None => update.remove(p.as_path()),
            };
        }
        Ok(repo.find_tree(update.create_updated(repo, &head_tree)?)?)
    });
    let tree = match tree {
        Ok(tree) if tree.id() != head_tree.id() => tree,
        Ok(_) => {
            index.read(true)?;
            return Ok(None);
        }
        Err(e) => {
            index.read(true)?;
            return Err(e);
        }
    };
    let result = write_commit(repo, &tree, head.as_ref(), text, opts, tern_note);
    match result {
        Ok(id) => {
            index.write()?;
            if opts.verify_hooks {
                // Like git, a failing post-commit hook does not undo the commit.
                if let Err(e) = hooks::run(repo, "post-commit", &[], None) {
                    tracing::warn!("{e}");
                }
            }
            let commit = repo.find_commit(id)?;
            Ok(Some(Commit {
                id,
                summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
                    .into_owned(),
                paths: paths.into_iter().cloned().collect(),
            }))
        }
        Err(e) => {
            index.read(true)?;
            Err(e)
        }
    }
}

fn stage(index: &mut git2::Index, workdir: &Path, paths: &[&PathBuf]) -> Result<(), GitError> {
    for p in paths {
        if workdir.join(p).symlink_metadata().is_ok() {
            index.add_path(p)?;
        } else if index.get_path(p, 0).is_some() {
            index.remove_path(p)?;
        }
    }
    Ok(())
}

/// Runs the hooks and creates the commit, moving HEAD (or the branch it names). The
/// message is redacted (`egress`): the model writing it may have put the key in it,
/// and so may a commit-msg hook.
fn write_commit(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    parent: Option<&git2::Commit<'_>>,
    text: &str,
    opts: &CommitOptions<'_>,
    tern_note: Option<&str>,
) -> Result<Oid, GitError> {
    let sig = repo.signature().map_err(|_| GitError::NoIdentity)?;
    let co_author = opts
        .model
        .filter(|_| tern_note.is_some() && opts.co_author_trailer);
    let mut text = message::with_trailer(text, co_author);
    crate::egress::redact_in_place(&mut text);
    if opts.verify_hooks {
        let index_path = repo
            .path()
            .join(format!("tern-index-{}", std::process::id()));
        let pre = (|| {
            let mut hook_index = git2::Index::open(&index_path)?;
            hook_index.read_tree(tree)?;
            hook_index.write()?;
            hooks::run(repo, "pre-commit", &[], Some(&index_path))
        })();
        let _ = std::fs::remove_file(&index_path);
        pre?;
        let msg_path = repo.path().join("COMMIT_EDITMSG");
        // A new file: whatever was there (a FIFO would block the write) goes.
        let _ = std::fs::remove_file(&msg_path);
        std::fs::write(&msg_path, &text)?;
        hooks::run(repo, "commit-msg", &[OsStr::new(&msg_path)], None)?;
        text = crate::regular_file::read_to_string(
            &msg_path,
            crate::regular_file::MAX_SETTINGS_BYTES,
        )?;
        crate::egress::redact_in_place(&mut text);
    }
    let parents: Vec<&git2::Commit<'_>> = parent.into_iter().collect();
    let id = repo.commit(Some("HEAD"), &sig, &sig, &text, tree, &parents)?;
    if let Some(extra) = tern_note {
        let note = match opts.model {
            Some(model) => format!("tern\nmodel: {model}\n{extra}"),
            None => format!("tern\n{extra}"),
        };
        repo.note(&sig, &sig, Some(NOTES_REF), id, &note, true)?;
    }
    Ok(id)
}

/// Why tern cannot commit `path` correctly, if it cannot: `.gitattributes` sends it
/// through a filter driver the repository configures (`filter=lfs`, say). git2 does
/// not run external filters, so the commit would hold the file's checked-out content
/// instead of what the filter makes of it (an LFS pointer).
pub(crate) fn external_filter(repo: &Repository, path: &Path) -> Option<String> {
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
    configured.then(|| {
        format!(
            "git stores it through the `{name}` filter (.gitattributes), which tern cannot run, so tern's commit would hold the wrong content; edit it yourself"
        )
    })
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
