//! The conversation: user and assistant messages, notices, warnings, errors and command
//! output, with a footer of tokens and cost after each reply.
//!
//! Rendering cost does not grow with the history: each message is laid out once per
//! width (and again only when its text changes), and a frame lays out and draws only
//! the messages it shows. The view is anchored at a (message, line) position, so
//! scrolling never needs the height of the whole history.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::needed::Needed;
use super::{Cx, Draw, Pane};
use crate::engine::Op;
use crate::engine::protocol::{FileMode, Finish, Usage};
use crate::tui::keymap::Action;
use crate::tui::markdown::{self, Blocks};
use crate::tui::text::{self, thousands, wrap};
use crate::tui::theme::Theme;

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    User,
    Assistant {
        model: String,
    },
    Notice,
    Warning,
    Error,
    /// What tern told the model with a message (rejected hunks, failed blocks, an
    /// undone commit): not the user's words, so dimmed and, unless expanded, one line.
    Note,
    /// A command's output (`/tokens`, `/help`), shown as preformatted text.
    Output {
        title: String,
    },
    /// A shell command (`/run`, `/test`, `/lint`): what it prints as it runs, its last
    /// `COMMAND_LINES` lines only (`hidden` counts those scrolled out), then how it
    /// ended in the footer.
    Command {
        command: String,
        hidden: usize,
    },
    /// What the reply above it asked for: files not in the chat, commands to run.
    Needed(Box<Needed>),
}

/// How a command block's footer starts its offer to add the output to the context.
pub const NOT_IN_CONTEXT: &str = "not in the context: ";
/// How a command block's footer says its output is in the context.
pub const IN_CONTEXT: &str = "in the context";

/// Which command blocks `ChatPane::set_command_context` changes.
#[derive(Debug, Clone, Copy)]
pub enum CommandBlocks<'a> {
    /// The last block of this command.
    LastOf(&'a str),
    /// Every block still offering its output (only the last command's can be added).
    Offering,
    /// Every block of this command whose output is in the context.
    InContext(&'a str),
}

/// The most lines of a command's output the chat keeps: the whole of it may be
/// megabytes; the model gets it clipped by tokens, the user its end here.
pub const COMMAND_LINES: usize = 200;

/// A message of the user's longer than this (a paste, mostly) is shown collapsed.
const LONG_MESSAGE_LINES: usize = 20;
/// Lines a collapsed long message still shows.
const COLLAPSED_LINES: usize = 3;

impl Kind {
    /// Notes and long messages of the user's are shown in part until expanded.
    fn collapses(&self) -> bool {
        matches!(self, Kind::Note | Kind::User)
    }

    /// Small messages follow each other without a blank line between them.
    fn is_small(&self) -> bool {
        matches!(
            self,
            Kind::Notice | Kind::Warning | Kind::Error | Kind::Note
        )
    }
}

/// The line under a reply: what it cost and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Footer {
    pub text: String,
    /// Set when the reply did not end normally.
    pub warning: Option<String>,
}

impl Footer {
    /// `estimated`: `usage` is tern's count (the server reported none, or one no
    /// tokenizer gives).
    pub fn new(
        finish: &Finish,
        usage: Option<&Usage>,
        estimated: bool,
        cost: f64,
        session_cost: f64,
    ) -> Footer {
        let approx = if estimated { "≈" } else { "" };
        let tokens = match usage {
            Some(u) if u.cached_tokens > 0 => format!(
                "↑ {} prompt ({} cached) · ↓ {} completion",
                thousands(u.prompt_tokens),
                thousands(u.cached_tokens),
                thousands(u.completion_tokens)
            ),
            Some(u) => format!(
                "↑ {approx}{} prompt · ↓ {approx}{} completion{}",
                thousands(u.prompt_tokens),
                thousands(u.completion_tokens),
                if estimated { " (estimated)" } else { "" }
            ),
            None => "the server reported no usage".to_string(),
        };
        let warning = finish.incomplete();
        Footer {
            text: format!("{tokens} · ${cost:.4} · session ${session_cost:.4}"),
            warning,
        }
    }
}

pub struct Message {
    pub kind: Kind,
    pub text: String,
    /// Reasoning streamed separately by models that do so.
    pub reasoning: String,
    pub footer: Option<Footer>,
    pub streaming: bool,
    gap: bool,
    /// A note shown in full rather than as its first line.
    expanded: bool,
    /// Bumped on every change; the layout cache compares it.
    version: u64,
    layout: Option<Layout>,
    blocks: Blocks,
}

struct Layout {
    width: u16,
    version: u64,
    lines: Vec<Line<'static>>,
}

impl Message {
    fn new(kind: Kind, text: String) -> Message {
        Message {
            kind,
            text,
            reasoning: String::new(),
            footer: None,
            streaming: false,
            gap: true,
            expanded: false,
            version: 0,
            layout: None,
            blocks: Blocks::default(),
        }
    }

    fn touch(&mut self) {
        self.version += 1;
    }
}

/// A scroll request, applied at the next frame (when the width is known).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Jump {
    Top,
    Bottom,
    /// The start of this message.
    Message(usize),
}

/// What `y` and `c` copy when the user picked something with `{` / `}`: a message, or
/// one of its code blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Selection {
    message: usize,
    block: Option<usize>,
}

pub struct ChatPane {
    messages: Vec<Message>,
    /// Keep the newest line in view.
    follow: bool,
    /// The first line shown: (message, line within its layout).
    top: (usize, usize),
    pending_scroll: i64,
    jump: Option<Jump>,
    /// Rows in the last frame, for page sizes.
    page: u16,
    /// Notes to the model are shown in full.
    notes_expanded: bool,
    /// Files the user left out of a "needs" row: not offered again this session.
    declined: std::collections::HashSet<String>,
    /// The message or code block `y` / `c` copy; None: the last reply.
    selection: Option<Selection>,
}

impl Default for ChatPane {
    fn default() -> Self {
        ChatPane {
            messages: Vec::new(),
            follow: true,
            top: (0, 0),
            pending_scroll: 0,
            jump: None,
            page: 10,
            notes_expanded: false,
            declined: Default::default(),
            selection: None,
        }
    }
}

impl ChatPane {
    pub fn push(&mut self, kind: Kind, text: impl Into<String>) {
        let gap = match self.messages.last() {
            // The row under a reply belongs to it.
            Some(_) if matches!(kind, Kind::Needed(_)) => false,
            Some(last) => !(kind.is_small() && last.kind.is_small()),
            None => false,
        };
        let mut message = Message::new(kind, text.into());
        message.gap = gap;
        message.expanded = self.notes_expanded;
        self.messages.push(message);
    }

    /// Forgets every message (the conversation was rewound), keeping the session's
    /// choices: files left out, notes expanded.
    pub(crate) fn clear(&mut self) {
        *self = ChatPane {
            declined: std::mem::take(&mut self.declined),
            notes_expanded: self.notes_expanded,
            ..ChatPane::default()
        };
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// A turn began: the user's message (none for the engine's own turns) and an empty
    /// reply that streams in.
    pub(crate) fn begin_turn(&mut self, user_text: Option<&str>, model: &str) {
        self.retire_needed();
        if let Some(text) = user_text {
            self.push(Kind::User, text);
        }
        self.push(
            Kind::Assistant {
                model: model.to_string(),
            },
            "",
        );
        if let Some(reply) = self.messages.last_mut() {
            reply.streaming = true;
        }
    }

    /// The files and commands the last reply asked for; earlier rows stay, without
    /// their keys.
    /// Files the user left out before are not offered again.
    pub fn needed(&mut self, mut needed: Needed) {
        self.retire_needed();
        needed.drop_files(&self.declined);
        if needed.files.is_empty() && needed.commands.is_empty() {
            return;
        }
        self.push(Kind::Needed(Box::new(needed)), "");
    }

    fn retire_needed(&mut self) {
        if let Some(m) = self.active_needed_message() {
            if let Kind::Needed(n) = &mut m.kind {
                n.active = false;
            }
            m.touch();
        }
    }

    fn active_needed_message(&mut self) -> Option<&mut Message> {
        self.messages
            .iter_mut()
            .rev()
            .find(|m| matches!(&m.kind, Kind::Needed(n) if n.active))
    }

    /// An action on the last reply's row: adds its files or picks a command.
    fn act_on_needed(&mut self, action: Action, cx: &mut Cx<'_>) {
        let Some(message) = self.active_needed_message() else {
            cx.effect(super::Effect::Flash(
                "the last reply named no files outside the chat and no commands".into(),
            ));
            return;
        };
        let Kind::Needed(needed) = &mut message.kind else {
            return;
        };
        let mode = match action {
            Action::AddNeededReadOnly => Some(FileMode::ReadOnly),
            Action::AddNeededEditable => Some(FileMode::Editable),
            _ => None,
        };
        let mut left_out = None;
        match (action, mode) {
            (_, Some(_)) if needed.files.is_empty() => cx.effect(super::Effect::Flash(
                "the last reply named no files outside the chat".into(),
            )),
            (_, Some(_)) if needed.picked().next().is_none() => cx.effect(super::Effect::Flash(
                "every file of the row is left out".into(),
            )),
            (_, Some(mode)) => cx.send(Op::AddNeeded {
                paths: needed.paths(),
                mode,
            }),
            (Action::RunCommand, None) => match needed.selected_command() {
                // The engine asks before it runs what the model suggested.
                Some(command) => cx.send(Op::RunSuggested {
                    command: command.to_string(),
                }),
                None => cx.effect(super::Effect::Flash(
                    "the last reply suggested no commands".into(),
                )),
            },
            (Action::NextCommand, None) => needed.select(1),
            (Action::PrevCommand, None) => needed.select(-1),
            (Action::LeaveOutFile, None) => match needed.toggle_selected_file() {
                Some(toggled) => left_out = Some(toggled),
                None => cx.effect(super::Effect::Flash(format!(
                    "{} leaves out a file: select one with {} {}",
                    cx.keymap.describe(Action::LeaveOutFile),
                    cx.keymap.describe(Action::PrevCommand),
                    cx.keymap.describe(Action::NextCommand),
                ))),
            },
            _ => {}
        }
        message.touch();
        match left_out {
            Some((path, true)) => self.declined.insert(path),
            Some((path, false)) => self.declined.remove(&path),
            None => false,
        };
    }

    /// What can be copied, in order: each message with text, each followed by the
    /// code blocks of a reply.
    fn copyable(&self) -> Vec<Selection> {
        let mut out = Vec::new();
        for (i, m) in self.messages.iter().enumerate() {
            if m.text.trim().is_empty() || matches!(m.kind, Kind::Needed(_)) {
                continue;
            }
            out.push(Selection {
                message: i,
                block: None,
            });
            if matches!(m.kind, Kind::Assistant { .. }) {
                let blocks = markdown::code_blocks(&m.text).len();
                out.extend((0..blocks).map(|b| Selection {
                    message: i,
                    block: Some(b),
                }));
            }
        }
        out
    }

    /// Moves the selection `delta` items (from the newest when there is none) and
    /// brings its message into view.
    fn select(&mut self, delta: i32) {
        let items = self.copyable();
        let Some(last) = items.len().checked_sub(1) else {
            return;
        };
        let at = match self
            .selection
            .and_then(|s| items.iter().position(|i| *i == s))
        {
            Some(at) => (at as i64 + delta as i64).clamp(0, last as i64) as usize,
            None if delta < 0 => last,
            None => return,
        };
        self.selection = Some(items[at]);
        self.jump = Some(Jump::Message(items[at].message));
    }

    /// The text `y` (or `c`, `code`) copies: the selection, else the last reply; `c`
    /// takes the selected code block, else the last one of the message.
    fn copied(&self, code: bool) -> Option<String> {
        let (message, block) = match self.selection {
            Some(s) => (self.messages.get(s.message)?, s.block),
            None => (
                self.messages
                    .iter()
                    .rev()
                    .find(|m| matches!(m.kind, Kind::Assistant { .. }) && !m.text.is_empty())?,
                None,
            ),
        };
        match (block, code) {
            (Some(b), _) => markdown::code_blocks(&message.text).into_iter().nth(b),
            (None, true) => markdown::code_blocks(&message.text).pop(),
            (None, false) => Some(message.text.clone()),
        }
    }

    /// The selection as the chat's corner says it.
    fn selection_badge(&self) -> Option<String> {
        let s = self.selection?;
        let messages = self.copyable().iter().filter(|i| i.block.is_none()).count();
        let n = self
            .copyable()
            .iter()
            .filter(|i| i.block.is_none() && i.message <= s.message)
            .count();
        Some(match s.block {
            Some(b) => format!(
                " code block {} of message {n}/{messages} · y copies it ",
                b + 1
            ),
            None => format!(" message {n}/{messages} · y copies it, c its last code block "),
        })
    }

    fn streaming_reply(&mut self) -> Option<&mut Message> {
        self.messages.iter_mut().rev().find(|m| m.streaming)
    }

    pub fn is_streaming(&self) -> bool {
        self.messages.iter().rev().any(|m| m.streaming)
    }

    pub fn delta(&mut self, text: &str) {
        if let Some(reply) = self.streaming_reply() {
            reply.text.push_str(text);
            reply.touch();
        }
    }

    pub fn reasoning(&mut self, text: &str) {
        if let Some(reply) = self.streaming_reply() {
            reply.reasoning.push_str(text);
            reply.touch();
        }
    }

    /// The reply is complete: its final text (authoritative) and footer.
    pub(crate) fn finish_turn(&mut self, reply_text: &str, footer: Footer) {
        if let Some(reply) = self.streaming_reply() {
            reply.text = reply_text.to_string();
            reply.footer = Some(footer);
            reply.streaming = false;
            reply.touch();
        }
    }

    /// A command started: its block, empty until it prints.
    pub(crate) fn begin_command(&mut self, command: &str) {
        self.push(
            Kind::Command {
                command: command.to_string(),
                hidden: 0,
            },
            "",
        );
    }

    fn running_command(&mut self) -> Option<&mut Message> {
        self.messages
            .iter_mut()
            .rev()
            .find(|m| matches!(m.kind, Kind::Command { .. }) && m.footer.is_none())
    }

    /// More output of the running command; only its last `COMMAND_LINES` lines stay.
    pub(crate) fn command_output(&mut self, text: &str) {
        let Some(m) = self.running_command() else {
            return;
        };
        m.text.push_str(text);
        let lines = m.text.split_inclusive('\n').count();
        if lines > COMMAND_LINES
            && let Kind::Command { hidden, .. } = &mut m.kind
        {
            let cut = lines - COMMAND_LINES;
            let rest: String = m.text.split_inclusive('\n').skip(cut).collect();
            m.text = rest;
            *hidden += cut;
        }
        m.touch();
    }

    /// The running command ended: how, in its footer.
    pub(crate) fn finish_command(&mut self, footer: Footer) {
        if let Some(m) = self.running_command() {
            m.footer = Some(footer);
            m.touch();
        }
    }

    /// Says where a command block's output stands now: the part of its footer after
    /// the last ` · ` (how it ended comes before) becomes `said`. `which` picks the
    /// blocks: the last one of a command, or every earlier one still offering its output.
    pub(crate) fn set_command_context(&mut self, which: CommandBlocks<'_>, said: &str) {
        let mut matching = self.messages.iter_mut().rev().filter(|m| {
            let Kind::Command { command, .. } = &m.kind else {
                return false;
            };
            let context = m
                .footer
                .as_ref()
                .and_then(|f| f.text.rsplit_once(" · "))
                .map_or("", |(_, context)| context);
            match which {
                CommandBlocks::LastOf(wanted) => command == wanted,
                CommandBlocks::Offering => context.starts_with(NOT_IN_CONTEXT),
                CommandBlocks::InContext(wanted) => {
                    command == wanted && context.starts_with(IN_CONTEXT)
                }
            }
        });
        let take = match which {
            CommandBlocks::LastOf(_) => 1,
            CommandBlocks::Offering | CommandBlocks::InContext(_) => usize::MAX,
        };
        for m in matching.by_ref().take(take) {
            if let Some(footer) = &mut m.footer
                && let Some((how, _)) = footer.text.rsplit_once(" · ")
            {
                footer.text = format!("{how} · {said}");
                m.touch();
            }
        }
    }

    /// The turn failed: an empty reply disappears, a partial one stays.
    pub(crate) fn fail_turn(&mut self) {
        if let Some(i) = self.messages.iter().rposition(|m| m.streaming) {
            if self.messages[i].text.is_empty() && self.messages[i].reasoning.is_empty() {
                self.messages.remove(i);
                self.selection = None;
                self.top.0 = self.top.0.min(self.messages.len().saturating_sub(1));
            } else {
                self.messages[i].streaming = false;
                self.messages[i].touch();
            }
        }
    }

    pub fn is_following(&self) -> bool {
        self.follow
    }

    /// Back to the bottom, following what streams in (the user sent a message).
    pub(crate) fn follow(&mut self) {
        self.jump = Some(Jump::Bottom);
    }

    fn height(&mut self, i: usize, width: u16, theme: &Theme) -> usize {
        self.lines(i, width, theme).len()
    }

    fn lines(&mut self, i: usize, width: u16, theme: &Theme) -> &[Line<'static>] {
        let message = &mut self.messages[i];
        let fresh = message
            .layout
            .as_ref()
            .is_some_and(|l| l.width == width && l.version == message.version);
        if !fresh {
            let lines = layout(message, width as usize, theme);
            message.layout = Some(Layout {
                width,
                version: message.version,
                lines,
            });
        }
        &message.layout.as_ref().expect("just laid out").lines
    }

    /// The top position that shows the last line at the bottom of `height` rows.
    fn bottom_top(&mut self, width: u16, height: usize, theme: &Theme) -> (usize, usize) {
        let mut remaining = height;
        for i in (0..self.messages.len()).rev() {
            let h = self.height(i, width, theme);
            if h >= remaining {
                return (i, h - remaining);
            }
            remaining -= h;
        }
        (0, 0)
    }

    fn move_up(
        &mut self,
        mut pos: (usize, usize),
        mut n: usize,
        width: u16,
        theme: &Theme,
    ) -> (usize, usize) {
        while n > 0 {
            if pos.1 >= n {
                pos.1 -= n;
                break;
            }
            if pos.0 == 0 {
                pos.1 = 0;
                break;
            }
            n -= pos.1 + 1;
            pos.0 -= 1;
            pos.1 = self.height(pos.0, width, theme).saturating_sub(1);
        }
        pos
    }

    fn move_down(
        &mut self,
        mut pos: (usize, usize),
        mut n: usize,
        width: u16,
        theme: &Theme,
    ) -> (usize, usize) {
        while n > 0 && pos.0 < self.messages.len() {
            let h = self.height(pos.0, width, theme);
            let left = h.saturating_sub(pos.1 + 1);
            if left >= n {
                pos.1 += n;
                break;
            }
            if pos.0 + 1 >= self.messages.len() {
                pos.1 = h.saturating_sub(1);
                break;
            }
            n -= left + 1;
            pos = (pos.0 + 1, 0);
        }
        pos
    }

    fn welcome(area: Rect, buf: &mut Buffer, theme: &Theme) {
        let lines = [
            Line::styled(
                "tern",
                Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD),
            ),
            Line::styled(
                "Ask for a change, or a question about the code.",
                theme.dim(),
            ),
            Line::default(),
            Line::styled(
                "/ commands   @ mention a file   Tab next pane   ? keys",
                theme.dim(),
            ),
        ];
        let top = area.y + area.height.saturating_sub(lines.len() as u16) / 2;
        for (i, line) in lines.iter().enumerate() {
            let w = line.width() as u16;
            let x = area.x + area.width.saturating_sub(w) / 2;
            if top + (i as u16) < area.bottom() {
                buf.set_line(x, top + i as u16, line, area.width);
            }
        }
    }
}

impl Pane for ChatPane {
    fn title(&self) -> String {
        "Chat".into()
    }

    fn actions(&self) -> &'static [Action] {
        &[
            Action::Up,
            Action::Down,
            Action::Top,
            Action::Bottom,
            Action::ToggleNotes,
            Action::CopyReply,
            Action::CopyCode,
            Action::SelectPrevMessage,
            Action::SelectNextMessage,
            Action::FocusInput,
            Action::AddNeededReadOnly,
            Action::AddNeededEditable,
            Action::RunCommand,
            Action::NextCommand,
            Action::PrevCommand,
            Action::LeaveOutFile,
        ]
    }

    fn ask(&self, action: Action) -> Option<String> {
        let needed = self.messages.iter().rev().find_map(|m| match &m.kind {
            Kind::Needed(n) if n.active => Some(n),
            _ => None,
        })?;
        let mode = match action {
            Action::AddNeededReadOnly => "read-only",
            Action::AddNeededEditable => "editable",
            _ => return None,
        };
        let picked = needed.picked().count();
        if picked == 0 {
            return None;
        }
        let tokens: usize = needed.picked().map(|f| f.tokens).sum();
        Some(format!(
            "add {} {mode}, {} tok, and ask again?",
            crate::plural::count(picked, "file"),
            crate::tui::text::thousands(tokens)
        ))
    }

    fn on_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool {
        match action {
            Action::Up => self.scroll(-1),
            Action::Down => self.scroll(1),
            Action::Top => self.jump = Some(Jump::Top),
            Action::Bottom => {
                // Back to the newest: `y` copies the last reply again.
                self.selection = None;
                self.jump = Some(Jump::Bottom);
            }
            Action::ToggleNotes => {
                self.notes_expanded = !self.notes_expanded;
                let expanded = self.notes_expanded;
                for m in self.messages.iter_mut().filter(|m| m.kind.collapses()) {
                    m.expanded = expanded;
                    m.touch();
                }
            }
            Action::CopyReply | Action::CopyCode => {
                let text = self.copied(action == Action::CopyCode);
                cx.effect(match text {
                    Some(text) => super::Effect::Copy(text),
                    None => super::Effect::Flash("nothing to copy yet".into()),
                });
            }
            Action::SelectPrevMessage => self.select(-1),
            Action::SelectNextMessage => self.select(1),
            Action::FocusInput => cx.effect(super::Effect::Focus(super::PaneId::Input)),
            Action::AddNeededReadOnly
            | Action::AddNeededEditable
            | Action::RunCommand
            | Action::NextCommand
            | Action::PrevCommand
            | Action::LeaveOutFile => self.act_on_needed(action, cx),
            _ => return false,
        }
        true
    }

    fn scroll(&mut self, lines: i32) {
        self.pending_scroll += lines as i64;
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        self.page = area.height;
        if area.width == 0 || area.height == 0 {
            return;
        }
        if self.messages.is_empty() {
            ChatPane::welcome(area, buf, theme);
            return;
        }
        let (width, height) = (area.width, area.height as usize);
        match self.jump.take() {
            Some(Jump::Top) => {
                self.follow = false;
                self.top = (0, 0);
                self.pending_scroll = 0;
            }
            Some(Jump::Bottom) => {
                self.follow = true;
                self.pending_scroll = 0;
            }
            Some(Jump::Message(i)) => {
                self.follow = false;
                self.pending_scroll = 0;
                let gap = self.messages.get(i).is_some_and(|m| m.gap);
                self.top = (i, usize::from(gap));
            }
            None => {}
        }
        let bottom = self.bottom_top(width, height, theme);
        if self.follow {
            self.top = bottom;
        }
        let scroll = std::mem::take(&mut self.pending_scroll);
        if scroll < 0 {
            self.follow = false;
            self.top = self.move_up(self.top, scroll.unsigned_abs() as usize, width, theme);
        } else if scroll > 0 {
            self.top = self.move_down(self.top, scroll as usize, width, theme);
        }
        self.top.0 = self.top.0.min(self.messages.len() - 1);
        if self.top >= bottom {
            self.follow = true;
            self.top = bottom;
        }
        let (mut i, mut line) = self.top;
        let mut y = 0;
        let selected = self.selection;
        while y < height && i < self.messages.len() {
            // The selected message's first line is marked.
            let marked = selected
                .filter(|s| s.message == i)
                .map(|_| usize::from(self.messages[i].gap));
            let lines = self.lines(i, width, theme);
            for (n, l) in lines.iter().enumerate().skip(line) {
                if y >= height {
                    break;
                }
                buf.set_line(area.x, area.y + y as u16, l, width);
                if marked == Some(n) {
                    buf.set_style(
                        Rect::new(area.x, area.y + y as u16, width, 1),
                        theme.selected(),
                    );
                }
                y += 1;
            }
            i += 1;
            line = 0;
        }
        if let Some(badge) = self.selection_badge() {
            let badge = text::truncate(&badge, area.width as usize);
            buf.set_string(
                area.x,
                area.bottom() - 1,
                &badge,
                Style::new().fg(theme.c.bg).bg(theme.c.accent),
            );
        }
        if !self.follow {
            let badge = " ↓ more below · pgdn ";
            let w = text::width(badge) as u16;
            if area.width > w {
                buf.set_string(
                    area.right() - w,
                    area.bottom() - 1,
                    badge,
                    Style::new().fg(theme.c.bg).bg(theme.c.accent),
                );
            }
        }
    }
}

/// One message as lines of `width` columns, with its leading blank line if it has one.
fn layout(m: &mut Message, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if m.gap {
        out.push(Line::default());
    }
    let plain = |text: &str, style: Style| -> Vec<Span<'static>> {
        vec![Span::styled(text.to_string(), style)]
    };
    match &m.kind {
        Kind::User => {
            let bar = Span::styled("▌ ", Style::new().fg(theme.c.user));
            let style = Style::new().fg(theme.c.user).add_modifier(Modifier::BOLD);
            // A long paste is sent whole but shown in part, so it does not bury the chat.
            let lines = text::line_count(&m.text);
            let collapsed = !m.expanded && lines > LONG_MESSAGE_LINES;
            let shown = if collapsed { COLLAPSED_LINES } else { lines };
            for line in m.text.split('\n').take(shown) {
                out.extend(wrap(
                    &plain(line, style),
                    width,
                    std::slice::from_ref(&bar),
                    std::slice::from_ref(&bar),
                ));
            }
            if collapsed {
                out.extend(wrap(
                    &plain(
                        &format!("[pasted {lines} lines, sent in full; n shows them all]"),
                        theme.dim(),
                    ),
                    width,
                    std::slice::from_ref(&bar),
                    std::slice::from_ref(&bar),
                ));
            }
        }
        Kind::Assistant { model } => {
            out.push(Line::from(vec![
                Span::styled("◆ ", Style::new().fg(theme.c.assistant)),
                Span::styled(
                    model.clone(),
                    Style::new()
                        .fg(theme.c.assistant)
                        .add_modifier(Modifier::BOLD),
                ),
            ]));
            if !m.reasoning.is_empty() {
                let style = Style::new().fg(theme.c.dim).add_modifier(Modifier::ITALIC);
                let bar = Span::styled("┊ ", theme.dim());
                for line in m.reasoning.trim_end().split('\n') {
                    out.extend(wrap(
                        &plain(line, style),
                        width,
                        std::slice::from_ref(&bar),
                        std::slice::from_ref(&bar),
                    ));
                }
            }
            if m.text.is_empty() && m.streaming {
                out.push(Line::styled("…", theme.dim()));
            } else {
                out.extend(markdown::render_blocks(
                    &m.text,
                    width,
                    theme,
                    &mut m.blocks,
                ));
            }
            if let Some(footer) = &m.footer {
                if let Some(warning) = &footer.warning {
                    let style = Style::new().fg(theme.c.warning);
                    out.extend(wrap(
                        &plain(warning, style),
                        width,
                        &[Span::styled("⚠ ", style)],
                        &[Span::raw("  ")],
                    ));
                }
                out.extend(wrap(&plain(&footer.text, theme.dim()), width, &[], &[]));
            }
        }
        Kind::Notice => out.extend(marked(
            &m.text,
            "· ",
            Style::new().fg(theme.c.notice),
            width,
        )),
        Kind::Warning => out.extend(marked(
            &m.text,
            "⚠ ",
            Style::new().fg(theme.c.warning),
            width,
        )),
        Kind::Error => out.extend(marked(&m.text, "✗ ", Style::new().fg(theme.c.error), width)),
        Kind::Note => {
            let style = theme.dim().add_modifier(Modifier::ITALIC);
            let lines = m.text.trim_end().lines().count();
            let text = match (m.expanded, m.text.trim_end().lines().next()) {
                (false, Some(first)) if lines > 1 => {
                    format!("note to the model: {first} (+{} lines)", lines - 1)
                }
                _ => format!("note to the model: {}", m.text.trim_end()),
            };
            out.extend(marked(&text, "↳ ", style, width));
        }
        Kind::Command { command, hidden } => {
            let head = Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD);
            out.extend(wrap(
                &plain(command, head),
                width,
                &[Span::styled("$ ", head)],
                &[Span::raw("  ")],
            ));
            if *hidden > 0 {
                out.push(Line::styled(
                    format!("  … {} earlier lines not shown", thousands(*hidden)),
                    theme.dim(),
                ));
            }
            let text = m.text.strip_suffix('\n').unwrap_or(&m.text);
            if !text.is_empty() {
                for line in text.split('\n') {
                    out.extend(wrap(
                        &plain(line, Style::new().fg(theme.c.fg)),
                        width,
                        &[Span::styled("│ ", theme.dim())],
                        &[Span::styled("│ ", theme.dim())],
                    ));
                }
            }
            match &m.footer {
                Some(footer) => {
                    let style = match &footer.warning {
                        Some(_) => Style::new().fg(theme.c.warning),
                        None => theme.dim(),
                    };
                    out.extend(wrap(
                        &plain(&footer.text, style),
                        width,
                        &[Span::raw("  ")],
                        &[Span::raw("  ")],
                    ));
                }
                None => out.push(Line::styled("  running…", theme.dim())),
            }
        }
        Kind::Needed(needed) => out.extend(needed.lines(width, theme)),
        Kind::Output { title } => {
            out.push(Line::styled(
                format!("▸ {title}"),
                Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD),
            ));
            // `/diff` and `/show` are coloured as the review colours a diff.
            let diff = title == "diff" || title.starts_with("commit ");
            for line in m.text.trim_end().split('\n') {
                let style = match diff {
                    true => diff_style(line, theme),
                    false => Style::new().fg(theme.c.fg),
                };
                out.extend(wrap(
                    &plain(line, style),
                    width,
                    &[Span::raw("  ")],
                    &[Span::raw("  ")],
                ));
            }
        }
    }
    text::mark_hidden_lines(&mut out, theme.hidden_marker());
    out
}

/// How a line of a unified diff is coloured: added and removed lines as in the review,
/// hunk headers in the accent, file headers bold.
fn diff_style(line: &str, theme: &Theme) -> Style {
    let header = ["diff --git", "--- ", "+++ ", "index "];
    if header.iter().any(|h| line.starts_with(h)) {
        Style::new().fg(theme.c.fg).add_modifier(Modifier::BOLD)
    } else if line.starts_with("@@") {
        Style::new().fg(theme.c.accent)
    } else if line.starts_with('+') {
        Style::new().fg(theme.c.added)
    } else if line.starts_with('-') {
        Style::new().fg(theme.c.removed)
    } else {
        Style::new().fg(theme.c.fg)
    }
}

fn marked(text: &str, mark: &'static str, style: Style, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (n, line) in text.trim_end().split('\n').enumerate() {
        let first = if n == 0 {
            Span::styled(mark, style)
        } else {
            Span::raw("  ")
        };
        out.extend(wrap(
            &[Span::styled(line.to_string(), style)],
            width,
            &[first],
            &[Span::raw("  ")],
        ));
    }
    out
}
