//! Which paths a model may write: inside the repository root, never in `.git/`, never
//! through a symlink that leads out of the root.

use std::io;
use std::path::{Component, Path, PathBuf};

/// Why tern will not write a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{} is outside the repository", .0.display())]
    Outside(PathBuf),
    #[error("{} climbs out of the repository with `..`", .0.display())]
    Escapes(PathBuf),
    #[error("{} is inside .git/", .0.display())]
    GitDir(PathBuf),
    #[error("{} goes through a symlink to {}, outside the repository", .path.display(), .target.display())]
    Symlink { path: PathBuf, target: PathBuf },
    #[error("{} is a symlink that points nowhere", .0.display())]
    Dangling(PathBuf),
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("empty path")]
    Empty,
    #[error("{} is inside {}, a submodule or nested repository: its changes belong to that repository, so tern does not edit them", .path.display(), .repo.display())]
    NestedRepo { path: PathBuf, repo: PathBuf },
    #[error("{} is tern's own configuration; the model may not create or change it (edit it yourself)", .0.display())]
    ControlFile(PathBuf),
    #[error("the file name {} has control or invisible characters in it; tern does not create or edit such files", crate::terminal_text::visible(&.0.to_string_lossy()))]
    ControlCharacters(PathBuf),
    #[error("{} is outside the sparse checkout: git tracks it but has not checked it out, so tern cannot show or keep its content; run `git sparse-checkout add {}` first", .path.display(), .dir.display())]
    NotCheckedOut { path: PathBuf, dir: PathBuf },
    #[error("{} is read-only in this chat: the user has not allowed edits to it; ask them to make it editable if it must change", .0.display())]
    ReadOnly(PathBuf),
}

/// A path tern may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Relative to the root, `/`-separated, as shown to the user and committed.
    pub rel: PathBuf,
    /// Where the bytes go: the real file when `rel` is a symlink inside the root.
    pub abs: PathBuf,
    pub exists: bool,
}

impl Target {
    /// The file really written, relative to `root` (canonical): differs from `rel` when
    /// a symlink on the way leads elsewhere in the root. Git's view of the file (is it
    /// ignored, dirty, to commit) is this path's.
    pub fn real(&self, root: &Path) -> PathBuf {
        self.abs
            .strip_prefix(root)
            .map_or_else(|_| self.rel.clone(), Path::to_path_buf)
    }
}

/// Checks `path` (relative to `root`, or absolute inside it) and finds where writing it
/// would really land. `root` must be canonical.
pub fn resolve(root: &Path, path: &Path) -> Result<Target, Refusal> {
    let rel = relative(root, path)?;
    let name = rel.to_string_lossy();
    if name.chars().any(crate::terminal_text::is_unsafe) || crate::terminal_text::has_hidden(&name)
    {
        return Err(Refusal::ControlCharacters(rel));
    }
    if rel.components().any(is_git_dir) {
        return Err(Refusal::GitDir(rel));
    }
    if is_control_file(&rel) {
        return Err(Refusal::ControlFile(rel));
    }
    if let Some(repo) = nested_repo(root, &rel) {
        return Err(Refusal::NestedRepo { path: rel, repo });
    }
    // Canonicalizing the deepest existing ancestor resolves every symlink on the way.
    let mut existing = root.join(&rel);
    let mut rest = Vec::new();
    let exists = loop {
        match existing.symlink_metadata() {
            Ok(_) => break rest.is_empty(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some(name) = existing.file_name() else {
                    return Err(Refusal::Outside(rel));
                };
                rest.push(name.to_owned());
                existing.pop();
            }
            // ENOTDIR and friends: some ancestor is a file.
            Err(_) => return Err(Refusal::NotAFile(rel)),
        }
    };
    let real = existing
        .canonicalize()
        .map_err(|_| Refusal::Dangling(rel.clone()))?;
    let inside = real.strip_prefix(root).map_err(|_| Refusal::Symlink {
        path: rel.clone(),
        target: real.clone(),
    })?;
    if inside.components().any(is_git_dir) {
        return Err(Refusal::GitDir(rel));
    }
    let abs = rest.iter().rev().fold(real, |p, c| p.join(c));
    if exists && !abs.is_file() {
        return Err(Refusal::NotAFile(rel));
    }
    Ok(Target { rel, abs, exists })
}

/// `path` relative to `root` with `.` and `..` folded lexically; refuses anything that
/// leaves the root.
fn relative(root: &Path, path: &Path) -> Result<PathBuf, Refusal> {
    let given = path.to_path_buf();
    let path = if path.is_absolute() {
        path.strip_prefix(root)
            .map_err(|_| Refusal::Outside(given.clone()))?
    } else {
        path
    };
    let mut rel = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !rel.pop() {
                    return Err(Refusal::Escapes(given));
                }
            }
            Component::Normal(part) => rel.push(part),
            Component::RootDir | Component::Prefix(_) => return Err(Refusal::Outside(given)),
        }
    }
    if rel.as_os_str().is_empty() {
        return Err(Refusal::Empty);
    }
    Ok(rel)
}

/// `.tern.toml` and anything under `.tern/`: what configures tern itself (commands,
/// prompts, sessions) is never the model's to write.
fn is_control_file(rel: &Path) -> bool {
    let mut parts = rel.components();
    match parts.next() {
        Some(Component::Normal(first)) => {
            first == ".tern" || (first == ".tern.toml" && parts.next().is_none())
        }
        _ => false,
    }
}

/// The directory between the root and `rel` that is a repository of its own (it has a
/// `.git`: a checked-out submodule or a nested clone).
fn nested_repo(root: &Path, rel: &Path) -> Option<PathBuf> {
    let mut dir = PathBuf::new();
    let parents: Vec<_> = rel.components().collect();
    for part in parents.iter().take(parents.len().saturating_sub(1)) {
        dir.push(part);
        if root.join(&dir).join(".git").symlink_metadata().is_ok() {
            return Some(dir);
        }
    }
    None
}

fn is_git_dir(c: Component<'_>) -> bool {
    matches!(c, Component::Normal(p) if p.eq_ignore_ascii_case(".git"))
}
