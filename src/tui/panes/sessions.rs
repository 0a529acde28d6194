//! The `/sessions` picker: the repository's sessions, one line each as `tern sessions`
//! prints them, to switch to one (the engine switches; the app asks first when hunks
//! are pending).

use std::time::SystemTime;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use crate::engine::persist::Listed;
use crate::tui::text;
use crate::tui::theme::Theme;

pub struct SessionPicker {
    sessions: Vec<Listed>,
    /// Each session's line, made once per width (it reads the session's lock), and
    /// the width it was made for.
    lines: Vec<String>,
    lines_width: usize,
    /// The session the workspace is in.
    current: Option<String>,
    selected: usize,
    offset: usize,
}

/// What a key did in the picker.
#[derive(Debug, PartialEq, Eq)]
pub enum Choice {
    Keep,
    Close,
    /// Switch to this session.
    Switch(String),
    /// Not possible: say why, and stay open.
    Refused(String),
}

impl SessionPicker {
    pub fn new(sessions: Vec<Listed>, current: Option<String>) -> SessionPicker {
        // The newest other session: the one a switch most often wants.
        let selected = sessions
            .iter()
            .position(|s| current.as_deref() != Some(s.id.as_str()))
            .unwrap_or(0);
        SessionPicker {
            sessions,
            lines: Vec::new(),
            lines_width: 0,
            current,
            selected,
            offset: 0,
        }
    }

    pub(crate) fn on_key(&mut self, key: &KeyEvent) -> Choice {
        let last = self.sessions.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return Choice::Close,
            KeyCode::Enter => return self.choose(),
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected = (self.selected + 10).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            _ => {}
        }
        Choice::Keep
    }

    fn choose(&self) -> Choice {
        let Some(s) = self.sessions.get(self.selected) else {
            return Choice::Close;
        };
        if self.current.as_deref() == Some(s.id.as_str()) {
            return Choice::Refused(format!("session {} is the one open here", s.id));
        }
        if let Some(why) = &s.unreadable {
            return Choice::Refused(format!("session {} cannot be read: {why}", s.id));
        }
        Choice::Switch(s.id.clone())
    }

    /// Each session's line in `width` columns where it can be: the first message is
    /// what a narrow picker shortens.
    fn lines_within(&self, width: usize) -> Vec<String> {
        let now = SystemTime::now();
        self.sessions
            .iter()
            .map(|s| {
                let here = self.current.as_deref() == Some(s.id.as_str());
                s.line_within(now, true, width, here)
            })
            .collect()
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let title = " Sessions · enter switches to one (this one is saved first) · esc closes ";
        // Wide enough for the line `tern sessions` prints (its hunks and cost too): the
        // whole width of a small terminal.
        let list = super::popup(area, buf, (title, (100, 130)), theme);
        if list.height == 0 {
            return;
        }
        if self.sessions.is_empty() {
            buf.set_string(
                list.x,
                list.y,
                text::truncate(
                    "no saved sessions yet (a message or an added file saves one)",
                    list.width as usize,
                ),
                theme.dim(),
            );
            return;
        }
        let width = list.width as usize;
        if self.lines_width != width || self.lines.len() != self.sessions.len() {
            self.lines = self.lines_within(width);
            self.lines_width = width;
        }
        self.offset = super::draw_list(
            buf,
            list,
            &self.lines,
            (self.offset, self.selected),
            theme,
            |line| Line::styled(text::truncate(line, width), theme.text()),
        );
    }
}
