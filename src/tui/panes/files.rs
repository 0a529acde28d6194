//! The chat files with their mode and token cost: toggle editable / read-only, drop,
//! or add one with the fuzzy picker.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Cx, Draw, Effect, Pane, keep_visible, step};
use crate::engine::{FileEntry, FileMode, Op};
use crate::tui::keymap::Action;
use crate::tui::text::{self, thousands};

#[derive(Default)]
pub struct FilesPane {
    files: Vec<FileEntry>,
    selected: usize,
    offset: usize,
}

impl FilesPane {
    pub(crate) fn set_files(&mut self, files: Vec<FileEntry>) {
        let keep = self.files.get(self.selected).map(|f| f.path.clone());
        self.files = files;
        self.selected = keep
            .and_then(|p| self.files.iter().position(|f| f.path == p))
            .unwrap_or(self.selected)
            .min(self.files.len().saturating_sub(1));
    }

    pub fn files(&self) -> &[FileEntry] {
        &self.files
    }

    fn selected_file(&self) -> Option<&FileEntry> {
        self.files.get(self.selected)
    }
}

impl Pane for FilesPane {
    fn title(&self) -> String {
        let tokens: usize = self.files.iter().map(|f| f.tokens).sum();
        if self.files.is_empty() {
            "Files".into()
        } else {
            format!("Files · {} · {} tok", self.files.len(), thousands(tokens))
        }
    }

    fn actions(&self) -> &'static [Action] {
        &[
            Action::Up,
            Action::Down,
            Action::Top,
            Action::Bottom,
            Action::ToggleMode,
            Action::DropFile,
            Action::AddFile,
        ]
    }

    fn ask(&self, action: Action) -> Option<String> {
        let f = self.selected_file()?;
        match action {
            Action::ToggleMode => Some(format!(
                "make {} {}?",
                f.path,
                match f.mode {
                    FileMode::Editable => "read-only",
                    FileMode::ReadOnly => "editable",
                }
            )),
            Action::DropFile => Some(format!(
                "drop {} ({} tok) from the chat?",
                f.path,
                thousands(f.tokens)
            )),
            _ => None,
        }
    }

    fn on_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool {
        match action {
            Action::Up => self.scroll(-1),
            Action::Down => self.scroll(1),
            Action::Top => self.selected = 0,
            Action::Bottom => self.selected = self.files.len().saturating_sub(1),
            Action::ToggleMode => {
                if let Some(f) = self.selected_file() {
                    let mode = match f.mode {
                        FileMode::Editable => FileMode::ReadOnly,
                        FileMode::ReadOnly => FileMode::Editable,
                    };
                    cx.send(Op::SetFileMode {
                        path: f.path.clone(),
                        mode,
                    });
                }
            }
            Action::DropFile => {
                if let Some(f) = self.selected_file() {
                    cx.send(Op::DropFile {
                        path: f.path.clone(),
                    });
                }
            }
            Action::AddFile => cx.effect(Effect::OpenPicker),
            _ => return false,
        }
        true
    }

    fn scroll(&mut self, lines: i32) {
        self.selected = step(self.selected, lines, self.files.len());
    }

    fn click(&mut self, row: u16, _cx: &mut Cx<'_>) {
        let index = self.offset + row as usize;
        if index < self.files.len() {
            self.selected = index;
        }
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        if self.files.is_empty() {
            let hint = format!(
                "No files in the chat. {} adds one, or /add PATH.",
                draw.keymap.describe(Action::AddFile)
            );
            super::draw_text(area, buf, hint, theme.dim());
            return;
        }
        let height = area.height as usize;
        self.offset = keep_visible(self.offset, self.selected, height);
        let width = area.width as usize;
        for (row, (i, f)) in self
            .files
            .iter()
            .enumerate()
            .skip(self.offset)
            .take(height)
            .enumerate()
        {
            let (badge, color) = match f.mode {
                FileMode::Editable => ("[E]", theme.c.editable_files),
                FileMode::ReadOnly => ("[R]", theme.c.readonly_files),
            };
            let tokens = thousands(f.tokens);
            let note = if f.exists { "" } else { " new" };
            let path_width = width.saturating_sub(4 + tokens.len() + 1 + note.len());
            let path = text::truncate_left(&f.path, path_width);
            let pad = path_width.saturating_sub(text::width(&path));
            let mut line = Line::from(vec![
                Span::styled(badge, Style::new().fg(color).add_modifier(Modifier::BOLD)),
                Span::raw(" "),
                Span::styled(path, Style::new().fg(theme.c.fg)),
                Span::styled(note, Style::new().fg(theme.c.warning)),
                Span::raw(" ".repeat(pad + 1)),
                Span::styled(tokens, theme.dim()),
            ]);
            if i == self.selected && draw.focused {
                line = line.patch_style(theme.selected());
            }
            let y = area.y + row as u16;
            if i == self.selected && draw.focused {
                buf.set_style(Rect::new(area.x, y, area.width, 1), theme.selected());
            }
            buf.set_line(area.x, y, &line, area.width);
        }
    }
}
