//! The session engine: owns the conversation, builds every request, talks to the model,
//! and reports through `Event`s. It never depends on a front end.

pub mod commands;
mod prompts;
pub mod protocol;
pub mod session;
mod turn;

use std::path::PathBuf;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use protocol::{ChatMode, Event, FileEntry, FileMode, Op};
pub use session::{PathError, Session};

use crate::cli::CachePrompts;
use crate::config::Settings;
use crate::context::{self, Assembled, BudgetReport, ChunkInputs, Window};
use crate::edit::EditFormat;
use crate::llm::{ChatRequest, LlmClient, Message, ModelInfo};
use crate::tokens::TokenCounter;
use commands::Parsed;
use turn::TurnOutcome;

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
}

/// The front end's side of a running engine.
pub struct EngineHandle {
    pub ops: mpsc::UnboundedSender<Op>,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub task: tokio::task::JoinHandle<()>,
}

/// Sends events, ignoring a front end that has gone away.
#[derive(Clone)]
pub(crate) struct EventSink(mpsc::UnboundedSender<Event>);

impl EventSink {
    pub(crate) fn send(&self, event: Event) {
        let _ = self.0.send(event);
    }
}

/// Starts an engine on the current tokio runtime.
pub fn spawn(config: EngineConfig) -> anyhow::Result<EngineHandle> {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let mut engine = Engine::new(config, EventSink(events_tx))?;
    let task = tokio::spawn(async move { engine.run(ops_rx).await });
    Ok(EngineHandle {
        ops: ops_tx,
        events: events_rx,
        task,
    })
}

struct Engine {
    settings: Settings,
    model: ModelInfo,
    window: Window,
    counter: TokenCounter,
    client: LlmClient,
    session: Session,
    cwd: PathBuf,
    events: EventSink,
    draft: String,
    /// The running turn's cancel switch; None when idle.
    running: Option<CancellationToken>,
    turn_done_tx: mpsc::UnboundedSender<TurnOutcome>,
    turn_done_rx: mpsc::UnboundedReceiver<TurnOutcome>,
    /// Set by `/quit`.
    quit: bool,
}

impl Engine {
    fn new(config: EngineConfig, events: EventSink) -> anyhow::Result<Self> {
        let model = ModelInfo::lookup(&config.settings.model);
        let client = LlmClient::new(
            &config.settings,
            config.record.as_deref(),
            config.replay.as_deref(),
        )?;
        let (turn_done_tx, turn_done_rx) = mpsc::unbounded_channel();
        let mut engine = Engine {
            window: Window::for_model(
                &model,
                config.settings.context_window,
                config.settings.reserve_output,
            ),
            counter: model.token_counter(),
            model,
            client,
            session: Session::new(config.root.clone()),
            cwd: config.cwd,
            settings: config.settings,
            events,
            draft: String::new(),
            running: None,
            turn_done_tx,
            turn_done_rx,
            quit: false,
        };
        engine.add_files(&config.editable, FileMode::Editable);
        engine.add_files(&config.read_only, FileMode::ReadOnly);
        Ok(engine)
    }

    async fn run(&mut self, mut ops: mpsc::UnboundedReceiver<Op>) {
        self.events.send(Event::Ready {
            root: self.session.root().display().to_string(),
            model: self.model.name.clone(),
            mode: self.session.mode,
        });
        if !self.model.known {
            self.warn_unknown_model();
        }
        self.publish_files();
        self.publish_budget();
        while !self.quit {
            tokio::select! {
                op = ops.recv() => match op {
                    None | Some(Op::Shutdown) => break,
                    Some(op) => self.handle(op),
                },
                Some(outcome) = self.turn_done_rx.recv() => self.finish_turn(outcome),
            }
        }
        if let Some(cancel) = self.running.take() {
            cancel.cancel();
        }
        self.events.send(Event::Exited);
    }

    fn handle(&mut self, op: Op) {
        match op {
            Op::Submit { text } => self.submit(text),
            Op::Draft { text } => {
                self.draft = text;
                self.publish_budget();
            }
            Op::AddFiles { paths, mode } => {
                self.add_files(&paths, mode);
                self.publish_files();
                self.publish_budget();
            }
            Op::SetFileMode { path, mode } => {
                if let Err(e) = self.session.set_mode(&path, mode) {
                    self.error(e.to_string());
                }
                self.publish_files();
                self.publish_budget();
            }
            Op::DropFile { path } => {
                if let Err(e) = self.session.drop_file(&path) {
                    self.error(e.to_string());
                }
                self.publish_files();
                self.publish_budget();
            }
            Op::Cancel => {
                if let Some(cancel) = &self.running {
                    cancel.cancel();
                }
            }
            Op::ListRepoFiles => self.list_repo_files(),
            Op::Review(_) | Op::MapWhy { .. } => {
                self.error("edits and the repo map are not available yet".into())
            }
            Op::Shutdown => unreachable!("handled by the loop"),
        }
    }

    fn submit(&mut self, text: String) {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        if trimmed.starts_with('/') {
            self.command(trimmed);
            return;
        }
        let mode = self.session.mode;
        self.start_turn(text, mode);
    }

    fn command(&mut self, line: &str) {
        let (spec, args) = match commands::parse(line) {
            Parsed::Command { spec, args } => (spec, args.to_string()),
            Parsed::Unknown { name, candidates } => {
                let hint = if candidates.is_empty() {
                    "see /help".to_string()
                } else {
                    format!("did you mean /{}?", candidates.join(", /"))
                };
                self.error(format!("unknown command /{name}: {hint}"));
                return;
            }
        };
        let words: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        match spec.name {
            "add" => {
                self.add_files(&words, FileMode::Editable);
                self.publish_files();
                self.publish_budget();
            }
            "read-only" => {
                self.add_files(&words, FileMode::ReadOnly);
                self.publish_files();
                self.publish_budget();
            }
            "drop" => {
                if words.is_empty() {
                    self.session.drop_all();
                    self.notice("dropped every file from the chat".into());
                } else {
                    for word in &words {
                        let dropped = self
                            .session
                            .resolve(word, &self.cwd)
                            .map_err(|e| e.to_string())
                            .and_then(|rel| {
                                self.session.drop_file(&rel).map_err(|e| e.to_string())
                            });
                        if let Err(e) = dropped {
                            self.error(e);
                        }
                    }
                }
                self.publish_files();
                self.publish_budget();
            }
            "ask" | "code" => {
                let mode = if spec.name == "ask" {
                    ChatMode::Ask
                } else {
                    ChatMode::Code
                };
                if args.is_empty() {
                    self.session.mode = mode;
                    self.events.send(Event::Mode { mode });
                    self.publish_budget();
                } else {
                    self.start_turn(args, mode);
                }
            }
            "tokens" => {
                let report = self.report(&self.draft.clone());
                self.events.send(Event::Output {
                    title: "tokens".into(),
                    text: report.render_table(),
                });
            }
            "clear" => {
                self.session.history.clear();
                self.notice("history cleared".into());
                self.publish_budget();
            }
            "model" => {
                if args.is_empty() {
                    self.notice(format!(
                        "model {} (window {}, weak model {})",
                        self.model.name, self.window.window, self.settings.weak_model
                    ));
                } else {
                    self.switch_model(&args);
                }
            }
            "help" => self.events.send(Event::Output {
                title: "commands".into(),
                text: commands::help(),
            }),
            "quit" => self.quit = true,
            other => self.error(format!("/{other} is not available yet")),
        }
    }

    fn switch_model(&mut self, name: &str) {
        self.settings.model = name.to_string();
        self.model = ModelInfo::lookup(name);
        self.window = Window::for_model(
            &self.model,
            self.settings.context_window,
            self.settings.reserve_output,
        );
        self.counter = self.model.token_counter();
        self.events.send(Event::Model {
            model: self.model.name.clone(),
        });
        if !self.model.known {
            self.warn_unknown_model();
        }
        self.publish_budget();
    }

    fn warn_unknown_model(&self) {
        self.events.send(Event::Warning {
            text: format!(
                "model {} is not in tern's model table: assuming a {}-token window and no prices; set --context-window if you know better",
                self.model.name, self.window.window
            ),
        });
    }

    fn add_files(&mut self, paths: &[String], mode: FileMode) {
        for path in paths {
            let added = self
                .session
                .resolve(path, &self.cwd)
                .and_then(|rel| self.session.add(&rel, mode).map(|changed| (rel, changed)));
            match added {
                Ok((rel, _)) if !self.session.root().join(&rel).exists() => {
                    self.notice(format!("{rel} does not exist yet; the model may create it"));
                }
                Ok(_) => {}
                Err(e) => self.error(e.to_string()),
            }
        }
    }

    fn edit_format(&self) -> EditFormat {
        self.settings.edit_format.unwrap_or(self.model.edit_format)
    }

    fn cache_control(&self) -> bool {
        match self.settings.cache_prompts {
            CachePrompts::On => true,
            CachePrompts::Off => false,
            CachePrompts::Auto => {
                self.settings.api_base.contains("openrouter.ai")
                    || self.model.name.starts_with("anthropic/")
            }
        }
    }

    /// Builds the request for a turn whose current messages are `cur`: the one place
    /// where messages and their counts come from.
    fn assemble(&mut self, cur: Vec<Message>, mode: ChatMode) -> Assembled {
        let prompts = prompts::prompts(mode, self.edit_format());
        let (readonly_files, mut errors) = self.session.texts(FileMode::ReadOnly);
        let (chat_files, more) = self.session.texts(FileMode::Editable);
        errors.extend(more);
        for e in errors {
            self.error(e.to_string());
        }
        let inputs = ChunkInputs {
            system: prompts.system,
            examples: prompts.examples,
            readonly_files,
            repo_map: None,
            done: self.session.history.clone(),
            chat_files,
            cur,
            reminder: prompts.reminder,
            review_diff: None,
        };
        context::assemble(&inputs, &self.counter)
    }

    fn report(&mut self, draft: &str) -> BudgetReport {
        let cur = if draft.trim().is_empty() {
            vec![]
        } else {
            vec![Message::user(self.user_message_text(draft))]
        };
        let mode = self.session.mode;
        let assembled = self.assemble(cur, mode);
        self.decorate(BudgetReport::new(&assembled, &self.model, self.window))
    }

    fn decorate(&self, mut report: BudgetReport) -> BudgetReport {
        report.last_usage = self.session.last_usage;
        report.last_cost = self.session.last_cost;
        report.session_cost = self.session.session_cost;
        report
    }

    /// The user's message as sent: their text, then any notes the engine owes the model.
    fn user_message_text(&self, text: &str) -> String {
        if self.session.notes_for_next_turn.is_empty() {
            return text.to_string();
        }
        format!(
            "{}\n\n{text}",
            self.session.notes_for_next_turn.join("\n\n")
        )
    }

    fn start_turn(&mut self, text: String, mode: ChatMode) {
        if self.running.is_some() {
            self.events.send(Event::TurnFailed {
                error: "a reply is still streaming: wait for it or interrupt it first".into(),
                message: text,
            });
            return;
        }
        let sent = self.user_message_text(&text);
        let assembled = self.assemble(vec![Message::user(sent.clone())], mode);
        let report = self.decorate(BudgetReport::new(&assembled, &self.model, self.window));
        if !report.fits() {
            self.events.send(Event::Output {
                title: "the request does not fit".into(),
                text: report.render_table(),
            });
            self.events.send(Event::TurnFailed {
                error: format!(
                    "the request needs {} tokens but at most {} may be sent: drop files or /clear the history",
                    report.total, report.prompt_limit
                ),
                message: text,
            });
            return;
        }
        self.session.notes_for_next_turn.clear();
        self.events.send(Event::Budget(Box::new(report)));
        self.events.send(Event::TurnStarted {
            text: text.clone(),
            mode,
        });
        let cancel = CancellationToken::new();
        self.running = Some(cancel.clone());
        let request = ChatRequest {
            model: self.model.clone(),
            messages: assembled.messages,
            cache_control: self.cache_control(),
            max_tokens: None,
        };
        turn::spawn(
            self.client.clone(),
            request,
            cancel,
            self.events.clone(),
            self.turn_done_tx.clone(),
            turn::Pending {
                user_text: text,
                sent_text: sent,
            },
        );
    }

    fn finish_turn(&mut self, outcome: TurnOutcome) {
        self.running = None;
        match outcome.result {
            Ok(reply) => {
                let cost = self.model.cost(&reply.usage);
                self.session.session_cost += cost;
                self.session.last_cost = cost;
                self.session.last_usage = reply.usage_reported.then_some(reply.usage);
                if !reply.text.is_empty() {
                    self.session
                        .history
                        .push(Message::user(outcome.pending.sent_text));
                    self.session
                        .history
                        .push(Message::assistant(reply.text.clone()));
                }
                self.events.send(Event::TurnFinished {
                    reply: reply.text,
                    finish: reply.finish,
                    usage: reply.usage_reported.then_some(reply.usage),
                    cost,
                    session_cost: self.session.session_cost,
                });
            }
            Err(e) => self.events.send(Event::TurnFailed {
                error: e.to_string(),
                message: outcome.pending.user_text,
            }),
        }
        self.publish_budget();
    }

    fn publish_budget(&mut self) {
        let draft = self.draft.clone();
        let report = self.report(&draft);
        self.events.send(Event::Budget(Box::new(report)));
    }

    /// The repository's files (as git would list them: ignored files left out) for `@`
    /// completion and the file picker; listed off the loop, a big tree takes a moment.
    fn list_repo_files(&self) {
        let root = self.session.root().to_path_buf();
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let mut files: Vec<String> = ignore::WalkBuilder::new(&root)
                .build()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .filter_map(|e| Some(e.path().strip_prefix(&root).ok()?.to_str()?.to_string()))
                .collect();
            files.sort();
            events.send(Event::RepoFiles { files });
        });
    }

    fn publish_files(&mut self) {
        let files = self.session.entries(&self.counter);
        self.events.send(Event::Files { files });
    }

    fn notice(&self, text: String) {
        self.events.send(Event::Notice { text });
    }

    fn error(&self, text: String) {
        self.events.send(Event::Error { text });
    }
}
