//! The session: the conversation and the pending proposal, saved after every turn,
//! every review decision and every change of files, mode or model, so that `tern
//! --resume` continues it as it was when tern quit. It lives in the user's
//! state directory (`$XDG_STATE_HOME/tern/sessions/<repo>-<hash of its path>.json`, or
//! `$TERN_STATE_DIR/sessions/…`), never in the work tree: a cloned repository must not
//! be able to ship a session, with a proposal that `--resume --yes` would apply. Written
//! atomically (a temporary file renamed over the old one). A new session that is not
//! resumed moves an older file to `….prev.json` before its first save, so one forgotten
//! `--resume` loses nothing.
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
//!   "session_cost": 0.0123,
//!   "proposal": { "files": [ … ] },
//!   "proposal_failures": [{ "path": "src/app.rs", "block": 2, "message": "…" }],
//!   "proposal_shell": ["cargo test"],
//!   "notes": ["I did not apply these hunks: …"],
//!   "transcript": [{ "kind": "user", "text": "rename remove" },
//!                  { "kind": "assistant", "text": "Here is …" }],
//!   "server_window": 2048,
//!   "learned_limit": 1400,
//!   "turns": [["3f2a9c1…"], ["8be01d4…", "c41a7e2…"]]
//! }
//! ```
//!
//! `model` is restored unless `--model` names one for this start; `history`
//! alternates user / assistant and ends with an assistant message; `summary_at_front`
//! says its first two messages are a summary and its acknowledgement; `checkpoint` is a
//! double-buffer summary of `history[..anchor]` made but not swapped in yet;
//! `proposal` is the pending edits by content (`edit::ProposalSnapshot`), placed again
//! in the files as they are on resume, shown with the reply's failed blocks
//! (`proposal_failures`) and suggested commands (`proposal_shell`), both optional;
//! `notes` go to the model with the next message; `transcript` is what the chat showed
//! (the last `session::TRANSCRIPT_LIMIT` messages), shown again on resume;
//! `server_window` is the context a server said it has (llama.cpp's `n_ctx`) and
//! `learned_limit` the prompt limit learned from one that refused a request without
//! saying it, both optional and kept for the resumed session; `turns` (optional) are
//! the commits each code-mode turn made, oldest first, for `/undo turn`, checked against
//! the repository when used.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::turn_commits::TurnCommits;
use super::{ChatMode, Engine, Event, EventSink, FileMode};
use crate::llm::{Message, Role};

/// Where sessions were kept before: in the work tree. Never read.
pub const OLD_FILE: &str = ".tern/session.json";
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
    /// The edits awaiting review when the session was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<crate::edit::ProposalSnapshot>,
    /// The blocks of the proposal's reply that failed, as shown with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposal_failures: Vec<super::protocol::EditFailureView>,
    /// Shell commands the proposal's reply suggested (never run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposal_shell: Vec<String>,
    /// What tern will tell the model with the next message (rejected hunks, an undone
    /// commit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the chat showed, for the resumed workspace to show again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<super::protocol::Shown>,
    /// The context the server said it has, smaller than the model's window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_window: Option<usize>,
    /// A prompt limit learned from a server that refused a request as too long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned_limit: Option<usize>,
    /// The commits each code-mode turn made (ids, oldest first), for `/undo turn`.
    #[serde(default, skip_serializing_if = "TurnCommits::is_empty")]
    pub turns: TurnCommits,
    /// Command outputs in the context: the history may ask the model about them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<crate::context::CommandText>,
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
    #[error(
        "no saved session at {new}; {old} is from an older tern and is never loaded (a session in the work tree could come with a cloned repository)"
    )]
    Moved { old: PathBuf, new: PathBuf },
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

/// Where the session of the repository at `root` is saved: in the user's state
/// directory, named after the repository and a hash of its path.
pub fn path(root: &Path) -> PathBuf {
    path_in(&crate::config::state_dir(), root)
}

/// The session file of the repository at `root` under the state directory `base`.
pub fn path_in(base: &Path, root: &Path) -> PathBuf {
    base.join("sessions")
        .join(format!("{}.json", crate::config::repo_key(root)))
}

/// Reads and checks the saved session in `path`.
pub fn load(path: &Path) -> Result<SessionFile, PersistError> {
    let path = path.to_path_buf();
    let text = match crate::regular_file::read_to_string(&path, crate::regular_file::MAX_TEXT_BYTES)
    {
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

/// Writes `saved` to `target` atomically, every text redacted (a reply, a command's
/// output or a note may hold the API key). `first` marks a new session's first save:
/// an existing file is moved to `….prev.json`.
pub fn save(target: &Path, saved: &SessionFile, first: bool) -> Result<(), PersistError> {
    let target = target.to_path_buf();
    let dir = target.parent().unwrap_or(Path::new(".")).to_path_buf();
    let write_error = |source| PersistError::Write {
        path: target.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(write_error)?;
    if first && target.exists() {
        std::fs::rename(&target, target.with_extension("prev.json")).map_err(write_error)?;
    }
    let redacted = crate::egress::json(saved).map_err(|e| write_error(e.into()))?;
    let mut file = tempfile::NamedTempFile::new_in(&dir).map_err(write_error)?;
    serde_json::to_writer_pretty(&mut file, &redacted).map_err(|e| write_error(e.into()))?;
    file.write_all(b"\n").map_err(write_error)?;
    file.as_file().sync_all().map_err(write_error)?;
    file.persist(&target).map_err(|e| write_error(e.error))?;
    Ok(())
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
    pub(crate) fn start(file: PathBuf, events: EventSink) -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<(SessionFile, bool)>();
        let task = tokio::task::spawn_blocking(move || {
            while let Ok((mut saved, mut first)) = rx.recv() {
                while let Ok((newer, newer_first)) = rx.try_recv() {
                    saved = newer;
                    first |= newer_first;
                }
                if let Err(e) = save(&file, &saved, first) {
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

    /// A writer that saves nothing (an engine that lands a given reply must not replace
    /// the user's session).
    pub(crate) fn none() -> Self {
        SessionWriter {
            tx: None,
            task: None,
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
        let (proposal, proposal_failures, proposal_shell) = match self.pending_saved() {
            Some(p) => (Some(p.proposal), p.failures, p.shell),
            None => (None, Vec::new(), Vec::new()),
        };
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
            proposal,
            proposal_failures,
            proposal_shell,
            notes: self.session.notes_for_next_turn.clone(),
            transcript: self.session.transcript.clone(),
            server_window: (self.window.source == crate::context::WindowSource::Server)
                .then_some(self.window.window),
            learned_limit: self.history.learned_limit(),
            turns: self.session.turns.clone(),
            outputs: self.session.outputs.clone(),
        }
    }

    /// Saves the session in the background; a failure is a warning, never the end of
    /// the turn.
    pub(super) fn save_session(&mut self) {
        let saved = self.session_file();
        self.history.session_file.write(saved);
    }

    /// An older tern's session in the work tree is never loaded; this says so until
    /// the repository has a session in the state directory (so, in effect, once).
    pub(super) fn mention_old_session(&self) {
        let root = self.session.root();
        let new = path(root);
        if root.join(OLD_FILE).exists() && !new.exists() {
            self.notice(format!(
                "{OLD_FILE} is from an older tern and is never loaded (a session in the work tree could come with a cloned repository); sessions now live in {}, and you may delete it",
                new.display()
            ));
        }
    }

    /// `--resume`: loads the saved session's history, summary state, files, mode,
    /// notes, transcript and (unless `keep_model`: `--model` chose one) model.
    pub(super) fn restore_session(&mut self, keep_model: bool) -> Result<(), PersistError> {
        let root = self.session.root().to_path_buf();
        let file = path(&root);
        if !file.exists() && root.join(OLD_FILE).exists() {
            return Err(PersistError::Moved {
                old: root.join(OLD_FILE),
                new: file,
            });
        }
        let saved = load(&file)?;
        self.session.history = saved.history;
        self.session.mode = saved.mode;
        self.session.session_cost = saved.session_cost;
        self.session.notes_for_next_turn = saved.notes;
        self.session.transcript = saved.transcript;
        self.session.turns = saved.turns;
        self.session.outputs = saved.outputs;
        if !keep_model && !saved.model.is_empty() && saved.model != self.model.name {
            self.switch_model(&saved.model);
        }
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
            saved.learned_limit,
        );
        // What the server taught holds, unless the user says the window now.
        if let Some(n_ctx) = saved.server_window
            && self.settings.context_window.is_none()
        {
            self.window = crate::context::Window::from_server(
                &self.model,
                n_ctx,
                self.settings.reserve_output,
            );
        }
        if let Some(proposal) = saved.proposal {
            self.restore_pending(super::proposal_review::SavedPending {
                proposal,
                failures: saved.proposal_failures,
                shell: saved.proposal_shell,
            });
        }
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
            proposal: None,
            proposal_failures: Vec::new(),
            proposal_shell: Vec::new(),
            notes: vec![],
            transcript: vec![],
            server_window: None,
            learned_limit: None,
            turns: Default::default(),
            outputs: Vec::new(),
        }
    }

    #[test]
    fn saves_atomically_reloads_and_keeps_the_previous_session() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sessions/repo-0123.json");
        let first = session(vec![Message::user("hi"), Message::assistant("hello")]);
        save(&file, &first, true).unwrap();
        assert_eq!(load(&file).unwrap(), first);

        let second = session(vec![]);
        save(&file, &second, true).unwrap();
        save(&file, &second, false).unwrap();
        assert_eq!(load(&file).unwrap(), second);
        let previous = std::fs::read_to_string(file.with_extension("prev.json")).unwrap();
        assert!(previous.contains("hello"));
        let leftovers = std::fs::read_dir(dir.path().join("sessions"))
            .unwrap()
            .count();
        assert_eq!(leftovers, 2, "no temporary files are left behind");
    }

    #[test]
    fn sessions_live_outside_the_work_tree_one_per_repository() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        assert!(!path(a.path()).starts_with(a.path()));
        assert_ne!(path(a.path()), path(b.path()));
        assert_eq!(path(a.path()), path(&a.path().join(".")));
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        assert!(matches!(load(&file), Err(PersistError::Missing(_))));
        let mut bad = session(vec![Message::assistant("hello")]);
        save(&file, &bad, false).unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("history message 1 is from the assistant"), "{e}");
        bad.history = vec![Message::user("a"), Message::assistant("b")];
        bad.checkpoint = Some(SavedCheckpoint {
            anchor: 4,
            summary: "s".into(),
        });
        save(&file, &bad, false).unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("anchor 4"), "{e}");
        std::fs::write(&file, "{ not json").unwrap();
        assert!(matches!(load(&file), Err(PersistError::Invalid { .. })));
    }
}
