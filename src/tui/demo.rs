//! `tern --demo`: the workspace on a copy of a small project, answering from a recorded
//! session, so a newcomer sees a streamed reply, the live gauge and a multi-hunk edit
//! to review without an API key or network.
//!
//! The project and the recording are compiled in (`assets/demo/`), so the demo works
//! from an installed binary. The recording was made by running tern with `--record`
//! against the loopback test server (see `tests/tui_demo.rs`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::{Kind, Options};
use crate::config::Settings;
use crate::engine::EngineConfig;

/// The demo project: path and content of each file.
pub const PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../assets/demo/project/README.md"),
    ),
    (
        "pyproject.toml",
        include_str!("../../assets/demo/project/pyproject.toml"),
    ),
    (
        "shop/__init__.py",
        include_str!("../../assets/demo/project/shop/__init__.py"),
    ),
    (
        "shop/inventory.py",
        include_str!("../../assets/demo/project/shop/inventory.py"),
    ),
    (
        "shop/pricing.py",
        include_str!("../../assets/demo/project/shop/pricing.py"),
    ),
    (
        "shop/cli.py",
        include_str!("../../assets/demo/project/shop/cli.py"),
    ),
    (
        "tests/test_inventory.py",
        include_str!("../../assets/demo/project/tests/test_inventory.py"),
    ),
];

/// Files the demo puts in the chat, editable and read-only.
pub const EDITABLE: &[&str] = &["shop/inventory.py", "shop/cli.py"];
pub const READ_ONLY: &[&str] = &["README.md"];

/// The model the recording was made with.
pub const MODEL: &str = "gpt-4o";

/// The question the demo asks first.
pub const PROMPT: &str = include_str!("../../assets/demo/prompt.txt");

/// The recorded exchanges (`--record` format: one JSON line per request).
pub const SESSION: &str = include_str!("../../assets/demo/session.jsonl");

/// A demo repository on disk; removed when dropped.
pub struct Demo {
    pub dir: tempfile::TempDir,
    /// The project's root (a git repository with one commit).
    pub root: PathBuf,
    /// The recording to replay.
    pub session: PathBuf,
}

/// Opens the workspace on a fresh copy of the demo project, asking the demo question.
pub async fn run(mut settings: Settings) -> anyhow::Result<ExitCode> {
    let demo = prepare()?;
    // A signal's exit (while the editor runs, say) removes the demo's repository too.
    let dir = demo.dir.path().to_path_buf();
    let _on_exit = crate::signals::at_exit(move || {
        let _ = std::fs::remove_dir_all(&dir);
    });
    // What the demo saves (its session) goes with its temporary repository, rather
    // than piling up in the user's state directory for a repository that is gone.
    crate::config::use_state_dir(demo.dir.path().join("state"));
    settings.model = MODEL.to_string();
    let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
    let config = EngineConfig {
        settings,
        root: demo.root.clone(),
        cwd: demo.root.clone(),
        record: None,
        replay: Some(demo.session.clone()),
        editable: strings(EDITABLE),
        read_only: strings(READ_ONLY),
        map_cache: crate::engine::CacheLocation::UserCacheDir,
        resume: None,
        role: Default::default(),
        model_chosen: false,
    };
    let options = Options {
        submit: Some(PROMPT.trim().to_string()),
        notices: vec![(
            Kind::Notice,
            format!(
                "demo: a copy of a small project in {}, answered from a recorded session (nothing goes to the network)",
                demo.root.display()
            ),
        )],
        throwaway: true,
    };
    super::run(config, options).await
}

/// Writes the demo project into a new temporary git repository and the recording
/// beside it.
pub(crate) fn prepare() -> anyhow::Result<Demo> {
    let dir = tempfile::Builder::new()
        .prefix("tern-demo-")
        .tempdir()
        .context("cannot create a temporary directory for the demo")?;
    let root = dir.path().join("shop");
    write_project(&root)?;
    commit_all(&root).context("cannot make the demo's git repository")?;
    let session = dir.path().join("session.jsonl");
    std::fs::write(&session, SESSION)?;
    Ok(Demo {
        root: root.canonicalize()?,
        session,
        dir,
    })
}

fn write_project(root: &Path) -> std::io::Result<()> {
    for (path, text) in PROJECT {
        let full = root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(full, text)?;
    }
    Ok(())
}

/// `git init` and one commit of everything, with a local identity when the user has
/// none (so the demo's own commits work on a fresh machine too).
fn commit_all(root: &Path) -> Result<(), git2::Error> {
    let repo = git2::Repository::init(root)?;
    if repo.signature().is_err() {
        let mut config = repo.config()?;
        config.set_str("user.name", "tern demo")?;
        config.set_str("user.email", "demo@tern.invalid")?;
    }
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let signature = repo.signature()?;
    repo.commit(
        Some("HEAD"),
        &signature,
        &signature,
        "shop: stock levels, prices and a CLI",
        &tree,
        &[],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_is_a_committed_repository_with_every_file() {
        let demo = prepare().unwrap();
        let repo = git2::Repository::open(&demo.root).unwrap();
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        let tree = head.tree().unwrap();
        for (path, text) in PROJECT {
            let entry = tree.get_path(Path::new(path)).unwrap();
            let blob = repo.find_blob(entry.id()).unwrap();
            assert_eq!(blob.content(), text.as_bytes(), "{path}");
        }
        let statuses = repo.statuses(None).unwrap();
        assert!(statuses.is_empty(), "nothing left uncommitted");
        for path in EDITABLE.iter().chain(READ_ONLY) {
            assert!(PROJECT.iter().any(|(p, _)| p == path), "{path}");
        }
        assert!(demo.session.is_file());
    }
}
