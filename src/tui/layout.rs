//! Drawing the workspace (`App::draw`), and where the panes go. Wide terminals show
//! everything at once: files and the repo map on the left, the chat in the middle, the
//! gauge and the review on the right (the review takes the middle while it has the
//! focus, and the whole width below 150 columns or after `z`). Smaller terminals (80x24) show one pane at a time under a row of tabs, with
//! a one-line gauge in the status line.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Widget};

use super::app::{ANSWER_KEYS, App, Hits, Overlay};
use super::keymap::Action;
use super::panes::{Pane, PaneId, gauge, help, review};
use super::text;

/// The smallest terminal that gets the side-by-side layout.
pub const WIDE_MIN_WIDTH: u16 = 120;
pub const WIDE_MIN_HEIGHT: u16 = 28;
/// Below this, tern only says it needs more room.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The tabs of the small layout; the chat tab holds the message box too.
const TABS: [(PaneId, &str); 5] = [
    (PaneId::Input, "Chat"),
    (PaneId::Files, "Files"),
    (PaneId::Map, "Map"),
    (PaneId::Gauge, "Budget"),
    (PaneId::Review, "Review"),
];

impl App {
    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let cursor = self.draw_buffer(area, frame.buffer_mut());
        if let Some(position) = cursor {
            frame.set_cursor_position(position);
        }
    }

    /// Draws into `buf` and returns where the cursor goes.
    pub(crate) fn draw_buffer(&mut self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        self.hits = Hits::default();
        buf.set_style(area, self.theme.text());
        draw(self, area, buf);
        match &mut self.overlay {
            Some(Overlay::Help(lines, scroll)) => {
                *scroll = help::render(lines, *scroll, area, buf, &self.theme);
                None
            }
            Some(Overlay::Picker(picker)) => {
                picker.render(area, buf, &self.keymap, &self.theme);
                picker.cursor()
            }
            Some(Overlay::Rewind(picker)) => {
                picker.render(area, buf, &self.theme);
                None
            }
            Some(Overlay::Sessions(picker)) => {
                picker.render(area, buf, &self.theme);
                None
            }
            None if self.focus == PaneId::Input => self.panes.input.cursor(),
            None => None,
        }
    }

    /// Draws one pane alone into `area` (with its border), as it looks when focused.
    pub fn draw_pane(&mut self, id: PaneId, area: Rect, buf: &mut Buffer) {
        buf.set_style(area, self.theme.text());
        pane(self, id, area, buf, true);
    }
}

fn draw(app: &mut App, area: Rect, buf: &mut Buffer) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "tern needs at least {MIN_WIDTH}×{MIN_HEIGHT} (this is {}×{})",
            area.width, area.height
        );
        buf.set_stringn(area.x, area.y, msg, area.width as usize, app.theme.dim());
        return;
    }
    let top = Rect::new(area.x, area.y, area.width, 1);
    let status = Rect::new(area.x, area.bottom() - 1, area.width, 1);
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 2);
    let wide = area.width >= WIDE_MIN_WIDTH && area.height >= WIDE_MIN_HEIGHT;
    if wide {
        title_bar(app, top, buf);
        draw_wide(app, body, buf);
    } else {
        tab_bar(app, top, buf);
        draw_tabs(app, body, buf);
    }
    aside(app, body, buf);
    status_bar(app, status, buf, wide);
    completion_popup(app, buf);
}

/// The most rows of text an error shown aside takes.
const ASIDE_ROWS: usize = 4;

/// The last error or warning, over the bottom of the screen, when the chat that holds
/// it is not drawn (`App::aside`).
fn aside(app: &App, body: Rect, buf: &mut Buffer) {
    let Some(aside) = &app.aside else {
        return;
    };
    if app.hits.panes.iter().any(|(id, _, _)| *id == PaneId::Chat) || body.width < 8 {
        return;
    }
    let theme = &app.theme;
    let (mark, color) = match aside.error {
        true => ("✗ ", theme.c.error),
        false => ("⚠ ", theme.c.warning),
    };
    let style = Style::new().fg(color);
    let width = usize::from(body.width - 4);
    let mut lines = text::wrap(
        &[Span::styled(aside.text.clone(), style)],
        width,
        &[Span::styled(mark, style)],
        &[Span::raw("  ")],
    );
    if lines.len() > ASIDE_ROWS {
        lines.truncate(ASIDE_ROWS);
        if let Some(last) = lines.last_mut() {
            *last = Line::from(text::truncate_spans(
                &[last.spans.clone(), vec![Span::styled(" …", style)]].concat(),
                width,
            ));
        }
    }
    let height = (lines.len() as u16 + 2).min(body.height);
    let area = Rect::new(body.x, body.bottom() - height, body.width, height);
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(style)
        .title(Span::styled(" in the chat · any key hides this ", style))
        .style(theme.text());
    let inner = block.inner(area);
    block.render(area, buf);
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    super::panes::draw_lines(inner, buf, &lines);
}

fn draw_wide(app: &mut App, body: Rect, buf: &mut Buffer) {
    let w = body.width;
    if app.focus == PaneId::Review && app.panes.review.is_active() && app.panes.review.zoomed(w) {
        pane(app, PaneId::Review, body, buf, true);
        return;
    }
    let left_w = (w * 22 / 100).clamp(28, 44);
    let right_w = (w * 26 / 100).clamp(36, 60);
    let mid_w = w - left_w - right_w;
    let left = Rect::new(body.x, body.y, left_w, body.height);
    let middle = Rect::new(body.x + left_w, body.y, mid_w, body.height);
    let right = Rect::new(body.x + left_w + mid_w, body.y, right_w, body.height);

    let files_h = (app.panes.files.files().len() as u16 + 2).clamp(4, body.height * 2 / 5);
    let (files, map) = split_rows(left, files_h);
    pane(app, PaneId::Files, files, buf, app.focus == PaneId::Files);
    pane(app, PaneId::Map, map, buf, app.focus == PaneId::Map);

    let gauge_focused = app.focus == PaneId::Gauge;
    let gauge_h = (gauge::wanted_rows(&app.panes.gauge, &app.theme, right_w - 2, gauge_focused)
        + 2)
    .min(body.height * 3 / 5);
    let (gauge_area, lower) = split_rows(right, gauge_h);
    pane(app, PaneId::Gauge, gauge_area, buf, gauge_focused);
    let takeover = app.focus == PaneId::Review && app.panes.review.is_active();
    if takeover {
        pane(app, PaneId::Review, middle, buf, true);
        chat_column(app, lower, buf);
    } else {
        chat_column(app, middle, buf);
        pane(app, PaneId::Review, lower, buf, app.focus == PaneId::Review);
    }
}

fn draw_tabs(app: &mut App, body: Rect, buf: &mut Buffer) {
    match active_tab(app.focus) {
        PaneId::Input => chat_column(app, body, buf),
        id => pane(app, id, body, buf, true),
    }
}

fn active_tab(focus: PaneId) -> PaneId {
    match focus {
        PaneId::Chat => PaneId::Input,
        other => other,
    }
}

/// The chat with the message box under it.
fn chat_column(app: &mut App, area: Rect, buf: &mut Buffer) {
    let max_rows = (area.height / 3).clamp(1, 10);
    let rows = app
        .panes
        .input
        .wanted_rows(area.width.saturating_sub(2))
        .clamp(1, max_rows);
    let input_h = (rows + 2).min(area.height.saturating_sub(3));
    let (chat, input) = split_rows(area, area.height - input_h);
    pane(app, PaneId::Chat, chat, buf, app.focus == PaneId::Chat);
    pane(app, PaneId::Input, input, buf, app.focus == PaneId::Input);
}

fn split_rows(area: Rect, first: u16) -> (Rect, Rect) {
    let first = first.min(area.height);
    (
        Rect::new(area.x, area.y, area.width, first),
        Rect::new(area.x, area.y + first, area.width, area.height - first),
    )
}

/// One pane in a bordered block titled with its title.
fn pane(app: &mut App, id: PaneId, area: Rect, buf: &mut Buffer, focused: bool) {
    if area.width < 3 || area.height < 2 {
        return;
    }
    let title = app.panes.get(id).title();
    let style = app.theme.border(focused);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Rounded
        })
        .border_style(style)
        .title(Span::styled(
            format!(
                " {} ",
                text::truncate(&title, (area.width as usize).saturating_sub(4))
            ),
            style,
        ));
    let mut inner = block.inner(area);
    block.render(area, buf);
    // A column of air on each side, where there is room for it.
    if inner.width >= 12 {
        inner = Rect::new(inner.x + 1, inner.y, inner.width - 2, inner.height);
    }
    let draw = super::panes::Draw {
        theme: &app.theme,
        keymap: &app.keymap,
        focused,
    };
    app.panes.get(id).render(inner, buf, &draw);
    app.hits.panes.push((id, area, inner));
}

fn title_bar(app: &App, area: Rect, buf: &mut Buffer) {
    let theme = &app.theme;
    let mode = mode_name(app.mode);
    let right = app
        .panes
        .gauge
        .report()
        .map(|r| format!("session {} ", r.session_spending()))
        .unwrap_or_default();
    let room = (area.width as usize).saturating_sub(right.len() + 30);
    let line = Line::from(vec![
        Span::styled(
            " tern ",
            Style::new()
                .fg(theme.c.bg)
                .bg(theme.c.accent)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" {} ", text::truncate_left(&app.root, room)),
            Style::new().fg(theme.c.fg),
        ),
        Span::styled("· ", theme.dim()),
        Span::styled(app.model.clone(), Style::new().fg(theme.c.assistant)),
        Span::styled(" · ", theme.dim()),
        Span::styled(mode, Style::new().fg(theme.c.accent)),
    ]);
    buf.set_line(area.x, area.y, &line, area.width);
    if area.width as usize > line.width() + right.len() {
        buf.set_string(
            area.right() - right.len() as u16,
            area.y,
            right,
            theme.dim(),
        );
    }
}

fn mode_name(mode: crate::engine::ChatMode) -> &'static str {
    match mode {
        crate::engine::ChatMode::Code => "code",
        crate::engine::ChatMode::Ask => "ask",
    }
}

fn tab_bar(app: &mut App, area: Rect, buf: &mut Buffer) {
    let theme = &app.theme;
    let active = active_tab(app.focus);
    let mut x = area.x;
    for (i, (id, name)) in TABS.iter().enumerate() {
        let label = match (id, app.panes.review.badge()) {
            (PaneId::Review, Some(badge)) => format!(" {name} {badge} "),
            _ => format!(" {name} "),
        };
        let w = text::width(&label) as u16;
        if x + w > area.right() {
            break;
        }
        let style = if *id == active {
            Style::new()
                .fg(theme.c.bg)
                .bg(theme.c.accent)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(theme.c.fg)
        };
        buf.set_string(x, area.y, &label, style);
        app.hits.tabs.push((*id, Rect::new(x, area.y, w, 1)));
        x += w;
        if i + 1 < TABS.len() && x < area.right() {
            buf.set_string(x, area.y, "│", theme.dim());
            x += 1;
        }
    }
    // The mode always, the model as far as it fits (columns, not bytes: a name in CJK
    // or with an emoji takes fewer columns than bytes).
    let mode = format!(" · {} ", mode_name(app.mode));
    let room = usize::from(area.right().saturating_sub(x)).saturating_sub(2);
    let model = text::truncate(&format!(" {}", app.model), room.saturating_sub(mode.len()));
    let line = Line::from(vec![
        Span::styled(model, Style::new().fg(theme.c.assistant)),
        Span::styled(mode, Style::new().fg(theme.c.accent)),
    ]);
    if line.width() <= room {
        let w = line.width() as u16;
        buf.set_line(area.right() - w, area.y, &line, w);
    }
}

fn status_bar(app: &App, area: Rect, buf: &mut Buffer, wide: bool) {
    let theme = &app.theme;
    let k = &app.keymap;
    let columns = usize::from(area.width).saturating_sub(1);
    // A question, or a flash (which often names keys too), takes the whole line, cut
    // with `…` if it must be: nothing is drawn over its end.
    let whole = if let Some(question) = app.question() {
        let style = Style::new()
            .fg(theme.c.warning)
            .add_modifier(Modifier::BOLD);
        Some((text::question(&question, ANSWER_KEYS, columns), style))
    } else {
        app.flash.as_ref().map(|(flash, _)| {
            let style = Style::new().fg(theme.c.warning);
            (text::truncate(flash, columns), style)
        })
    };
    if let Some((text, style)) = whole {
        let line = Line::styled(format!(" {text}"), style);
        buf.set_line(area.x, area.y, &line, area.width);
        return;
    }
    let left: Line<'static> = if let Some(chars) = app.streaming {
        let state = match (&app.waiting, chars) {
            (Some(why), _) => why.clone(),
            (None, 0) => "waiting for the model".to_string(),
            (None, chars) => format!("streaming ≈{} tokens", text::thousands(chars / 4)),
        };
        Line::from(vec![
            Span::styled(
                format!(" {} ", SPINNER[app.spinner % SPINNER.len()]),
                Style::new().fg(theme.c.assistant),
            ),
            Span::styled(state, Style::new().fg(theme.c.fg)),
            Span::styled(
                format!(" · {} interrupts", k.describe(Action::Cancel)),
                theme.dim(),
            ),
        ])
    } else if let Some(running) = &app.running {
        Line::from(vec![
            Span::styled(
                format!(" {} ", SPINNER[app.spinner % SPINNER.len()]),
                Style::new().fg(theme.c.accent),
            ),
            Span::styled(
                format!(
                    "{} · {:.1} s",
                    running.command,
                    running.elapsed_ms as f64 / 1000.0
                ),
                Style::new().fg(theme.c.fg),
            ),
            Span::styled(
                format!(" · {} stops", k.describe(Action::Cancel)),
                theme.dim(),
            ),
            Span::styled(
                match running.last_line.is_empty() {
                    true => String::new(),
                    false => format!(" · {}", running.last_line),
                },
                theme.dim(),
            ),
        ])
    } else if !wide && app.unlanded().is_some() {
        // Hunks wait: how to quit ends the hint, in place of the keys that do not fit
        // beside the gauge (the wide line says it on the right).
        let quit = format!("{} ×2 quits", k.describe(Action::Interrupt));
        let room = usize::from(area.width).saturating_sub(gauge_width(area) + 3);
        let mut parts = hint_parts(app);
        while parts.len() > 1 && text::width(&parts.join(" · ")) + text::width(&quit) + 3 > room {
            parts.pop();
        }
        parts.push(quit);
        Line::styled(format!(" {}", parts.join(" · ")), theme.dim())
    } else {
        Line::styled(format!(" {}", hint_parts(app).join(" · ")), theme.dim())
    };
    let right: Line<'static> = if wide {
        Line::styled(
            format!(
                "{} pane · {} keys · {} twice quits ",
                k.describe(Action::FocusNext),
                k.describe(Action::Help),
                k.describe(Action::Interrupt)
            ),
            theme.dim(),
        )
    } else {
        let mut mini = app.panes.gauge.mini(theme, gauge_width(area));
        mini.spans.push(Span::raw(" "));
        mini
    };
    let right_w = right.width() as u16;
    let left_room = area.width.saturating_sub(right_w + 1);
    buf.set_line(area.x, area.y, &left, left_room);
    if area.width > right_w {
        buf.set_line(area.right() - right_w, area.y, &right, right_w);
    }
}

/// The columns of the status line's one-line gauge (at 80x24).
fn gauge_width(area: Rect) -> usize {
    (area.width as usize / 3).clamp(12, 32)
}

/// The status line's reminder of the focused pane's main keys, most needed first.
fn hint_parts(app: &App) -> Vec<String> {
    let k = &app.keymap;
    let d = |a| k.describe(a);
    let keys = |pairs: &[(Action, &str)]| -> Vec<String> {
        pairs
            .iter()
            .map(|(action, what)| format!("{} {what}", d(*action)))
            .collect()
    };
    match app.focus {
        PaneId::Input => vec![
            format!("{} send", d(Action::Send)),
            format!(
                "{} new line",
                k.keys(Action::Newline)
                    .first()
                    .map_or(String::new(), |b| b.to_string())
            ),
            "/ commands".into(),
            "@ files".into(),
        ],
        PaneId::Chat => keys(&[
            (Action::Up, "scroll"),
            (Action::Bottom, "follow"),
            (Action::ToggleNotes, "notes"),
            (Action::FocusInput, "type"),
        ]),
        PaneId::Files => keys(&[
            (Action::ToggleMode, "editable/read-only"),
            (Action::DropFile, "drop"),
            (Action::AddFile, "add"),
        ]),
        PaneId::Map => keys(&[
            (Action::Down, "select"),
            (Action::ToggleMapText, "map text"),
            (Action::RefreshMap, "rebuild"),
        ]),
        PaneId::Gauge => keys(&[(Action::ToggleFileRows, "per-file rows")]),
        PaneId::Review if app.panes.review.notes_shown() => review::notes_keys(k)
            .split(" · ")
            .map(str::to_string)
            .collect(),
        PaneId::Review => keys(&[
            (Action::Accept, "accept"),
            (Action::Reject, "reject"),
            (Action::Apply, "apply"),
            (Action::Back, "back"),
        ]),
    }
}

/// The completion list, over the bottom of the chat's inside: its border never draws
/// over the chat's, and a description too long for it ends in `…`.
fn completion_popup(app: &mut App, buf: &mut Buffer) {
    if app.focus != PaneId::Input {
        return;
    }
    let Some(c) = app.panes.input.completion() else {
        return;
    };
    let Some(&(_, chat, _)) = app.hits.panes.iter().find(|(id, _, _)| *id == PaneId::Chat) else {
        return;
    };
    // Inside the chat's border.
    let room = Rect::new(
        chat.x + 1,
        chat.y + 1,
        chat.width.saturating_sub(2),
        chat.height.saturating_sub(2),
    );
    let theme = &app.theme;
    let label_w = c
        .items
        .iter()
        .map(|i| text::width(&i.label))
        .max()
        .unwrap_or(0);
    let detail_w = c
        .items
        .iter()
        .map(|i| text::width(&i.detail))
        .max()
        .unwrap_or(0);
    let width = ((label_w + detail_w + 4) as u16).min(room.width);
    let height = (c.items.len() as u16 + 2).min(room.height);
    if height < 3 || width < 8 {
        return;
    }
    let popup = Rect::new(room.x, room.bottom() - height, width, height);
    Clear.render(popup, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(theme.border(true))
        .style(theme.text());
    let inner = block.inner(popup);
    block.render(popup, buf);
    for (row, (i, item)) in c
        .items
        .iter()
        .enumerate()
        .take(inner.height as usize)
        .enumerate()
    {
        let y = inner.y + row as u16;
        let label = format!("{:<label_w$}  ", item.label);
        let line = Line::from(vec![
            Span::styled(label, Style::new().fg(theme.c.inline_code)),
            Span::styled(item.detail.clone(), theme.dim()),
        ]);
        let mut line = Line::from(text::truncate_spans(&line.spans, inner.width as usize));
        if i == c.selected {
            buf.set_style(Rect::new(inner.x, y, inner.width, 1), theme.selected());
            line = line.patch_style(theme.selected());
        }
        buf.set_line(inner.x, y, &line, inner.width);
    }
}
