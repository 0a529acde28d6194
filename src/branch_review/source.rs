//! Where the diff comes from: HEAD against a merge base, or the work tree against HEAD,
//! read with git2. Renames are detected; binary files and submodules are listed, not
//! diffed.
//!
//! git2 only lists the changed files here; the hunks come from diffing the two texts
//! with libgit2's xdiff (`Patch::from_buffers`, 3 context lines, indent heuristic as
//! `git diff`), in parallel, over exactly the texts that extension later reads lines
//! from, so line numbers always agree.

use std::path::Path;

use git2::{
    Commit, Delta, DiffDelta, DiffFindOptions, DiffOptions, ErrorCode, FileMode, Oid, Patch,
    Repository,
};
use rayon::prelude::*;

use super::ReviewError;
use super::change::{Body, ChangeSet, FileChange, FileStatus, GitHunk, HunkLine, TextDiff};
use crate::diff::{FileText, LineKind};

/// What to review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffSource {
    /// HEAD against its merge base with `base` (default: the current branch's upstream,
    /// else `main`, else `master`, also tried as `origin/main` and `origin/master`).
    Branch { base: Option<String> },
    /// Staged, unstaged and untracked (not ignored) changes against HEAD.
    Worktree,
}

/// Git's default number of context lines: what a compressed review shows.
pub const GIT_CONTEXT: u32 = 3;

/// Reads the changes `source` names from `repo`.
///
/// Turns off libgit2's strict hash verification for the process: it re-hashes every
/// object read with collision-detecting SHA-1, a quarter of the time of a large diff,
/// and git itself does not verify objects on read either.
pub fn collect(repo: &Repository, source: &DiffSource) -> Result<ChangeSet, ReviewError> {
    git2::opts::strict_hash_verification(false);
    let changes = match source {
        DiffSource::Branch { base } => branch_changes(repo, base.as_deref())?,
        DiffSource::Worktree => worktree_changes(repo)?,
    };
    if changes.files.is_empty() {
        // Only unreadable or ignored entries changed.
        return Err(ReviewError::Empty(format!(
            "{} shows no file that can be reviewed.",
            changes.description
        )));
    }
    Ok(changes)
}

fn git(context: &'static str) -> impl FnOnce(git2::Error) -> ReviewError {
    move |source| ReviewError::Git { context, source }
}

fn short(oid: Oid) -> String {
    crate::git::short_id(oid)
}

fn head_commit(repo: &Repository) -> Result<Option<Commit<'_>>, ReviewError> {
    match repo.head() {
        Ok(head) => head.peel_to_commit().map(Some).map_err(git("reading HEAD")),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(git("reading HEAD")(e)),
    }
}

fn head_name(repo: &Repository) -> String {
    match repo.head() {
        Ok(h) if h.is_branch() => h.shorthand().unwrap_or("HEAD").to_string(),
        _ => "HEAD (detached)".to_string(),
    }
}

/// The base commit and the name to show for it.
fn resolve_base<'r>(
    repo: &'r Repository,
    base: Option<&str>,
) -> Result<(String, Commit<'r>), ReviewError> {
    if let Some(name) = base {
        let commit = repo
            .revparse_single(name)
            .and_then(|o| o.peel_to_commit())
            .map_err(|e| ReviewError::BadBase {
                name: name.to_string(),
                message: e.message().to_string(),
            })?;
        return Ok((name.to_string(), commit));
    }
    if let Some(found) = upstream(repo) {
        return Ok(found);
    }
    for name in ["main", "master", "origin/main", "origin/master"] {
        if let Ok(commit) = repo.revparse_single(name).and_then(|o| o.peel_to_commit()) {
            return Ok((name.to_string(), commit));
        }
    }
    Err(ReviewError::NoBase)
}

fn upstream(repo: &Repository) -> Option<(String, Commit<'_>)> {
    let head = repo.head().ok()?;
    if !head.is_branch() {
        return None;
    }
    let branch = repo
        .find_branch(head.shorthand().ok()?, git2::BranchType::Local)
        .ok()?;
    let up = branch.upstream().ok()?;
    let name = up.name().ok()??.to_string();
    Some((name, up.get().peel_to_commit().ok()?))
}

fn branch_changes(repo: &Repository, base: Option<&str>) -> Result<ChangeSet, ReviewError> {
    let head = head_commit(repo)?.ok_or(ReviewError::NoCommits)?;
    let (base_name, base_commit) = resolve_base(repo, base)?;
    let merge_base = repo
        .merge_base(head.id(), base_commit.id())
        .map_err(|e| match e.code() {
            ErrorCode::NotFound => ReviewError::NoMergeBase {
                base: base_name.clone(),
            },
            _ => git("finding the merge base")(e),
        })?;
    let old_tree = repo
        .find_commit(merge_base)
        .and_then(|c| c.tree())
        .map_err(git("reading the merge base"))?;
    let new_tree = head.tree().map_err(git("reading HEAD's tree"))?;
    let mut diff = repo
        .diff_tree_to_tree(Some(&old_tree), Some(&new_tree), Some(&mut list_options()))
        .map_err(git("diffing HEAD against the merge base"))?;
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))
        .map_err(git("detecting renames"))?;

    let description = format!(
        "`{}` (HEAD {}) against its merge base with `{}` ({})",
        head_name(repo),
        short(head.id()),
        base_name,
        short(merge_base)
    );
    if diff.deltas().len() == 0 {
        let why = if merge_base == head.id() {
            format!(
                "HEAD ({}) is the merge base with `{base_name}`: the branch has no commits \
                 of its own. Name another base, or review uncommitted changes instead.",
                short(head.id())
            )
        } else {
            format!("HEAD has the same content as its merge base with `{base_name}`.")
        };
        return Err(ReviewError::Empty(why));
    }
    let files = load_files(repo, diff.deltas(), false)?;
    Ok(ChangeSet { description, files })
}

fn worktree_changes(repo: &Repository) -> Result<ChangeSet, ReviewError> {
    if repo.is_bare() {
        return Err(ReviewError::Bare);
    }
    let head = head_commit(repo)?;
    let tree = match &head {
        Some(c) => Some(c.tree().map_err(git("reading HEAD's tree"))?),
        None => None,
    };
    let mut opts = list_options();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let mut diff = repo
        .diff_tree_to_workdir_with_index(tree.as_ref(), Some(&mut opts))
        .map_err(git("diffing the work tree against HEAD"))?;
    diff.find_similar(Some(
        DiffFindOptions::new().renames(true).for_untracked(true),
    ))
    .map_err(git("detecting renames"))?;
    let description = match &head {
        Some(c) => format!(
            "uncommitted changes (staged, unstaged and untracked) against HEAD ({})",
            short(c.id())
        ),
        None => "uncommitted changes in a repository with no commits yet".to_string(),
    };
    if diff.deltas().len() == 0 {
        return Err(ReviewError::Empty(
            "the work tree and the index match HEAD: there are no uncommitted changes.".to_string(),
        ));
    }
    let files = load_files(repo, diff.deltas(), true)?;
    Ok(ChangeSet { description, files })
}

/// Options for listing changed files (the hunks are made later, from the texts).
fn list_options() -> DiffOptions {
    let mut o = DiffOptions::new();
    o.include_typechange(true).context_lines(GIT_CONTEXT);
    o
}

/// What the listing says about one changed file; its contents are read later, in
/// parallel.
struct Listed {
    path: String,
    old_path: Option<String>,
    status: FileStatus,
    submodule: bool,
    binary: bool,
    /// Blob ids of the two sides (`None` for a side that does not exist or, for the new
    /// side of a work tree review, is read from disk).
    old_id: Option<Oid>,
    new_id: Option<Oid>,
    /// Path and mode of the new side in the work tree, when it is read from there.
    workdir_file: Option<(String, FileMode)>,
}

fn load_files<'a>(
    repo: &Repository,
    deltas: impl Iterator<Item = DiffDelta<'a>>,
    new_from_workdir: bool,
) -> Result<Vec<FileChange>, ReviewError> {
    let mut listed = Vec::new();
    for delta in deltas {
        let status = match delta.status() {
            Delta::Added | Delta::Untracked | Delta::Copied => FileStatus::Added,
            Delta::Deleted => FileStatus::Deleted,
            Delta::Renamed => FileStatus::Renamed,
            Delta::Modified | Delta::Typechange | Delta::Conflicted => FileStatus::Modified,
            Delta::Unmodified | Delta::Ignored | Delta::Unreadable => continue,
        };
        let path_of = |f: &git2::DiffFile<'_>| {
            f.path()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default()
        };
        let (old, new) = (delta.old_file(), delta.new_file());
        let (old_name, new_name) = (path_of(&old), path_of(&new));
        let from_workdir = new_from_workdir && status != FileStatus::Deleted;
        listed.push(Listed {
            path: if status == FileStatus::Deleted {
                old_name.clone()
            } else {
                new_name.clone()
            },
            old_path: (status == FileStatus::Renamed).then_some(old_name),
            status,
            submodule: old.mode() == FileMode::Commit || new.mode() == FileMode::Commit,
            binary: delta.flags().is_binary(),
            old_id: (status != FileStatus::Added).then(|| old.id()),
            new_id: (status != FileStatus::Deleted && !from_workdir).then(|| new.id()),
            workdir_file: from_workdir.then(|| (new_name, new.mode())),
        });
    }
    // Reading blobs (zlib) and diffing are the bulk of the work: each rayon worker
    // opens its own handle on the repository, as libgit2 objects are not shared
    // between threads.
    let location = repo.workdir().unwrap_or(repo.path()).to_path_buf();
    let workdir = repo.workdir().map(Path::to_path_buf);
    listed
        .into_par_iter()
        .map_init(
            || Repository::open(&location),
            |handle, file| {
                let repo = handle.as_ref().map_err(|e| ReviewError::Git {
                    context: "opening the repository",
                    source: git2::Error::new(e.code(), e.class(), e.message()),
                })?;
                load_file(repo, workdir.as_deref(), file)
            },
        )
        .collect()
}

fn load_file(
    repo: &Repository,
    workdir: Option<&Path>,
    file: Listed,
) -> Result<FileChange, ReviewError> {
    let body = if file.submodule {
        Body::Submodule
    } else {
        let blob = |id: Option<Oid>| {
            id.map(|id| repo.find_blob(id))
                .transpose()
                .map_err(|source| ReviewError::Blob {
                    path: file.path.clone(),
                    source,
                })
        };
        let old_blob = blob(file.old_id)?;
        let new_blob = blob(file.new_id)?;
        let on_disk = match (&file.workdir_file, workdir) {
            (Some((rel, mode)), Some(root)) => Some(read_workdir(root, rel, *mode)?),
            _ => None,
        };
        let old: &[u8] = old_blob.as_ref().map_or(&[], |b| b.content());
        let new: &[u8] = match (&on_disk, &new_blob) {
            (Some(bytes), _) => bytes,
            (None, Some(b)) => b.content(),
            (None, None) => &[],
        };
        let decode = |bytes: &[u8]| FileText::decode(bytes.to_vec()).ok();
        let texts = match file.binary {
            true => None,
            false => decode(old).and_then(|o| Some((o, decode(new)?))),
        };
        if let Some((old_text, new_text)) = texts {
            let hunks = match (&old_blob, &new_blob, &on_disk) {
                (Some(o), Some(n), _) => hunks(
                    Patch::from_blobs(o, None, n, None, Some(&mut patch_options())),
                    &file.path,
                )?,
                (Some(o), None, Some(bytes)) => hunks(
                    Patch::from_blob_and_buffer(o, None, bytes, None, Some(&mut patch_options())),
                    &file.path,
                )?,
                _ => whole_file_hunk(&old_text, &new_text),
            };
            Body::Text(Box::new(TextDiff {
                old: old_text,
                new: new_text,
                hunks,
            }))
        } else {
            Body::Binary
        }
    };
    Ok(FileChange {
        path: file.path,
        old_path: file.old_path,
        status: file.status,
        body,
    })
}

fn read_workdir(root: &Path, rel: &str, mode: FileMode) -> Result<Vec<u8>, ReviewError> {
    let full = root.join(rel);
    let read = if mode == FileMode::Link {
        std::fs::read_link(&full).map(|t| t.to_string_lossy().into_owned().into_bytes())
    } else {
        crate::regular_file::read(&full, crate::regular_file::MAX_TEXT_BYTES)
    };
    read.map_err(|source| ReviewError::Read { path: full, source })
}

/// As `git diff`: 3 lines of context, indent heuristic.
fn patch_options() -> DiffOptions {
    let mut opts = DiffOptions::new();
    opts.context_lines(GIT_CONTEXT)
        .indent_heuristic(true)
        .force_text(true);
    opts
}

/// An added or deleted file: one hunk of every line, as git writes it (no xdiff needed).
fn whole_file_hunk(old: &FileText, new: &FileText) -> Vec<GitHunk> {
    let (kind, side) = if old.line_count() == 0 {
        (LineKind::Added, new)
    } else {
        (LineKind::Removed, old)
    };
    let n = side.line_count();
    if n == 0 {
        return Vec::new();
    }
    let line = |i: u32| match kind {
        LineKind::Added => HunkLine {
            kind,
            old: 0,
            new: i,
        },
        _ => HunkLine {
            kind,
            old: i,
            new: 0,
        },
    };
    let (old_len, new_len) = if kind == LineKind::Added {
        (0, n)
    } else {
        (n, 0)
    };
    vec![GitHunk {
        old_first: 1,
        old_len,
        new_first: 1,
        new_len,
        section: String::new(),
        lines: (1..=n).map(line).collect(),
    }]
}

/// git's hunks from a patch libgit2 computed (3 lines of context).
fn hunks(patch: Result<Patch<'_>, git2::Error>, path: &str) -> Result<Vec<GitHunk>, ReviewError> {
    let err = |source| ReviewError::Diff {
        path: path.to_string(),
        source,
    };
    let patch = patch.map_err(err)?;
    let mut out = Vec::with_capacity(patch.num_hunks());
    for h in 0..patch.num_hunks() {
        let (hunk, n) = patch.hunk(h).map_err(err)?;
        let first = |start: u32, len: u32| if len == 0 { start + 1 } else { start };
        let mut lines = Vec::with_capacity(n);
        for l in 0..n {
            let line = patch.line_in_hunk(h, l).map_err(err)?;
            let kind = match line.origin() {
                ' ' => LineKind::Context,
                '+' => LineKind::Added,
                '-' => LineKind::Removed,
                _ => continue, // "\ No newline at end of file" markers
            };
            lines.push(HunkLine {
                kind,
                old: line.old_lineno().unwrap_or(0),
                new: line.new_lineno().unwrap_or(0),
            });
        }
        out.push(GitHunk {
            old_first: first(hunk.old_start(), hunk.old_lines()),
            old_len: hunk.old_lines(),
            new_first: first(hunk.new_start(), hunk.new_lines()),
            new_len: hunk.new_lines(),
            section: section(hunk.header()),
            lines,
        });
    }
    Ok(out)
}

/// The function context after the second `@@` of a hunk header.
fn section(header: &[u8]) -> String {
    let header = String::from_utf8_lossy(header);
    header
        .splitn(3, "@@")
        .nth(2)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
