//! The rows under a reply that list what it asked for: the files it names that are not
//! in the chat, with what each would cost (one key adds those not left out and asks
//! again; each can be left out one by one), and the shell commands it suggests,
//! numbered (one key hands the selected one to `/run`, which asks before anything
//! runs). One selection walks the files, then the commands.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::engine::protocol::NeededFile;
use crate::tui::keymap::{Action, Keymap};
use crate::tui::text::{thousands, wrap};
use crate::tui::theme::Theme;

/// What one reply asked for, and which command is selected.
#[derive(Debug, Clone, PartialEq)]
pub struct Needed {
    pub files: Vec<NeededFile>,
    pub more_files: usize,
    pub commands: Vec<String>,
    pub more_commands: usize,
    /// The selected item: a file (`0..files.len()`), else a command after them.
    pub selected: usize,
    /// The files the user left out, by index: not added, not offered again.
    pub left_out: Vec<bool>,
    /// The keys act on it: it belongs to the last reply.
    pub active: bool,
    /// The keys as bound when it arrived, for its hint lines.
    keys: Keys,
}

#[derive(Debug, Clone, PartialEq)]
struct Keys {
    read_only: String,
    editable: String,
    run: String,
    select: String,
    leave_out: String,
}

impl Needed {
    pub fn new(
        files: Vec<NeededFile>,
        more_files: usize,
        commands: Vec<String>,
        more_commands: usize,
        keymap: &Keymap,
    ) -> Needed {
        // The first command is selected, as `r` runs it; `[` reaches the files.
        let selected = if commands.is_empty() { 0 } else { files.len() };
        Needed {
            left_out: vec![false; files.len()],
            files,
            more_files,
            commands,
            more_commands,
            selected,
            active: true,
            keys: Keys {
                read_only: keymap.describe(Action::AddNeededReadOnly),
                editable: keymap.describe(Action::AddNeededEditable),
                run: keymap.describe(Action::RunCommand),
                select: format!(
                    "{} {}",
                    keymap.describe(Action::PrevCommand),
                    keymap.describe(Action::NextCommand)
                ),
                leave_out: keymap.describe(Action::LeaveOutFile),
            },
        }
    }

    /// Takes `paths` off the row (files the user left out before), the selection
    /// staying on the first command.
    pub(crate) fn drop_files(&mut self, paths: &std::collections::HashSet<String>) {
        let command = self.selected.checked_sub(self.files.len());
        self.files.retain(|f| !paths.contains(&f.path));
        self.left_out = vec![false; self.files.len()];
        self.selected = match command {
            Some(c) => self.files.len() + c,
            None => 0,
        };
    }

    /// The selected command, as `/run` gets it.
    pub(crate) fn selected_command(&self) -> Option<&str> {
        let at = self.selected.checked_sub(self.files.len())?;
        self.commands.get(at).map(String::as_str)
    }

    /// Moves the selection over the files and commands, round.
    pub(crate) fn select(&mut self, delta: isize) {
        let len = self.files.len() + self.commands.len();
        if len > 0 {
            self.selected = (self.selected as isize + delta).rem_euclid(len as isize) as usize;
        }
    }

    /// Leaves out the selected file, or takes it back: its path and whether it is out
    /// now; None when a command is selected.
    pub(crate) fn toggle_selected_file(&mut self) -> Option<(String, bool)> {
        let out = self.left_out.get_mut(self.selected)?;
        *out = !*out;
        Some((self.files.get(self.selected)?.path.clone(), *out))
    }

    /// The files not left out: what `f`/`F` add.
    pub(crate) fn picked(&self) -> impl Iterator<Item = &NeededFile> {
        self.files
            .iter()
            .zip(&self.left_out)
            .filter(|(_, out)| !**out)
            .map(|(f, _)| f)
    }

    pub fn paths(&self) -> Vec<String> {
        self.picked().map(|f| f.path.clone()).collect()
    }

    /// Its lines in `width` columns; the key hints only while it is active.
    pub fn lines(&self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let label = Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD);
        let key = Style::new().fg(theme.c.inline_code);
        let plain = Style::new().fg(theme.c.fg);
        let indent = [Span::raw("       ")];
        let mut out = Vec::new();
        if !self.files.is_empty() {
            let mut spans = Vec::new();
            for (i, file) in self.files.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::raw("   "));
                }
                let chosen = self.active && i == self.selected;
                if chosen {
                    spans.push(Span::styled("▸", key));
                }
                let (mark, style) = match self.left_out.get(i).copied().unwrap_or(false) {
                    true => ("✗\u{a0}", theme.dim().add_modifier(Modifier::CROSSED_OUT)),
                    false if chosen => ("", plain.add_modifier(Modifier::BOLD)),
                    false => ("", plain),
                };
                if !mark.is_empty() {
                    spans.push(Span::styled(mark, theme.dim()));
                }
                spans.push(Span::styled(file.path.clone(), style));
                spans.push(Span::styled(
                    // No break inside a file's cost.
                    format!("\u{a0}·\u{a0}{}\u{a0}tok", thousands(file.tokens)),
                    theme.dim(),
                ));
            }
            if self.more_files > 0 {
                spans.push(Span::styled(
                    format!("   and {} more", self.more_files),
                    theme.dim(),
                ));
            }
            out.extend(wrap(
                &spans,
                width,
                &[Span::styled("needs: ", label)],
                &indent,
            ));
            if self.active {
                let hint = vec![
                    Span::styled(format!("[{}]", self.keys.read_only), key),
                    Span::styled(" add read-only  ", theme.dim()),
                    Span::styled(format!("[{}]", self.keys.editable), key),
                    Span::styled(
                        " add editable, then ask again (in the chat pane)  ",
                        theme.dim(),
                    ),
                    Span::styled(format!("[{}]", self.keys.leave_out), key),
                    Span::styled(" leave out the selected one  ", theme.dim()),
                    Span::styled(self.keys.select.clone(), key),
                    Span::styled(" select", theme.dim()),
                ];
                out.extend(wrap(&hint, width, &indent, &indent));
            }
        }
        for (i, command) in self.commands.iter().enumerate() {
            let first = if i == 0 { "run:   " } else { "       " };
            let chosen = self.active && self.files.len() + i == self.selected;
            let mark = if chosen { "▸" } else { " " };
            let style = if chosen {
                plain.add_modifier(Modifier::BOLD)
            } else {
                plain
            };
            let spans = [
                Span::styled(format!("{mark}{} ", i + 1), key),
                Span::styled(command.clone(), style),
            ];
            out.extend(wrap(
                &spans,
                width,
                &[Span::styled(first, label)],
                &[Span::raw("          ")],
            ));
        }
        if !self.commands.is_empty() {
            let mut spans = Vec::new();
            if self.more_commands > 0 {
                spans.push(Span::styled(
                    format!("and {} more   ", self.more_commands),
                    theme.dim(),
                ));
            }
            if self.active {
                spans.extend([
                    Span::styled(format!("[{}]", self.keys.run), key),
                    Span::styled(" /run the selected one (asks first)  ", theme.dim()),
                    Span::styled(self.keys.select.clone(), key),
                    Span::styled(" select", theme.dim()),
                ]);
            }
            if !spans.is_empty() {
                out.extend(wrap(&spans, width, &indent, &indent));
            }
        }
        out
    }
}
