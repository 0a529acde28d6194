//! The engine's side of saving: the session a run saves to (a new one, or the one
//! `--resume` names), what a save holds, and a saved session restored.

use std::path::Path;
use std::time::SystemTime;

use super::record::Recorder;
use super::state::{SavedCheckpoint, SavedFile, SessionFile, VERSION};
use super::store::{KEEP, MAX_AGE};
use super::{OLD_FILE, PersistError, Resume, SessionDisk, SessionWriter, Store, StoreError};
use crate::edit::prompts::Mode as ChatMode;
use crate::engine::protocol::{FileMode, ShownKind};
use crate::engine::{Engine, Event, EventSink};

/// The most characters of the first message a session keeps as its title.
const TITLE_CHARS: usize = 200;

/// What the engine keeps for saving its session.
pub(crate) struct Saved {
    writer: SessionWriter,
    /// The session's id (None: this engine saves no session).
    pub(crate) id: Option<String>,
    created_ms: u64,
    title: String,
    /// The turn record under way.
    pub(crate) record: Recorder,
    /// A message that waited for the repo map and was never sent (`SessionFile::unsent`).
    pub(crate) unsent: Option<String>,
    /// Started from a saved session (`--resume`).
    pub(crate) resumed: bool,
    /// What to say once the engine is ready (about the sessions of the repository, and
    /// what a resume could not restore as it was).
    start_notices: Vec<String>,
    start_warnings: Vec<String>,
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
}

/// Why no session could be opened for a run.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Persist(#[from] PersistError),
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
            let session = store.open(which)?;
            let id = session.id.clone();
            let (disk, state) = SessionDisk::open(session)?;
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
        "session {} ({about}) has {}: `tern --resume={}` brings it back{more}",
        newest.id,
        newest.hunks_text(),
        newest.id
    ))
}

impl Engine {
    fn session_file(&self) -> SessionFile {
        let (proposal, proposal_turn, proposal_failures, proposal_shell) =
            match self.pending_saved() {
                Some(p) => (Some(p.proposal), Some(p.turn), p.failures, p.shell),
                None => (None, None, Vec::new(), Vec::new()),
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
            created_ms: self.saved.created_ms,
            last_active_ms: super::now_ms(),
            title: self.saved.title.clone(),
            model: self.model.info().name.clone(),
            mode: self.session.mode,
            files,
            history: self.session.history.clone(),
            summary_at_front: self.conversation.history().summary_at_front(),
            checkpoint: self
                .conversation
                .history()
                .ready_checkpoint()
                .map(|(anchor, summary)| SavedCheckpoint {
                    anchor,
                    summary: summary.to_string(),
                }),
            summaries: self.conversation.history().summaries(),
            session_cost: self.session.session_cost,
            proposal,
            proposal_turn,
            proposal_failures,
            proposal_shell,
            notes: self.session.notes_for_next_turn.clone(),
            transcript: self.session.transcript.clone(),
            server_window: (self.model.window().source == crate::context::WindowSource::Server)
                .then_some(self.model.window().window),
            learned_limit: self.conversation.history().learned_limit(),
            turns: self.session.turns.clone(),
            outputs: self.session.outputs.clone(),
            unsent: self.saved.unsent.clone(),
            record: self.saved.record.cursor(),
            log: Default::default(),
        }
    }

    /// Keeps a message that was never sent (it waited for the repo map) with the
    /// session, to give back on resume. Returns whether this engine saves a session.
    pub(in crate::engine) fn keep_unsent(&mut self, text: &str) -> bool {
        self.saved.unsent = Some(text.to_string());
        self.save_session();
        self.saved.id.is_some()
    }

    /// Saves the session in the background; a failure is a warning, never the end of
    /// the turn.
    pub(in crate::engine) fn save_session(&mut self) {
        let records = self.saved.record.take();
        let state = self.session_file();
        if let Some(warning) = self.saved.writer.write(state, records) {
            self.events.warning(warning);
        }
    }

    /// A turn begins: the record notes it with the conversation as it is before it,
    /// and the first one names the session.
    pub(in crate::engine) fn record_turn(&mut self, text: &str, mode: ChatMode, notes: &[String]) {
        if self.saved.title.is_empty() {
            self.saved.title = text.trim().chars().take(TITLE_CHARS).collect();
        }
        let head = git2::Repository::discover(self.session.root())
            .ok()
            .and_then(|repo| repo.head().ok()?.target())
            .map(|id| id.to_string());
        self.saved.record.begin(
            &self.session.history,
            (text, mode),
            notes,
            &self.session.outputs,
            head,
        );
    }

    /// `--resume`: the saved session's history, summary state, files, mode, notes,
    /// transcript, pending edits and (unless `keep_model`: `--model` chose one) model.
    pub(in crate::engine) fn restore_session(&mut self, saved: SessionFile, keep_model: bool) {
        let root = self.session.root().to_path_buf();
        self.session.history = saved.history;
        self.session.mode = saved.mode;
        self.session.session_cost = saved.session_cost;
        self.session.notes_for_next_turn = saved.notes;
        self.session.transcript = saved.transcript;
        self.session.turns = saved.turns;
        self.session.outputs = saved.outputs;
        if let Some(text) = saved.unsent {
            self.saved.warn_at_start(format!(
                "your message \"{}\" was never sent (it was waiting for the repo map when it was cancelled or tern quit); it is kept with the session until you send a message",
                super::store::headline(&text, 60)
            ));
            self.saved.unsent = Some(text);
        }
        if !keep_model && !saved.model.is_empty() && saved.model != self.model.info().name {
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
        self.conversation.history_mut().restore(
            saved.summary_at_front,
            saved.summaries,
            saved.checkpoint.map(|c| (c.anchor, c.summary)),
            saved.learned_limit,
        );
        // What the server taught holds, unless the user says the window now.
        if let Some(n_ctx) = saved.server_window
            && self.model.settings().context_window.is_none()
        {
            self.model.adopt_server_window(n_ctx);
        }
        if let Some(proposal) = saved.proposal {
            self.restore_pending(
                proposal,
                saved.proposal_turn.unwrap_or(saved.record.turns),
                saved.proposal_failures,
                saved.proposal_shell,
            );
        }
    }
}
