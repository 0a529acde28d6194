//! The journal of a change to HEAD, git's index and the work tree in flight
//! (`.git/tern-move.json`): a move of HEAD (an undo, a rewind, its redo) or a landing
//! (files written, commits made, the branch moved). Each writes files first and moves
//! the branch last, so a tern killed in between would leave files that look like the
//! user's own changes, or a branch whose index is behind. So the change is written down
//! durably before its first write (where HEAD was, the files, what they held before and
//! what tern writes, kept as blobs), removed once it is done or undone, and the next
//! tern to take the repository lock settles one it finds ([`settle`]): a move is rolled
//! back; a landing is rolled back while its branch has not moved, and finished once it
//! has. All or nothing, across a kill too.

use std::path::{Component, Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::GitError;
use super::head::Head;
use super::holds::{holds, holds_blob};
use super::index_lock::IndexLock;
use super::notes::{NOTES_REF, restore_notes};
use crate::edit::Planned;

/// The journal's file name in the git directory.
pub(super) const JOURNAL: &str = "tern-move.json";

/// What a change will do, written down before it starts.
pub(super) enum Plan<'a> {
    /// HEAD moves from `from` to `to` with `paths` checked out of `to`, and the files
    /// of `now` restored after (with what they hold now, None: no file).
    Move {
        from: Oid,
        to: Oid,
        paths: &'a [PathBuf],
        now: &'a [(PathBuf, Option<Vec<u8>>)],
    },
    /// Commits land on `from` (None: an unborn branch) after tern writes `files`
    /// (none for a commit of what the work tree holds, `/commit`).
    Landing {
        from: Option<Oid>,
        files: &'a [Planned],
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Kind {
    /// A journal written before landings were journaled has no kind: a move.
    #[default]
    Move,
    Landing,
}

/// The change as written to disk. Paths are kept as bytes (a file name need not be
/// UTF-8), contents as blob ids.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    #[serde(default)]
    kind: Kind,
    /// Where HEAD was (None: an unborn branch), and where the change takes it (a
    /// landing's tip is written once its commits are made).
    from: Option<String>,
    to: Option<String>,
    /// A move: the files `from` and `to` differ in (a landing's are `before`'s).
    paths: Vec<Vec<u8>>,
    /// The files to put back (for a move, beyond `from`'s content of `paths`), with
    /// what they held before: a blob, or None when the file did not exist.
    before: Vec<(Vec<u8>, Option<String>)>,
    /// A landing: what tern writes to each of `before`'s files, in the same order.
    #[serde(default)]
    wrote: Vec<String>,
    /// A landing: tern's notes ref before it (None: there was none).
    #[serde(default)]
    notes: Option<String>,
    /// A landing: the directories it creates for new files, deepest first.
    #[serde(default)]
    dirs: Vec<Vec<u8>>,
}

/// The journal of a change under way, on disk until [`remove`](Journal::remove)d.
#[derive(Debug)]
pub(super) struct Journal {
    file: PathBuf,
    record: Record,
}

impl Journal {
    /// Writes the journal of `plan` (the blobs, then the file) before anything of the
    /// change is written.
    pub(super) fn write(repo: &Repository, plan: Plan<'_>) -> Result<Journal, GitError> {
        let blob = |content: &Option<Vec<u8>>| -> Result<Option<String>, GitError> {
            Ok(match content {
                Some(bytes) => Some(repo.blob(bytes)?.to_string()),
                None => None,
            })
        };
        let record = match plan {
            Plan::Move {
                from,
                to,
                paths,
                now,
            } => Record {
                kind: Kind::Move,
                from: Some(from.to_string()),
                to: Some(to.to_string()),
                paths: paths.iter().map(|p| bytes(p)).collect(),
                before: now
                    .iter()
                    .map(|(path, content)| Ok((bytes(path), blob(content)?)))
                    .collect::<Result<_, GitError>>()?,
                wrote: Vec::new(),
                notes: None,
                dirs: Vec::new(),
            },
            Plan::Landing { from, files } => Record {
                kind: Kind::Landing,
                from: from.map(|id| id.to_string()),
                to: None,
                paths: Vec::new(),
                before: files
                    .iter()
                    .map(|f| Ok((bytes(&f.real), blob(&f.before)?)))
                    .collect::<Result<_, GitError>>()?,
                wrote: files
                    .iter()
                    .map(|f| Ok(repo.blob(&f.bytes)?.to_string()))
                    .collect::<Result<_, GitError>>()?,
                notes: repo.refname_to_id(NOTES_REF).ok().map(|id| id.to_string()),
                dirs: files
                    .iter()
                    .flat_map(|f| f.new_dirs.iter().map(|d| bytes(d)))
                    .collect(),
            },
        };
        let journal = Journal {
            file: repo.path().join(JOURNAL),
            record,
        };
        journal.save(repo.path())?;
        Ok(journal)
    }

    /// A landing's commits are made and end at `tip`: from here a tern killed before
    /// it is done is finished, not rolled back, once its branch points there.
    pub(super) fn landing_at(&mut self, git_dir: &Path, tip: Oid) -> Result<(), GitError> {
        self.record.to = Some(tip.to_string());
        self.save(git_dir)
    }

    /// Durably: a temporary file synced, renamed into place, the directory synced.
    fn save(&self, git_dir: &Path) -> Result<(), GitError> {
        let text = serde_json::to_vec(&self.record).map_err(std::io::Error::other)?;
        let tmp = git_dir.join(format!("{JOURNAL}.{}", std::process::id()));
        {
            let mut file = std::fs::File::create(&tmp)?;
            std::io::Write::write_all(&mut file, &text)?;
            file.sync_all()?;
        }
        std::fs::rename(&tmp, &self.file)?;
        if let Ok(dir) = std::fs::File::open(git_dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// The change is done, or put back: nothing is left for the next tern to settle.
    pub(super) fn remove(self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

fn bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

/// A journal's path as a message shows it: what a terminal would act on or hide
/// (escape sequences, bidi overrides, NUL) is marked, as the review marks it.
fn shown(path: &Path) -> String {
    crate::terminal_text::visible(&path.to_string_lossy()).into_owned()
}

fn path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// A file of the work tree at `workdir` that a journal's change may write, from the
/// journal: a relative path of plain names, none of them `.git` (in any case), through
/// no symlinked directory (nor, when its content is `written`, a symlink itself, which
/// the write would follow). A journal tern did not write must not send a write
/// anywhere else.
fn work_path(workdir: &Path, bytes: &[u8], written: bool) -> Option<PathBuf> {
    let p = path(bytes);
    let mut at = workdir.to_path_buf();
    let mut names = p.components().peekable();
    names.peek()?;
    while let Some(name) = names.next() {
        let Component::Normal(name) = name else {
            return None;
        };
        if name.eq_ignore_ascii_case(".git") {
            return None;
        }
        at.push(name);
        let last = names.peek().is_none();
        if (!last || written)
            && std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
        {
            return None;
        }
    }
    Some(p)
}

/// The index's entries for `paths` as `commit` has them (removed where it has none).
pub(super) fn follow(
    index: &mut git2::Index,
    commit: &git2::Commit<'_>,
    paths: &[PathBuf],
) -> Result<(), GitError> {
    let tree = commit.tree()?;
    for path in paths {
        match tree.get_path(path) {
            Ok(entry) => index.add(&super::index_lock::entry(
                path,
                entry.id(),
                u32::try_from(entry.filemode()).unwrap_or(0o100644),
                None,
            ))?,
            Err(_) => {
                let _ = index.remove_path(path);
            }
        }
    }
    Ok(())
}

/// The files that differ between two trees.
pub fn changed(repo: &Repository, from: Oid, to: Oid) -> Result<Vec<PathBuf>, GitError> {
    let diff = repo.diff_tree_to_tree(
        Some(&repo.find_tree(from)?),
        Some(&repo.find_tree(to)?),
        None,
    )?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for path in diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
    {
        if !paths.iter().any(|p| p == path) {
            paths.push(path.to_path_buf());
        }
    }
    Ok(paths)
}

/// Checks out `paths` of `commit` into the work tree only (the index is written by the
/// caller, through git's lock). Paths are literal: as pathspecs, `src/*.rs` or
/// `pages/[id].tsx` would match and overwrite other files, with the user's
/// uncommitted work in them.
pub(super) fn checkout(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    paths: &[PathBuf],
) -> Result<(), GitError> {
    let mut checkout = CheckoutBuilder::new();
    checkout
        .force()
        .disable_pathspec_match(true)
        .update_index(false)
        .remove_untracked(false);
    for p in paths {
        checkout.path(p);
    }
    repo.checkout_tree(commit.as_object(), Some(&mut checkout))?;
    Ok(())
}

/// A journal read back and checked whole before anything is written from it.
struct Found {
    kind: Kind,
    from: Option<Oid>,
    to: Option<Oid>,
    paths: Vec<PathBuf>,
    files: Vec<FileBefore>,
    notes: Option<Oid>,
    dirs: Vec<PathBuf>,
}

/// A file to put back.
struct FileBefore {
    path: PathBuf,
    /// The blob it held before (None: no file).
    before: Option<Oid>,
    /// A landing: the blob tern wrote to it.
    wrote: Option<Oid>,
}

/// Why a journal is not one tern wrote.
enum Foreign {
    /// It names this path, which is not a file of the work tree tern would write.
    Path(PathBuf),
    /// An id that is not one, a blob the repository does not have, lists that differ
    /// in length.
    Record,
}

impl Found {
    /// What the landing was, for the user: a landing writes files, `/commit` none.
    fn what(&self) -> &'static str {
        match self.files.is_empty() {
            true => "a commit",
            false => "a landing",
        }
    }

    /// The record of the work tree at `workdir`, unless it is not one tern wrote.
    /// Its paths are checked first, so that a refusal names the one that is wrong.
    fn check(repo: &Repository, workdir: &Path, record: Record) -> Result<Found, Foreign> {
        let place = |raw: &[u8], written: bool| {
            work_path(workdir, raw, written).ok_or_else(|| Foreign::Path(path(raw)))
        };
        let paths = (record.paths.iter())
            .map(|p| place(p, false))
            .collect::<Result<Vec<_>, _>>()?;
        let dirs = (record.dirs.iter())
            .map(|p| place(p, false))
            .collect::<Result<Vec<_>, _>>()?;
        let placed = (record.before.iter())
            .map(|(p, before)| place(p, before.is_some()))
            .collect::<Result<Vec<_>, _>>()?;
        if record.kind == Kind::Landing && record.wrote.len() != record.before.len() {
            return Err(Foreign::Record);
        }
        let oid = |s: Option<&String>| match s {
            Some(s) => Oid::from_str(s).map(Some).map_err(|_| Foreign::Record),
            None => Ok(None),
        };
        let blob = |s: Option<&String>| match oid(s)? {
            Some(id) if repo.find_blob(id).is_err() => Err(Foreign::Record),
            id => Ok(id),
        };
        let mut files = Vec::new();
        for (i, (path, (_, before))) in placed.into_iter().zip(&record.before).enumerate() {
            files.push(FileBefore {
                path,
                before: blob(before.as_ref())?,
                wrote: blob(record.wrote.get(i))?,
            });
        }
        Ok(Found {
            kind: record.kind,
            from: oid(record.from.as_ref())?,
            to: oid(record.to.as_ref())?,
            paths,
            files,
            notes: oid(record.notes.as_ref())?,
            dirs,
        })
    }
}

/// More than any journal tern writes holds (a path and two blob ids per file).
const JOURNAL_MAX_BYTES: u64 = 256 << 20;

/// Settles the change a killed tern left in `git_dir`, if any (called with the
/// repository lock held, after git's stale lock of that tern was removed): a move is
/// rolled back; a landing is rolled back while its branch has not moved and finished
/// once it has. Returns what it did, to be said; an error when a journal was found and
/// could not be settled (nothing should be written over it then).
pub(super) fn settle(git_dir: &Path) -> Result<Option<String>, GitError> {
    let file = git_dir.join(JOURNAL);
    // Only a missing journal is none: anything else there (a FIFO, which would block
    // the read for ever; a directory) is not one tern wrote, and is said.
    let text = match crate::regular_file::read(&file, JOURNAL_MAX_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(GitError::HalfMove(format!(
                "{} is not a journal tern wrote ({e}), so nothing was done; remove it if no tern is running",
                file.display()
            )));
        }
    };
    // The rename is atomic, so a journal cut short is not tern's either: it is left,
    // and said.
    let foreign = |why: Foreign| {
        let names = match why {
            Foreign::Path(p) => format!(
                ": it names {p:?}, which is not a file of the work tree tern would write (a path outside it, in .git, or through a symlink)"
            ),
            Foreign::Record => String::new(),
        };
        GitError::HalfMove(format!(
            "{} is not a journal tern wrote{names}, so nothing was done; it is kept for you to look at (remove it if no tern is running)",
            file.display()
        ))
    };
    let record = serde_json::from_slice::<Record>(&text).map_err(|_| foreign(Foreign::Record))?;
    let repo = Repository::open(git_dir)?;
    let workdir = repo.workdir().ok_or(GitError::Bare)?.to_path_buf();
    let found = Found::check(&repo, &workdir, record).map_err(foreign)?;
    let head = Head::read(&repo)?;
    let said = match found.kind {
        Kind::Move => roll_back_move(&repo, &workdir, &head, &found, &file)?,
        Kind::Landing if head.id == found.from => roll_back_landing(&repo, &workdir, &found)?,
        Kind::Landing if found.to.is_some() && head.id == found.to => {
            finish_landing(&repo, &found)?
        }
        Kind::Landing => format!(
            "a tern killed part way through a landing on {} left its journal; HEAD has moved since (to {}), so nothing was rolled back or finished: check `git status` for its edits",
            at(found.from),
            at(head.id)
        ),
    };
    std::fs::remove_file(&file)?;
    Ok(Some(said))
}

fn at(id: Option<Oid>) -> String {
    id.map_or("an unborn branch".into(), super::short_id)
}

/// The files go back as they were before the move, the index follows where HEAD was,
/// and HEAD goes back if it had moved; nothing when HEAD has moved elsewhere since.
/// Refused, with nothing written, while a file of the move holds what the move
/// could not have left there (a save since, maybe the user's work).
fn roll_back_move(
    repo: &Repository,
    workdir: &Path,
    head: &Head,
    found: &Found,
    file: &Path,
) -> Result<String, GitError> {
    let (Some(from), Some(to)) = (found.from, found.to) else {
        return Err(GitError::HalfMove(format!(
            "{} names no commits; remove it if no tern is running",
            file.display()
        )));
    };
    if head.id != Some(from) && head.id != Some(to) {
        // HEAD moved since (by the user, with git): the move is not tern's to finish.
        return Ok(format!(
            "a tern killed while moving HEAD from {} to {} left its journal; HEAD has moved since, so nothing was rolled back",
            super::short_id(from),
            super::short_id(to)
        ));
    }
    let from_commit = repo.find_commit(from)?;
    let trees = [from_commit.tree()?, repo.find_commit(to)?.tree()?];
    let mut changed: Vec<&Path> = Vec::new();
    for p in (found.paths.iter()).chain(found.files.iter().map(|f| &f.path)) {
        if !changed.contains(&p.as_path()) && !still_as_left(workdir, &trees, found, p) {
            changed.push(p);
        }
    }
    if !changed.is_empty() {
        return Err(GitError::HalfMove(changed_since(
            file, head, from, to, &changed,
        )));
    }
    let mut lock = IndexLock::acquire(repo.path())?;
    checkout(repo, &from_commit, &found.paths)?;
    for f in &found.files {
        put(repo, &workdir.join(&f.path), f.before)?;
    }
    let mut index = lock.open()?;
    follow(&mut index, &from_commit, &found.paths)?;
    lock.prepare(&mut index)?;
    lock.check_held()?;
    if head.id == Some(to) && from != to {
        head.swap(repo, from, "tern: rolled back a move a killed tern left")?;
    }
    lock.commit()?;
    Ok(format!(
        "rolled back a move of HEAD from {} to {} that a killed tern left half done ({} put back as they were)",
        super::short_id(from),
        super::short_id(to),
        crate::plural::count(found.paths.len(), "file")
    ))
}

/// Whether the work tree's `p` holds what the move a tern was killed in could have
/// left there: what `from` or `to` has (absent where one has none), or what the
/// journal says it held before the move. Anything else was written since.
fn still_as_left(workdir: &Path, trees: &[git2::Tree<'_>], found: &Found, p: &Path) -> bool {
    (trees.iter()).any(|tree| holds(workdir, tree, p))
        || (found.files.iter()).any(|f| f.path == p && holds_blob(workdir, p, f.before))
}

/// Why a move's rollback was refused: `changed` hold what its journal (`file`) does
/// not name, and what the user can do.
fn changed_since(file: &Path, head: &Head, from: Oid, to: Oid, changed: &[&Path]) -> String {
    let list = (changed.iter())
        .map(|p| shown(p))
        .collect::<Vec<_>>()
        .join(" ");
    let (holds, them) = match changed.len() {
        1 => ("it holds", "it"),
        _ => ("they hold", "them"),
    };
    format!(
        "it was moving HEAD from {} to {}, and {list} changed since: {holds} what that move's journal ({}) does not name, maybe your work, so nothing was rolled back. Keep your change elsewhere and put {them} back as HEAD ({}) has {them} (`git checkout HEAD -- {list}`), then run tern again to roll the move back; or remove the journal to keep the files as they are now",
        super::short_id(from),
        super::short_id(to),
        file.display(),
        at(head.id),
    )
}

/// Writes the blob `content` at `target`, or removes it (None).
fn put(repo: &Repository, target: &Path, content: Option<Oid>) -> Result<(), GitError> {
    match content {
        Some(id) => std::fs::write(target, repo.find_blob(id)?.content())?,
        None => match std::fs::remove_file(target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        },
    }
    Ok(())
}

/// The branch has not moved: each file that still holds exactly what tern wrote gets
/// back what it held (one changed since is the user's, and stays), and a note tern
/// wrote for its unmade commit goes. git's index never changed.
fn roll_back_landing(repo: &Repository, workdir: &Path, found: &Found) -> Result<String, GitError> {
    let mut put_back = 0;
    let mut kept = Vec::new();
    for f in &found.files {
        if holds_blob(workdir, &f.path, f.before) {
            continue;
        }
        if f.wrote.is_some() && holds_blob(workdir, &f.path, f.wrote) {
            put(repo, &workdir.join(&f.path), f.before)?;
            put_back += 1;
        } else {
            kept.push(shown(&f.path));
        }
    }
    // Emptied of the new files put back (one that holds anything else stays).
    for dir in &found.dirs {
        let _ = std::fs::remove_dir(workdir.join(dir));
    }
    let noted = repo.refname_to_id(NOTES_REF).ok();
    let on_top = |id: Oid| {
        repo.find_commit(id)
            .is_ok_and(|c| c.parent_ids().next() == found.notes && c.parent_count() <= 1)
    };
    if noted.is_some_and(|id| noted != found.notes && on_top(id)) {
        restore_notes(repo, found.notes);
    }
    let what = found.what();
    let mut said = match put_back {
        0 if found.files.is_empty() => format!(
            "{what} killed part way was rolled back: HEAD stays at {}",
            at(found.from)
        ),
        0 => format!("{what} killed part way was rolled back: it had written no file yet"),
        n => format!(
            "{what} killed part way was rolled back: {} put back",
            crate::plural::count(n, "file")
        ),
    };
    if !kept.is_empty() {
        said.push_str(&format!(
            "; changed since, so left as they are: {}",
            kept.join(", ")
        ));
    }
    Ok(said)
}

/// The branch moved to the landing's tip: git's index follows it for what the
/// landing's commits changed (tern's notes were written before the branch moved).
fn finish_landing(repo: &Repository, found: &Found) -> Result<String, GitError> {
    let Some(to) = found.to else {
        return Err(GitError::HalfMove("a landing with no tip to finish".into()));
    };
    let tip = repo.find_commit(to)?;
    let from_tree = match found.from {
        Some(id) => repo.find_commit(id)?.tree_id(),
        // An unborn branch: everything in the tip is new.
        None => repo.treebuilder(None)?.write()?,
    };
    // Only what the commits changed: whatever else the user staged stays staged.
    let changed = changed(repo, from_tree, tip.tree_id())?;
    let mut lock = IndexLock::acquire(repo.path())?;
    let mut index = lock.open()?;
    follow(&mut index, &tip, &changed)?;
    lock.prepare(&mut index)?;
    lock.commit()?;
    Ok(format!(
        "{} killed part way was finished: the index now follows {}",
        found.what(),
        super::short_id(to)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A journal an older tern wrote (no kind, `from` a string) is a move, still
    /// rolled back by this one.
    #[test]
    fn an_older_terns_journal_reads_as_a_move() {
        let text = br#"{"from":"1111111111111111111111111111111111111111","to":"2222222222222222222222222222222222222222","paths":[[97]],"before":[[[98],null]]}"#;
        let record: Record = serde_json::from_slice(text).unwrap();
        assert_eq!(record.kind, Kind::Move);
        assert_eq!(record.paths, vec![b"a".to_vec()]);
        assert!(record.wrote.is_empty() && record.dirs.is_empty());
    }

    proptest! {
        /// Whatever bytes a journal holds for a path, what is taken from it stays
        /// inside the work tree and out of `.git`.
        #[test]
        fn a_journals_path_never_leaves_the_work_tree(bytes in proptest::collection::vec(any::<u8>(), 0..40),
                                                       name in "[./a-zA-Z\\\\]{0,12}") {
            let root = tempfile::tempdir().unwrap();
            let root = root.path();
            for raw in [bytes, name.into_bytes()] {
                if let Some(path) = work_path(root, &raw, true) {
                    prop_assert!(path.is_relative());
                    prop_assert!(root.join(&path).starts_with(root));
                    prop_assert!(path.components().all(|c| matches!(c, Component::Normal(n) if !n.eq_ignore_ascii_case(".git"))));
                }
            }
        }
    }

    #[test]
    fn a_path_out_of_the_work_tree_or_into_git_is_not_taken() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            ".git/config",
            "a/.GIT/hooks/x",
            ".",
        ] {
            assert_eq!(work_path(root, bad.as_bytes(), false), None, "{bad}");
        }
        assert_eq!(
            work_path(root, b"src/a.rs", true),
            Some(PathBuf::from("src/a.rs"))
        );
    }

    /// A symlinked directory on the way leads out of the work tree; a symlink at the
    /// end is a file git tracks, named to be checked out or removed, not written
    /// through.
    #[test]
    fn a_path_through_a_symlink_is_not_taken() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        std::os::unix::fs::symlink("/tmp", root.join("link")).unwrap();
        assert_eq!(work_path(root, b"link/x", false), None);
        assert_eq!(work_path(root, b"link", true), None);
        assert_eq!(work_path(root, b"link", false), Some(PathBuf::from("link")));
    }
}
