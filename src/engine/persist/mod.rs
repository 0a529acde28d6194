//! Sessions on disk. Every run of `tern` (the workspace, `tern -m`, `--script`) that
//! has something to keep gets a session of its own, in the user's state directory:
//! `<state dir>/sessions/<repo key>/<id>/` (`store.rs`) holding
//!
//! - `state.json`: the session as it is now (`state.rs`), rewritten atomically on every
//!   change (files, modes, model, every turn and review decision), so that `tern
//!   --resume` continues it as it was when tern quit;
//! - `turns-N.jsonl`: the turn record (`record.rs`), appended, for a rewind and for an
//!   editor's `session/load`;
//! - `lock`: held by the tern that has the session open (`lock.rs`).
//!
//! Everything written into a session passes through `encode`, and is written by
//! `SessionDisk` alone; the engine hands it its saves on a blocking thread
//! (`SessionWriter`). `resume.rs` is the engine's side: what a save holds, and restoring
//! one.

mod lock;
pub mod record;
mod resume;
pub mod state;
pub mod store;

use std::sync::mpsc;

use serde::Serialize;

pub use lock::holder_text;
pub use record::{Before, Record, RecordError, before_turn};
pub use state::{PersistError, SavedCheckpoint, SavedFile, SessionFile, load};
pub use store::{Listed, OpenSession, Resume, Store, StoreError};

pub use resume::OpenError;
pub(crate) use resume::Saved;
pub(crate) use resume::open;

use super::{Event, EventSink};
use record::LogWriter;

/// Where sessions were kept before: in the work tree. Never read.
pub const OLD_FILE: &str = ".tern/session.json";

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Every byte tern writes into a session is made here, every text redacted (a reply, a
/// command's output or a note may hold the API key).
fn encode<T: Serialize>(value: &T, pretty: bool) -> std::io::Result<Vec<u8>> {
    let value = crate::egress::json(value).map_err(std::io::Error::other)?;
    let mut bytes = match pretty {
        true => serde_json::to_vec_pretty(&value),
        false => serde_json::to_vec(&value),
    }
    .map_err(std::io::Error::other)?;
    if pretty {
        bytes.push(b'\n');
    }
    Ok(bytes)
}

/// An open session's files: the one writer of its state and its record.
#[derive(Debug)]
pub struct SessionDisk {
    session: OpenSession,
    log: LogWriter,
    /// A state was saved (this run's or an earlier one's): the session is kept.
    saved: bool,
}

impl SessionDisk {
    /// Opens `session` for writing: its state, if it has one, and its record cut back to
    /// what the state says is complete.
    pub fn open(session: OpenSession) -> Result<(SessionDisk, Option<SessionFile>), PersistError> {
        state::remove_leftovers(&session.dir);
        let path = session.state_path();
        let state = load(&path)?;
        let at = state.as_ref().map(|s| s.log).unwrap_or_default();
        let log = LogWriter::recover(&session.dir, at)
            .map_err(|source| PersistError::Read { path, source })?;
        let disk = SessionDisk {
            saved: state.is_some(),
            session,
            log,
        };
        Ok((disk, state))
    }

    pub fn id(&self) -> &str {
        &self.session.id
    }

    /// Appends `records` to the record, then writes `state` (with how far the record
    /// is complete). Nothing is written for a new session that holds nothing yet. On
    /// failure nothing of `records` counts as written (the caller gives them again).
    pub fn save(
        &mut self,
        state: &mut SessionFile,
        records: Vec<Record>,
    ) -> Result<(), PersistError> {
        if !self.saved && records.is_empty() && !state.holds_something() {
            return Ok(());
        }
        let error = |path, source| PersistError::Write { path, source };
        if !records.is_empty() {
            state.log = self
                .log
                .append(records, |r| encode(r, false))
                .map_err(|e| error(self.session.dir.clone(), e))?;
        }
        state.log = self.log.position();
        let path = self.session.state_path();
        encode(state, true)
            .and_then(|bytes| state::write_atomically(&path, &bytes))
            .map_err(|e| error(path, e))?;
        self.saved = true;
        Ok(())
    }

    /// The session's turn record.
    pub fn records(&self) -> Result<Vec<Record>, RecordError> {
        record::read(&self.session.dir)
    }

    /// Closes the session: one that never saved a state (the run kept nothing) is
    /// removed.
    pub fn close(self) -> std::io::Result<()> {
        match self.saved {
            true => Ok(()),
            false => self.session.remove(),
        }
    }
}

/// A save for the writer thread: the state and the records since the last.
struct Save {
    state: SessionFile,
    records: Vec<Record>,
}

/// Saves the session on a blocking thread, in order, so the engine loop never waits for
/// the disk (a save with fsync takes milliseconds). When several saves wait, their
/// records are appended together and only the newest state is written.
pub(crate) struct SessionWriter {
    tx: Option<mpsc::Sender<Save>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl SessionWriter {
    /// A writer for `disk`; failures become warnings on `events`. Must be called
    /// inside a tokio runtime.
    pub(crate) fn start(mut disk: SessionDisk, events: EventSink) -> Self {
        let (tx, rx) = mpsc::channel::<Save>();
        let task = tokio::task::spawn_blocking(move || {
            // Records a failed save did not write go with the next.
            let mut owed = Vec::new();
            while let Ok(Save { mut state, records }) = rx.recv() {
                owed.extend(records);
                while let Ok(newer) = rx.try_recv() {
                    state = newer.state;
                    owed.extend(newer.records);
                }
                let records = std::mem::take(&mut owed);
                if let Err(e) = disk.save(&mut state, records.clone()) {
                    owed = records;
                    events.send(Event::Warning {
                        text: e.to_string(),
                    });
                }
            }
            let id = disk.id().to_string();
            if let Err(e) = disk.close() {
                events.send(Event::Warning {
                    text: format!("session {id} kept nothing, but could not be removed: {e}"),
                });
            }
        });
        SessionWriter {
            tx: Some(tx),
            task: Some(task),
        }
    }

    /// A writer that saves nothing (an engine that lands a given reply must not touch
    /// the user's sessions, and a session that could not be made).
    pub(crate) fn none() -> Self {
        SessionWriter {
            tx: None,
            task: None,
        }
    }

    fn write(&self, state: SessionFile, records: Vec<Record>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Save { state, records });
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
