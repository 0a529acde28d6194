//! The `/rewind` picker: the session's turns (number, first line, commits, cost) and,
//! for the one selected, what going back to before it changes with the choice made
//! (the code and the conversation, the code only, the conversation only), before
//! anything is done. Enter rewinds; `r` redoes the last rewind when one can be.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::picker::Outcome;
use crate::engine::Op;
use crate::engine::protocol::{TimelineTurn, rewind_preview, turn_line};
use crate::tui::text;
use crate::tui::theme::Theme;

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Both,
    Code,
    Chat,
}

impl Choice {
    fn next(self) -> Choice {
        match self {
            Choice::Both => Choice::Code,
            Choice::Code => Choice::Chat,
            Choice::Chat => Choice::Both,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Choice::Both => "code and conversation",
            Choice::Code => "code only",
            Choice::Chat => "conversation only",
        }
    }

    /// (code, chat)
    fn parts(self) -> (bool, bool) {
        (self != Choice::Chat, self != Choice::Code)
    }
}

pub struct RewindPicker {
    turns: Vec<TimelineTurn>,
    redo: Option<String>,
    selected: usize,
    offset: usize,
    choice: Choice,
}

impl RewindPicker {
    /// The newest turn is selected first: going back one turn is the usual wish.
    pub fn new(turns: Vec<TimelineTurn>, redo: Option<String>) -> RewindPicker {
        RewindPicker {
            selected: turns.len().saturating_sub(1),
            turns,
            redo,
            offset: 0,
            choice: Choice::Both,
        }
    }

    pub(crate) fn on_key(&mut self, key: &KeyEvent, ops: &mut Vec<Op>) -> Outcome {
        let last = self.turns.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::Tab | KeyCode::Right | KeyCode::Left => self.choice = self.choice.next(),
            KeyCode::Enter => {
                if let Some(turn) = self.turns.get(self.selected) {
                    let (code, chat) = self.choice.parts();
                    ops.push(Op::Rewind {
                        to: turn.turn,
                        code,
                        chat,
                    });
                    return Outcome::Close;
                }
            }
            KeyCode::Char('r') if self.redo.is_some() => {
                ops.push(Op::RewindRedo);
                return Outcome::Close;
            }
            _ => {}
        }
        Outcome::Keep
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let width =
            (area.width.saturating_mul(4) / 5).clamp(30.min(area.width), 110.min(area.width));
        let height =
            (area.height.saturating_mul(4) / 5).clamp(8.min(area.height), 36.min(area.height));
        let popup = super::centred(area, width, height);
        Clear.render(popup, buf);
        let title = " Rewind to before a turn ";
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(ratatui::text::Span::styled(
                text::truncate(title, usize::from(width.saturating_sub(2))),
                theme.border(true),
            ))
            .style(theme.text());
        let inner = block.inner(popup);
        block.render(popup, buf);
        let w = usize::from(inner.width);
        let mut below: Vec<String> = match self.turns.get(self.selected) {
            Some(turn) => {
                let (code, chat) = self.choice.parts();
                let mut lines = vec![format!(
                    "before turn {}, {}:",
                    turn.turn,
                    self.choice.name()
                )];
                lines.extend(
                    rewind_preview(turn, code, chat)
                        .into_iter()
                        .map(|l| format!("  {l}")),
                );
                if code {
                    lines.extend(turn.commits_since.iter().map(|c| format!("    {c}")));
                }
                lines
            }
            None => vec!["no turn to go back to (the session's record has none)".into()],
        };
        if let Some(redo) = &self.redo {
            below.push(format!("r redoes {redo}"));
        }
        // The keys are a footer, on as many rows as the width needs: a title is cut.
        let tab = format!("tab {}", self.choice.name());
        let mut keys = vec!["↑↓ turn", tab.as_str(), "enter rewinds"];
        keys.extend(self.redo.as_ref().map(|_| "r redo"));
        keys.push("esc");
        let footer = key_rows(&keys, w);
        let footer_rows = footer.len().min(usize::from(inner.height));
        let room = usize::from(inner.height) - footer_rows;
        // The list keeps at least 3 rows; the preview gets the rest.
        let preview_rows = below.len().min(room.saturating_sub(4));
        let list_rows = room.saturating_sub(preview_rows + 1);
        self.offset = super::keep_visible(self.offset, self.selected, list_rows);
        for (row, (i, turn)) in self
            .turns
            .iter()
            .enumerate()
            .skip(self.offset)
            .take(list_rows)
            .enumerate()
        {
            let y = inner.y + row as u16;
            let style = match i == self.selected {
                true => theme.selected(),
                false => theme.text(),
            };
            if i == self.selected {
                buf.set_style(Rect::new(inner.x, y, inner.width, 1), style);
            }
            buf.set_stringn(inner.x, y, text::truncate(&turn_line(turn), w), w, style);
        }
        let top = inner.y + list_rows as u16;
        if list_rows < usize::from(inner.height) {
            buf.set_stringn(inner.x, top, "─".repeat(w), w, theme.dim());
        }
        for (row, line) in below.iter().take(preview_rows).enumerate() {
            let y = top + 1 + row as u16;
            buf.set_stringn(inner.x, y, text::truncate(line, w), w, theme.text());
        }
        let bottom = inner.y + inner.height - footer_rows as u16;
        for (row, line) in footer.iter().take(footer_rows).enumerate() {
            let y = bottom + row as u16;
            buf.set_stringn(inner.x, y, text::truncate(line, w), w, theme.dim());
        }
    }
}

/// `keys` joined with ` · ` into rows of at most `width` columns, breaking only
/// between keys (a key wider than a row is one row, cut when drawn).
fn key_rows(keys: &[&str], width: usize) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    for key in keys {
        match rows.last_mut() {
            Some(row) if text::width(row) + 3 + text::width(key) <= width => {
                row.push_str(" · ");
                row.push_str(key);
            }
            _ => rows.push((*key).to_string()),
        }
    }
    rows
}
