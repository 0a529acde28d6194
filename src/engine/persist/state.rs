//! `state.json`: the session as it is now, rewritten whole (atomically) on every change.
//!
//! Format, version 2:
//!
//! ```json
//! {
//!   "version": 2,
//!   "created_ms": 1767225600000,
//!   "last_active_ms": 1767312000000,
//!   "title": "make parse_args reject -x",
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
//!   "proposal_turn": 7,
//!   "proposal_failures": [{ "path": "src/app.rs", "block": 2, "message": "…" }],
//!   "proposal_shell": ["cargo test"],
//!   "notes": ["I did not apply these hunks: …"],
//!   "transcript": [{ "kind": "user", "text": "rename remove" },
//!                  { "kind": "assistant", "text": "Here is …" }],
//!   "server_window": 2048,
//!   "learned_limit": 1400,
//!   "map_tokens": 0,
//!   "turns": [["3f2a9c1…"], ["8be01d4…", "c41a7e2…"]],
//!   "outputs": [{ "command": "cargo test", "outcome": "exit 101 after 2.1 s", "text": "…" }],
//!   "unsent": "and the docs too",
//!   "record": { "turns": 9, "messages": 24, "front": 2, "from": 14 },
//!   "log": { "segment": 1, "bytes": 48213 }
//! }
//! ```
//!
//! `created_ms` and `last_active_ms` are Unix milliseconds (0 in a session an older tern
//! saved: then the file's time stands in); `title` is the first message, for `tern sessions`;
//! `model` is restored unless `--model` names one for this start; `history` alternates
//! user / assistant and ends with an assistant message; `summary_at_front` says its
//! first two messages are a summary and its acknowledgement; `checkpoint` is a
//! double-buffer summary of `history[..anchor]` made but not swapped in yet;
//! `proposal` is the pending edits by content (`edit::ProposalSnapshot`), placed again
//! in the files as they are on resume, shown with the reply's failed blocks and stale
//! hunks (`proposal_failures`) and suggested commands (`proposal_shell`), both
//! optional; `proposal_turn` is the turn whose reply proposed them; `notes` go to the
//! model with the next message; `transcript` is what the chat showed (the last
//! `session::TRANSCRIPT_LIMIT` messages, at most `TRANSCRIPT_BYTES`), shown again on
//! resume; `server_window` is the context a server said it has (llama.cpp's `n_ctx`)
//! and `learned_limit` the prompt limit learned from one that refused a request without
//! saying it, both optional and kept for the resumed session; `map_tokens` (optional)
//! the repo map's budget `/map-tokens` chose, 0 for no map; `turns` (optional) are
//! the commits each of the last 20 code-mode turns made, oldest first, for `/undo
//! turn`, checked against the repository when used; `outputs` are the command outputs
//! in the context; `unsent` (optional) a message that waited for the repo map and was
//! never sent, given back on resume; `record` is where the turn record stands and `log` how much of it on
//! disk is complete (see `record`); `redo` (optional) is what the last rewind took
//! away, for its redo, until a message is sent (`Redo`). Version 1 (an older tern's single file per
//! repository) is read too: it has no `created_ms`, `last_active_ms`, `title`, `record`
//! or `log`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::record::{Cursor, LogPosition};
use crate::engine::protocol::{ChatMode, EditFailureView, FileMode, Shown};
use crate::engine::turn_commits::TurnCommits;
use crate::llm::{Message, Role};

pub const VERSION: u32 = 2;

/// The saved session, as written to disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionFile {
    pub version: u32,
    #[serde(default)]
    pub created_ms: u64,
    #[serde(default)]
    pub last_active_ms: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
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
    /// The turn whose reply proposed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_turn: Option<usize>,
    /// The blocks of the proposal's reply that failed and its hunks that went stale, as
    /// shown with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposal_failures: Vec<EditFailureView>,
    /// Shell commands the proposal's reply suggested (never run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposal_shell: Vec<String>,
    /// What tern will tell the model with the next message (rejected hunks, an undone
    /// commit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the chat showed, for the resumed workspace to show again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<Shown>,
    /// The context the server said it has, smaller than the model's window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_window: Option<usize>,
    /// A prompt limit learned from a server that refused a request as too long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned_limit: Option<usize>,
    /// The repo map's budget `/map-tokens` chose (0: no map).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_tokens: Option<usize>,
    /// The commits each code-mode turn made (ids, oldest first), for `/undo turn`.
    #[serde(default, skip_serializing_if = "TurnCommits::is_empty")]
    pub turns: TurnCommits,
    /// Command outputs in the context: the history may ask the model about them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<crate::context::CommandText>,
    /// A message that waited for the repo map when it was cancelled or tern quit: never
    /// sent, so not in the conversation; given back on resume, kept until a message is
    /// sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsent: Option<String>,
    /// Where the turn record stands.
    #[serde(default)]
    pub record: Cursor,
    /// How much of the turn record on disk is complete (filled in when written).
    #[serde(default)]
    pub log: LogPosition,
    /// What the last rewind took away, for `/rewind redo`, until a message is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redo: Option<Redo>,
}

/// What a rewind took away, to put back (`engine::rewind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redo {
    /// The turn it went back to before.
    pub to: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<RedoCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<RedoChat>,
}

/// The code a rewind took back: HEAD is moved from `at` (where it left it) back to
/// `head`, bringing back `commits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedoCode {
    pub at: String,
    pub head: String,
    pub commits: Vec<String>,
    /// `turns` as it was, for `/undo turn`.
    pub turns: TurnCommits,
    /// What the model was to be told of the commits taken back (a code-only rewind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The commands whose changes it put back, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<super::record::Ran>,
}

/// The conversation as it was before the rewind, and its number of turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedoChat {
    pub turns: usize,
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<crate::context::CommandText>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<Shown>,
}

impl Default for SessionFile {
    fn default() -> Self {
        SessionFile {
            version: VERSION,
            created_ms: 0,
            last_active_ms: 0,
            title: String::new(),
            model: String::new(),
            mode: ChatMode::Code,
            files: Vec::new(),
            history: Vec::new(),
            summary_at_front: false,
            checkpoint: None,
            summaries: 0,
            session_cost: 0.0,
            proposal: None,
            proposal_turn: None,
            proposal_failures: Vec::new(),
            proposal_shell: Vec::new(),
            notes: Vec::new(),
            transcript: Vec::new(),
            server_window: None,
            learned_limit: None,
            map_tokens: None,
            turns: TurnCommits::default(),
            outputs: Vec::new(),
            unsent: None,
            record: Cursor::default(),
            log: LogPosition::default(),
            redo: None,
        }
    }
}

impl SessionFile {
    /// Whether the session holds anything worth resuming: a conversation (a message
    /// sent, a command's output in the context), a chat file or pending edits. A run
    /// that never holds any leaves no session behind.
    pub(crate) fn holds_something(&self) -> bool {
        !self.transcript.is_empty()
            || !self.history.is_empty()
            || !self.files.is_empty()
            || self.proposal.is_some()
            || !self.proposal_failures.is_empty()
            || !self.outputs.is_empty()
            || !self.notes.is_empty()
            || self.unsent.is_some()
    }
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
        "no saved session for this repository; {old} is from an older tern and is never loaded (a session in the work tree could come with a cloned repository)"
    )]
    Moved { old: PathBuf },
    // `error`, not `source`: the text already ends with it, and a source would make
    // `{:#}` say it twice.
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path} is not a session tern can resume: {why}")]
    Invalid { path: PathBuf, why: Invalid },
    #[error("cannot save the session to {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Why a saved state cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum Invalid {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("it has version {0}, this tern reads versions 1 and {VERSION}")]
    Version(u32),
    #[error(
        "history message {} is from the {} where the {} was expected (the history must alternate, starting with the user)",
        .index + 1, .found.as_str(), .expected.as_str()
    )]
    NotAlternating {
        /// 0-based.
        index: usize,
        found: Role,
        expected: Role,
    },
    #[error("the history ends with a user message that has no reply")]
    Unanswered,
    #[error("summary_at_front is set but the history has no summary")]
    SummaryWithoutHistory,
    #[error("the checkpoint's anchor {0} does not fall after a reply in the history")]
    Anchor(usize),
}

/// Reads and checks the session state in `path` (None: there is none), a version 1
/// file made version 2 (its whole history becomes the turn record's front).
pub fn load(path: &Path) -> Result<Option<SessionFile>, PersistError> {
    let text = match crate::regular_file::read_to_string(path, crate::regular_file::MAX_TEXT_BYTES)
    {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(PersistError::Read {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    let invalid = |why: Invalid| PersistError::Invalid {
        path: path.to_path_buf(),
        why,
    };
    let mut saved: SessionFile =
        serde_json::from_str(&text).map_err(|e| invalid(Invalid::Json(e)))?;
    validate(&saved).map_err(invalid)?;
    if saved.version == 1 {
        saved.version = VERSION;
        saved.record.front = saved.history.len();
    }
    Ok(Some(saved))
}

fn validate(saved: &SessionFile) -> Result<(), Invalid> {
    if saved.version != VERSION && saved.version != 1 {
        return Err(Invalid::Version(saved.version));
    }
    for (i, m) in saved.history.iter().enumerate() {
        let expected = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        if m.role != expected {
            return Err(Invalid::NotAlternating {
                index: i,
                found: m.role,
                expected,
            });
        }
    }
    if !saved.history.len().is_multiple_of(2) {
        return Err(Invalid::Unanswered);
    }
    if saved.summary_at_front && saved.history.len() < 2 {
        return Err(Invalid::SummaryWithoutHistory);
    }
    if let Some(c) = &saved.checkpoint
        && (c.anchor > saved.history.len() || !c.anchor.is_multiple_of(2))
    {
        return Err(Invalid::Anchor(c.anchor));
    }
    Ok(())
}

/// The temporary files a state is written to before it is renamed into place.
const TEMPORARY: &str = ".state-";

/// Writes `bytes` to `target` atomically: a temporary file beside it, synced, renamed
/// over it, so a crash leaves the old state or the new one, never half of one. On any
/// failure (a full disk, say) the old state stays as it was and the temporary file is
/// removed (dropped).
pub(super) fn write_atomically(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::Builder::new()
        .prefix(TEMPORARY)
        .tempfile_in(dir)?;
    #[cfg(test)]
    if super::failpoint::met(dir, super::failpoint::Step::State) {
        file.write_all(bytes.get(..bytes.len() / 2).unwrap_or_default())?;
        return Err(super::failpoint::disk_full());
    }
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(target).map_err(|e| e.error)?;
    Ok(())
}

/// Removes the temporary files a tern killed while writing a state in `dir` left (the
/// state itself is whole: the old one or the new).
pub(super) fn remove_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(TEMPORARY) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_killed_write_left_is_removed_and_the_state_stays() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        write_atomically(&file, b"{}").unwrap();
        // Killed after the temporary file was written, before the rename.
        std::fs::write(dir.path().join(".state-Xy12ab"), "{ half").unwrap();
        remove_leftovers(dir.path());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["state.json"]);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        assert!(matches!(load(&file), Ok(None)));
        let write = |saved: &SessionFile| {
            write_atomically(&file, &serde_json::to_vec(saved).unwrap()).unwrap()
        };
        let mut bad = SessionFile {
            history: vec![Message::assistant("hello")],
            ..SessionFile::default()
        };
        write(&bad);
        assert!(matches!(
            load(&file),
            Err(PersistError::Invalid {
                why: Invalid::NotAlternating { index: 0, .. },
                ..
            })
        ));
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("history message 1 is from the assistant"), "{e}");
        bad.history = vec![Message::user("a"), Message::assistant("b")];
        bad.checkpoint = Some(SavedCheckpoint {
            anchor: 4,
            summary: "s".into(),
        });
        write(&bad);
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("anchor 4"), "{e}");
        bad.checkpoint = None;
        bad.version = 3;
        write(&bad);
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("version 3"), "{e}");
        std::fs::write(&file, "{ not json").unwrap();
        assert!(matches!(
            load(&file),
            Err(PersistError::Invalid {
                why: Invalid::Json(_),
                ..
            })
        ));
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary files are left behind");
    }

    /// An older tern's file reads as version 2: its history is the record's front.
    #[test]
    fn a_version_1_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        std::fs::write(
            &file,
            r#"{"version": 1, "model": "gpt-4o", "mode": "code", "files": [],
                "history": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                "summary_at_front": false, "checkpoint": null, "summaries": 0,
                "session_cost": 0.25, "turns": [["abc"]]}"#,
        )
        .unwrap();
        let saved = load(&file).unwrap().unwrap();
        assert_eq!(saved.version, VERSION);
        assert_eq!(saved.record.front, 2);
        assert_eq!(saved.last_active_ms, 0);
        assert!(saved.holds_something());
    }
}
