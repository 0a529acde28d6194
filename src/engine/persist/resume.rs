//! The engine's side of saving: the session a run saves to (a new one, or the one
//! `--resume` names), what a save holds, and a saved session restored.

use std::path::Path;
use std::time::SystemTime;

use super::record::Recorder;
use super::state::{SavedCheckpoint, SavedFile, SessionFile, VERSION};
use super::store::{KEEP, MAX_AGE};
use super::{OLD_FILE, PersistError, Resume, SessionDisk, SessionWriter, Store, StoreError};
use crate::edit::prompts::Mode as ChatMode;
use crate::engine::EventSink;
use crate::engine::model::Model;
use crate::engine::protocol::{EditFailureView, FileMode, ShownKind};
use crate::engine::session::Session;

/// The longest a rewind waits for the session's writer to put the record on disk.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The most characters of the first message a session keeps as its title.
const TITLE_CHARS: usize = 200;

/// What the engine keeps for saving its session.
pub(crate) struct Saved {
    writer: SessionWriter,
    /// The session's id (None: this engine saves no session).
    id: Option<String>,
    created_ms: u64,
    title: String,
    /// The turn record under way.
    record: Recorder,
    /// A message that waited for the repo map and was never sent (`SessionFile::unsent`).
    unsent: Option<String>,
    /// Started from a saved session (`--resume`).
    resumed: bool,
    /// What to say once the engine is ready (about the sessions of the repository, and
    /// what a resume could not restore as it was).
    start_notices: Vec<String>,
    start_warnings: Vec<String>,
    /// What the last rewind took away, until a message is sent (`SessionFile::redo`).
    redo: Option<super::Redo>,
    /// The session's directory (None: this engine saves no session).
    dir: Option<std::path::PathBuf>,
}

impl Saved {
    /// An engine that saves nothing.
    pub(crate) fn none() -> Saved {
        Saved {
            writer: SessionWriter::none(),
            id: None,
            created_ms: super::now_ms(),
            title: String::new(),
            record: Recorder::default(),
            unsent: None,
            resumed: false,
            start_notices: Vec::new(),
            start_warnings: Vec::new(),
            redo: None,
            dir: None,
        }
    }

    /// A warning said once the engine is ready, after the resumed conversation.
    pub(crate) fn warn_at_start(&mut self, text: String) {
        self.start_warnings.push(text);
    }

    /// What to say at start, notices then warnings (taken: said once).
    pub(crate) fn take_start_notes(&mut self) -> (Vec<String>, Vec<String>) {
        (
            std::mem::take(&mut self.start_notices),
            std::mem::take(&mut self.start_warnings),
        )
    }

    /// Writes what is queued, then stops (the session's lock goes with it).
    pub(crate) async fn close(&mut self) {
        self.writer.close().await;
    }

    /// The session's id (None: this engine saves no session).
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Whether the engine started from a saved session (`--resume`).
    pub(crate) fn resumed(&self) -> bool {
        self.resumed
    }

    /// The turn record under way.
    pub(crate) fn record(&self) -> &Recorder {
        &self.record
    }

    pub(crate) fn record_mut(&mut self) -> &mut Recorder {
        &mut self.record
    }

    /// A message that waited for the repo map and was never sent.
    pub(crate) fn unsent(&self) -> Option<&str> {
        self.unsent.as_deref()
    }

    /// A message is sent: the one given back on resume is the user's to send again,
    /// or not.
    pub(crate) fn clear_unsent(&mut self) {
        self.unsent = None;
    }

    /// Keeps a message that was never sent (it waited for the repo map) with the
    /// session, to give back on resume (saved with the next save). Returns whether
    /// this engine saves a session.
    pub(crate) fn keep_unsent(&mut self, text: &str) -> bool {
        self.unsent = Some(text.to_string());
        self.id.is_some()
    }

    /// `--resume` restored a session that held `unsent`: said once the engine is ready.
    pub(crate) fn resume_with(&mut self, unsent: Option<String>) {
        self.resumed = true;
        if let Some(text) = unsent {
            self.warn_at_start(format!(
                "your message \"{}\" was never sent (it was waiting for the repo map when it was cancelled or tern quit); it is kept with the session until you send a message",
                super::store::headline(&text, 60)
            ));
            self.unsent = Some(text);
        }
    }

    /// Saves the session in the background; a failure is a warning, never the end of
    /// the turn. A rewind's move of HEAD keeps its journal (`held`) until the writer
    /// has tried this save: a kill before then is rolled back by the next tern.
    pub(crate) fn save(
        &mut self,
        parts: SaveParts<'_>,
        events: &EventSink,
        held: Option<crate::git::Held>,
    ) {
        let records = self.record.take();
        let state = self.file(parts);
        if let Some(warning) = self.writer.write(state, records, None, held) {
            events.warning(warning);
        }
    }

    /// Saves, and hands back the wait (a few milliseconds; at most `FLUSH_WAIT`) until
    /// the record on disk holds everything recorded until now, and its reading: a
    /// rewind's job waits and reads off the engine loop. None: this engine saves no
    /// session.
    pub(crate) fn flush_records(
        &mut self,
        parts: SaveParts<'_>,
        events: &EventSink,
    ) -> Option<RecordOnDisk> {
        let dir = self.dir.clone()?;
        let (ack, written) = std::sync::mpsc::channel();
        let records = self.record.take();
        let state = self.file(parts);
        if let Some(warning) = self.writer.write(state, records, Some(ack), None) {
            events.warning(warning);
        }
        Some(RecordOnDisk { dir, written })
    }

    /// What a rewind took away, kept until a message is sent.
    pub(crate) fn set_redo(&mut self, redo: Option<super::Redo>) {
        self.redo = redo;
    }

    /// Whether a rewind can be redone, and what it would put back.
    pub(crate) fn redo(&self) -> Option<&super::Redo> {
        self.redo.as_ref()
    }

    /// Saves the session and closes it, before the engine goes on in another one
    /// (`SessionWriter::hand_over`): Ok(whether it was kept), or why not (it stays
    /// open, and is saved again at the next change).
    pub(crate) fn hand_over(&mut self, parts: SaveParts<'_>) -> super::HandedOver {
        let records = self.record.take();
        let state = self.file(parts);
        self.writer.hand_over(state, records)
    }

    /// A turn begins: the record notes it with the conversation as it is before it,
    /// and the first one names the session.
    pub(crate) fn record_turn(
        &mut self,
        session: &Session,
        text: &str,
        mode: ChatMode,
        notes: &[String],
    ) {
        if self.title.is_empty() {
            self.title = text.trim().chars().take(TITLE_CHARS).collect();
        }
        // A message sent: what a rewind took away is gone for good.
        self.redo = None;
        let head = git2::Repository::discover(session.root())
            .ok()
            .and_then(|repo| repo.head().ok()?.target())
            .map(|id| id.to_string());
        self.record.begin(
            &session.history,
            (text, mode),
            notes,
            &session.outputs,
            (head, session.session_cost),
        );
    }

    fn file(&self, parts: SaveParts<'_>) -> SessionFile {
        let SaveParts {
            session,
            model,
            history,
            pending,
            map_tokens,
        } = parts;
        let (proposal, proposal_turn, proposal_failures, proposal_shell) = match pending {
            Some(p) => (Some(p.proposal), Some(p.turn), p.failures, p.shell),
            None => (None, None, Vec::new(), Vec::new()),
        };
        let files = [FileMode::Editable, FileMode::ReadOnly]
            .into_iter()
            .flat_map(|mode| {
                session
                    .paths(mode)
                    .into_iter()
                    .map(move |path| SavedFile { path, mode })
            })
            .collect();
        SessionFile {
            version: VERSION,
            created_ms: self.created_ms,
            last_active_ms: super::now_ms(),
            title: self.title.clone(),
            model: model.info().name.clone(),
            mode: session.mode,
            files,
            history: session.history.clone(),
            summary_at_front: history.summary_at_front,
            checkpoint: history.checkpoint,
            summaries: history.summaries,
            session_cost: session.session_cost,
            proposal,
            proposal_turn,
            proposal_failures,
            proposal_shell,
            notes: session.notes_for_next_turn.clone(),
            transcript: session.transcript.clone(),
            server_window: (model.window().source == crate::context::WindowSource::Server)
                .then_some(model.window().window),
            learned_limit: history.learned_limit,
            map_tokens,
            turns: session.turns.clone(),
            outputs: session.outputs.clone(),
            unsent: self.unsent.clone(),
            record: self.record.cursor(),
            log: Default::default(),
            redo: self.redo.clone(),
        }
    }
}

/// What a save holds of the other parts of the engine.
pub(crate) struct SaveParts<'a> {
    pub(crate) session: &'a Session,
    pub(crate) model: &'a Model,
    pub(crate) history: HistoryMarks,
    pub(crate) pending: Option<SavedPending>,
    /// The repo map's budget `/map-tokens` chose.
    pub(crate) map_tokens: Option<usize>,
}

/// The turn record being saved (`Saved::flush_records`), to read once it is.
pub(crate) struct RecordOnDisk {
    dir: std::path::PathBuf,
    written: std::sync::mpsc::Receiver<()>,
}

impl RecordOnDisk {
    /// Waits until the writer saved it (at most `FLUSH_WAIT`), then reads it.
    pub(crate) fn read(self) -> Result<Vec<super::Record>, super::RecordError> {
        if self.written.recv_timeout(FLUSH_WAIT).is_err() {
            return Err(super::RecordError::Read(std::io::Error::other(
                "the session's writer did not finish saving in time",
            )));
        }
        super::record::read(&self.dir)
    }
}

/// What the session file keeps of the history's budget.
pub(crate) struct HistoryMarks {
    pub(crate) summary_at_front: bool,
    pub(crate) checkpoint: Option<SavedCheckpoint>,
    pub(crate) summaries: usize,
    pub(crate) learned_limit: Option<usize>,
}

/// The pending edits as the session file keeps them.
pub(crate) struct SavedPending {
    /// The hunks by content, placed again in the files on resume.
    pub(crate) proposal: crate::edit::ProposalSnapshot,
    pub(crate) turn: usize,
    pub(crate) failures: Vec<EditFailureView>,
    pub(crate) shell: Vec<String>,
}

/// Why no session could be opened for a run.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session to resume is open in another tern.
    #[error("{0}, or start a new session: tern without --resume")]
    InUse(StoreError),
    #[error(transparent)]
    Persist(#[from] PersistError),
    /// `--resume` (no id): the session active last cannot be read; `next`: the
    /// newest one that can.
    #[error("{error}{}", .next.as_ref().map(|id| format!("; the newest session that can be resumed is {id}: `tern --resume={id}`")).unwrap_or_default())]
    NewestUnreadable {
        error: PersistError,
        next: Option<String>,
    },
}

/// The session a conversation saves to (with what to say at start) and what it restores.
pub(crate) struct Opened {
    pub(crate) saved: Saved,
    pub(crate) restored: Option<SessionFile>,
}

/// Opens the session `resume` names, or (None) a new one, for the repository at `root`;
/// prunes old sessions and, for a new session, tells of one that has pending hunks.
pub(crate) fn open(
    root: &Path,
    resume: Option<&Resume>,
    events: &EventSink,
) -> Result<Opened, OpenError> {
    let store = Store::for_repo(root);
    let mut notices = store.notices().to_vec();
    let mut warnings = Vec::new();
    let (disk, restored) = match resume {
        Some(which) => {
            if root.join(OLD_FILE).exists() && store.list().is_empty() {
                return Err(PersistError::Moved {
                    old: root.join(OLD_FILE),
                }
                .into());
            }
            let session = store.open(which).map_err(|e| match e {
                StoreError::Open { .. } => OpenError::InUse(e),
                e => e.into(),
            })?;
            let id = session.id.clone();
            let (disk, state) = SessionDisk::open(session).map_err(|error| match which {
                Resume::Newest => OpenError::NewestUnreadable {
                    next: store
                        .list()
                        .into_iter()
                        .find(|s| s.id != id && s.unreadable.is_none())
                        .map(|s| s.id),
                    error,
                },
                Resume::Id(_) => error.into(),
            })?;
            (Some(disk), Some(state.ok_or(StoreError::NotFound(id))?))
        }
        // A new session that cannot be made costs the run nothing but saving.
        None => match store
            .create()
            .map_err(OpenError::from)
            .and_then(|session| SessionDisk::open(session).map_err(OpenError::from))
        {
            Ok((disk, _)) => (Some(disk), None),
            Err(e) => {
                warnings.push(format!("this session will not be saved: {e}"));
                (None, None)
            }
        },
    };
    let id = disk.as_ref().map(|d| d.id().to_string());
    let dir = disk.as_ref().map(|d| d.session.dir.clone());
    let pruned = store.prune(SystemTime::now());
    if !pruned.is_empty() {
        notices.push(format!(
            "removed {} of this repository inactive for over {} days (the newest {KEEP} and any with pending hunks are kept)",
            crate::plural::count(pruned.len(), "session"),
            MAX_AGE.as_secs() / 86_400
        ));
    }
    if resume.is_none() {
        if root.join(OLD_FILE).exists() && store.list().is_empty() {
            notices.push(format!(
                "{OLD_FILE} is from an older tern and is never loaded (a session in the work tree could come with a cloned repository); sessions now live in {}, and you may delete it",
                store.dir().display()
            ));
        }
        notices.extend(pending_elsewhere(&store, id.as_deref()));
    }
    let mut saved = Saved {
        writer: match disk {
            Some(disk) => SessionWriter::start(disk, events.clone()),
            None => SessionWriter::none(),
        },
        id,
        dir,
        start_notices: notices,
        start_warnings: warnings,
        ..Saved::none()
    };
    if let Some(state) = &restored {
        saved.created_ms = state.created_ms;
        saved.title = match state.title.is_empty() {
            // An older tern's session: its first message shown names it.
            true => state
                .transcript
                .iter()
                .find(|s| s.kind == ShownKind::User)
                .map(|s| s.text.chars().take(TITLE_CHARS).collect())
                .unwrap_or_default(),
            false => state.title.clone(),
        };
        saved.record = Recorder::resumed(state.record);
        saved.redo.clone_from(&state.redo);
    }
    Ok(Opened { saved, restored })
}

/// The notice a new session opens with when another session of the repository has
/// hunks pending (the newest such, and how many more), unless a tern has it open.
fn pending_elsewhere(store: &Store, own: Option<&str>) -> Option<String> {
    let pending: Vec<_> = store
        .list()
        .into_iter()
        .filter(|s| s.has_hunks() && Some(s.id.as_str()) != own && s.holder().is_none())
        .collect();
    let newest = pending.first()?;
    let about = match newest.title.is_empty() {
        true => super::store::ago(newest.last_active, SystemTime::now()),
        false => format!(
            "{}: \"{}\"",
            super::store::ago(newest.last_active, SystemTime::now()),
            super::store::headline(&newest.title, 40)
        ),
    };
    let more = match pending.len() - 1 {
        0 => String::new(),
        1 => "; 1 more session has hunks pending (`tern sessions` lists them)".into(),
        n => format!("; {n} more sessions have hunks pending (`tern sessions` lists them)"),
    };
    Some(format!(
        "session {} ({about}) has {}: `tern --resume={}` brings it back (in the workspace, /sessions){more}",
        newest.id,
        newest.hunks_text(),
        newest.id
    ))
}
