//! An ACP session: one engine, started in the client's directory (or resuming one of
//! tern's sessions there), and the task that turns its events into `session/update`s.
//! Prompts run one at a time, in the order they came; between them, what the engine
//! says on its own (the budget, the map's progress) still reaches the client.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_client_protocol::v1::schema::{ContentBlock, PromptResponse, SessionUpdate, StopReason};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use tokio::sync::mpsc;

use super::{Shared, lock, updates};
use crate::engine::persist::Resume;
use crate::engine::protocol::{BudgetReport, Event, ProposalView};
use crate::engine::{EngineConfig, EventReceiver, Op, OpId, OpSender};

/// A prompt waiting for its turn, and where its answer goes.
struct Prompt {
    blocks: Vec<ContentBlock>,
    responder: Responder<PromptResponse>,
}

/// The handle the connection keeps of an open session.
#[derive(Clone)]
pub(super) struct Session {
    ops: OpSender,
    prompts: mpsc::UnboundedSender<Prompt>,
    cancelled: Arc<AtomicBool>,
    task: Arc<tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl Session {
    /// Queues a prompt; its response is sent when its turn (and the review of what it
    /// proposed) is over.
    pub(super) fn prompt(
        &self,
        blocks: Vec<ContentBlock>,
        responder: Responder<PromptResponse>,
    ) -> Result<(), Error> {
        if let Err(refused) = self.prompts.send(Prompt { blocks, responder }) {
            return refused
                .0
                .responder
                .respond_with_error(Error::internal_error().data("the session's engine stopped"));
        }
        Ok(())
    }

    /// `session/cancel`, as Esc in the workspace: the reply stops (what it said so far
    /// is kept), nothing is reviewed or landed, and nothing starts by itself after it.
    pub(super) fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let _ = self.ops.send(Op::Cancel);
    }

    /// Stops the engine (it saves the session) and waits for it.
    pub(super) async fn shut_down(self) {
        let _ = self.ops.send(Op::Shutdown);
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
    }
}

/// Starts an engine for `cwd` (resuming tern's session `load`, replaying its
/// conversation), registers it and returns the session's id: tern's own, so that
/// `session/load` finds it again.
pub(super) async fn open(
    shared: &Arc<Shared>,
    cx: ConnectionTo<Client>,
    cwd: PathBuf,
    load: Option<String>,
) -> Result<String, Error> {
    let config = config(shared, cwd, load.clone())
        .map_err(|e| Error::invalid_params().data(crate::egress::error_text(&e)))?;
    let root = config.root.clone();
    let engine = crate::engine::spawn(config)
        .map_err(|e| Error::invalid_params().data(crate::egress::error_text(&e)))?;
    let mut events = engine.events;
    // Start-up ends with the first budget: what comes before it (the resumed
    // conversation, notices) is said once the client knows the session.
    let mut start = Vec::new();
    let mut id = None;
    loop {
        match events.recv().await {
            Some(Event::Ready { session, .. }) => id = session,
            Some(Event::Budget(report)) => {
                start.push(Event::Budget(report));
                break;
            }
            Some(Event::Crashed { text }) => return Err(Error::internal_error().data(text)),
            Some(event) => start.push(event),
            None => return Err(Error::internal_error().data("the engine stopped at start")),
        }
    }
    let id = id.ok_or_else(|| {
        Error::internal_error()
            .data("the engine keeps no session here (its state directory cannot be written)")
    })?;
    let (prompts_tx, prompts_rx) = mpsc::unbounded_channel();
    let cancelled = Arc::new(AtomicBool::new(false));
    let mut actor = Actor {
        cx,
        id: id.clone(),
        root,
        ops: engine.ops.clone(),
        events,
        cancelled: cancelled.clone(),
        reads_files: lock(&shared.client).fs.read_text_file,
        chat_files: Vec::new(),
        line_open: AtomicBool::new(false),
        budget: None,
    };
    // A loaded session's conversation is replayed before `session/load` answers.
    if load.is_some() {
        actor.say_start(std::mem::take(&mut start))?;
    }
    let task = tokio::spawn(actor.serve(prompts_rx, start));
    let session = Session {
        ops: engine.ops,
        prompts: prompts_tx,
        cancelled,
        task: Arc::new(tokio::sync::Mutex::new(Some(task))),
    };
    lock(&shared.sessions).insert(id.clone(), session);
    Ok(id)
}

/// The engine's configuration for a session in `cwd`: the settings as `tern` there
/// loads them (the repository's `.tern.toml` only if trusted), the flags `tern acp`
/// was started with on top.
fn config(shared: &Shared, cwd: PathBuf, load: Option<String>) -> anyhow::Result<EngineConfig> {
    let global = &shared.global;
    let sources = global.config_sources(crate::config::ConfigSources::discover(&cwd));
    let Some(root) = sources.repo_root.clone() else {
        if let Some(refused) = crate::engine::protocol::owner_refusal(&cwd) {
            anyhow::bail!(refused);
        }
        anyhow::bail!(
            "{} is not inside a git repository: tern writes edits only inside one, so that every change can be undone (run `git init` there)",
            cwd.display()
        );
    };
    let loaded = crate::config::load(&global.settings_layer(), &sources, |k| {
        std::env::var(k).ok()
    })?;
    for notice in &loaded.notices {
        tracing::warn!("{notice}");
    }
    let mut config = global.engine_config(loaded.settings, root, cwd);
    config.resume = load.map(Resume::Id);
    Ok(config)
}

/// The task that owns a session's event stream.
struct Actor {
    cx: ConnectionTo<Client>,
    id: String,
    root: PathBuf,
    ops: OpSender,
    events: EventReceiver,
    cancelled: Arc<AtomicBool>,
    /// The client reads files for agents (`fs/read_text_file`): its buffers, saved
    /// or not.
    reads_files: bool,
    /// The files in the chat, as the engine last said.
    chat_files: Vec<String>,
    /// The last text sent did not end its line (a reply streaming): tern's own next
    /// line starts on a new one.
    line_open: AtomicBool,
    /// The last budget, said again as a plan when a prompt ends.
    budget: Option<Box<BudgetReport>>,
}

impl Actor {
    /// Serves prompts until the connection drops the session or the engine stops;
    /// `start` is what start-up said, not yet sent.
    async fn serve(mut self, mut prompts: mpsc::UnboundedReceiver<Prompt>, start: Vec<Event>) {
        if self.say_start(start).is_err() {
            return;
        }
        let _ = self.update(updates::commands());
        loop {
            tokio::select! {
                prompt = prompts.recv() => {
                    let Some(Prompt { blocks, responder }) = prompt else { break };
                    let _ = match self.prompt(blocks).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(e),
                    };
                }
                envelope = self.events.next() => {
                    let Some(envelope) = envelope else { break };
                    if self.between_prompts(envelope.event).is_err() {
                        break;
                    }
                }
            }
        }
    }

    /// Sends one `session/update`.
    fn update(&self, update: SessionUpdate) -> Result<(), Error> {
        if let SessionUpdate::AgentMessageChunk(chunk) = &update
            && let ContentBlock::Text(said) = &chunk.content
            && !said.text.is_empty()
        {
            self.line_open
                .store(!said.text.ends_with('\n'), Ordering::SeqCst);
        }
        self.cx
            .send_notification(agent_client_protocol::v1::schema::SessionNotification::new(
                self.id.clone(),
                update,
            ))
    }

    /// A line of tern's own (a notice, what landed, a command's output): on a line of
    /// its own, not run on after a reply that left its line open.
    fn say(&self, line: String) -> Result<(), Error> {
        let open = match self.line_open.load(Ordering::SeqCst) {
            true => "\n",
            false => "",
        };
        self.update(updates::text(format!("{open}{line}\n")))
    }

    /// What start-up said: the resumed conversation, notices and warnings, the budget.
    fn say_start(&mut self, start: Vec<Event>) -> Result<(), Error> {
        for event in start {
            match event {
                Event::Resumed { transcript, .. } => {
                    for shown in &transcript {
                        self.update(updates::shown(shown))?;
                    }
                }
                event => self.between_prompts(event)?,
            }
        }
        Ok(())
    }

    /// An event the engine sent on its own, while no prompt runs.
    fn between_prompts(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Budget(report) => {
                self.update(updates::usage(&report))?;
                self.budget = Some(report);
            }
            Event::Notice { text } | Event::Warning { text } | Event::Error { text } => {
                self.say(format!("tern: {text}"))?;
            }
            Event::Files { files } => {
                self.chat_files = files.into_iter().map(|f| f.path).collect();
            }
            _ => {}
        }
        Ok(())
    }

    /// Runs one prompt: its text as the workspace's message box takes it (a `/`
    /// command runs, anything else goes to the model), then the review of what the
    /// reply proposed, hunk by hunk, and the landing of what was accepted.
    async fn prompt(&mut self, blocks: Vec<ContentBlock>) -> Result<StopReason, Error> {
        self.cancelled.store(false, Ordering::SeqCst);
        let mut read = super::prompt::read(&blocks, &self.root);
        if !read.skipped.is_empty() {
            self.say(format!(
                "tern: not added to the chat: {}",
                read.skipped.join(", ")
            ))?;
        }
        if self.reads_files {
            // The files the editor did not send the text of: linked ones, and those
            // already in the chat, whose text the model is about to read from disk.
            let embedded: Vec<&String> = read
                .files
                .iter()
                .filter(|f| !read.linked.contains(f))
                .collect();
            let mut asked: Vec<String> = Vec::new();
            for path in read.linked.iter().chain(&self.chat_files) {
                if !embedded.contains(&path) && !asked.contains(path) {
                    asked.push(path.clone());
                }
            }
            read.unsaved
                .extend(super::buffers::unsaved(&self.cx, &self.id, &self.root, &asked).await);
        }
        if !read.unsaved.is_empty() {
            // Edits are proposed against the file on disk: one the editor holds
            // otherwise would be proposed against text the user no longer has.
            self.say(format!("tern: unsaved changes in the editor: {}. tern reads and edits the files on disk: save them, then send the prompt again",
                read.unsaved.join(", ")
            ))?;
            return Ok(StopReason::EndTurn);
        }
        let mut mine: Vec<OpId> = Vec::new();
        if !read.files.is_empty() {
            let added = self.send(Op::AddFiles {
                paths: read.files,
                mode: crate::engine::FileMode::ReadOnly,
            })?;
            self.until_added(added).await?;
        }
        let op = match crate::engine::input::parse(&read.text) {
            Ok(op) => op,
            Err(unknown) => {
                self.say(format!("tern: {unknown}"))?;
                return Ok(StopReason::EndTurn);
            }
        };
        mine.push(self.send(op)?);
        let mut turn = Turn::default();
        let mut reviewed = false;
        loop {
            let idle = self.until_idle_into(&mine, &mut turn).await?;
            if !idle {
                return Err(Error::internal_error().data("the engine stopped"));
            }
            let pending = turn
                .proposal
                .as_ref()
                .is_some_and(|view| view.files.iter().any(|f| !f.hunks.is_empty()));
            if self.cancelled.load(Ordering::SeqCst) {
                if pending {
                    // Nothing lands after a cancel: the proposal goes, and the model
                    // hears that its hunks were rejected.
                    mine.push(self.send(Op::Command {
                        command: crate::engine::protocol::Command::Discard,
                        args: String::new(),
                    })?);
                    turn.proposal = None;
                    continue;
                }
                return Ok(StopReason::Cancelled);
            }
            if pending && !reviewed {
                reviewed = true;
                let view = turn.proposal.take().unwrap_or_default();
                let mut decided = super::review::ask(&self.cx, &self.id, &self.root, &view).await?;
                if decided.cancelled {
                    self.cancelled.store(true, Ordering::SeqCst);
                } else if self.reads_files {
                    self.hold_back_unsaved(&mut decided).await?;
                }
                // The prompt goes on once the last (the landing, or the proposal's
                // end) is done: a decision's own `Idle` (a `/reject` with its reason
                // is a command) comes before anything lands.
                let mut last = None;
                for op in decided.ops(self.cancelled.load(Ordering::SeqCst)) {
                    last = Some(self.send(op)?);
                }
                mine = last.into_iter().collect();
                turn.decided = Some(decided);
                continue;
            }
            // The commands the reply suggested, each asked about (the engine asks,
            // `ConfirmCommand`, as it does in the workspace) and run on a yes.
            if let Some(command) = turn.suggested.pop_front() {
                mine.push(self.send(Op::RunSuggested { command })?);
                continue;
            }
            if let Some(report) = &self.budget {
                self.update(updates::budget_plan(report))?;
            }
            if let Some(error) = turn.failed {
                return Err(Error::internal_error().data(error));
            }
            return Ok(turn.stop);
        }
    }

    /// Just before the accepted hunks land: those of a file whose text in the editor
    /// is not the file's on disk, which they were made against (the user typed in it
    /// since the prompt, say), do not land over the unsaved changes. They are said,
    /// their tool calls fail, and the model hears why.
    async fn hold_back_unsaved(&self, decided: &mut super::review::Decided) -> Result<(), Error> {
        let files = decided.accepted_files();
        let unsaved = super::buffers::unsaved(&self.cx, &self.id, &self.root, &files).await;
        if unsaved.is_empty() {
            return Ok(());
        }
        for update in decided.hold_back(&unsaved) {
            self.update(update)?;
        }
        self.say(format!("tern: not applied to {}: the editor has unsaved changes there, and the hunks were made against the file on disk (your changes are kept); save, then ask again",
            unsaved.join(", ")
        ))
    }

    fn send(&self, op: Op) -> Result<OpId, Error> {
        self.ops
            .send(op)
            .map_err(|_| Error::internal_error().data("the session's engine stopped"))
    }

    /// Reads events, saying them to the client, until the engine has added the files
    /// of `op` (`AddFiles`, which ends with the chat's files, then `Idle`; what it could
    /// not add, it said before).
    async fn until_added(&mut self, op: OpId) -> Result<(), Error> {
        let mut turn = Turn::default();
        while let Some(envelope) = self.events.next().await {
            match envelope.event {
                Event::Files { files } if envelope.op == Some(op) => {
                    self.chat_files = files.into_iter().map(|f| f.path).collect();
                    return Ok(());
                }
                Event::Exited => break,
                event => self.during_prompt(event, &mut turn).await?,
            }
        }
        Err(Error::internal_error().data("the engine stopped"))
    }

    /// Reads events, saying them to the client, until the engine is idle after one of
    /// `mine` (true) or stops (false).
    async fn until_idle_into(&mut self, mine: &[OpId], turn: &mut Turn) -> Result<bool, Error> {
        while let Some(envelope) = self.events.next().await {
            let ours = envelope
                .op
                .is_some_and(|op| mine.contains(&op) || turn.answers.contains(&op));
            match envelope.event {
                Event::Idle if ours => return Ok(true),
                Event::Exited => return Ok(false),
                event => self.during_prompt(event, turn).await?,
            }
        }
        Ok(false)
    }

    /// An event while a prompt runs.
    async fn during_prompt(&mut self, event: Event, turn: &mut Turn) -> Result<(), Error> {
        match event {
            Event::Delta { text } => self.update(updates::text(text))?,
            Event::Reasoning { text } => self.update(updates::thought(text))?,
            Event::TurnFinished { finish, .. } => turn.stop = updates::stop_reason(&finish),
            Event::TurnFailed { error, .. } => turn.failed = Some(error),
            Event::Proposal(view) => {
                // The edit blocks that failed, each said once with why (the workspace
                // shows them with the proposal).
                for failure in view.failures.iter().map(ToString::to_string) {
                    if !turn.failures.contains(&failure) {
                        self.say(format!("tern: not applied: {failure}"))?;
                        turn.failures.push(failure);
                    }
                }
                turn.proposal = Some(*view);
            }
            Event::Needed { commands, .. } => turn.suggested.extend(commands),
            Event::Output { text, .. } => self.say(text)?,
            Event::Applied {
                files,
                accepted,
                commit,
                message,
                failed,
                ..
            } => {
                let committed =
                    commit.map_or(String::new(), |c| format!("; committed {c} {message}"));
                let not_written = match failed.is_empty() {
                    true => String::new(),
                    false => format!("; not written: {}", failed.join(", ")),
                };
                self.say(format!(
                    "tern: applied {} to {}{committed}{not_written}",
                    crate::plural::count(accepted, "hunk"),
                    files.join(", ")
                ))?;
                if let Some(decided) = &turn.decided {
                    for update in decided.landed(&failed) {
                        self.update(update)?;
                    }
                }
            }
            Event::NotApplied { reason } => {
                self.say(format!("tern: nothing was applied: {reason}"))?;
                if let Some(decided) = &turn.decided {
                    for update in decided.not_landed() {
                        self.update(update)?;
                    }
                }
            }
            Event::ConfirmCommand {
                command, reason, ..
            } => {
                let run =
                    super::review::ask_command(&self.cx, &self.id, &command, reason.as_deref())
                        .await?;
                // What the command does comes back under the answer's id.
                turn.answers.push(self.send(Op::AnswerCommand { run })?);
            }
            Event::CommandStarted { command, .. } => {
                self.say(format!("tern: $ {command}"))?;
            }
            Event::CommandFinished {
                command, outcome, ..
            } => self.say(format!("tern: `{command}`: {outcome}"))?,
            Event::Crashed { text } => turn.failed = Some(text),
            event => self.between_prompts(event)?,
        }
        Ok(())
    }
}

/// What a prompt's events said so far.
struct Turn {
    stop: StopReason,
    failed: Option<String>,
    proposal: Option<ProposalView>,
    decided: Option<super::review::Decided>,
    /// Shell commands the reply suggested, not asked about yet.
    suggested: std::collections::VecDeque<String>,
    /// The ops that answered the engine's questions (`AnswerCommand`).
    answers: Vec<OpId>,
    /// The failed edit blocks said so far.
    failures: Vec<String>,
}

impl Default for Turn {
    fn default() -> Self {
        Turn {
            stop: StopReason::EndTurn,
            failed: None,
            proposal: None,
            decided: None,
            suggested: std::collections::VecDeque::new(),
            answers: Vec::new(),
            failures: Vec::new(),
        }
    }
}
