//! The full-screen workspace: chat, live budget gauge, files, repo map and hunk-by-hunk
//! review, as one more consumer of the engine's `Event` stream
//! (ARCHITECTURE.md, *The protocol*).
//!
//! One tokio loop selects over terminal events (crossterm's `EventStream`), engine
//! events and timers. Every state change comes from one of those; every user action
//! leaves as an `Op`. Frames are drawn only when something changed: at once after a
//! key (so typing never waits), and at most ~60 times a second while a reply streams.
//! For an external editor (Ctrl-G, `e` in the review) the loop steps aside: it stops
//! reading the terminal, gives it back, waits for the editor and takes it over again.

pub mod app;
pub mod demo;
pub mod editor;
pub mod fuzzy;
pub mod highlight;
pub mod keymap;
pub mod layout;
pub mod markdown;
pub mod panes;
pub mod paths;
pub mod terminal;
pub mod text;
pub mod theme;
pub mod typing;
pub mod word_diff;

use std::future::Future;
use std::io::{self, IsTerminal};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

pub use app::{App, AppConfig};
pub use editor::{EditRequest, EditTarget};
pub use keymap::Keymap;
pub use panes::PaneId;
pub use panes::chat::Kind;
pub use theme::Theme;

use crate::engine::{EngineConfig, EventReceiver, Op, OpSender};

/// The shortest time between two frames while events stream in (~60 per second).
pub const FRAME: Duration = Duration::from_millis(16);
/// How long to wait for the engine to stop after the user quits.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// What the workspace opens with besides the engine's own state.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Sent as the first message (the demo's question).
    pub submit: Option<String>,
    /// Shown in the chat before anything else.
    pub notices: Vec<(Kind, String)>,
    /// Nothing outlives the workspace (the demo, whose repository goes with it).
    pub throwaway: bool,
}

/// Opens the workspace on a new engine and runs it until the user quits.
pub async fn run(config: EngineConfig, options: Options) -> anyhow::Result<ExitCode> {
    if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
        anyhow::bail!(
            "the workspace needs a terminal; for scripts use `tern -m TEXT` (one headless turn)"
        );
    }
    highlight::preload();
    let mut notices = options.notices;
    let (theme, theme_warning) = Theme::load(&config.settings.theme);
    notices.extend(theme_warning.map(|w| (Kind::Warning, w)));
    let (keymap, key_warnings) = Keymap::from_config(&config.settings.keys, &app::Panes::scopes());
    notices.extend(key_warnings.into_iter().map(|w| (Kind::Warning, w)));
    // A signal quits as `q` would; if the workspace cannot, the terminal is restored
    // and the process exits anyway (`signals`).
    let signals = crate::signals::watch(crate::signals::Exit {
        restore: terminal::restore,
        code: crate::signals::exit_code,
    });
    let mut engine = crate::engine::spawn(config)?;
    if let Some(text) = options.submit {
        engine.ops.send(Op::Submit { text })?;
    }
    let mut app = App::new(AppConfig {
        throwaway: options.throwaway,
        theme,
        keymap,
        notices,
    });
    let result = {
        let _guard = terminal::enter()?;
        let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        terminal.clear()?;
        let mut input = TerminalInput::from_terminal();
        run_loop(
            &mut terminal,
            &mut app,
            &mut input,
            &mut engine.events,
            &engine.ops,
            stopped_by(signals.clone()),
        )
        .await
    };
    let _ = engine.ops.send(Op::Shutdown);
    if app.applying() {
        // Cut off, the landing would still finish, but the saved session would not
        // know its commit (`undo --turn` would refuse).
        crate::egress::errln!(
            "tern: waiting for the landing under way: it is cancelled if nothing is written yet, else committed (and saved with the session) first"
        );
        let _ = (&mut engine.task).await;
    } else if tokio::time::timeout(SHUTDOWN_WAIT, &mut engine.task)
        .await
        .is_err()
    {
        engine.task.abort();
    }
    // What the engine said after the loop stopped (a landing's end) reaches the app,
    // whose last words say it where the user can read it.
    while let Some(event) = engine.events.try_recv() {
        app.handle_engine(event);
    }
    if let Some(words) = app.last_words() {
        crate::egress::errln!("tern: {words}");
    }
    tracing::info!("workspace closed");
    if let Some(text) = app.crashed() {
        crate::egress::errln!("tern: {text}");
        return result.map(|()| ExitCode::FAILURE);
    }
    let signal = signals.as_ref().and_then(crate::signals::Stop::signal);
    result.map(|()| signal.map_or(ExitCode::SUCCESS, |s| crate::signals::exit_code(s).into()))
}

/// Resolves when a signal arrives (never, when signals are not watched).
async fn stopped_by(stop: Option<crate::signals::Stop>) {
    match stop {
        Some(mut stop) => {
            stop.arrived().await;
        }
        None => std::future::pending().await,
    }
}

/// Where the loop's terminal events come from: the real terminal, read by crossterm's
/// `EventStream` on a task of its own (so the loop can drain what is queued without
/// polling the stream with a foreign waker), or a channel (tests, benchmarks).
pub struct TerminalInput {
    events: UnboundedReceiver<io::Result<TermEvent>>,
    /// The real terminal's reader, and the sender it forwards to (kept to start a new
    /// reader after an editor ran).
    reader: Option<(JoinHandle<()>, UnboundedSender<io::Result<TermEvent>>)>,
}

impl TerminalInput {
    pub(crate) fn from_terminal() -> TerminalInput {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        TerminalInput {
            events: rx,
            reader: Some((read_terminal(tx.clone()), tx)),
        }
    }

    /// Events sent on a channel; an editor then runs without touching the terminal.
    pub fn from_channel(events: UnboundedReceiver<io::Result<TermEvent>>) -> TerminalInput {
        TerminalInput {
            events,
            reader: None,
        }
    }

    /// Runs the user's editor on `request`'s text (see `editor::edit`). On the real
    /// terminal the workspace steps aside first: the reader task is ended, which drops
    /// its `EventStream` (it reads stdin in the background and would take the editor's
    /// keys), and the terminal is restored; afterwards it is taken over again and a new
    /// reader started; `redraw` runs in between (it may query the terminal, which a
    /// running reader would answer in its place). The inner result is the edited text,
    /// or why there is none; the outer error is a terminal that could not be taken back.
    pub(crate) async fn run_editor(
        &mut self,
        request: &EditRequest,
        redraw: impl FnOnce() -> anyhow::Result<()>,
    ) -> anyhow::Result<Result<String, editor::EditorError>> {
        let sender = match self.reader.take() {
            Some((task, sender)) => {
                task.abort();
                // Returns once the task is gone, and its EventStream with it.
                let _ = task.await;
                terminal::restore();
                Some(sender)
            }
            None => None,
        };
        let (text, suffix) = (request.text.clone(), request.suffix.clone());
        let edited = tokio::task::spawn_blocking(move || {
            let command = editor::command_from_env()?;
            editor::edit(&command, &text, &suffix)
        })
        .await;
        if sender.is_some() {
            terminal::resume()?;
        }
        redraw()?;
        if let Some(sender) = sender {
            self.reader = Some((read_terminal(sender.clone()), sender));
        }
        Ok(edited.unwrap_or_else(|e| Err(editor::EditorError::NotRun(e))))
    }
}

/// Reads the terminal's events into `tx` until it is aborted or the loop is gone.
fn read_terminal(tx: UnboundedSender<io::Result<TermEvent>>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut stream = EventStream::new();
        while let Some(event) = stream.next().await {
            if tx.send(event).is_err() {
                break;
            }
        }
    })
}

/// The event loop, generic over the terminal backend, with terminal events from a
/// channel, so tests and benchmarks can run it headless. Returns when the engine has
/// exited after the user quit (or `stop` resolved), or when the engine goes away.
pub async fn run_loop<B>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    input: &mut TerminalInput,
    events: &mut EventReceiver,
    ops: &OpSender,
    stop: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
{
    tokio::pin!(stop);
    let mut stopped = false;
    let mut dirty = true;
    let mut urgent = true;
    let mut last_draw: Option<Instant> = None;
    let mut quit_by: Option<Instant> = None;
    loop {
        let now = Instant::now();
        dirty |= app.tick(now);
        if let Some(text) = app.take_clipboard() {
            terminal::copy(&text);
        }
        for op in app.take_ops() {
            if ops.send(op).is_err() {
                return Ok(());
            }
        }
        if let Some(request) = app.take_editor_request() {
            // The editor drew over the screen: the next frame draws all of it.
            let edited = input.run_editor(&request, || Ok(terminal.clear()?)).await?;
            app.editor_done(request, edited);
            dirty = true;
            urgent = true;
            continue;
        }
        if app.quitting() && quit_by.is_none() {
            quit_by = Some(now + SHUTDOWN_WAIT);
        }
        if app.exited() || quit_by.is_some_and(|t| now >= t) {
            return Ok(());
        }
        let frame_due = last_draw.map_or(now, |t| t + FRAME);
        if dirty && !stopped && (urgent || now >= frame_due) {
            terminal.draw(|frame| app.draw(frame))?;
            last_draw = Some(Instant::now());
            dirty = false;
            urgent = false;
        }
        let deadline = [app.next_deadline(), dirty.then_some(frame_due), quit_by]
            .into_iter()
            .flatten()
            .min();
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            event = input.events.recv() => match event {
                Some(Ok(event)) => {
                    app.handle_terminal(event);
                    // Whatever else is already queued (a paste without bracketed paste,
                    // key repeat) is handled before the frame.
                    while let Ok(event) = input.events.try_recv() {
                        app.handle_terminal(event?);
                    }
                    dirty = true;
                    urgent = true;
                }
                Some(Err(e)) => return Err(e.into()),
                None => app.quit(),
            },
            event = events.recv() => match event {
                Some(event) => {
                    app.handle_engine(event);
                    while let Some(event) = events.try_recv() {
                        app.handle_engine(event);
                    }
                    dirty = true;
                }
                None => return Ok(()),
            },
            () = &mut stop, if !stopped => {
                stopped = true;
                app.quit();
            }
            () = sleep => {}
        }
    }
}
