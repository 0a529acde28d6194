//! The session engine: owns the conversation, builds every request, talks to the model,
//! proposes and lands edits, and reports through `Event`s. It never depends on a front
//! end. Long work (model calls, git) runs on tasks that report back to the loop through
//! `Internal` messages; only the loop mutates the session.

mod accept;
mod activity;
mod branch_review;
mod command_runner;
pub mod commands;
mod conversation;
mod git_job;
mod history_budget;
pub mod input;
mod map_slot;
mod model;
pub mod needed;
pub mod persist;
mod proposal_review;
pub mod protocol;
pub mod rewind;
mod run_loop;
pub mod session;
mod session_switch;
pub use session_switch::{SwitchTarget, switch_target};
pub mod spending;
mod timeline;
mod turn;
pub mod turn_commits;
pub mod undo_commits;

use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::branch_review::ReviewOptions;
/// Where the repo map keeps its tag cache (part of `EngineConfig`).
pub use crate::repomap::CacheLocation;
use commands::Command;
use git_job::{GitDone, GitJobError};
use history_budget::{HistoryBudget, Then};
pub use protocol::{ChatMode, Envelope, Event, FileEntry, FileMode, Op, OpId, Submission};
use protocol::{CommandPurpose, ReviewOp};
pub use session::{PathError, Session};

use crate::config::Settings;
use crate::llm::LlmClient;

/// What the engine needs to start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub settings: Settings,
    /// The repository root.
    pub root: PathBuf,
    /// Where relative paths typed by the user start from.
    pub cwd: PathBuf,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    pub editable: Vec<String>,
    pub read_only: Vec<String>,
    /// Where the repo map keeps its tag cache.
    pub map_cache: crate::repomap::CacheLocation,
    /// Continue this session of the repository's (`--resume[=ID]`) instead of starting
    /// a new one.
    pub resume: Option<persist::Resume>,
    /// The model was chosen for this start (`--model`): a resumed session keeps it
    /// instead of the one it was saved with.
    pub model_chosen: bool,
    pub role: EngineRole,
}

/// What an engine is started for. Only a conversation builds a repo map and reads and
/// writes the session saved for the repository; the one-job engines of the headless
/// commands leave the user's session alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineRole {
    /// A conversation with the model: the workspace, `tern -m`, `tern tokens`.
    #[default]
    Conversation,
    /// Landing a reply written elsewhere (`tern apply`, `Op::ProposeReply`): nothing is
    /// sent to the model; commit messages use the deterministic fallback.
    LandReply {
        /// Every file of the repository may be edited, as if all were in the chat.
        any_file: bool,
    },
    /// A branch review (`tern review`, `Op::ReviewBranch`).
    ReviewBranch,
}

/// The front end's side of a running engine.
pub struct EngineHandle {
    pub ops: OpSender,
    pub events: EventReceiver,
    pub task: tokio::task::JoinHandle<()>,
}

/// Sends ops to the engine, each with an id of its own (one counter per engine, shared
/// by every clone).
#[derive(Clone)]
pub struct OpSender {
    tx: mpsc::UnboundedSender<Submission>,
    next: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl OpSender {
    /// Sends `op`; returns the id its events will carry.
    pub fn send(&self, op: Op) -> Result<OpId, mpsc::error::SendError<Op>> {
        let id = OpId(self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.tx
            .send(Submission { id, op })
            .map(|()| id)
            .map_err(|e| mpsc::error::SendError(e.0.op))
    }
}

/// The engine's events, with the ids of the ops that caused them (`next`) or without
/// (`recv`, for a front end that runs one thing at a time).
pub struct EventReceiver(mpsc::UnboundedReceiver<Envelope>);

impl EventReceiver {
    /// The next event and the op it answers; None once the engine is gone.
    pub async fn next(&mut self) -> Option<Envelope> {
        self.0.recv().await
    }

    /// The next event; None once the engine is gone.
    pub async fn recv(&mut self) -> Option<Event> {
        self.next().await.map(|envelope| envelope.event)
    }

    /// The next event if one is waiting.
    pub(crate) fn try_recv(&mut self) -> Option<Event> {
        self.0.try_recv().ok().map(|envelope| envelope.event)
    }
}

/// Sends events, redacted (no event carries the API key, whatever echoed it), with the
/// id of the op being answered, ignoring a front end that has gone away.
#[derive(Clone)]
pub(crate) struct EventSink {
    tx: mpsc::UnboundedSender<Envelope>,
    op: Option<OpId>,
}

impl EventSink {
    pub(crate) fn send(&self, event: Event) {
        let _ = self.tx.send(Envelope {
            op: self.op,
            event: event.redacted(),
        });
    }

    pub(crate) fn notice(&self, text: String) {
        self.send(Event::Notice { text });
    }

    pub(crate) fn warning(&self, text: String) {
        self.send(Event::Warning { text });
    }

    pub(crate) fn error(&self, text: String) {
        self.send(Event::Error { text });
    }

    /// A sink for the events of one streamed reply.
    pub(crate) fn reply_stream(&self) -> ReplyStream {
        ReplyStream {
            events: self.clone(),
            text: crate::egress::redactor(),
            reasoning: crate::egress::redactor(),
        }
    }
}

/// The events of one streamed reply: its text and its reasoning are each redacted as
/// one stream (a key the server sends in two pieces is still found). What may begin a
/// key waits for the next piece of its stream, or for another event (sent after it,
/// so the order holds), or for `finish`.
pub(crate) struct ReplyStream {
    events: EventSink,
    text: crate::egress::Redactor,
    reasoning: crate::egress::Redactor,
}

impl ReplyStream {
    pub(crate) fn send(&mut self, event: Event) {
        match event {
            Event::Delta { text } => {
                self.flush(true);
                let text = self.text.push(&text);
                self.pass(Event::Delta { text });
            }
            Event::Reasoning { text } => {
                self.flush(false);
                let text = self.reasoning.push(&text);
                self.pass(Event::Reasoning { text });
            }
            other => {
                self.flush(true);
                self.flush(false);
                self.events.send(other);
            }
        }
    }

    /// Sends what the reasoning (or the text) held back: it has ended, for now.
    fn flush(&mut self, reasoning: bool) {
        let event = match reasoning {
            true => Event::Reasoning {
                text: self.reasoning.finish(),
            },
            false => Event::Delta {
                text: self.text.finish(),
            },
        };
        self.pass(event);
    }

    /// Sends a delta that has text.
    fn pass(&self, event: Event) {
        if let Event::Delta { text } | Event::Reasoning { text } = &event
            && text.is_empty()
        {
            return;
        }
        self.events.send(event);
    }

    /// The reply has ended: what may have begun a key was not one.
    pub(crate) fn finish(mut self) {
        self.flush(true);
        self.flush(false);
    }
}

/// Hands background work's results back to the loop, with the id of the op the work
/// answers (taken when the work started).
#[derive(Clone)]
pub(crate) struct Done {
    tx: mpsc::UnboundedSender<(Option<OpId>, Internal)>,
    op: Option<OpId>,
}

impl Done {
    /// Fails once the loop is gone (the result is then dropped: nothing waits for it).
    pub(crate) fn send(&self, done: Internal) -> Result<(), mpsc::error::SendError<()>> {
        self.tx
            .send((self.op, done))
            .map_err(|_| mpsc::error::SendError(()))
    }
}

/// Results of background work, handed back to the loop.
pub(crate) enum Internal {
    Turn(turn::TurnOutcome),
    Landed(Box<proposal_review::LandResult>),
    MapRefreshed(map_slot::Refreshed),
    /// File-system events named files of the repository (debounced).
    FilesChanged(crate::repomap::watch::Changes),
    Reviewed(branch_review::ReviewOutcome),
    /// A git command (undo, commit) finished.
    Git(Result<git_job::GitDone, git_job::GitJobError>),
    /// A rewind's record and code work finished.
    Rewind(Box<RewindJob>),
    /// A history summary finished.
    Summary(history_budget::JobDone),
    /// The server counted texts (or said whether it can).
    Counted(model::counts::Counted),
    /// A command (`/run`, `/test`, `/lint`, the auto-test loop) ended.
    Ran(Box<command_runner::Ran>),
    /// A background job panicked (a bug): the engine stops as if it had panicked itself.
    Panicked(Box<dyn std::any::Any + Send>),
}

/// A rewind's job: the turn it goes back before, whether the conversation goes too,
/// and what the record and the code came to.
pub(crate) struct RewindJob {
    to: usize,
    chat: bool,
    step: Result<rewind::CodeStep, rewind::RewindError>,
}

/// Starts an engine on the current tokio runtime.
pub fn spawn(config: EngineConfig) -> anyhow::Result<EngineHandle> {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let events = EventSink {
        tx: events_tx,
        op: None,
    };
    // The files named at start are added once `Ready` is said.
    let start_files = vec![
        (config.editable.clone(), FileMode::Editable),
        (config.read_only.clone(), FileMode::ReadOnly),
    ];
    let mut engine = Engine::new(config, events.clone())?;
    let saved = match engine.saved.id() {
        Some(id) => format!("the session is saved (`tern --resume={id}` continues it)"),
        None => "this command keeps no session".to_string(),
    };
    let task = tokio::spawn(async move {
        // A bug must end in a message and a failure, never in a hang or exit 0: the
        // front ends wait for `Exited`.
        let run = std::panic::AssertUnwindSafe(engine.run(ops_rx, start_files));
        if let Err(panic) = futures::FutureExt::catch_unwind(run).await {
            events.send(Event::Crashed {
                text: format!(
                    "tern stopped on an internal error ({}); edits land whole or not at all, so nothing is half-written, and {saved}. Please report this bug.",
                    run_loop::panic_text(&*panic)
                ),
            });
            events.send(Event::Exited);
        }
    });
    Ok(EngineHandle {
        ops: OpSender {
            tx: ops_tx,
            next: Default::default(),
        },
        events: EventReceiver(events_rx),
        task,
    })
}

pub(crate) struct Engine {
    /// The settings, the model, its window, tokenizer and client.
    model: model::Model,
    session: Session,
    events: EventSink,
    /// What the front end waits for: a reply, a landing, a message held for the map.
    activity: activity::Activity,
    /// The edits of the last code-mode reply, while they are reviewed.
    pending: Option<proposal_review::Pending>,
    map: map_slot::MapSlot,
    /// What the engine is for, whether it ends, where background jobs report.
    run_loop: run_loop::Loop,
    /// The session this engine saves to, and its turn record.
    saved: persist::Saved,
    runner: command_runner::CommandRunner,
    /// The history's budget, the draft, the last question, the spending limits.
    conversation: conversation::Conversation,
}

impl Engine {
    fn new(config: EngineConfig, events: EventSink) -> anyhow::Result<Self> {
        let client = LlmClient::new(
            &config.settings,
            config.record.as_deref(),
            config.replay.as_deref(),
        )?;
        let opened = match config.role {
            EngineRole::Conversation => Some(persist::open(
                &config.root,
                config.resume.as_ref(),
                &events,
            )?),
            EngineRole::LandReply { .. } | EngineRole::ReviewBranch => None,
        };
        let mut engine = Engine {
            conversation: conversation::Conversation::new(&config.settings, config.cwd),
            session: Session::new(config.root.clone()),
            model: model::Model::new(config.settings, client),
            events,
            activity: activity::Activity::Idle,
            pending: None,
            map: map_slot::MapSlot::new(config.map_cache),
            run_loop: run_loop::Loop::new(config.role),
            saved: persist::Saved::none(),
            runner: command_runner::CommandRunner::default(),
        };
        if let Some(opened) = opened {
            engine.saved = opened.saved;
            if let Some(saved) = opened.restored {
                engine.restore_session(saved, config.model_chosen);
            }
        }
        Ok(engine)
    }

    /// Runs the loop; `start_files` (editable, then read-only) are added once `Ready` is
    /// said.
    async fn run(
        &mut self,
        mut ops: mpsc::UnboundedReceiver<Submission>,
        start_files: Vec<(Vec<String>, FileMode)>,
    ) {
        self.events.send(Event::Ready {
            root: self.session.root().display().to_string(),
            model: self.model.info().name.clone(),
            mode: self.session.mode,
            session: self.saved.id().map(str::to_string),
        });
        // The resumed conversation first: what start has to say comes after it.
        if !self.session.transcript.is_empty() || self.saved.unsent().is_some() {
            self.events.send(Event::Resumed {
                transcript: self.session.transcript.clone(),
                unsent: self.saved.unsent().map(str::to_string),
            });
        }
        // A landing, undo or rewind a killed tern left half done is settled before
        // any file is read.
        if let Ok(repo) = git2::Repository::discover(self.session.root())
            && let Err(e) = crate::git::recover_unless_busy(&repo)
        {
            self.events.error(e.to_string());
        }
        self.say_settled();
        // The files named at start, and the resumed proposal (marked by them): after
        // `Ready`, so that nothing they say comes before it.
        for (paths, mode) in start_files {
            self.add_files(&paths, mode);
        }
        self.mark_files_outside_chat();
        let (notices, warnings) = self.saved.take_start_notes();
        for text in notices {
            self.events.notice(text);
        }
        for text in warnings {
            self.events.warning(text);
        }
        if !matches!(self.run_loop.role(), EngineRole::LandReply { .. }) {
            if !self.model.info().known {
                self.warn_unknown_model();
            }
            // `tern review` says it itself, and only when the review needs the model.
            if let Some(e) = self
                .model
                .client()
                .unusable()
                .filter(|_| self.run_loop.role() != EngineRole::ReviewBranch)
            {
                self.events.warning(e.to_string());
            }
        }
        if self.run_loop.role() == EngineRole::Conversation {
            match crate::git::discover(self.session.root()) {
                Ok(_) => {}
                Err(e @ crate::git::GitError::NotOwned(_)) => self.events.warning(format!(
                    "{e}. Until then you can chat here, but tern writes no edit."
                )),
                Err(_) => self.events.warning(format!(
                    "{} is not inside a git repository: you can chat here, but tern writes edits only inside one, so that every change can be undone. Run `git init` here to make one.",
                    self.session.root().display()
                )),
            }
        }
        if self.run_loop.role() == EngineRole::Conversation {
            self.model.start_counts(&self.events, &self.run_loop);
            self.map.start(
                &self.model,
                self.session.root(),
                &self.events,
                &self.run_loop,
            );
            // A history saved over its marks (a one-shot run leaves its summary to
            // the next start) is summarized before the next request needs it.
            if self.saved.resumed() {
                self.change_history(|history, parts| history.resumed(parts));
            }
        } else {
            self.map.none();
        }
        self.publish_files();
        self.publish_budget();
        while !self.run_loop.quitting() {
            tokio::select! {
                op = ops.recv() => match op {
                    None | Some(Submission { op: Op::Shutdown, .. }) => break,
                    Some(Submission { id, op }) => {
                        self.answering(Some(id));
                        self.handle(op);
                        // An op may take the lock at once (a rewind's plan).
                        self.say_settled();
                    }
                },
                Some((op, done)) = self.run_loop.next() => {
                    self.answering(op);
                    self.internal(done);
                }
            }
        }
        self.answering(None);
        // A reply stops, a command's whole process group is killed, and a landing that
        // has not written anything yet gives up (its proposal is saved as it was).
        self.activity.cancel();
        // A message still waiting for the repo map was never sent (it is no turn yet):
        // it is kept with the session, and given back on resume.
        if let Some((text, ..)) = self.activity.take_waiting() {
            self.keep_unsent(&text);
        }
        // A reply cut off by quitting (a signal, a closed terminal) ends as Esc ends
        // it: the message and what arrived of the reply are kept and saved. Edits being
        // written and committed are finished, never cut off half-way, and the session
        // is saved with their commit.
        while matches!(
            self.activity,
            activity::Activity::Git { .. }
                | activity::Activity::Streaming {
                    what: activity::Stream::Turn,
                    ..
                }
        ) {
            match self.run_loop.next().await.map(|(_, done)| done) {
                Some(Internal::Turn(outcome)) => {
                    self.finish_turn(outcome);
                    // Nothing starts by itself after a cancelled turn; were it to, it
                    // is cancelled too.
                    self.activity.cancel();
                }
                Some(
                    Internal::MapRefreshed(_)
                    | Internal::FilesChanged(_)
                    | Internal::Reviewed(_)
                    | Internal::Summary(_)
                    | Internal::Counted(_)
                    | Internal::Ran(_),
                ) => {}
                Some(done) => self.internal(done),
                None => break,
            }
        }
        self.saved.close().await;
        self.events.send(Event::Exited);
    }

    /// The op whose events follow (None: the engine's own); the work started meanwhile
    /// answers it too.
    fn answering(&mut self, op: Option<OpId>) {
        self.events.op = op;
        self.run_loop.answering(op);
    }

    fn handle(&mut self, op: Op) {
        match op {
            // How the tests make the engine fail as a bug would: debug builds only.
            #[cfg(debug_assertions)]
            Op::Submit { text }
                if text == "/debug-panic" && std::env::var_os("TERN_TEST_PANIC").is_some() =>
            {
                panic!("a panic requested by TERN_TEST_PANIC")
            }
            Op::Submit { text } => self.submit(text),
            Op::Command { command, args } => {
                self.command(command, &args);
                // After `/quit` nothing waits for the next op: `Exited` follows instead.
                if !self.run_loop.quitting() {
                    self.idle_if_done();
                }
            }
            Op::ProposeReply { reply } => self.propose_reply(&reply),
            Op::Draft { text, mode } => {
                self.conversation.set_draft(text, mode);
                self.publish_budget();
            }
            Op::AddFiles { paths, mode } => {
                self.add_files(&paths, mode);
                self.files_changed();
                self.idle_if_done();
            }
            Op::SetFileMode { path, mode } => {
                if let Err(e) = self.session.set_mode(&path, mode) {
                    self.events.error(e.to_string());
                }
                self.files_changed();
                self.idle_if_done();
            }
            Op::DropFile { path } => {
                if let Err(e) = self.session.drop_file(&path) {
                    self.events.error(e.to_string());
                }
                self.files_changed();
                self.idle_if_done();
            }
            Op::AnswerCommand { run } => {
                let (runner, mut parts) = self.commands();
                if !runner.answer_command(run, &mut parts) {
                    self.idle_if_done();
                }
            }
            Op::RunSuggested { command } => {
                let (runner, mut parts) = self.commands();
                runner.run_suggested(&command, &mut parts);
            }
            Op::AddOutput => self.add_output(),
            Op::Timeline => self.timeline(),
            Op::Rewind { to, code, chat } => self.rewind(to, code, chat),
            Op::RewindRedo => self.rewind_redo(),
            Op::Cancel => {
                let (runner, mut parts) = self.commands();
                if runner.decline_command(&mut parts) {
                    self.idle_if_done();
                    return;
                }
                runner.end_auto_test(&mut parts);
                self.activity.cancel();
                self.cancel_deferred();
                self.change_history(|history, parts| history.cancel_wait(parts.events));
            }
            Op::Review(op) => self.review(op),
            Op::ReviewBranch {
                source,
                options,
                send,
            } => self.start_review(source, options, send),
            Op::NoMoreMessages => self.conversation.history_mut().defer_summaries(),
            Op::AddNeeded { paths, mode } => self.add_needed(paths, mode),
            Op::ApplyAllowed { outside_chat } => {
                if let Some(pending) = self.pending.as_mut() {
                    pending.accept_allowed(outside_chat, &self.events);
                }
                self.publish_proposal();
                // Everything held back: the events say why; there is nothing to apply
                // (and no review key to advise, as `/apply` would).
                if self.pending.as_ref().is_some_and(|p| p.any_accepted()) {
                    self.review(ReviewOp::Apply);
                }
                self.idle_if_done();
            }
            Op::ListRepoFiles => {
                let files = self.map.repo_files(self.session.root());
                self.events.send(Event::RepoFiles { files });
            }
            Op::MapWhy { path } => {
                let edges = self.map.why(&path);
                self.events.send(Event::MapWhy { path, edges });
            }
            Op::HunkText { id } => self.hunk_text(&id),
            Op::SwitchSession { id, keep_pending } => {
                self.switch_session(&id, keep_pending);
                self.idle_if_done();
            }
            Op::Shutdown => unreachable!("handled by the loop"),
        }
    }

    fn internal(&mut self, done: Internal) {
        // What the job's repository lock settled came before its result.
        self.say_settled();
        match done {
            Internal::Turn(outcome) => self.finish_turn(outcome),
            Internal::Landed(result) => self.finish_landing(result),
            Internal::MapRefreshed(refreshed) => {
                let cause = self.map.finish_refresh(
                    refreshed,
                    &self.model,
                    &self.session,
                    self.conversation.draft().0,
                    &self.events,
                    &self.run_loop,
                );
                self.publish_budget();
                if let Some((text, mode, op)) = self.activity.take_waiting() {
                    self.answering(op);
                    self.map.waited_for(cause);
                    self.start_user_turn(text, mode);
                } else {
                    self.map
                        .apply_pending(&self.model, &self.events, &self.run_loop);
                }
            }
            Internal::FilesChanged(changes) => {
                self.map
                    .files_changed(changes, &self.model, &self.events, &self.run_loop)
            }
            Internal::Reviewed(outcome) => {
                self.activity.end_stream();
                outcome.settle(
                    &mut self.model,
                    &mut self.session,
                    &mut self.saved,
                    &self.events,
                );
                self.publish_budget();
                self.idle_if_done();
            }
            Internal::Rewind(job) => self.rewind_done(*job),
            Internal::Git(result) => {
                self.activity.end_git();
                match result {
                    Ok(done) => {
                        self.events.notice(done.message);
                        if let Some(warning) = done.warning {
                            self.events.warning(warning);
                        }
                        self.session.turns.undone(&done.undone);
                        if !done.undone.is_empty() {
                            self.events.send(Event::Undone {
                                commits: done.undone.iter().map(ToString::to_string).collect(),
                            });
                        }
                        self.saved
                            .record_mut()
                            .undone(done.undone.iter().map(ToString::to_string).collect());
                        if let Some(note) = done.note {
                            self.session.notes_for_next_turn.push(note);
                        }
                        self.save_session_holding(done.held);
                    }
                    Err(e) => self.events.error(e.to_string()),
                }
                self.files_changed();
                self.idle_if_done();
            }
            Internal::Summary(done) => {
                self.change_history(|history, parts| history.summary_done(done, parts));
            }
            Internal::Counted(done) => {
                if self.model.counted(done, &self.events, &self.run_loop) {
                    // The panes show the counts the gauge shows, now the server's.
                    self.map.recount(&self.model, &self.events);
                    self.publish_files();
                    self.publish_budget();
                    self.resume_held_turn();
                }
            }
            Internal::Ran(ran) => {
                if let Some((command, before, after)) = ran.changed() {
                    self.saved
                        .record_mut()
                        .ran(command.to_string(), (before.to_string(), after.to_string()));
                }
                let (runner, mut parts) = self.commands();
                let checked = runner.finish_command(*ran, &mut parts);
                self.publish_budget();
                self.save_session();
                if let Some(checked) = checked {
                    self.after_check(&checked);
                }
                self.idle_if_done();
            }
            // Unwinds into `spawn`'s handler: `Crashed`, then `Exited`.
            Internal::Panicked(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Says what taking the repository lock settled of a landing, undo or rewind a
    /// killed tern left half done (`git::settled`): it changed files and HEAD, never
    /// silently.
    fn say_settled(&self) {
        for said in crate::git::settled() {
            self.events.notice(said);
        }
    }

    /// Every op is answered: a message that cannot be sent with an error, then `Idle`
    /// (a front end waiting for it would wait for ever).
    /// `Op::Cancel` (Esc, or a signal): a message waiting for the repo map is not sent
    /// later by itself (Esc is final); it comes back to the user, and stays with the
    /// session until a message is sent (a signal's exit follows at once).
    fn cancel_deferred(&mut self) {
        if let Some((text, ..)) = self.activity.take_waiting() {
            let kept = match self.keep_unsent(&text) {
                true => " (the message is kept with the session until you send one)",
                false => "",
            };
            self.events.send(Event::TurnFailed {
                error: format!("cancelled while waiting for the repo map; nothing was sent{kept}"),
                message: text,
            });
            self.idle_if_done();
        }
    }

    /// Keeps a message that was never sent (it waited for the repo map) with the
    /// session, to give back on resume. Returns whether this engine saves a session.
    fn keep_unsent(&mut self, text: &str) -> bool {
        let saves = self.saved.keep_unsent(text);
        self.save_session();
        saves
    }

    /// Saves the session in the background; a failure is a warning, never the end of
    /// the turn.
    fn save_session(&mut self) {
        self.save_session_holding(None);
    }

    /// `save_session`, keeping a rewind's journal until the writer has saved it.
    fn save_session_holding(&mut self, held: Option<crate::git::Held>) {
        let parts = persist::SaveParts {
            session: &self.session,
            model: &self.model,
            history: self.conversation.history().marks(),
            pending: self.pending.as_ref().map(proposal_review::Pending::saved),
            map_tokens: self.map.chosen(),
        };
        self.saved.save(parts, &self.events, held);
    }

    /// `--resume`: the saved session's history, summary state, files, mode, notes,
    /// transcript, pending edits and (unless `keep_model`: `--model` chose one) model.
    fn restore_session(&mut self, saved: persist::SessionFile, keep_model: bool) {
        let root = self.session.root().to_path_buf();
        self.session.history = saved.history;
        self.session.mode = saved.mode;
        self.session.session_cost = saved.session_cost;
        self.session.notes_for_next_turn = saved.notes;
        self.session.transcript = saved.transcript;
        self.session.turns = saved.turns;
        self.session.outputs = saved.outputs;
        self.saved.resume_with(saved.unsent);
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
        self.map.restore_budget(
            saved.map_tokens,
            (&self.model, &self.session),
            &self.events,
            &self.run_loop,
        );
        // What the server taught holds, even over a larger --context-window (said
        // when the run starts).
        if let Some(n_ctx) = saved.server_window {
            self.model.remember_proven_window(n_ctx);
            if self.model.settings().context_window.is_none() {
                self.model.adopt_server_window(n_ctx);
            }
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

    /// The command runner with the parts it reads and changes.
    fn commands(
        &mut self,
    ) -> (
        &mut command_runner::CommandRunner,
        command_runner::Parts<'_>,
    ) {
        let parts = command_runner::Parts {
            model: &self.model,
            session: &mut self.session,
            activity: &mut self.activity,
            events: &self.events,
            jobs: &self.run_loop,
        };
        (&mut self.runner, parts)
    }

    /// The turn record being saved, to read once complete (a rewind reads it); this
    /// engine saving none is said.
    fn turn_record(&mut self, what: &str) -> Option<persist::RecordOnDisk> {
        let parts = persist::SaveParts {
            session: &self.session,
            model: &self.model,
            history: self.conversation.history().marks(),
            pending: self.pending.as_ref().map(proposal_review::Pending::saved),
            map_tokens: self.map.chosen(),
        };
        match self.saved.flush_records(parts, &self.events) {
            Some(record) => Some(record),
            None => {
                self.events.error(format!(
                    "{what}: this run saves no session, so there is no turn record to go back by"
                ));
                None
            }
        }
    }

    /// `Op::Timeline`: the turns and what a rewind to before each would change.
    fn timeline(&mut self) {
        let Some(record) = self.turn_record("/rewind") else {
            return;
        };
        let records = match record.read() {
            Ok(records) => records,
            Err(e) => {
                return self
                    .events
                    .error(format!("/rewind: {e}; nothing was changed"));
            }
        };
        let repo = git2::Repository::discover(self.session.root()).ok();
        let turns_now = self.saved.record().turn();
        match rewind::timeline(
            repo.as_ref(),
            &records,
            turns_now,
            self.session.session_cost,
            self.pending.is_some(),
        ) {
            Ok(turns) => self.events.send(Event::Timeline {
                turns,
                redo: self.saved.redo().map(rewind::redo_text),
            }),
            Err(e) => self.events.error(format!("/rewind: {e}")),
        }
    }

    /// `Op::Rewind` and `/rewind N [code|chat]`: see `engine::rewind`.
    fn rewind(&mut self, to: usize, code: bool, chat: bool) {
        if !self.activity.is_idle() {
            return self.events.error(
                "/rewind: not now: wait for the current turn to finish; nothing was changed".into(),
            );
        }
        let Some(record) = self.turn_record("/rewind") else {
            return;
        };
        // The wait for the record and the git work run as a job (they may take
        // seconds); the conversation goes back when it is done (`rewind_done`).
        let root = self.session.root().to_path_buf();
        let pending = self.pending.is_some();
        let turns = self.session.turns.clone();
        let done = self.run_loop.done();
        self.activity.git();
        run_loop::spawn_blocking(done.clone(), move || {
            let step = record.read().map_err(Into::into).and_then(|records| {
                let repo = git2::Repository::discover(&root).ok();
                rewind::code_step(repo.as_ref(), &records, to, (code, chat), pending, turns)
            });
            let _ = done.send(Internal::Rewind(Box::new(RewindJob { to, chat, step })));
        });
    }

    /// A rewind's job done: the conversation goes back, and it is said.
    fn rewind_done(&mut self, job: RewindJob) {
        self.activity.end_git();
        let RewindJob { to, chat, step } = job;
        match step {
            Ok(step) => {
                let turns_now = self.saved.record().turn();
                let pending = self.pending.is_some();
                let parts = self.rewind_parts(turns_now, pending);
                let done = rewind::finish(step, to, chat, parts);
                self.rewound(done, to, false);
            }
            Err(e) => self
                .events
                .error(format!("/rewind: {e}; nothing was changed")),
        }
        self.idle_if_done();
    }

    /// `/rewind` (the timeline), `/rewind redo`, `/rewind TURN [code|chat]`.
    fn rewind_command(&mut self, args: &str) {
        match rewind::parse_args(args) {
            Ok(rewind::Asked::Timeline) => self.timeline(),
            Ok(rewind::Asked::Redo) => self.rewind_redo(),
            Ok(rewind::Asked::Rewind { to, code, chat }) => self.rewind(to, code, chat),
            Err(e) => self.events.error(format!("/rewind: {e}")),
        }
    }

    /// `Op::RewindRedo` and `/rewind redo`.
    fn rewind_redo(&mut self) {
        if !self.activity.is_idle() {
            return self.events.error(
                "/rewind redo: not now: wait for the current turn to finish; nothing was changed"
                    .into(),
            );
        }
        let repo = git2::Repository::discover(self.session.root()).ok();
        let redo = self.saved.redo().cloned();
        let to = redo.as_ref().map_or(0, |r| r.to);
        let turns_now = self.saved.record().turn();
        let pending = self.pending.is_some();
        let parts = self.rewind_parts(turns_now, pending);
        match rewind::redo(repo.as_ref(), redo, parts) {
            Ok(done) => self.rewound(done, to, true),
            Err(e) => self
                .events
                .error(format!("/rewind redo: {e}; nothing was changed")),
        }
        self.idle_if_done();
    }

    fn rewind_parts(&mut self, turns_now: usize, pending: bool) -> rewind::Parts<'_> {
        rewind::Parts {
            history: &mut self.session.history,
            notes: &mut self.session.notes_for_next_turn,
            outputs: &mut self.session.outputs,
            transcript: &mut self.session.transcript,
            turns: &mut self.session.turns,
            turns_now,
            pending,
        }
    }

    /// A rewind or its redo done: recorded, kept for a redo (or not), the history's
    /// budget started again when the conversation changed, and said.
    fn rewound(&mut self, mut done: rewind::Rewound, to: usize, redo: bool) {
        let held = done.held.take();
        self.saved.record_mut().rewound(done.records);
        self.saved.set_redo(done.redo);
        if let Some(turns) = done.renumbered {
            self.change_history(|history, parts| history.cleared(parts.saved, parts.events));
            self.saved.record_mut().renumbered(turns);
        }
        if !redo && !done.commits.is_empty() {
            self.events.send(Event::Undone {
                commits: done.commits.clone(),
            });
        }
        self.events.send(Event::Rewound {
            to,
            redo,
            commits: done.commits,
            transcript: done.renumbered.map(|_| self.session.transcript.clone()),
            text: done.said,
        });
        self.save_session_holding(held);
        self.files_changed();
        self.publish_budget();
    }

    /// `/add-output` and `Op::AddOutput`: the last `/run`'s output joins the context.
    fn add_output(&mut self) {
        let (runner, mut parts) = self.commands();
        let changed = runner.add_output(&mut parts);
        self.outputs_changed(changed);
    }

    /// The output section changed (`/add-output`, `/drop-output`).
    fn outputs_changed(&mut self, changed: bool) {
        if changed {
            self.publish_budget();
            self.save_session();
        }
    }

    fn submit(&mut self, text: String) {
        let refused = if text.trim().is_empty() {
            Some("an empty message is not sent")
        } else if self.run_loop.role() != EngineRole::Conversation {
            Some("this tern runs one command; it takes no chat messages")
        } else {
            None
        };
        if let Some(why) = refused {
            self.events.error(why.into());
            self.idle_if_done();
            return;
        }
        let mode = self.session.mode;
        self.start_user_turn(text, mode);
    }

    /// Tells front ends that nothing more will happen until they send something: no
    /// reply is streaming, no reflection follows, no landing is under way.
    fn idle_if_done(&self) {
        if self.activity.is_idle() && !self.conversation.history().holds_turns() {
            self.events.send(Event::Idle);
        }
    }

    fn switch_model(&mut self, name: &str) {
        self.model.switch(name);
        self.events.send(Event::Model {
            model: self.model.info().name.clone(),
        });
        if !self.model.info().known {
            self.warn_unknown_model();
        }
        self.model.start_counts(&self.events, &self.run_loop);
        self.publish_budget();
        self.save_session();
    }

    fn warn_unknown_model(&self) {
        let window = match self.model.settings().context_window {
            Some(window) => format!("using the {window}-token window of --context-window"),
            // The server is asked for its window meanwhile (`llm::window`): the
            // assumption holds only until it answers, or if it cannot say.
            None => format!(
                "its window is asked of the server ({} tokens assumed until it answers, or if it cannot say: set --context-window to the server's)",
                protocol::thousands(self.model.window().window)
            ),
        };
        self.events.send(Event::Warning {
            text: format!(
                "model {} is not in tern's model table: {window}, no prices",
                self.model.info().name
            ),
        });
    }

    fn add_files(&mut self, paths: &[String], mode: FileMode) {
        for path in paths {
            let added = self
                .session
                .resolve(path, self.conversation.cwd())
                .and_then(|rel| self.session.add(&rel, mode).map(|changed| (rel, changed)));
            match added {
                Ok((rel, _)) if !self.session.root().join(&rel).exists() => {
                    let refused =
                        crate::edit::resolve_path(self.session.root(), std::path::Path::new(&rel))
                            .err();
                    self.events.notice(match (mode, refused) {
                        // A name tern would never write (control characters, `.git/`).
                        (FileMode::Editable, Some(why)) => format!(
                            "{rel} does not exist yet, and the model may not create it: {why}"
                        ),
                        (FileMode::Editable, None) => {
                            format!("{rel} does not exist yet; the model may create it")
                        }
                        (FileMode::ReadOnly, _) => format!(
                            "{rel} does not exist yet; it is read-only, so the model may not create it"
                        ),
                    });
                }
                Ok((rel, _))
                    if crate::edit::Workspace::discover(self.session.root())
                        .is_ok_and(|ws| ws.is_ignored_untracked(std::path::Path::new(&rel))) =>
                {
                    self.events.warning(format!(
                        "git ignores {rel}: files like it often hold secrets; its content is now sent to the model with every request (drop it with /drop {rel})"
                    ));
                }
                Ok(_) => {}
                Err(e) => self.events.error(e.to_string()),
            }
        }
    }

    fn files_changed(&mut self) {
        self.publish_files();
        self.publish_budget();
        self.mark_files_outside_chat();
        self.save_session();
    }

    /// Changes the history with its own method, lent the parts it reads and changes,
    /// then does what it says follows.
    fn change_history(
        &mut self,
        change: impl FnOnce(&mut HistoryBudget, &mut history_budget::Parts<'_>) -> Vec<Then>,
    ) {
        let (history, spending) = self.conversation.history_and_spending();
        let mut parts = history_budget::Parts {
            model: &self.model,
            session: &mut self.session,
            saved: &mut self.saved,
            spending,
            events: &self.events,
            jobs: &self.run_loop,
        };
        for then in change(history, &mut parts) {
            match then {
                Then::Save => self.save_session(),
                Then::PublishHistory => self.publish_history(),
                Then::PublishBudget => self.publish_budget(),
                Then::ResumeHeld => self.resume_held_turn(),
                Then::Idle => self.idle_if_done(),
                Then::Compacted(text) => history_budget::compact_output(&self.events, text),
            }
        }
    }

    /// `/forget [TURNS]`: the history drops its oldest turns to fit in the room the rest
    /// of a request leaves it.
    fn forget(&mut self, args: &str) {
        let streaming = self.activity.is_streaming();
        let turns = match history_budget::HistoryBudget::forget_turns(args, streaming) {
            Ok(turns) => turns,
            Err(why) => return self.events.error(why),
        };
        let report = self.report("", self.session.mode);
        let others = report.total - report.section(crate::context::Section::Done);
        self.change_history(|history, parts| history.forget(turns, others, parts));
    }

    /// Sends the history's status line.
    fn publish_history(&self) {
        self.conversation
            .history()
            .publish(&self.model, &self.session, &self.events);
    }

    fn publish_budget(&mut self) {
        // While a review runs the gauge shows the review's own request.
        if self.activity.is_branch_review() {
            return;
        }
        let report = self.draft_report();
        self.events.send(Event::Budget(Box::new(report)));
        // What the gauge counted that the server has not, it counts now.
        self.model.start_counting(&self.run_loop);
    }

    fn publish_files(&mut self) {
        let files = self.session.entries(self.model.counter());
        self.events.send(Event::Files { files });
    }

    /// Whether unattended work may send a request now (`Spending::may_spend`); a cap
    /// reached is said once per kind and user message.
    fn may_spend(&mut self, what: spending::Unattended) -> bool {
        self.conversation.spending_mut().allows(
            what,
            self.session.session_cost,
            self.model.settings(),
            &self.events,
        )
    }

    // Slash commands (the table is in `commands.rs`; `input.rs` parses what the user
    // typed into them).

    pub(super) fn command(&mut self, command: Command, args: &str) {
        let args = args.trim().to_string();
        let words: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        match command {
            Command::Add => {
                self.add_files(&words, FileMode::Editable);
                self.files_changed();
            }
            Command::ReadOnly => {
                self.add_files(&words, FileMode::ReadOnly);
                self.files_changed();
            }
            Command::Drop => self.drop_files(&words),
            Command::Ask | Command::Code => {
                let mode = if command == Command::Ask {
                    ChatMode::Ask
                } else {
                    ChatMode::Code
                };
                if args.is_empty() {
                    self.session.mode = mode;
                    self.events.send(Event::Mode { mode });
                    self.publish_budget();
                    self.save_session();
                } else {
                    self.start_user_turn(args, mode);
                }
            }
            Command::Apply if args == "all" => self.apply_all(),
            Command::Apply => self.review(ReviewOp::Apply),
            Command::Reject => self.reject_with_reason(&args),
            Command::Discard => self.discard(),
            Command::Diff => self.show_diff(),
            Command::Show => self.show_commit(&args),
            Command::Undo => self.undo_command(&args),
            Command::Rewind => self.rewind_command(&args),
            Command::Commit => {
                let settings = self.model.settings().clone();
                let message = (!args.trim().is_empty()).then(|| args.trim().to_string());
                self.git_job("commit", move |repo| {
                    commit_all(repo, &settings, message.as_deref()).map(GitDone::said)
                });
            }
            Command::Run => {
                let (runner, mut parts) = self.commands();
                runner.run_command(&args, &mut parts);
            }
            Command::Test | Command::Lint => {
                let purpose = match command {
                    Command::Test => CommandPurpose::Test,
                    _ => CommandPurpose::Lint,
                };
                let (runner, mut parts) = self.commands();
                runner.check_command(purpose, &args, &mut parts);
            }
            Command::AddOutput => self.add_output(),
            Command::DropOutput => {
                let (runner, mut parts) = self.commands();
                let changed = runner.drop_output(&args, &mut parts);
                self.outputs_changed(changed);
            }
            Command::Tokens => {
                let report = self.draft_report();
                self.events.send(Event::Output {
                    title: "tokens".into(),
                    text: report.render_table(),
                });
            }
            Command::Review => {
                let source = branch_review::source(&args);
                let options = ReviewOptions::from(self.model.settings());
                self.start_review(source, options, true);
            }
            Command::Map => {
                let text = self.map.shown(
                    self.conversation.draft().0,
                    &self.model,
                    &self.session,
                    &self.events,
                );
                self.events.send(Event::Output {
                    title: "repo map".into(),
                    text,
                });
            }
            Command::MapRefresh => self.map.refresh_now(&self.events, &self.run_loop),
            Command::MapTokens => self.map_tokens(&args),
            Command::Clear => {
                // The turn under way would join the history it clears when it ends.
                if let Some(busy) = self.activity.busy_reason() {
                    return self
                        .events
                        .error(format!("/clear: not now, the history stays: {busy}"));
                }
                self.session.history.clear();
                self.change_history(|history, parts| history.cleared(parts.saved, parts.events));
                self.events.notice("history cleared".into());
                self.publish_budget();
            }
            Command::Compact => {
                let idle = self.activity.is_idle();
                self.change_history(|history, parts| history.compact(idle, parts));
            }
            Command::Forget => self.forget(&args),
            Command::Model => {
                if args.is_empty() {
                    self.events.notice(format!(
                        "model {} (window {}, weak model {})",
                        self.model.info().name, self.model.window().window, self.model.settings().weak_model
                    ));
                } else {
                    self.switch_model(&args);
                }
            }
            Command::Help => self.events.send(Event::Output {
                title: "commands".into(),
                text: commands::help(),
            }),
            Command::Trust => self.trust_command(&args),
            Command::Sessions if args.is_empty() => self.list_sessions(),
            Command::Sessions => self.switch_session(&args, false),
            Command::Quit => self.run_loop.quit(),
            Command::Split => self.review(ReviewOp::Split {
                id: args.trim().to_string(),
            }),
            // Only a front end with a terminal can hand it to an editor.
            Command::Editor => self.events.error(
                "/editor opens an editor in the workspace (ctrl-g in the message box); there is none here"
                    .into(),
            ),
        }
    }

    /// `/map-tokens N`: the map's budget for the rest of the run, and what it changed.
    fn map_tokens(&mut self, args: &str) {
        let budget = match args.parse::<usize>() {
            Ok(n) if n <= crate::config::MAP_TOKENS_MAX => n,
            _ => {
                return self.events.error(format!(
                    "/map-tokens takes a number of tokens, from 0 (no map) to {}, not {args:?}",
                    protocol::thousands(crate::config::MAP_TOKENS_MAX)
                ));
            }
        };
        let draft = self.conversation.draft().0.to_string();
        let chosen = self.map.choose_budget(
            budget,
            (&self.model, &self.session, &draft),
            &self.events,
            &self.run_loop,
        );
        match chosen {
            Ok(changed) => {
                self.events.send(Event::MapBudget(changed));
                self.events.notice(changed.to_string());
                self.publish_budget();
                self.save_session();
            }
            Err(why) => self.events.error(format!("/map-tokens: {why}")),
        }
    }

    fn drop_files(&mut self, words: &[String]) {
        if words.is_empty() {
            self.session.drop_all();
            self.events
                .notice("dropped every file from the chat".into());
        }
        for word in words {
            let dropped = self
                .session
                .resolve(word, self.conversation.cwd())
                .and_then(|rel| self.session.drop_file(&rel));
            if let Err(e) = dropped {
                self.events.error(e.to_string());
            }
        }
        self.files_changed();
    }

    /// The proposed edits as a unified diff, or else the work tree's uncommitted changes.
    fn show_diff(&mut self) {
        let text = match self.pending_diff() {
            Some(diff) => diff,
            None => match crate::git::worktree_diff(self.session.root()) {
                Ok(diff) if diff.is_empty() => {
                    "no proposed edits and no uncommitted changes\n".into()
                }
                Ok(diff) => diff,
                Err(e) => {
                    self.events.error(e.to_string());
                    return;
                }
            },
        };
        self.events.send(Event::Output {
            title: "diff".into(),
            text,
        });
    }

    /// `/show [REV]`: a commit and its diff (HEAD by default: what tern just landed).
    fn show_commit(&mut self, rev: &str) {
        let rev = if rev.trim().is_empty() {
            "HEAD"
        } else {
            rev.trim()
        };
        let shown = git2::Repository::discover(self.session.root())
            .map_err(|e| e.to_string())
            // libgit2's words without its class and code (`class=Reference (4)`).
            .and_then(|repo| crate::git::show(&repo, rev).map_err(|e| e.message().to_string()));
        match shown {
            Ok((title, text)) => self.events.send(Event::Output { title, text }),
            Err(e) => self.events.error(format!("/show {rev}: {e}")),
        }
    }

    /// Runs a git command on a blocking thread (hooks may take a while).
    pub(super) fn git_job(
        &mut self,
        what: &'static str,
        job: impl FnOnce(&git2::Repository) -> Result<GitDone, GitJobError> + Send + 'static,
    ) {
        if let Some(busy) = self.activity.busy_reason() {
            self.events.error(format!("/{what} waits: {busy}"));
            return;
        }
        let root = self.session.root().to_path_buf();
        let done = self.run_loop.done();
        self.activity.git();
        run_loop::spawn_blocking(done.clone(), move || {
            let result = git2::Repository::open(&root)
                .map_err(|source| GitJobError::NotARepository { what, source })
                .and_then(|repo| job(&repo));
            let _ = done.send(Internal::Git(result));
        });
    }

    /// `/undo [turn]`.
    fn undo_command(&mut self, args: &str) {
        let turn = self.session.turns.last();
        match args.trim() {
            "" => self.git_job("undo", move |repo| undo_commits::undo_one(repo, &turn)),
            "turn" => self.git_job("undo", move |repo| {
                let done = crate::git::undo_turn(repo, &turn)?;
                undo_commits::turn_done(repo, done)
            }),
            other => self.events.error(format!(
                "/undo takes nothing (tern's last commit) or `turn` (all of the last turn's commits), not {other:?}"
            )),
        }
    }

    /// `/trust`: shows the repository's `.tern.toml` and what in it waits for trust;
    /// `/trust yes` trusts exactly that content (as `tern trust` does), for the next
    /// start.
    fn trust_command(&mut self, args: &str) {
        let root = self.session.root().to_path_buf();
        let repo = match crate::config::RepoConfig::read(&root) {
            Ok(Some(repo)) => repo,
            Ok(None) => {
                return self
                    .events
                    .notice("this repository has no .tern.toml".into());
            }
            Err(e) => return self.events.error(e.to_string()),
        };
        let Some(file) = crate::config::trust_file() else {
            return self
                .events
                .error("no user config directory to keep trusted repositories in".into());
        };
        let mut store = crate::config::TrustStore::open(&file);
        let needing = repo.needing_trust().join(", ");
        let note = crate::config::never_from_repository_note();
        let damaged = store.damage();
        if args.trim() != "yes" {
            if let Some(damage) = damaged {
                self.events.warning(damage);
            }
            let state = if store.trusts(&root, &repo.text) {
                "trusted"
            } else {
                "not trusted"
            };
            self.events.send(Event::Output {
                title: repo.path.display().to_string(),
                text: format!(
                    "{}\nThis content is {state}. Waiting for trust: {}. Type /trust yes to trust exactly this content; it applies when tern starts next. {note}\n",
                    repo.text,
                    if needing.is_empty() { "nothing" } else { &needing }
                ),
            });
            return;
        }
        let trusted = store.trust(&root, &repo.text);
        if let Some(damage) = store.damage() {
            self.events.warning(damage);
        }
        match trusted {
            Ok(()) => self.events.notice(format!(
                "trusted this .tern.toml ({}); restart tern to use it; a change to the file needs /trust again",
                repo.trust_effect()
            )),
            Err(e) => self.events.error(format!("cannot write {}: {e}", file.display())),
        }
    }
}

/// `/commit [MESSAGE]`: the user's own uncommitted changes to tracked files, in one
/// commit.
fn commit_all(
    repo: &git2::Repository,
    settings: &crate::config::Settings,
    message: Option<&str>,
) -> Result<String, GitJobError> {
    let paths = crate::git::modified_tracked_paths(repo)?;
    let options = crate::git::CommitOptions::from(settings);
    Ok(
        match crate::git::commit_user_changes(repo, &paths, message, &options)? {
            Some(c) => format!("committed {}", c.line()),
            None => "nothing to commit".into(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::MARKER;
    use crate::egress::tests::{KEY, register_test_key};

    #[test]
    fn a_reply_stream_finds_a_split_key_and_keeps_the_order_of_events() {
        register_test_key();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let op = Some(OpId(7));
        let mut stream = EventSink { tx, op }.reply_stream();
        let (a, b) = KEY.split_at_checked(9).unwrap();
        let delta = |text: &str| Event::Delta { text: text.into() };
        stream.send(delta(&format!("key {a}")));
        stream.send(delta(&format!("{b}; tests")));
        // Another event: what the text held back (the `s`, a key's start) goes first.
        stream.send(Event::Reasoning {
            text: "thinking".into(),
        });
        stream.send(delta(" pass, s"));
        stream.finish();
        let mut seen = Vec::new();
        while let Ok(envelope) = rx.try_recv() {
            assert_eq!(envelope.op, op, "a stream answers the op that started it");
            seen.push(envelope.event);
        }
        assert_eq!(
            seen,
            [
                delta("key "),
                delta(&format!("{MARKER}; test")),
                delta("s"),
                Event::Reasoning {
                    text: "thinking".into()
                },
                delta(" pass, "),
                delta("s"),
            ]
        );
    }
}
