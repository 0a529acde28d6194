//! `.tern/session.json`: the conversation, saved after every turn so that
//! `tern --resume` continues it. Written atomically (a temporary file renamed over the
//! old one); `.tern/` is kept out of git through `.git/info/exclude`, never by editing
//! the user's `.gitignore`. A new session that is not resumed moves an older file to
//! `.tern/session.prev.json` before its first save, so one forgotten `--resume` loses
//! nothing.
//!
//! Format, version 1:
//!
//! ```json
//! {
//!   "version": 1,
//!   "model": "gpt-4o",
//!   "mode": "code",
//!   "files": [{ "path": "src/app.rs", "mode": "editable" },
//!             { "path": "README.md", "mode": "read_only" }],
//!   "history": [{ "role": "user", "content": "To recap our conversation so far: ..." },
//!               { "role": "assistant", "content": "Thanks, I have the recap ..." }],
//!   "summary_at_front": true,
//!   "checkpoint": { "anchor": 12, "summary": "I asked you ..." },
//!   "summaries": 3,
//!   "session_cost": 0.0123
//! }
//! ```
//!
//! `model` is informational (flags and config still choose the model); `history`
//! alternates user / assistant and ends with an assistant message; `summary_at_front`
//! says its first two messages are a summary and its acknowledgement; `checkpoint` is a
//! double-buffer summary of `history[..anchor]` made but not swapped in yet.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ChatMode, Engine, Event, EventSink, FileMode};
use crate::llm::{Message, Role};

pub const DIR: &str = ".tern";
pub const FILE: &str = "session.json";
const PREVIOUS: &str = "session.prev.json";
const VERSION: u32 = 1;

/// The saved session, as written to disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionFile {
    pub version: u32,
    pub model: String,
    pub mode: ChatMode,
    pub files: Vec<SavedFile>,
    pub history: Vec<Message>,
    pub summary_at_front: bool,
    pub checkpoint: Option<SavedCheckpoint>,
    pub summaries: usize,
    pub session_cost: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedFile {
    pub path: String,
    pub mode: FileMode,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedCheckpoint {
    pub anchor: usize,
    pub summary: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("no saved session at {0}: run tern without --resume first")]
    Missing(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a session tern can resume: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot save the session to {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the session of the repository at `root` is saved.
pub fn path(root: &Path) -> PathBuf {
    root.join(DIR).join(FILE)
}

/// Reads and checks the saved session of the repository at `root`.
pub fn load(root: &Path) -> Result<SessionFile, PersistError> {
    let path = path(root);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PersistError::Missing(path));
        }
        Err(source) => return Err(PersistError::Read { path, source }),
    };
    let invalid = |message: String| PersistError::Invalid {
        path: path.clone(),
        message,
    };
    let saved: SessionFile = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    validate(&saved).map_err(invalid)?;
    Ok(saved)
}

fn validate(saved: &SessionFile) -> Result<(), String> {
    if saved.version != VERSION {
        return Err(format!(
            "it has version {}, this tern reads version {VERSION}",
            saved.version
        ));
    }
    for (i, m) in saved.history.iter().enumerate() {
        let expected = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        if m.role != expected {
            return Err(format!(
                "history message {} is from the {} where the {} was expected (the history must alternate, starting with the user)",
                i + 1,
                m.role.as_str(),
                expected.as_str()
            ));
        }
    }
    if !saved.history.len().is_multiple_of(2) {
        return Err("the history ends with a user message that has no reply".into());
    }
    if saved.summary_at_front && saved.history.len() < 2 {
        return Err("summary_at_front is set but the history has no summary".into());
    }
    if let Some(c) = &saved.checkpoint
        && (c.anchor > saved.history.len() || !c.anchor.is_multiple_of(2))
    {
        return Err(format!(
            "the checkpoint's anchor {} does not fall after a reply in the history",
            c.anchor
        ));
    }
    Ok(())
}

/// Writes `saved` atomically. `first` marks a new session's first save: an existing
/// file is moved to `session.prev.json` and `.tern/` is added to git's exclude file.
pub fn save(root: &Path, saved: &SessionFile, first: bool) -> Result<(), PersistError> {
    let dir = root.join(DIR);
    let target = dir.join(FILE);
    let write_error = |source| PersistError::Write {
        path: target.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(write_error)?;
    if first {
        exclude_from_git(root);
        if target.exists() {
            std::fs::rename(&target, dir.join(PREVIOUS)).map_err(write_error)?;
        }
    }
    let mut file = tempfile::NamedTempFile::new_in(&dir).map_err(write_error)?;
    serde_json::to_writer_pretty(&mut file, saved).map_err(|e| write_error(e.into()))?;
    file.write_all(b"\n").map_err(write_error)?;
    file.as_file().sync_all().map_err(write_error)?;
    file.persist(&target).map_err(|e| write_error(e.error))?;
    Ok(())
}

/// Adds `/.tern/` to the repository's `info/exclude` unless it is there. Not a git
/// repository, or an exclude file that cannot be written, is not an error: the session
/// is saved either way.
fn exclude_from_git(root: &Path) {
    let Ok(repo) = git2::Repository::open(root) else {
        return;
    };
    let exclude = repo.commondir().join("info").join("exclude");
    let pattern = format!("/{DIR}/");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if current.lines().any(|l| l.trim() == pattern) {
        return;
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&pattern);
    text.push('\n');
    if let Some(dir) = exclude.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(&exclude, text) {
        tracing::warn!("cannot add {pattern} to {}: {e}", exclude.display());
    }
}

/// Saves the session on a blocking thread, in order, so the engine loop never waits for
/// the disk (a save with fsync takes milliseconds). When several snapshots wait, only
/// the newest is written.
pub(crate) struct SessionWriter {
    tx: Option<std::sync::mpsc::Sender<(SessionFile, bool)>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The next save is this session's first (see `save`).
    first: bool,
}

impl SessionWriter {
    /// A writer for the repository at `root`; failures become warnings on `events`.
    /// Must be called inside a tokio runtime.
    pub(crate) fn start(root: PathBuf, events: EventSink) -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<(SessionFile, bool)>();
        let task = tokio::task::spawn_blocking(move || {
            while let Ok((mut saved, mut first)) = rx.recv() {
                while let Ok((newer, newer_first)) = rx.try_recv() {
                    saved = newer;
                    first |= newer_first;
                }
                if let Err(e) = save(&root, &saved, first) {
                    events.send(Event::Warning {
                        text: e.to_string(),
                    });
                }
            }
        });
        SessionWriter {
            tx: Some(tx),
            task: Some(task),
            first: true,
        }
    }

    fn write(&mut self, saved: SessionFile) {
        if let Some(tx) = &self.tx
            && tx.send((saved, self.first)).is_ok()
        {
            self.first = false;
        }
    }

    /// Writes what is queued, then stops.
    pub(crate) async fn close(&mut self) {
        self.tx = None;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Engine {
    fn session_file(&self) -> SessionFile {
        let files = [FileMode::Editable, FileMode::ReadOnly]
            .into_iter()
            .flat_map(|mode| {
                self.session
                    .paths(mode)
                    .into_iter()
                    .map(move |path| SavedFile { path, mode })
            })
            .collect();
        SessionFile {
            version: VERSION,
            model: self.model.name.clone(),
            mode: self.session.mode,
            files,
            history: self.session.history.clone(),
            summary_at_front: self.history.summary_at_front(),
            checkpoint: self
                .history
                .ready_checkpoint()
                .map(|(anchor, summary)| SavedCheckpoint {
                    anchor,
                    summary: summary.to_string(),
                }),
            summaries: self.history.summaries(),
            session_cost: self.session.session_cost,
        }
    }

    /// Saves the session in the background; a failure is a warning, never the end of
    /// the turn.
    pub(super) fn save_session(&mut self) {
        let saved = self.session_file();
        self.history.session_file.write(saved);
    }

    /// `--resume`: loads the saved session's history, summary state, files and mode.
    pub(super) fn restore_session(&mut self) -> Result<(), PersistError> {
        let root = self.session.root().to_path_buf();
        let saved = load(&root)?;
        self.session.history = saved.history;
        self.session.mode = saved.mode;
        self.session.session_cost = saved.session_cost;
        for file in saved.files {
            let added = self
                .session
                .resolve(&file.path, &root)
                .and_then(|rel| self.session.add(&rel, file.mode));
            if let Err(e) = added {
                self.events.send(Event::Error {
                    text: format!("the saved session's file {}: {e}", file.path),
                });
            }
        }
        self.history.restore(
            saved.summary_at_front,
            saved.summaries,
            saved.checkpoint.map(|c| (c.anchor, c.summary)),
        );
        // The file is this session's own: no need to set it aside.
        self.history.session_file.first = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(history: Vec<Message>) -> SessionFile {
        SessionFile {
            version: VERSION,
            model: "gpt-4o".into(),
            mode: ChatMode::Ask,
            files: vec![SavedFile {
                path: "src/a.rs".into(),
                mode: FileMode::ReadOnly,
            }],
            history,
            summary_at_front: false,
            checkpoint: None,
            summaries: 0,
            session_cost: 0.5,
        }
    }

    #[test]
    fn saves_atomically_reloads_and_keeps_the_previous_session() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        let first = session(vec![Message::user("hi"), Message::assistant("hello")]);
        save(dir.path(), &first, true).unwrap();
        assert_eq!(load(dir.path()).unwrap(), first);
        let exclude = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
        assert_eq!(exclude.matches("/.tern/").count(), 1);

        let second = session(vec![]);
        save(dir.path(), &second, true).unwrap();
        save(dir.path(), &second, false).unwrap();
        assert_eq!(load(dir.path()).unwrap(), second);
        let previous = std::fs::read_to_string(dir.path().join(".tern/session.prev.json")).unwrap();
        assert!(previous.contains("hello"));
        let exclude = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
        assert_eq!(exclude.matches("/.tern/").count(), 1, "added once");
        let leftovers = std::fs::read_dir(dir.path().join(".tern")).unwrap().count();
        assert_eq!(leftovers, 2, "no temporary files are left behind");
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(load(dir.path()), Err(PersistError::Missing(_))));
        let mut bad = session(vec![Message::assistant("hello")]);
        save(dir.path(), &bad, false).unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("history message 1 is from the assistant"), "{e}");
        bad.history = vec![Message::user("a"), Message::assistant("b")];
        bad.checkpoint = Some(SavedCheckpoint {
            anchor: 4,
            summary: "s".into(),
        });
        save(dir.path(), &bad, false).unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("anchor 4"), "{e}");
        std::fs::write(path(dir.path()), "{ not json").unwrap();
        assert!(matches!(
            load(dir.path()),
            Err(PersistError::Invalid { .. })
        ));
    }
}
