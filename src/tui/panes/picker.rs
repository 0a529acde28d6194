//! The file picker: fuzzy search over the repository's files, to add one to the chat
//! editable or read-only.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::engine::{FileMode, Op};
use crate::tui::fuzzy;
use crate::tui::keymap::{Action, Keymap};
use crate::tui::text;
use crate::tui::theme::Theme;

/// Results listed at most.
const MAX_RESULTS: usize = 200;

#[derive(Default)]
pub struct Picker {
    query: String,
    selected: usize,
    offset: usize,
    files: Arc<Vec<String>>,
    in_chat: Vec<String>,
    results: Vec<String>,
    cursor: Option<Position>,
}

/// What a key did to the picker.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Keep,
    Close,
}

impl Picker {
    pub fn new(files: Arc<Vec<String>>, in_chat: Vec<String>) -> Picker {
        let mut p = Picker {
            files,
            in_chat,
            ..Picker::default()
        };
        p.refresh();
        p
    }

    /// The repository's files arrived (or changed) while the picker is open.
    pub(crate) fn set_files(&mut self, files: Arc<Vec<String>>) {
        self.files = files;
        self.refresh();
    }

    fn refresh(&mut self) {
        self.results = fuzzy::filter(&self.query, &self.files, MAX_RESULTS)
            .into_iter()
            .map(str::to_string)
            .collect();
        self.selected = self.selected.min(self.results.len().saturating_sub(1));
    }

    pub(crate) fn on_key(&mut self, key: &KeyEvent, keymap: &Keymap, ops: &mut Vec<Op>) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let add = |mode: FileMode, this: &Picker, ops: &mut Vec<Op>| {
            if let Some(path) = this.results.get(this.selected) {
                ops.push(Op::AddFiles {
                    paths: vec![path.clone()],
                    mode,
                });
            }
        };
        if keymap.is(key, Action::AddReadOnly) {
            add(FileMode::ReadOnly, self, ops);
            return Outcome::Close;
        }
        match key.code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Enter => {
                add(FileMode::Editable, self, ops);
                return Outcome::Close;
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.results.len().saturating_sub(1))
            }
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => {
                self.selected = (self.selected + 10).min(self.results.len().saturating_sub(1))
            }
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
                self.refresh();
            }
            KeyCode::Char('u') if ctrl => {
                self.query.clear();
                self.refresh();
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.selected = 0;
                self.refresh();
            }
            _ => {}
        }
        Outcome::Keep
    }

    pub fn cursor(&self) -> Option<Position> {
        self.cursor
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, keymap: &Keymap, theme: &Theme) {
        let title = format!(
            " Add a file · enter editable · {} read-only · esc closes ",
            keymap.describe(Action::AddReadOnly)
        );
        let inner = super::popup(area, buf, (&title, (30, 90)), theme);
        if inner.height < 2 {
            return;
        }
        let prompt = Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD);
        buf.set_string(inner.x, inner.y, "› ", prompt);
        buf.set_stringn(
            inner.x + 2,
            inner.y,
            &self.query,
            (inner.width as usize).saturating_sub(2),
            Style::new().fg(theme.c.fg),
        );
        let count = format!("{}/{}", self.results.len(), self.files.len());
        if inner.width as usize > count.len() + text::width(&self.query) + 4 {
            buf.set_string(
                inner.right() - count.len() as u16,
                inner.y,
                &count,
                theme.dim(),
            );
        }
        // In usize: a pasted query can be wider than a u16 counts.
        let typed = usize::from(inner.x) + 2 + text::width(&self.query);
        let last = usize::from(inner.right().saturating_sub(1));
        self.cursor = Some(Position::new(
            u16::try_from(typed.min(last)).unwrap_or(u16::MAX),
            inner.y,
        ));
        let list = Rect::new(inner.x, inner.y + 1, inner.width, inner.height - 1);
        if self.files.is_empty() {
            buf.set_string(
                list.x,
                list.y,
                "reading the repository's files…",
                theme.dim(),
            );
            return;
        }
        let width = (list.width as usize).saturating_sub(2);
        self.offset = super::draw_list(
            buf,
            list,
            &self.results,
            (self.offset, self.selected),
            theme,
            |path| {
                let in_chat = self.in_chat.contains(path);
                Line::from(vec![
                    Span::styled(
                        if in_chat { "● " } else { "  " },
                        Style::new().fg(theme.c.editable_files),
                    ),
                    Span::styled(
                        text::truncate_left(path, width),
                        Style::new().fg(theme.c.fg),
                    ),
                ])
            },
        );
    }
}
