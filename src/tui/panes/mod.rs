//! The panes: each owns its state, answers the actions of its scope, and draws itself
//! inside the frame the app gives it.

pub mod budget_control;
pub mod chat;
pub mod files;
pub mod gauge;
pub mod help;
pub mod input;
pub mod map;
pub mod needed;
pub mod picker;
pub mod review;
pub mod rewind;
pub mod sessions;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::keymap::{Action, Keymap};
use super::theme::Theme;
use crate::engine::Op;

/// The panes, in focus order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaneId {
    Input,
    Chat,
    Files,
    Map,
    Gauge,
    Review,
}

impl PaneId {
    pub const ALL: [PaneId; 6] = [
        PaneId::Input,
        PaneId::Chat,
        PaneId::Files,
        PaneId::Map,
        PaneId::Gauge,
        PaneId::Review,
    ];
}

/// What a pane asks of the app besides sending ops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Focus(PaneId),
    OpenPicker,
    /// A short message in the status line.
    Flash(String),
    /// Put this text in the message box and focus it, for the user to finish.
    Compose(String),
    /// Open the user's editor on this text.
    Edit(super::editor::EditRequest),
    /// Put this text on the clipboard.
    Copy(String),
    /// Show an error in the chat (a line that is no command).
    Error(String),
}

/// What a pane may touch while it handles a key.
pub struct Cx<'a> {
    pub ops: &'a mut Vec<Op>,
    pub effects: &'a mut Vec<Effect>,
    pub keymap: &'a Keymap,
}

impl Cx<'_> {
    pub fn send(&mut self, op: Op) {
        self.ops.push(op);
    }

    pub fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }
}

/// What a pane needs to draw.
pub struct Draw<'a> {
    pub theme: &'a Theme,
    pub keymap: &'a Keymap,
    pub focused: bool,
}

/// A pane of the workspace.
pub trait Pane {
    /// The title on its border (and its tab).
    fn title(&self) -> String;

    /// The actions it answers to, first in the keymap's lookup and listed by `?`.
    fn actions(&self) -> &'static [Action];

    /// Handles one of its actions; false when it had nothing to do with it.
    fn on_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool;

    /// The question a bare letter asks before `action` (one of `typing::Letter::Asks`):
    /// what it would do, with its cost. None when it would do nothing now.
    fn ask(&self, _action: Action) -> Option<String> {
        None
    }

    /// A key before any action lookup (the input box takes text this way).
    fn on_key(&mut self, _key: &KeyEvent, _cx: &mut Cx<'_>) -> bool {
        false
    }

    /// The pane just got the focus.
    fn on_focus(&mut self, _cx: &mut Cx<'_>) {}

    /// Scrolls by `lines` (negative: up), for the mouse wheel and PgUp/PgDn.
    fn scroll(&mut self, lines: i32);

    /// A click at `row` of its inner area (lists select the row).
    fn click(&mut self, _row: u16, _cx: &mut Cx<'_>) {}

    /// Draws inside `area` (the border is the app's).
    fn render(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>);

    /// Where the terminal cursor goes when it has focus.
    fn cursor(&self) -> Option<Position> {
        None
    }

    /// What the marks it draws mean, for `?`: (mark, meaning).
    fn legend(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
}

/// Draws `lines` from the top of `area`, as many as fit.
pub(crate) fn draw_lines(area: Rect, buf: &mut Buffer, lines: &[Line<'_>]) {
    for (y, line) in lines.iter().take(area.height as usize).enumerate() {
        buf.set_line(area.x, area.y + y as u16, line, area.width);
    }
}

/// Draws `text` word-wrapped to `area`.
pub(crate) fn draw_text(area: Rect, buf: &mut Buffer, text: String, style: Style) {
    let lines = super::text::wrap(&[Span::styled(text, style)], area.width as usize, &[], &[]);
    draw_lines(area, buf, &lines);
}

/// Moves a list selection by `delta` within `len` items.
pub(crate) fn step(selected: usize, delta: i32, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    (selected as i64 + delta as i64).clamp(0, len as i64 - 1) as usize
}

/// A popup of `width` x `height` centred in `area` (both within it).
pub(crate) fn centred(area: Rect, width: u16, height: u16) -> Rect {
    let (width, height) = (width.min(area.width), height.min(area.height));
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

/// A popup over the middle two thirds of `area` (at least `widths.0` columns where
/// there is room, at most `widths.1`, and at most 30 rows), cleared, framed and titled
/// (the pickers'); returns the room inside.
pub(crate) fn popup(
    area: Rect,
    buf: &mut Buffer,
    (title, widths): (&str, (u16, u16)),
    theme: &Theme,
) -> Rect {
    use ratatui::widgets::{Block, Borders, Clear, Widget};
    let width = (area.width * 2 / 3).clamp(widths.0.min(area.width), widths.1.min(area.width));
    let height = (area.height * 2 / 3).clamp(6.min(area.height), 30.min(area.height));
    let popup = centred(area, width, height);
    Clear.render(popup, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(true))
        .title(Span::styled(
            super::text::truncate(title, (width as usize).saturating_sub(2)),
            theme.border(true),
        ))
        .style(theme.text());
    let inner = block.inner(popup);
    block.render(popup, buf);
    inner
}

/// Draws a picker's `items` into `list`, one `line` each, scrolled from `offset` so that
/// `selected` shows, highlighted; returns the offset drawn from.
pub(crate) fn draw_list<T>(
    buf: &mut Buffer,
    list: Rect,
    items: &[T],
    (offset, selected): (usize, usize),
    theme: &Theme,
    line: impl Fn(&T) -> Line<'static>,
) -> usize {
    let offset = keep_visible(offset, selected, list.height as usize);
    for (row, (i, item)) in items
        .iter()
        .enumerate()
        .skip(offset)
        .take(list.height as usize)
        .enumerate()
    {
        let y = list.y + row as u16;
        let mut line = line(item);
        if i == selected {
            buf.set_style(Rect::new(list.x, y, list.width, 1), theme.selected());
            line = line.patch_style(theme.selected());
        }
        buf.set_line(list.x, y, &line, list.width);
    }
    offset
}

/// The first row to show so that `selected` stays visible in `height` rows.
pub(crate) fn keep_visible(offset: usize, selected: usize, height: usize) -> usize {
    if height == 0 {
        return selected;
    }
    if selected < offset {
        selected
    } else if selected >= offset + height {
        selected + 1 - height
    } else {
        offset
    }
}
