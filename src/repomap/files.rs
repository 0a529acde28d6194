//! The file set of the map: git-tracked files plus untracked files that no ignore rule
//! hides, minus the root `.ternignore` (gitignore syntax; nested `.ternignore` files
//! apply to untracked files too). Outside a git repository, every file the `ignore`
//! crate's standard filters keep.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Files larger than this are skipped: generated code, data, minified bundles.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

pub const TERNIGNORE: &str = ".ternignore";

/// One file of the set, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Relative to the root, `/`-separated.
    pub rel: String,
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
}

/// Lists the repository's files, sorted by relative path. Files that vanish or cannot
/// be stat'ed while listing are left out.
pub fn scan(root: &Path) -> Vec<Found> {
    let ternignore = ternignore(root);
    let mut seen: HashSet<String> = HashSet::new();
    let mut found = Vec::new();
    let mut push = |seen: &mut HashSet<String>, rel: String, meta: std::fs::Metadata| {
        if meta.is_file()
            && !ternignore
                .matched_path_or_any_parents(&rel, false)
                .is_ignore()
            && seen.insert(rel.clone())
        {
            found.push(Found {
                rel,
                size: meta.len(),
                mtime_ns: mtime_ns(&meta),
            });
        }
    };

    // Submodules are gitlinks (mode 160000) in the index: their files belong to another
    // repository, and the walk must not pick them up as untracked either.
    let mut submodules: HashSet<PathBuf> = HashSet::new();
    if let Ok(repo) = git2::Repository::open(root)
        && let Ok(index) = repo.index()
    {
        for entry in index.iter() {
            let Ok(rel) = String::from_utf8(entry.path) else {
                continue;
            };
            if entry.mode == 0o160000 {
                submodules.insert(root.join(rel));
            } else if let Ok(meta) = std::fs::symlink_metadata(root.join(&rel)) {
                push(&mut seen, rel, meta);
            }
        }
    }

    let walker = ignore::WalkBuilder::new(root)
        .add_custom_ignore_filename(TERNIGNORE)
        .require_git(false)
        .filter_entry(move |e| e.file_name() != ".git" && !submodules.contains(e.path()))
        .build();
    for entry in walker.flatten() {
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Some(rel) = relative(root, entry.path())
            && !seen.contains(&rel)
            && let Ok(meta) = entry.metadata()
        {
            push(&mut seen, rel, meta);
        }
    }
    found.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    found
}

/// Stats one file of the set again (after an edit), or None if it is gone.
pub fn stat(root: &Path, rel: &str) -> Option<Found> {
    let meta = std::fs::symlink_metadata(root.join(rel)).ok()?;
    meta.is_file().then(|| Found {
        rel: rel.to_string(),
        size: meta.len(),
        mtime_ns: mtime_ns(&meta),
    })
}

/// The root's `.ternignore`, or an empty matcher (a broken pattern is skipped, the rest
/// still apply).
fn ternignore(root: &Path) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    let file = root.join(TERNIGNORE);
    if file.is_file()
        && let Some(err) = builder.add(&file)
    {
        tracing::warn!("{}: {err}", file.display());
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let text = rel.to_str()?;
    Some(if std::path::MAIN_SEPARATOR == '/' {
        text.to_string()
    } else {
        text.replace(std::path::MAIN_SEPARATOR, "/")
    })
}

/// Turns a user-given path (absolute or relative to `cwd`) into a root-relative one.
pub fn to_rel(root: &Path, cwd: &Path, path: &Path) -> Option<String> {
    let abs: PathBuf = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let abs = abs.canonicalize().unwrap_or(abs);
    relative(root, &abs)
}

pub fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Whether content looks binary: a NUL byte in its first 8 KiB, as git decides.
pub fn is_binary(content: &[u8]) -> bool {
    content[..content.len().min(8192)].contains(&0)
}
