//! Real temporary git repositories, and the `tern` binary pointed at one of them with an
//! environment that cannot reach the developer's own config, cache or network.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct TempRepo {
    pub dir: tempfile::TempDir,
}

impl TempRepo {
    /// An initialized repository with `files` committed.
    pub fn with_files(files: &[(&str, &str)]) -> TempRepo {
        let dir = tempfile::tempdir().unwrap();
        let repo = TempRepo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Test User"]);
        repo.git(&["config", "user.email", "test@example.com"]);
        for (path, text) in files {
            repo.write(path, text);
        }
        if !files.is_empty() {
            repo.git(&["add", "-A"]);
            repo.git(&["commit", "-q", "-m", "initial"]);
        }
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let full = self.path().join(rel);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap()
    }

    /// Runs git in the repository and returns its stdout; panics when git fails.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
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
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tern"));
        let private = self.private_dir();
        cmd.current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &private)
            .env("XDG_CONFIG_HOME", private.join("config"))
            .env("XDG_CACHE_HOME", private.join("cache"))
            .env("OPENAI_BASE_URL", api_base)
            .env("OPENAI_API_KEY", "sk-test-key-never-shown")
            .env("NO_COLOR", "1");
        cmd
    }

    fn private_dir(&self) -> PathBuf {
        let dir = self.path().join(".git").join("tern-test-home");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

/// stdout and stderr as text, for assertions.
pub fn texts(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
