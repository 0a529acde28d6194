//! Running the repository's git hooks, which libgit2 never runs: `pre-commit` (with
//! `GIT_INDEX_FILE` pointing at an index holding exactly the commit's tree, as
//! `git commit --only` does), `commit-msg` and `post-commit`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::GitError;
use super::child::Cut;

/// Where hooks live: `core.hooksPath` (relative paths are relative to the work tree,
/// as git resolves them) or the common git dir's `hooks/`.
fn hooks_dir(repo: &git2::Repository) -> PathBuf {
    let workdir = repo.workdir().unwrap_or(repo.path());
    match repo.config().and_then(|c| c.get_path("core.hooksPath")) {
        Ok(dir) if dir.is_absolute() => dir,
        Ok(dir) => workdir.join(dir),
        Err(_) => repo.commondir().join("hooks"),
    }
}

/// The hook's path if it exists and is executable (git skips others).
fn find(repo: &git2::Repository, name: &str) -> Option<PathBuf> {
    let path = hooks_dir(repo).join(name);
    let meta = std::fs::metadata(&path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return None;
        }
    }
    meta.is_file().then_some(path)
}

/// Runs hook `name` from the work tree root, with no form of the API key in its
/// environment. A missing hook succeeds; a failing one is an error carrying its
/// combined output (redacted wherever it is shown, as everything is). Setting
/// `cancel` kills it (with what it started) and cancels.
pub(crate) fn run(
    repo: &git2::Repository,
    name: &str,
    args: &[&OsStr],
    index_file: Option<&Path>,
    cancel: Option<&AtomicBool>,
) -> Result<(), GitError> {
    let Some(hook) = find(repo, name) else {
        return Ok(());
    };
    let mut cmd = crate::spawn::command(&hook);
    cmd.args(args)
        .current_dir(repo.workdir().unwrap_or(repo.path()))
        .env("GIT_EDITOR", ":");
    if let Some(index) = index_file {
        cmd.env("GIT_INDEX_FILE", index);
    }
    let out = match super::child::run(cmd, None, cancel, None) {
        Ok(out) => out,
        Err(Cut::Cancelled) => return Err(GitError::Interrupted),
        Err(cut) => {
            return Err(GitError::Hook {
                hook: name.to_string(),
                status: "could not run".into(),
                output: format!("{}: {cut}", hook.display()),
            });
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(GitError::Hook {
        hook: name.to_string(),
        status: out.status.to_string(),
        output: output.trim_end().to_string(),
    })
}
