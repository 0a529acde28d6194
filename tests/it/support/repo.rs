//! Real temporary git repositories (on branch `main`, with a committer identity), and the
//! `tern` binary pointed at one of them with an environment that cannot reach the
//! developer's own config, cache or network.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use git2::{IndexAddOption, Oid, Repository, Signature};

pub struct TempRepo {
    pub dir: tempfile::TempDir,
    pub repo: Repository,
}

impl TempRepo {
    /// An initialized repository with no commits.
    pub fn empty() -> TempRepo {
        // Engines run in this process save sessions: never in the user's state dir.
        tern::config::use_state_dir(
            std::env::temp_dir().join(format!("tern-it-state-{}", std::process::id())),
        );
        let dir = tempfile::tempdir().unwrap();
        let mut opts = git2::RepositoryInitOptions::new();
        opts.initial_head("main");
        let repo = Repository::init_opts(dir.path(), &opts).unwrap();
        let mut config = repo.config().unwrap();
        config.set_str("user.name", "Test User").unwrap();
        config.set_str("user.email", "test@example.com").unwrap();
        TempRepo { dir, repo }
    }

    /// A repository with `files` committed (none: no commit).
    pub fn with_files(files: &[(&str, &str)]) -> TempRepo {
        let repo = TempRepo::empty();
        for (path, text) in files {
            repo.write(path, text);
        }
        if !files.is_empty() {
            repo.commit("initial");
        }
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let full = self.path().join(rel);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap()
    }

    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.path().join(rel)).unwrap();
    }

    pub fn rename(&self, from: &str, to: &str) {
        std::fs::rename(self.path().join(from), self.path().join(to)).unwrap();
    }

    /// Stages everything (additions, edits, deletions) without committing.
    pub fn stage_all(&self) {
        let mut index = self.repo.index().unwrap();
        index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
        index.update_all(["*"], None).unwrap();
        index.write().unwrap();
    }

    /// Commits the whole work tree on top of HEAD.
    pub fn commit(&self, message: &str) -> Oid {
        self.stage_all();
        let mut index = self.repo.index().unwrap();
        let tree = self.repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("Test User", "test@example.com").unwrap();
        let parent = self.repo.head().ok().map(|h| h.peel_to_commit().unwrap());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    }

    /// Creates `name` at HEAD and switches to it (the work tree already matches).
    pub fn branch(&self, name: &str) {
        let head = self.repo.head().unwrap().peel_to_commit().unwrap();
        self.repo.branch(name, &head, false).unwrap();
        self.repo.set_head(&format!("refs/heads/{name}")).unwrap();
    }

    /// Installs the executable hook `name` running the shell `script`.
    pub fn hook(&self, name: &str, script: &str) {
        let path = self.path().join(".git/hooks").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        executable(&path, &format!("#!/bin/sh\n{script}\n"));
    }

    /// Runs the git command line in the repository and returns its stdout; panics when
    /// git fails.
    pub fn git(&self, args: &[&str]) -> String {
        let out = crate::support::command("git")
            .args(args)
            .current_dir(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The `tern` binary in this repository, talking to `api_base`, with config, cache
    /// and logs in a private directory.
    pub fn tern(&self, api_base: &str) -> Command {
        let mut cmd = crate::support::command(env!("CARGO_BIN_EXE_tern"));
        let private = self.private_dir();
        cmd.current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &private)
            .env("XDG_CONFIG_HOME", private.join("config"))
            .env("XDG_CACHE_HOME", private.join("cache"))
            .env("TERN_STATE_DIR", private.join("state"))
            .env("OPENAI_BASE_URL", api_base)
            .env("OPENAI_API_KEY", "sk-test-key-never-shown")
            .env("NO_COLOR", "1");
        cmd
    }

    /// The private state directory the `tern` processes of this repository use.
    pub fn state_dir(&self) -> PathBuf {
        self.private_dir().join("state")
    }

    /// The sessions `tern` processes of this repository save (in the private state
    /// directory, as in the user's).
    pub fn sessions(&self) -> tern::engine::persist::Store {
        tern::engine::persist::Store::in_state_dir(&self.state_dir(), self.path())
    }

    /// The state of the session active last.
    pub fn newest_session(&self) -> tern::engine::persist::SessionFile {
        let newest = self
            .sessions()
            .pick(&tern::engine::persist::Resume::Newest)
            .unwrap();
        tern::engine::persist::load(&newest.dir.join("state.json"))
            .unwrap()
            .unwrap()
    }

    /// Saves `state` as a new session of this repository's `tern` processes; returns
    /// its id.
    pub fn plant_session(&self, state: tern::engine::persist::SessionFile) -> String {
        plant_session(&self.sessions(), state)
    }

    /// Writes the user's own config file for `tern` processes of this repository.
    pub fn user_config(&self, text: &str) {
        let file = self.config_dir().join("config.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }

    /// tern's directory in the user config dir of `tern` processes of this repository
    /// (`config.toml`, `trusted.toml`).
    pub fn config_dir(&self) -> PathBuf {
        self.private_dir().join("config/tern")
    }

    /// tern's directory in their user cache dir (the log, the tag cache).
    pub fn cache_dir(&self) -> PathBuf {
        self.private_dir().join("cache/tern")
    }

    /// The log file `tern` processes of this repository write.
    pub fn log_file(&self) -> PathBuf {
        self.cache_dir().join("tern.log")
    }

    fn private_dir(&self) -> PathBuf {
        let dir = self.path().join(".git").join("tern-test-home");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

/// Runs `cmd` to its end, killing it and failing the test when it takes longer than
/// `limit`: a hang is a failure to report, not a test run that never ends.
/// Writes `text` to `path`, executable.
pub fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = crate::support::command("kill").args(["-9", &pid]).status();
            panic!("the process did not exit within {limit:?}: it hangs");
        }
    }
}

/// stdout and stderr as text, for assertions.
pub fn texts(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Saves `state` as a new session in `store`; returns its id.
pub fn plant_session(
    store: &tern::engine::persist::Store,
    mut state: tern::engine::persist::SessionFile,
) -> String {
    let session = store.create().unwrap();
    let id = session.id.clone();
    let (mut disk, _) = tern::engine::persist::SessionDisk::open(session).unwrap();
    disk.save(&mut state, Vec::new()).unwrap();
    id
}
