//! The app state: the panes, focus and overlays, fed by engine `Event`s and terminal
//! events, producing `Op`s for the engine. Nothing here does I/O, so tests drive it
//! directly and draw it on a `TestBackend`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use ratatui::layout::{Position, Rect};
use ratatui::text::Line;

use super::editor::{self, EditRequest, EditTarget};
use super::keymap::{Action, Keymap};
use super::panes::chat::{ChatPane, CommandBlocks, Footer, Kind, NOT_IN_CONTEXT};
use super::panes::files::FilesPane;
use super::panes::gauge::GaugePane;
use super::panes::input::InputPane;
use super::panes::map::MapPane;
use super::panes::needed::Needed;
use super::panes::picker::{Outcome, Picker};
use super::panes::review::{self, ReviewPane};
use super::panes::sessions::{Choice, SessionPicker};
use super::panes::{Cx, Effect, Pane, PaneId, help};
use super::theme::Theme;
use super::typing::{self, Letter, Route, Typing};
use crate::engine::input;
use crate::engine::protocol::{
    ChatMode, Command, CommandPurpose, NotAppliedReason, ReviewOp, Shown, ShownKind, thousands,
};
use crate::engine::{Event, Op};
use crate::plural::count;

/// How long after the last keystroke the draft is sent for the live `cur` count.
pub const DRAFT_DEBOUNCE: Duration = Duration::from_millis(50);
/// A second Ctrl-C within this time quits.
pub const QUIT_WINDOW: Duration = Duration::from_millis(1500);
/// How long a status-line message stays.
const FLASH_FOR: Duration = Duration::from_secs(3);
/// Spinner frame time while a reply streams.
const SPIN_EVERY: Duration = Duration::from_millis(100);

/// What the app starts with.
pub struct AppConfig {
    pub theme: Theme,
    pub keymap: Keymap,
    /// Shown in the chat first (a theme or key binding that could not be used, the demo's
    /// introduction).
    pub notices: Vec<(Kind, String)>,
    /// Nothing outlives the workspace (the demo): quitting keeps nothing to resume.
    pub throwaway: bool,
}

/// The six panes.
#[derive(Default)]
pub struct Panes {
    pub input: InputPane,
    pub chat: ChatPane,
    pub files: FilesPane,
    pub map: MapPane,
    pub gauge: GaugePane,
    pub review: ReviewPane,
}

impl Panes {
    /// Each pane's actions: where a key bound twice would clash (`Keymap::from_config`).
    pub fn scopes() -> Vec<&'static [crate::tui::keymap::Action]> {
        let mut panes = Panes::default();
        PaneId::ALL.map(|id| panes.get(id).actions()).to_vec()
    }

    pub fn get(&mut self, id: PaneId) -> &mut dyn Pane {
        match id {
            PaneId::Input => &mut self.input,
            PaneId::Chat => &mut self.chat,
            PaneId::Files => &mut self.files,
            PaneId::Map => &mut self.map,
            PaneId::Gauge => &mut self.gauge,
            PaneId::Review => &mut self.review,
        }
    }
}

pub(crate) enum Overlay {
    /// The help lines and how far they are scrolled.
    Help(Vec<Line<'static>>, usize),
    Picker(Picker),
    /// The `/rewind` timeline.
    Rewind(super::panes::rewind::RewindPicker),
    /// The `/sessions` list.
    Sessions(SessionPicker),
}

/// Where things were drawn, for the mouse.
#[derive(Default)]
pub(crate) struct Hits {
    /// Each pane's outer and inner rectangle.
    pub panes: Vec<(PaneId, Rect, Rect)>,
    pub tabs: Vec<(PaneId, Rect)>,
}

pub struct App {
    pub(crate) theme: Theme,
    pub(crate) keymap: Keymap,
    pub(crate) panes: Panes,
    pub(crate) focus: PaneId,
    pub(crate) overlay: Option<Overlay>,
    pub(crate) root: String,
    pub(crate) model: String,
    pub(crate) mode: ChatMode,
    /// Characters received in the streaming reply, while one streams.
    pub(crate) streaming: Option<usize>,
    /// Why the reply has not started yet (a retry), shown in the status line.
    pub(crate) waiting: Option<String>,
    /// A message was sent and the engine is not idle yet: Esc and Ctrl-C cancel it even
    /// before its reply streams (it may wait for the repo map or a history summary).
    sent: bool,
    /// A reflection was announced: the next turn is the engine's, not the user's.
    reflecting: bool,
    pub(crate) spinner: usize,
    next_spin: Option<Instant>,
    ops: Vec<Op>,
    pub(crate) flash: Option<(String, Instant)>,
    last_interrupt: Option<Instant>,
    quitting: bool,
    /// Quitting was asked for with hunks still to review: the next key decides.
    confirming_quit: bool,
    /// A switch to this session was asked for with hunks still to review: the next key
    /// decides (they stay with the session left).
    confirming_switch: Option<String>,
    /// Nothing outlives the workspace (see `AppConfig`).
    throwaway: bool,
    /// A command waits for the user's yes (what the status line asks): the next key
    /// decides, `y` runs it.
    pub(crate) confirming_command: Option<String>,
    /// A hunk the user's editor left with no text (its id and that text), waiting for a
    /// `y` before it becomes a deletion of the hunk's lines.
    pub(crate) confirming_deletion: Option<(String, String)>,
    /// A bare letter that would spend, add, drop or change a mode, held for the
    /// user's `y` (the typing rule, `typing`).
    asking: Option<Asking>,
    /// The typing rule's memory of the last printable key a pane took.
    typing: Typing,
    /// The keys panes took in the burst under way, for when it turns out to be typing.
    burst: Option<Burst>,
    /// When the last printable key was typed or taken by a pane (answers are not):
    /// a printable key within the typing window of it is typing, never an answer.
    last_printable: Option<Instant>,
    /// The command running now, for the status line.
    pub(crate) running: Option<RunningCommand>,
    exited: bool,
    /// `Event::Ready` came: the next one is a switch to another session.
    ready: bool,
    crashed: Option<String>,
    /// The session the engine saves to (None: it saves none), for the way back.
    session: Option<String>,
    /// What a landing under way when the user quit came to, and the errors said
    /// meanwhile: the chat is gone by then, so `last_words` says it on stderr.
    landed_after_quit: Option<QuitLanding>,
    /// Text to put on the clipboard at the next chance (`take_clipboard`).
    clipboard: Option<String>,
    draft_due: Option<Instant>,
    repo_files: Arc<Vec<String>>,
    pub(crate) hits: Hits,
    /// Text to open in the user's editor, for the loop to run.
    editor: Option<EditRequest>,
    /// The last error or warning the chat got while it was not on screen (the Review
    /// tab at 80x24, the zoomed review): drawn over the bottom of what the user looks
    /// at until the next key.
    pub(crate) aside: Option<Aside>,
}

/// An error or warning shown where the user is, the chat being out of sight.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Aside {
    pub error: bool,
    pub text: String,
}

/// How a landing under way when the user quit ended.
#[derive(Debug, Clone, PartialEq)]
enum QuitLanding {
    /// The account the review gives of it (commit and all).
    Applied(String),
    NotApplied(NotAppliedReason),
}

/// A letter's action waiting for `y`: the letter, the pane, the action, the question.
struct Asking {
    /// What is typed when the answer turns out to be typing: the letter, after the
    /// one before it when that one only moved or looked (`k` of "key").
    letter: String,
    pane: PaneId,
    action: Action,
    question: String,
}

/// Printable keys panes took, each within the typing window of the one before: when
/// the burst turns out to be typing ("All good" in the review), its decisions are
/// taken back and all of it is typed.
struct Burst {
    /// The keys, as typed.
    keys: String,
    /// When the last of them came.
    at: Instant,
    /// The review before the first key of the burst that decided, if one did.
    undo: Option<review::UndoPoint>,
    /// What the burst's last key wrote into the message box (the review's `N`:
    /// `/reject ID `): a key typed right after it, the box unchanged, shows it was
    /// the start of a sentence ("No way"), and the box gets the burst typed instead.
    composed: Option<String>,
}

/// How every question of the status line is answered (see [`App::question`]).
pub(crate) const ANSWER_KEYS: &str = "[y/N]";

/// The most columns of a command the status line shows (the chat has it whole), so
/// that the question's `[y/N]` and the running command's time stay in view.
const STATUS_COMMAND_COLUMNS: usize = 30;

/// A running command as the status line shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunningCommand {
    pub command: String,
    pub last_line: String,
    pub elapsed_ms: u64,
}

impl App {
    pub fn new(config: AppConfig) -> App {
        let mut panes = Panes::default();
        for (kind, text) in config.notices {
            panes.chat.push(kind, text);
        }
        App {
            throwaway: config.throwaway,
            theme: config.theme,
            keymap: config.keymap,
            panes,
            focus: PaneId::Input,
            overlay: None,
            root: String::new(),
            model: String::new(),
            mode: ChatMode::Code,
            streaming: None,
            sent: false,
            waiting: None,
            reflecting: false,
            spinner: 0,
            next_spin: None,
            ops: Vec::new(),
            flash: None,
            last_interrupt: None,
            quitting: false,
            confirming_quit: false,
            confirming_switch: None,
            confirming_command: None,
            confirming_deletion: None,
            asking: None,
            typing: Typing::default(),
            burst: None,
            last_printable: None,
            running: None,
            exited: false,
            ready: false,
            crashed: None,
            session: None,
            landed_after_quit: None,
            clipboard: None,
            draft_due: None,
            repo_files: Arc::new(Vec::new()),
            hits: Hits::default(),
            editor: None,
            aside: None,
        }
    }

    pub fn focus(&self) -> PaneId {
        self.focus
    }

    pub fn panes(&self) -> &Panes {
        &self.panes
    }

    /// The ops produced since the last call, in order.
    pub fn take_ops(&mut self) -> Vec<Op> {
        std::mem::take(&mut self.ops)
    }

    /// Text the user asked to edit in their editor (Ctrl-G, `/editor`, `e` in the
    /// review), taken by the loop, which runs the editor and hands the result to
    /// [`App::editor_done`].
    pub fn take_editor_request(&mut self) -> Option<EditRequest> {
        self.editor.take()
    }

    /// The editor ran on `request`'s text: `edited` is the new text, or why there is
    /// none (then what was edited stays as it was).
    pub fn editor_done(
        &mut self,
        request: EditRequest,
        edited: Result<String, editor::EditorError>,
    ) {
        match (request.target, edited) {
            (EditTarget::Draft, Ok(text)) => {
                self.panes.input.set_text(text.trim_end_matches('\n'));
                self.set_focus(PaneId::Input);
                if self.panes.input.take_changed() {
                    self.draft_due = Some(Instant::now() + DRAFT_DEBOUNCE);
                }
            }
            (EditTarget::Draft, Err(why)) => self
                .panes
                .chat
                .push(Kind::Warning, format!("{why}; the message is unchanged")),
            (EditTarget::Hunk { id }, Ok(text)) if text == request.text => {
                self.flash(format!("hunk {id} unchanged"));
            }
            // An editor that exits 0 with nothing left (a buffer deleted by mistake, a
            // crash that saved nothing) must not delete the lines unasked.
            (EditTarget::Hunk { id }, Ok(new_lines)) if new_lines.trim().is_empty() => {
                self.confirming_deletion = Some((id, new_lines));
            }
            (EditTarget::Hunk { id }, Ok(new_lines)) => self.send_edit(id, new_lines),
            (EditTarget::Hunk { id }, Err(why)) => self
                .panes
                .chat
                .push(Kind::Warning, format!("{why}; hunk {id} is unchanged")),
        }
    }

    /// The user's lines for hunk `id` go to the engine; the review moves on to the next
    /// hunk once they are in (as after `y`).
    fn send_edit(&mut self, id: String, new_lines: String) {
        self.panes.review.reshape();
        self.panes.review.advance_after(id.clone());
        self.set_focus(PaneId::Review);
        self.ops.push(Op::Review(ReviewOp::Edit { id, new_lines }));
    }

    /// The question the status line asks, if one waits for a key: `y` answers yes,
    /// any other key no. Only the question: the status line adds its answer keys
    /// ([`ANSWER_KEYS`]) and cuts the question, never them, to fit.
    pub(crate) fn question(&self) -> Option<String> {
        if let Some(asking) = &self.asking {
            return Some(asking.question.clone());
        }
        if let Some(question) = &self.confirming_command {
            return Some(question.clone());
        }
        if let Some((id, _)) = &self.confirming_deletion {
            return Some(format!(
                "your editor left hunk {id} empty: delete its lines?"
            ));
        }
        if let Some(id) = &self.confirming_switch {
            let what = self.unlanded().unwrap_or_default();
            return Some(format!(
                "switch to session {id}? {what}: kept with this session for tern --resume"
            ));
        }
        if !self.confirming_quit {
            return None;
        }
        if self.applying() {
            return Some(
                "quit? the landing finishes first (cancelled if nothing is written yet)".into(),
            );
        }
        Some(match self.unlanded() {
            Some(what) if self.throwaway => format!("quit? {what}: the demo keeps nothing"),
            Some(what) => format!("quit? {what}: kept for tern --resume"),
            None => "quit?".into(),
        })
    }

    /// The user asked to quit (an `Op::Shutdown` was queued).
    pub fn quitting(&self) -> bool {
        self.quitting
    }

    /// The engine has stopped.
    pub fn exited(&self) -> bool {
        self.exited
    }

    pub fn is_streaming(&self) -> bool {
        self.streaming.is_some()
    }

    pub fn handle_engine(&mut self, event: Event) {
        // Where the engine's text enters the view: nothing it carries may drive the
        // terminal.
        let event = event.visible();
        let said = self.panes.chat.messages().len();
        // What the engine refused or warned of is shown where the user is, when the
        // chat is out of sight (what the app says itself points where to look).
        let feedback = matches!(
            event,
            Event::Error { .. } | Event::Warning { .. } | Event::EditRefused { .. }
        );
        self.on_engine_event(event);
        let chat_shown = self.hits.panes.iter().any(|(id, _, _)| *id == PaneId::Chat);
        if feedback
            && !chat_shown
            && let Some(m) = self.panes.chat.messages().get(said..).and_then(|new| {
                new.iter()
                    .rev()
                    .find(|m| matches!(m.kind, Kind::Error | Kind::Warning))
            })
        {
            self.aside = Some(Aside {
                error: m.kind == Kind::Error,
                text: m.text.clone(),
            });
        }
    }

    /// `event`, made visible, into the panes.
    fn on_engine_event(&mut self, event: Event) {
        let chat = &mut self.panes.chat;
        match event {
            Event::Ready {
                root,
                model,
                mode,
                session,
            } => {
                // Again: the engine went on in another session (`/sessions`), whose
                // conversation follows.
                if self.ready {
                    *chat = ChatPane::default();
                    self.overlay = None;
                }
                self.ready = true;
                self.session = session;
                self.root = root.trim_end_matches('/').to_string();
                self.model = model;
                self.mode = mode;
                self.ops.push(Op::ListRepoFiles);
            }
            Event::TurnStarted { text, notes, .. } => {
                // A reflection turn's message is the engine's, already announced.
                if !std::mem::take(&mut self.reflecting) {
                    if !text.is_empty() {
                        chat.push(Kind::User, text);
                    }
                    for note in notes {
                        chat.push(Kind::Note, note);
                    }
                }
                chat.begin_turn(None, &self.model);
                self.last_interrupt = None;
                self.streaming = Some(0);
                self.next_spin = Some(Instant::now() + SPIN_EVERY);
            }
            Event::Delta { text } => {
                self.waiting = None;
                chat.delta(&text);
                if let Some(n) = &mut self.streaming {
                    *n += text.len();
                }
            }
            Event::Reasoning { text } => chat.reasoning(&text),
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
            } => {
                // Shown in the status line while it lasts; a final failure is in the chat.
                self.waiting = Some(format!(
                    "retry {attempt} in {:.1} s: {reason}",
                    delay_ms as f64 / 1000.0
                ));
            }
            // The gauge shows the request's budget (and the last one's drift); the log
            // has the rest.
            Event::Request { .. } | Event::Drift { .. } => {}
            Event::Continuing { continuation } => chat.push(
                Kind::Notice,
                format!("the reply hit the output limit; continuing it ({continuation})"),
            ),
            Event::TurnFinished {
                reply,
                finish,
                usage,
                usage_estimated,
                cost,
                session_cost,
            } => {
                chat.finish_turn(
                    &reply,
                    Footer::new(&finish, usage.as_ref(), usage_estimated, cost, session_cost),
                );
                self.streaming = None;
                self.waiting = None;
            }
            Event::Needed {
                files,
                more_files,
                commands,
                more_commands,
            } => chat.needed(Needed::new(
                files,
                more_files,
                commands,
                more_commands,
                &self.keymap,
            )),
            Event::TurnFailed { error, message } => {
                self.waiting = None;
                chat.fail_turn();
                chat.push(Kind::Error, error);
                self.streaming = None;
                if self.panes.input.is_empty() && !message.is_empty() {
                    self.panes.input.set_text(&message);
                    self.panes.input.take_changed();
                    self.panes
                        .chat
                        .push(Kind::Notice, "your message is back in the input box");
                }
            }
            Event::Resumed { transcript, unsent } => {
                let inputs = show_transcript(chat, transcript, &self.model);
                chat.push(Kind::Notice, "resumed the saved session");
                self.panes.input.set_history(inputs);
                if let Some(text) = unsent.filter(|_| self.panes.input.is_empty()) {
                    self.panes.input.set_text(&text);
                    self.panes.input.take_changed();
                    chat.push(
                        Kind::Notice,
                        "your message that was never sent is back in the input box",
                    );
                }
            }
            Event::Budget(report) => self.panes.gauge.set_report(*report),
            Event::Files { files } => {
                self.panes
                    .input
                    .set_chat_files(files.iter().map(|f| f.path.clone()).collect());
                self.panes.files.set_files(files);
            }
            Event::Mode { mode } => {
                self.mode = mode;
                let text = match mode {
                    ChatMode::Code => "code mode: replies may propose edits",
                    ChatMode::Ask => "ask mode: replies answer without editing",
                };
                chat.push(Kind::Notice, text);
            }
            Event::Model { model } => {
                chat.push(Kind::Notice, format!("model {model}"));
                self.model = model;
            }
            Event::Output { title, text } => chat.push(Kind::Output { title }, text),
            Event::ReviewPlan(plan) => {
                chat.push(
                    Kind::Output {
                        title: "review plan".into(),
                    },
                    plan.summary(),
                );
                self.panes.review.set_review_plan(*plan);
            }
            // The plan as it was last made: the server may have asked for a smaller one.
            Event::BranchReviewed { plan, .. } => self.panes.review.set_review_plan(*plan),
            Event::Notice { text } => chat.push(Kind::Notice, text),
            Event::Warning { text } => chat.push(Kind::Warning, text),
            Event::Error { text } => {
                chat.push(Kind::Error, text);
                if self.panes.review.status() == Some(&review::Status::Applying) {
                    self.flash("applying failed: see the chat".into());
                }
            }
            Event::Proposal(proposal) => {
                let hunks: usize = proposal.files.iter().map(|f| f.hunks.len()).sum();
                let failures = proposal.failures.len();
                let files = proposal.files.len();
                let fresh = self.panes.review.set_proposal(*proposal);
                if fresh {
                    if hunks > 0 {
                        self.panes.chat.push(
                            Kind::Notice,
                            format!(
                                "the reply proposes {} in {}: review them ({} accept, {} reject, {} apply)",
                                count(hunks, "hunk"),
                                count(files, "file"),
                                self.keymap.describe(Action::Accept),
                                self.keymap.describe(Action::Reject),
                                self.keymap.describe(Action::Apply),
                            ),
                        );
                        self.set_focus(PaneId::Review);
                    }
                    if failures > 0 {
                        self.panes.chat.push(
                            Kind::Error,
                            format!(
                                "{} could not be applied (see Review)",
                                count(failures, "edit block")
                            ),
                        );
                    }
                }
            }
            Event::Reflection {
                attempt,
                max,
                message,
            } => {
                let first = message.lines().next().unwrap_or("").to_string();
                let text = format!("reflection {attempt}/{max}: {first}");
                self.panes.chat.push(Kind::Notice, text.clone());
                self.panes.review.reflection(text);
                self.reflecting = true;
            }
            Event::Applied {
                files,
                accepted,
                rejected,
                commit,
                message,
                ..
            } => {
                let summary =
                    review::applied_summary(&files, accepted, rejected, commit.as_deref(), &message);
                if self.quitting {
                    self.landed_after_quit = Some(QuitLanding::Applied(summary.clone()));
                }
                self.panes.chat.push(Kind::Notice, summary.clone());
                self.panes.review.applied(summary, commit);
                if self.focus == PaneId::Review && !self.panes.review.is_active() {
                    self.set_focus(PaneId::Input);
                }
            }
            // The error or warning before it said why; the proposal stays to decide on.
            Event::NotApplied { reason } => {
                if self.quitting {
                    self.landed_after_quit = Some(QuitLanding::NotApplied(reason));
                }
            }
            // Only `--yes` (`Op::ApplyAllowed`) holds edits back; the workspace asks.
            Event::HeldBack { .. } => {}
            Event::HunkText { id, path, text } => {
                self.editor = Some(EditRequest {
                    target: EditTarget::Hunk { id },
                    text,
                    suffix: editor::suffix_of(&path),
                });
            }
            Event::EditRefused {
                id,
                new_lines,
                reason,
            } => {
                chat.push(
                    Kind::Error,
                    format!(
                        "your edit of hunk {id} was not used: {reason}; {} opens your text again",
                        self.keymap.describe(Action::EditHunk)
                    ),
                );
                self.panes.review.edit_refused(id, new_lines);
            }
            Event::MapProgress { done, total } => self.panes.map.set_progress(done, total),
            Event::Map(map) => {
                self.panes.map.set_map(*map);
                // The "why" of the selected file is asked at once: it is cheap, and the
                // pane shows it next to the ranking.
                self.with_cx(|panes, cx| panes.map.on_focus(cx));
            }
            Event::MapWhy { path, edges } => self.panes.map.set_why(path, edges),
            // The notice after it says what changed; the gauge's report follows.
            Event::MapBudget(_) => {}
            Event::RepoFiles { files } => {
                self.repo_files = Arc::new(files);
                self.panes.input.set_repo_files(Arc::clone(&self.repo_files));
                if let Some(Overlay::Picker(p)) = &mut self.overlay {
                    p.set_files(Arc::clone(&self.repo_files));
                }
            }
            Event::Sessions { sessions, current } => {
                self.overlay = Some(Overlay::Sessions(SessionPicker::new(sessions, current)));
            }
            Event::History(status) => self.panes.gauge.set_history(status),
            Event::Undone { commits } => self.panes.review.undone(&commits),
            Event::Timeline { turns, redo } => {
                self.overlay = Some(Overlay::Rewind(
                    super::panes::rewind::RewindPicker::new(turns, redo),
                ));
            }
            Event::Rewound {
                text, transcript, ..
            } => {
                // The conversation went back: the chat shows it as it is now, not the
                // turns taken back.
                if let Some(transcript) = transcript {
                    chat.clear();
                    let inputs = show_transcript(chat, transcript, &self.model);
                    self.panes.input.set_history(inputs);
                }
                chat.push(Kind::Notice, text);
            }
            Event::Summarized {
                replaced_messages,
                replaced_tokens,
                summary_tokens,
            } => chat.push(
                Kind::Notice,
                format!(
                    "history: {replaced_messages} messages ({replaced_tokens} tokens) summarized in {summary_tokens} tokens"
                ),
            ),
            Event::Idle => {
                // Nothing under way: no reply, no reflection, no landing.
                self.streaming = None;
                self.sent = false;
                self.waiting = None;
                self.reflecting = false;
                self.panes.review.apply_failed();
            }
            Event::ConfirmCommand {
                command,
                purpose,
                reason,
            } => {
                let from = reason.map_or(String::new(), |r| format!(" ({r})"));
                chat.push(
                    Kind::Notice,
                    format!("{} asks to run `{command}`{from}", purpose_label(purpose)),
                );
                // Its letters already went to the box ("rye" typed in a burst, the
                // question after them): the next key typed is no answer either.
                if self.focus == PaneId::Input
                    && self.last_printable.is_some_and(|at| {
                        Instant::now().saturating_duration_since(at) < typing::TYPING_WINDOW
                    })
                {
                    return self.decline_typed_over();
                }
                // Short enough for the status line; where it came from is in the chat.
                self.confirming_command = Some(format!(
                    "run `{}`?",
                    super::text::truncate(&command, STATUS_COMMAND_COLUMNS)
                ));
            }
            Event::CommandStarted {
                command,
                auto_round,
                ..
            } => {
                self.confirming_command = None;
                // A Ctrl-C pressed before (clearing the input) must not make the next
                // one, meant for this command, quit tern.
                self.last_interrupt = None;
                self.flash = None;
                match auto_round {
                    Some((0, _)) => {
                        chat.push(Kind::Notice, "auto-test: the edits landed; running the tests")
                    }
                    Some((round, max)) => chat.push(
                        Kind::Notice,
                        format!("auto-test: running the tests after fix round {round} of {max}"),
                    ),
                    None => {}
                }
                // Only the last command's output can be added, and a command's new
                // output replaces its old one.
                chat.set_command_context(CommandBlocks::Offering, "not in the context");
                chat.set_command_context(CommandBlocks::InContext(&command), "replaced by the run below");
                chat.begin_command(&command);
                self.running = Some(RunningCommand {
                    command: super::text::truncate(&command, STATUS_COMMAND_COLUMNS),
                    last_line: String::new(),
                    elapsed_ms: 0,
                });
                self.next_spin = Some(Instant::now() + SPIN_EVERY);
            }
            Event::CommandProgress {
                text,
                last_line,
                elapsed_ms,
                ..
            } => {
                chat.command_output(&text);
                if let Some(running) = &mut self.running {
                    if !last_line.trim().is_empty() {
                        running.last_line = last_line.trim().to_string();
                    }
                    running.elapsed_ms = elapsed_ms;
                }
            }
            Event::CommandFinished {
                passed,
                outcome,
                lines,
                tokens,
                in_context,
                ..
            } => {
                let cost = format!("≈{} tok", thousands(tokens));
                let context = if in_context {
                    format!("in the context ({cost})")
                } else {
                    format!(
                        "{NOT_IN_CONTEXT}{} or /add-output adds it ({cost})",
                        self.keymap.describe(Action::AddOutput)
                    )
                };
                let text = format!(
                    "{outcome} · {} {} · {context}",
                    thousands(lines),
                    crate::plural::noun_for(lines, "line")
                );
                chat.finish_command(Footer {
                    text,
                    warning: (!passed).then(|| outcome.clone()),
                });
                self.running = None;
            }
            Event::OutputAdded { command, tokens } => chat.set_command_context(
                CommandBlocks::LastOf(&command),
                &format!("in the context (≈{} tok)", thousands(tokens)),
            ),
            Event::OutputDropped { command } => {
                chat.set_command_context(CommandBlocks::InContext(&command), "dropped from the context")
            }
            Event::Crashed { text } => self.crashed = Some(text),
            Event::Exited => self.exited = true,
        }
    }

    /// What the engine said when it stopped on an internal error, to print once the
    /// terminal is restored.
    /// Text the user copied, for the terminal loop to send (OSC 52).
    pub fn take_clipboard(&mut self) -> Option<String> {
        self.clipboard.take()
    }

    /// Whether accepted hunks are being written and committed (quitting then waits
    /// for that, or cancels it before anything is written).
    pub fn applying(&self) -> bool {
        self.panes.review.status() == Some(&review::Status::Applying)
    }

    pub fn crashed(&self) -> Option<&str> {
        self.crashed.as_deref()
    }

    /// What the workspace says once the terminal is restored after it was quit while a
    /// landing ran: whether it committed or wrote nothing, and where the hunks left
    /// are kept. None when no landing ended after the quit.
    pub fn last_words(&self) -> Option<String> {
        let outcome = match self.landed_after_quit.as_ref()? {
            QuitLanding::Applied(summary) => summary.clone(),
            QuitLanding::NotApplied(NotAppliedReason::Cancelled) => {
                "the landing was cancelled before anything was written".to_string()
            }
            // (A failed commit wrote files and put them back: "applied", not "written".)
            QuitLanding::NotApplied(reason) => format!("nothing was applied: {reason}"),
        };
        let t = self.panes.review.tally();
        let left = t.pending + t.accepted;
        let kept = match &self.session {
            _ if left == 0 => return Some(outcome),
            _ if self.throwaway => {
                format!("{} not kept: the demo keeps nothing", count(left, "hunk"))
            }
            Some(id) => format!("{} kept for `tern --resume={id}`", count(left, "hunk")),
            None => format!(
                "{} not kept: this workspace saves no session",
                count(left, "hunk")
            ),
        };
        Some(format!("{outcome}; {kept}"))
    }

    pub fn handle_terminal(&mut self, event: TermEvent) {
        self.handle_terminal_at(event, Instant::now());
    }

    /// A terminal event that arrived at `now` (the typing rule measures the time
    /// between keys with it; tests pass their own instants).
    pub fn handle_terminal_at(&mut self, event: TermEvent, now: Instant) {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key, now),
            TermEvent::Paste(text) => match &mut self.overlay {
                Some(Overlay::Picker(picker)) => {
                    for c in text.chars().filter(|c| !c.is_control()) {
                        let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
                        picker.on_key(&key, &self.keymap, &mut self.ops);
                    }
                }
                _ => {
                    self.overlay = None;
                    self.last_interrupt = None;
                    self.set_focus(PaneId::Input);
                    self.panes.input.paste(&text);
                }
            },
            TermEvent::Mouse(mouse) => self.on_mouse(mouse),
            _ => {}
        }
        if self.panes.input.take_changed() {
            self.draft_due = Some(Instant::now() + DRAFT_DEBOUNCE);
        }
    }

    /// Timed work: the debounced draft, the spinner, expiring messages. Returns true
    /// when the screen changed.
    pub fn tick(&mut self, now: Instant) -> bool {
        let mut changed = false;
        if self.draft_due.is_some_and(|due| now >= due) {
            self.draft_due = None;
            let expanded = self.panes.input.expanded();
            let (draft, mode) = input::draft(&expanded);
            self.ops.push(Op::Draft {
                text: draft.to_string(),
                mode,
            });
        }
        if self.flash.as_ref().is_some_and(|(_, until)| now >= *until) {
            self.flash = None;
            changed = true;
        }
        match self.next_spin {
            Some(at) if self.streaming.is_some() && now >= at => {
                self.spinner = self.spinner.wrapping_add(1);
                self.next_spin = Some(now + SPIN_EVERY);
                changed = true;
            }
            Some(at) if self.running.is_some() && now >= at => {
                self.spinner = self.spinner.wrapping_add(1);
                self.next_spin = Some(now + SPIN_EVERY);
                if let Some(r) = &mut self.running {
                    r.elapsed_ms += SPIN_EVERY.as_millis() as u64;
                }
                changed = true;
            }
            Some(_) if self.streaming.is_none() && self.running.is_none() => self.next_spin = None,
            _ => {}
        }
        changed
    }

    /// When `tick` next has something to do.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        [
            self.draft_due,
            self.flash.as_ref().map(|(_, until)| *until),
            self.next_spin,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn flash(&mut self, text: String) {
        self.flash = Some((text, Instant::now() + FLASH_FOR));
    }

    fn set_focus(&mut self, id: PaneId) {
        if self.focus != id {
            self.focus = id;
            self.with_cx(|panes, cx| panes.get(id).on_focus(cx));
        }
    }

    /// Runs `f` with the panes and a context, then applies the effects it asked for.
    fn with_cx<R>(&mut self, f: impl FnOnce(&mut Panes, &mut Cx<'_>) -> R) -> R {
        let mut effects = Vec::new();
        let result = {
            let mut cx = Cx {
                ops: &mut self.ops,
                effects: &mut effects,
                keymap: &self.keymap,
            };
            f(&mut self.panes, &mut cx)
        };
        for effect in effects {
            match effect {
                Effect::Focus(id) => self.set_focus(id),
                Effect::OpenPicker => self.open_picker(),
                Effect::Flash(text) => self.flash(text),
                Effect::Copy(text) => {
                    let lines = text.lines().count().max(1);
                    self.flash(format!(
                        "copied {} (OSC 52); if nothing arrived, let your terminal write the clipboard (tmux: set -g set-clipboard on)",
                        count(lines, "line")
                    ));
                    self.clipboard = Some(text);
                }
                Effect::Compose(text) => {
                    self.panes.input.set_text(&text);
                    self.set_focus(PaneId::Input);
                }
                Effect::Edit(request) => self.editor = Some(request),
                Effect::Error(text) => self.panes.chat.push(Kind::Error, text),
            }
        }
        result
    }

    fn open_picker(&mut self) {
        if self.repo_files.is_empty() {
            self.ops.push(Op::ListRepoFiles);
        }
        let in_chat = self
            .panes
            .files
            .files()
            .iter()
            .map(|f| f.path.clone())
            .collect();
        self.overlay = Some(Overlay::Picker(Picker::new(
            Arc::clone(&self.repo_files),
            in_chat,
        )));
    }

    fn on_key(&mut self, key: KeyEvent, now: Instant) {
        // The error shown aside was seen.
        self.aside = None;
        // Ctrl-C twice quits only when nothing came between them.
        if !self.keymap.is(&key, Action::Interrupt) {
            self.last_interrupt = None;
        }
        let printable = typing::printable(&key);
        // A key right after another is typing: even a `y` is no answer then ("rye").
        let typing_on = printable.is_some()
            && self
                .last_printable
                .take()
                .is_some_and(|at| now.saturating_duration_since(at) < typing::TYPING_WINDOW);
        let yes = key.code == KeyCode::Char('y') && key.modifiers == KeyModifiers::NONE;
        if let Some(asking) = self.asking.take() {
            self.typing.forget();
            self.burst = None;
            if yes && !typing_on {
                self.with_cx(|panes, cx| panes.get(asking.pane).on_action(asking.action, cx));
                return;
            }
            // Not the answer: the letter was the start of a message.
            if let Some(c) = printable {
                self.last_printable = Some(now);
                self.type_into_box(&format!("{}{c}", asking.letter));
                return;
            }
            if key.code == KeyCode::Esc {
                return;
            }
        }
        if self.confirming_command.take().is_some() {
            if !typing_on {
                self.ops.push(Op::AnswerCommand { run: yes });
                return;
            }
            // Typing goes on: the question goes away and the key is typed.
            self.decline_typed_over();
        }
        if let Some((id, new_lines)) = self.confirming_deletion.take() {
            if key.code == KeyCode::Char('y') && key.modifiers == KeyModifiers::NONE {
                self.send_edit(id, new_lines);
            } else {
                self.flash(format!("hunk {id} kept as it was"));
            }
            return;
        }
        if let Some(id) = self.confirming_switch.take() {
            if yes && !typing_on {
                self.ops.push(Op::SwitchSession {
                    id,
                    keep_pending: true,
                });
                return;
            }
            self.flash("not switching".into());
            // Not the answer: a printable key was the start of a message, and is typed.
            if let Some(c) = printable {
                self.last_printable = Some(now);
                self.type_into_box(&c.to_string());
            }
            return;
        }
        if std::mem::take(&mut self.confirming_quit) {
            if key.code == KeyCode::Char('y') {
                self.quit();
            } else {
                self.flash("not quitting".into());
            }
            return;
        }
        self.on_key_inner(key, now);
        self.sent |= self.ops.iter().any(Op::starts_turn);
        // The reason typed after `N` is sent: back to the review, on the next hunk.
        if let Some(id) = self.ops.iter().find_map(rejected_hunk)
            && self.panes.review.is_active()
        {
            self.panes.review.advance_after(id);
            self.set_focus(PaneId::Review);
        }
        // `/editor [TEXT]` is the front end's: the editor opens on TEXT.
        if let Some(at) = self.ops.iter().position(|op| {
            matches!(
                op,
                Op::Command {
                    command: Command::Editor,
                    ..
                }
            )
        }) && let Op::Command { args, .. } = self.ops.remove(at)
        {
            self.editor = Some(EditRequest {
                target: EditTarget::Draft,
                text: args,
                suffix: ".md".into(),
            });
        }
        // `/sessions ID` typed: switched to as the picker switches (asking first).
        if let Some(at) = self.ops.iter().position(
            |op| matches!(op, Op::Command { command: Command::Sessions, args } if !args.is_empty()),
        ) && let Op::Command { args, .. } = self.ops.remove(at)
        {
            self.switch_typed(args);
        }
        // `/quit` typed with hunks to review asks first, like Ctrl-C twice.
        if let Some(at) = self.ops.iter().position(|op| {
            matches!(
                op,
                Op::Command {
                    command: Command::Quit,
                    ..
                }
            )
        }) && self.unlanded().is_some()
        {
            self.ops.remove(at);
            self.request_quit();
        }
    }

    fn on_key_inner(&mut self, key: KeyEvent, now: Instant) {
        let Some(c) = typing::printable(&key) else {
            self.typing.forget();
            self.burst = None;
            return self.on_other_key(key);
        };
        self.last_printable = Some(now);
        let burst = self
            .burst
            .take()
            .filter(|b| now.saturating_duration_since(b.at) < typing::TYPING_WINDOW);
        // `/` and `@` type from any pane; a popup or the box takes the rest as it is,
        // unless a letter just opened the popup.
        let outside = self.overlay.is_none() && self.focus != PaneId::Input;
        let bound = match outside {
            true => {
                let pane = self.panes.get(self.focus);
                self.keymap.action(&key, pane.actions()).map(typing::letter)
            }
            false => None,
        };
        let route = match outside || self.typing.remembers() {
            true => self.typing.route(c, now, bound),
            false => Route::Pane,
        };
        let leading = self.typing.leading(now);
        // Forgotten unless a pane takes this key too: then `took` needs the key before
        // it, to tell a held key from the start of a word.
        let typing = std::mem::take(&mut self.typing);
        if let Route::Type(text) = route {
            // A popup a letter just opened closes, and what a letter flashed goes
            // ("no failed edit…" from the review's `f` of "fine"): it was typing.
            self.overlay = None;
            self.flash = None;
            // The review's keys were the start of a sentence: what they decided is
            // taken back, and they are typed (a `/` after them is a command's start),
            // in place of what the last of them wrote into the box (`N`'s `/reject`).
            if let Some(burst) = burst.filter(|_| !matches!(c, '/' | '@')) {
                let composed = burst
                    .composed
                    .as_deref()
                    .is_some_and(|text| text == self.panes.input.text());
                if let Some(point) = burst.undo.filter(|_| outside || composed) {
                    if composed {
                        self.panes.input.clear();
                    }
                    self.with_cx(|panes, cx| panes.review.undo(point, cx));
                    return self.type_into_box(&format!("{}{c}", burst.keys));
                }
            }
            return self.type_into_box(&text);
        }
        if self.overlay.is_some() || self.focus == PaneId::Input {
            return self.on_other_key(key);
        }
        let focus = self.focus;
        let pane = self.panes.get(focus);
        let action = self.keymap.action(&key, pane.actions());
        let Some(action) = action else {
            // A letter no key of the pane's: the start of a message.
            return self.type_into_box(&c.to_string());
        };
        let letter = typing::letter(action);
        if letter == Letter::Asks {
            match pane.ask(action) {
                Some(question) => {
                    self.flash = None;
                    self.asking = Some(Asking {
                        letter: leading.into_iter().chain([c]).collect(),
                        pane: focus,
                        action,
                        question,
                    });
                }
                // It would do nothing: it was typing.
                None => self.type_into_box(&c.to_string()),
            }
            return;
        }
        let mut burst = burst.unwrap_or(Burst {
            keys: String::new(),
            at: now,
            undo: None,
            composed: None,
        });
        if burst.undo.is_none() && focus == PaneId::Review && letter == Letter::Decides {
            burst.undo = Some(self.panes.review.undo_point());
        }
        self.on_other_key(key);
        burst.composed = (action == Action::RejectWithReason && self.focus == PaneId::Input)
            .then(|| self.panes.input.text().to_string());
        // Help is read, not typed over: the key after it closes it.
        if action != Action::Help {
            self.typing = typing;
            self.typing.took(c, now, letter);
            burst.keys.push(c);
            burst.at = now;
            self.burst = Some(burst);
        }
    }

    /// A command question overtaken by typing: declined, and said so.
    fn decline_typed_over(&mut self) {
        self.ops.push(Op::AnswerCommand { run: false });
        self.panes.chat.push(
            Kind::Notice,
            "not run: keys were typed into the message box as it asked (ask again, and answer `y` after a pause)",
        );
    }

    /// Types `text` into the message box and focuses it.
    fn type_into_box(&mut self, text: &str) {
        self.set_focus(PaneId::Input);
        for c in text.chars() {
            let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
            self.with_cx(|panes, cx| panes.input.on_key(&key, cx));
        }
    }

    /// A key the typing rule leaves alone: the popup's, the focused pane's, or a global.
    fn on_other_key(&mut self, key: KeyEvent) {
        match &mut self.overlay {
            Some(Overlay::Help(lines, scroll)) => {
                let last = lines.len().saturating_sub(1);
                match key.code {
                    KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                    KeyCode::Down | KeyCode::Char('j') => *scroll = (*scroll + 1).min(last),
                    KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
                    KeyCode::PageDown => *scroll = (*scroll + 10).min(last),
                    _ => self.overlay = None,
                }
                return;
            }
            Some(Overlay::Picker(picker)) => {
                if picker.on_key(&key, &self.keymap, &mut self.ops) == Outcome::Close {
                    self.overlay = None;
                }
                return;
            }
            Some(Overlay::Rewind(picker)) => {
                if picker.on_key(&key, &mut self.ops) == Outcome::Close {
                    self.overlay = None;
                }
                return;
            }
            Some(Overlay::Sessions(picker)) => {
                match picker.on_key(&key) {
                    Choice::Keep => {}
                    Choice::Close => self.overlay = None,
                    Choice::Refused(why) => self.flash(why),
                    Choice::Switch(id) => {
                        self.overlay = None;
                        self.switch_to(id);
                    }
                }
                return;
            }
            None => {}
        }
        if self.keymap.is(&key, Action::Interrupt) {
            self.interrupt();
            return;
        }
        if self.focus == PaneId::Input
            && self.keymap.is(&key, Action::Send)
            && self.panes.input.completion().is_none()
            && self.streaming.is_some()
            && input::parse(&self.panes.input.expanded()).is_ok_and(|op| op.starts_turn())
        {
            self.flash(format!(
                "a reply is streaming: {} interrupts it",
                self.keymap.describe(Action::Cancel)
            ));
            return;
        }
        let focus = self.focus;
        let sent_before = self.ops.len();
        let handled = self.with_cx(|panes, cx| {
            let pane = panes.get(focus);
            if focus == PaneId::Input {
                return pane.on_key(&key, cx);
            }
            match cx.keymap.action(&key, pane.actions()) {
                Some(action) if pane.actions().contains(&action) => pane.on_action(action, cx),
                _ => false,
            }
        });
        // Sending a message follows the stream again, wherever the chat was scrolled.
        if self.ops.iter().skip(sent_before).any(Op::starts_turn) {
            self.panes.chat.follow();
        }
        if handled {
            return;
        }
        match self.keymap.action(&key, &[]) {
            Some(Action::FocusNext) => self.cycle_focus(1),
            Some(Action::FocusPrev) => self.cycle_focus(-1),
            Some(Action::Help) => self.open_help(),
            Some(Action::PageUp) => self.page(-1),
            Some(Action::PageDown) => self.page(1),
            Some(Action::AddOutput) => self.ops.push(Op::AddOutput),
            Some(Action::Cancel) => {
                if self.interruptible() {
                    self.ops.push(Op::Cancel);
                    self.flash(match self.running {
                        Some(_) => "stopping the command…".into(),
                        None => "interrupting the reply…".into(),
                    });
                } else {
                    self.set_focus(PaneId::Input);
                }
            }
            _ => {}
        }
    }

    /// Whether Esc / Ctrl-C has a turn to interrupt: one streaming, or one sent that
    /// waits to start.
    fn interruptible(&self) -> bool {
        self.streaming.is_some() || self.sent || self.running.is_some()
    }

    /// Ctrl-C: interrupt the reply, else clear the input; a second one soon after quits,
    /// but never over text in the message box (it is cleared instead) and never after
    /// another key (`on_key` forgets the first Ctrl-C).
    fn interrupt(&mut self) {
        let now = Instant::now();
        if self.panes.input.is_empty()
            && self
                .last_interrupt
                .is_some_and(|t| now.duration_since(t) < QUIT_WINDOW)
        {
            self.request_quit();
            return;
        }
        self.last_interrupt = Some(now);
        let again = self.keymap.describe(Action::Interrupt);
        if self.interruptible() {
            self.ops.push(Op::Cancel);
            self.flash(format!("interrupted · {again} again quits"));
        } else if !self.panes.input.is_empty() {
            self.panes.input.clear();
            self.flash(format!("input cleared · {again} again quits"));
        } else {
            self.flash(format!("{again} again quits"));
        }
    }

    /// What quitting now would leave unwritten: hunks still to review, and hunks
    /// accepted but not applied (Enter not pressed yet). None when nothing.
    pub(crate) fn unlanded(&self) -> Option<String> {
        let t = self.panes.review.tally();
        match (t.pending, t.accepted) {
            (0, 0) => None,
            (p, 0) => Some(format!("{} to review", count(p, "hunk"))),
            (0, a) => Some(format!("{} accepted, not applied", count(a, "hunk"))),
            (p, a) => Some(format!(
                "{} to review, {a} accepted not applied",
                count(p, "hunk")
            )),
        }
    }

    /// Quits, but asks first when proposed hunks are not written yet (they are saved
    /// with the session either way: `tern --resume` brings them back).
    fn request_quit(&mut self) {
        if self.applying() || self.unlanded().is_some() {
            // The status line asks (`question`).
            self.confirming_quit = true;
            self.flash = None;
        } else {
            self.quit();
        }
    }

    /// `/sessions ID` typed: with hunks to ask about, the id is checked first (it names
    /// a session, not this one, that no other tern holds), so that no question is asked
    /// about a switch that cannot happen; without, the engine checks and says.
    fn switch_typed(&mut self, id: String) {
        if self.unlanded().is_none() {
            return self.switch_to(id);
        }
        let root = std::path::Path::new(&self.root);
        match crate::engine::switch_target(root, &id, self.session.as_deref()) {
            Ok(crate::engine::SwitchTarget::Other(id)) => self.switch_to(id),
            Ok(crate::engine::SwitchTarget::Here(own)) => {
                self.flash(format!("session {own} is the one open here"));
            }
            Err(why) => self.panes.chat.push(Kind::Error, why),
        }
    }

    /// Switches to session `id`, but asks first when proposed hunks are not written
    /// yet (they stay with the session left: `tern --resume` brings them back).
    fn switch_to(&mut self, id: String) {
        match self.unlanded() {
            Some(_) => {
                // The status line asks (`question`).
                self.confirming_switch = Some(id);
                self.flash = None;
            }
            None => self.ops.push(Op::SwitchSession {
                id,
                keep_pending: false,
            }),
        }
    }

    pub fn quit(&mut self) {
        if !self.quitting {
            self.quitting = true;
            self.ops.push(Op::Shutdown);
        }
    }

    fn cycle_focus(&mut self, delta: i32) {
        let order = PaneId::ALL;
        let at = order.iter().position(|p| *p == self.focus).unwrap_or(0) as i32;
        let next = (at + delta).rem_euclid(order.len() as i32) as usize;
        self.set_focus(order[next]);
    }

    fn page(&mut self, direction: i32) {
        let target = if self.focus == PaneId::Input {
            PaneId::Chat
        } else {
            self.focus
        };
        let rows = self
            .hits
            .panes
            .iter()
            .find(|(id, _, _)| *id == target)
            .map_or(10, |(_, _, inner)| inner.height.max(3) as i32 - 2);
        self.panes.get(target).scroll(direction * rows);
    }

    fn open_help(&mut self) {
        let pane = self.panes.get(self.focus);
        let lines = help::lines(
            &pane.title(),
            pane.actions(),
            pane.legend(),
            self.focus == PaneId::Input,
            &self.keymap,
            &self.theme,
        );
        self.overlay = Some(Overlay::Help(lines, 0));
    }

    fn on_mouse(&mut self, mouse: MouseEvent) {
        if self.overlay.is_some() {
            return;
        }
        let at = Position::new(mouse.column, mouse.row);
        let pane = self
            .hits
            .panes
            .iter()
            .find(|(_, outer, _)| outer.contains(at))
            .map(|(id, _, inner)| (*id, *inner));
        match mouse.kind {
            MouseEventKind::ScrollUp => {
                if let Some((id, _)) = pane {
                    self.panes.get(id).scroll(-3);
                }
            }
            MouseEventKind::ScrollDown => {
                if let Some((id, _)) = pane {
                    self.panes.get(id).scroll(3);
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                if let Some((id, _)) = self.hits.tabs.iter().find(|(_, r)| r.contains(at)) {
                    let id = *id;
                    self.set_focus(id);
                    return;
                }
                if let Some((id, inner)) = pane {
                    self.set_focus(id);
                    if inner.contains(at) {
                        let row = at.y - inner.y;
                        self.with_cx(|panes, cx| panes.get(id).click(row, cx));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Who asks to run a command, for the chat line before the question.
fn purpose_label(purpose: CommandPurpose) -> &'static str {
    match purpose {
        CommandPurpose::Run => "/run",
        CommandPurpose::Test => "/test",
        CommandPurpose::Lint => "/lint",
    }
}

/// The hunk a typed `/reject HUNK [REASON]` rejects.
fn rejected_hunk(op: &Op) -> Option<String> {
    match op {
        Op::Command {
            command: Command::Reject,
            args,
        } => args.split_whitespace().next().map(str::to_string),
        _ => None,
    }
}

/// Shows a saved or rewound conversation in the chat; returns the user's messages, which
/// become the message box's history.
fn show_transcript(chat: &mut ChatPane, transcript: Vec<Shown>, model: &str) -> Vec<String> {
    let mut inputs = Vec::new();
    for shown in transcript {
        let kind = match shown.kind {
            ShownKind::User => {
                inputs.push(shown.text.clone());
                Kind::User
            }
            ShownKind::Note => Kind::Note,
            ShownKind::Assistant => Kind::Assistant {
                model: model.to_string(),
            },
            ShownKind::Summary => Kind::Output {
                title: "summary: the model now sees this instead of the conversation above".into(),
            },
        };
        chat.push(kind, shown.text);
    }
    inputs
}
