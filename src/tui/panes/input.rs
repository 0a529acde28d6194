//! The message box: multiline editing with soft wrap, input history, completion of
//! `/commands` (and their file or model arguments) and `@file` mentions, and pastes
//! of any size: a paste of more than [`PASTE_TOKEN_LINES`] lines stands in the box as
//! one token (`[pasted 82 lines]`) that is sent as the whole paste, and expands in place
//! on a key.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Cx, Draw, Effect, Pane};
use crate::engine::commands;
use crate::engine::input;
use crate::engine::protocol::{ArgCompletion, Command};
use crate::tui::editor::{EditRequest, EditTarget};
use crate::tui::fuzzy;
use crate::tui::keymap::Action;
use crate::tui::text::{self, grapheme_width};
use unicode_segmentation::UnicodeSegmentation;

/// Completions shown at most.
pub const MAX_COMPLETIONS: usize = 8;

/// A paste of more lines than this stands in the box as a token.
pub const PASTE_TOKEN_LINES: usize = 10;

/// A long paste held out of the box: the token that stands for it there, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Paste {
    token: String,
    text: String,
}

/// One completion: what replaces the word, and how the popup shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub insert: String,
    pub label: String,
    pub detail: String,
}

/// The open completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The byte range of the word being completed.
    pub start: usize,
    pub end: usize,
    pub items: Vec<Item>,
    pub selected: usize,
}

#[derive(Default)]
pub struct InputPane {
    text: String,
    /// Byte offset of the cursor.
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history, and the draft it replaced.
    browsing: Option<(usize, String)>,
    completion: Option<Completion>,
    /// The text at which the user closed the popup: it stays closed until the text
    /// changes.
    dismissed: Option<String>,
    /// Set on every edit; the app turns it into a debounced `Op::Draft`.
    changed: bool,
    repo_files: Arc<Vec<String>>,
    chat_files: Vec<String>,
    /// First visual row shown.
    scroll: usize,
    /// Width of the last frame, for moving between visual rows.
    width: u16,
    cursor_at: Option<Position>,
    /// Long pastes whose tokens stand in the text.
    pastes: Vec<Paste>,
}

impl InputPane {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(crate) fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.pastes.clear();
        self.edited();
    }

    /// The message as it is sent: the box's text with each paste token replaced by
    /// its paste.
    pub fn expanded(&self) -> String {
        let mut text = String::with_capacity(self.text.len());
        let mut at = 0;
        for (range, i) in self.tokens() {
            text.push_str(self.text.get(at..range.start).unwrap_or_default());
            text.push_str(&self.pastes[i].text);
            at = range.end;
        }
        text.push_str(self.text.get(at..).unwrap_or_default());
        text
    }

    /// Where the paste tokens stand in the text (byte ranges, in order), and which
    /// paste each is.
    fn tokens(&self) -> Vec<(std::ops::Range<usize>, usize)> {
        let mut found: Vec<_> = self
            .pastes
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                self.text
                    .find(&p.token)
                    .map(|at| (at..at + p.token.len(), i))
            })
            .collect();
        found.sort_by_key(|(range, _)| range.start);
        found
    }

    /// The token the cursor is in or at an edge of; else the last one in the box.
    fn token_near_cursor(&self) -> Option<(std::ops::Range<usize>, usize)> {
        let tokens = self.tokens();
        let near = tokens
            .iter()
            .find(|(r, _)| r.start <= self.cursor && self.cursor <= r.end)
            .cloned();
        near.or_else(|| tokens.last().cloned())
    }

    /// Puts a paste's whole text in the box in place of its token.
    fn expand_paste(&mut self, cx: &mut Cx<'_>) {
        let Some((range, i)) = self.token_near_cursor() else {
            cx.effect(Effect::Flash(
                "no pasted text to expand in the message".into(),
            ));
            return;
        };
        let paste = self.pastes.remove(i);
        self.splice(range, &paste.text);
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.browsing = None;
    }

    pub(crate) fn set_repo_files(&mut self, files: Arc<Vec<String>>) {
        self.repo_files = files;
        self.refresh_completion();
    }

    pub(crate) fn set_chat_files(&mut self, files: Vec<String>) {
        self.chat_files = files;
    }

    /// True once after each edit.
    pub(crate) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    pub fn completion(&self) -> Option<&Completion> {
        self.completion.as_ref()
    }

    /// Inserts pasted text: line endings normalized, control characters dropped; a
    /// paste of more than [`PASTE_TOKEN_LINES`] lines as its token.
    pub fn paste(&mut self, pasted: &str) {
        let clean: String = text::paste_line_ends(pasted)
            .chars()
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        let lines = text::line_count(&clean);
        if lines <= PASTE_TOKEN_LINES {
            return self.insert(&clean);
        }
        // Pastes whose tokens were deleted are gone: `#N` numbers only those in the box.
        self.pastes.retain(|p| self.text.contains(&p.token));
        let token = (1..)
            .map(|n| match n {
                1 => format!("[pasted {lines} lines]"),
                n => format!("[pasted {lines} lines #{n}]"),
            })
            .find(|t| !self.text.contains(t.as_str()))
            .unwrap_or_default();
        self.insert(&token);
        self.pastes.push(Paste { token, text: clean });
    }

    fn insert(&mut self, s: &str) {
        self.splice(self.cursor..self.cursor, s);
    }

    /// Replaces the bytes `range` of the text with `with` and puts the cursor after it.
    /// Nothing happens when `range` does not fall on character boundaries (it always
    /// should): a byte-index edit inside a character would panic.
    fn splice(&mut self, range: std::ops::Range<usize>, with: &str) {
        let (Some(before), Some(after)) =
            (self.text.get(..range.start), self.text.get(range.end..))
        else {
            return;
        };
        self.cursor = range.start + with.len();
        self.text = [before, with, after].concat();
        self.edited();
    }

    fn edited(&mut self) {
        self.changed = true;
        self.refresh_completion();
    }

    fn submit(&mut self, cx: &mut Cx<'_>) {
        if self.text.trim().is_empty() {
            return;
        }
        let text = self.expanded().trim_end().to_string();
        let op = match input::parse(&text) {
            Ok(op) => op,
            // Nothing was done: the text stays in the box to be mended.
            Err(refused) => return cx.effect(Effect::Error(refused.to_string())),
        };
        if self.history.last() != Some(&text) {
            self.history.push(text);
        }
        self.text.clear();
        self.pastes.clear();
        self.browsing = None;
        self.cursor = 0;
        self.scroll = 0;
        self.edited();
        cx.send(op);
    }

    /// Earlier messages for Up to walk (a resumed session's), oldest first.
    pub(crate) fn set_history(&mut self, history: Vec<String>) {
        self.history = history;
        self.browsing = None;
    }

    fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let (index, draft) = match self.browsing.take() {
            Some((0, draft)) => (0, draft),
            Some((i, draft)) => (i - 1, draft),
            None => (self.history.len() - 1, self.text.clone()),
        };
        self.text = self.history[index].clone();
        self.browsing = Some((index, draft));
        self.cursor = self.text.len();
        self.edited();
    }

    fn history_next(&mut self) {
        let Some((index, draft)) = self.browsing.take() else {
            return;
        };
        if index + 1 < self.history.len() {
            self.text = self.history[index + 1].clone();
            self.browsing = Some((index + 1, draft));
        } else {
            self.text = draft;
        }
        self.cursor = self.text.len();
        self.edited();
    }

    /// Where the grapheme cluster before `at` starts: the cursor moves over, and
    /// deletes, what the user sees as one character (`👩‍💻`, `é`), never half of it.
    fn prev_boundary(&self, at: usize) -> usize {
        self.text
            .get(..at)
            .unwrap_or_default()
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    /// Where the grapheme cluster at `at` ends.
    fn next_boundary(&self, at: usize) -> usize {
        self.text
            .get(at..)
            .unwrap_or_default()
            .graphemes(true)
            .next()
            .map_or(at, |g| at + g.len())
    }

    fn word_left(&self, at: usize) -> usize {
        let before = self.text.get(..at).unwrap_or_default();
        let trimmed = before.trim_end_matches(|c: char| c.is_whitespace());
        trimmed
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1)
    }

    fn word_right(&self, at: usize) -> usize {
        let after = self.text.get(at..).unwrap_or_default();
        let rest = after.trim_start();
        let skip_space = after.len() - rest.len();
        at + skip_space + rest.find(char::is_whitespace).unwrap_or(rest.len())
    }

    fn line_start(&self, at: usize) -> usize {
        self.text
            .get(..at)
            .unwrap_or_default()
            .rfind('\n')
            .map_or(0, |i| i + 1)
    }

    fn line_end(&self, at: usize) -> usize {
        self.text
            .get(at..)
            .unwrap_or_default()
            .find('\n')
            .map_or(self.text.len(), |i| at + i)
    }

    fn delete_range(&mut self, from: usize, to: usize) {
        if from < to {
            self.splice(from..to, "");
        }
    }

    /// Rows of the soft-wrapped text at `width` columns: byte ranges. Rows break after
    /// the last space that fits, as in an editor; a word longer than a row is broken
    /// where the row ends, and a space at the edge stays at the end of its row.
    fn rows(&self, width: usize) -> Vec<(usize, usize)> {
        let width = width.max(2);
        let mut rows = Vec::new();
        let mut start = 0;
        for line in self.text.split('\n') {
            let mut row_start = start;
            let mut used = 0;
            // Where the row may break: just after its last space.
            let mut after_space: Option<usize> = None;
            for (i, g) in line.grapheme_indices(true) {
                let at = start + i;
                let w = grapheme_width(g);
                let space = g.chars().all(char::is_whitespace);
                if used + w > width {
                    if space {
                        rows.push((row_start, at + g.len()));
                        row_start = at + g.len();
                        used = 0;
                        after_space = None;
                        continue;
                    }
                    let split = after_space.filter(|&b| b > row_start).unwrap_or(at);
                    rows.push((row_start, split));
                    used = text::width(self.text.get(split..at).unwrap_or_default());
                    row_start = split;
                    after_space = None;
                    // The word carried over may leave no room for this one either.
                    if used + w > width && row_start < at {
                        rows.push((row_start, at));
                        row_start = at;
                        used = 0;
                    }
                }
                used += w;
                if space {
                    after_space = Some(at + g.len());
                }
            }
            rows.push((row_start, start + line.len()));
            start += line.len() + 1;
        }
        rows
    }

    /// The cursor's visual row and column.
    fn cursor_cell(&self, rows: &[(usize, usize)]) -> (usize, usize) {
        let row = rows
            .iter()
            .rposition(|(s, _)| *s <= self.cursor)
            .unwrap_or(0);
        let (start, _) = rows[row];
        (
            row,
            text::width(self.text.get(start..self.cursor).unwrap_or_default()),
        )
    }

    /// Moves the cursor one visual row up or down; false at the first / last row.
    fn move_row(&mut self, delta: i32) -> bool {
        let rows = self.rows(self.text_width());
        let (row, col) = self.cursor_cell(&rows);
        let target = row as i64 + delta as i64;
        if target < 0 || target >= rows.len() as i64 {
            return false;
        }
        let (start, end) = rows[target as usize];
        let mut at = start;
        let mut used = 0;
        for (i, g) in self
            .text
            .get(start..end)
            .unwrap_or_default()
            .grapheme_indices(true)
        {
            if used + grapheme_width(g) > col {
                break;
            }
            used += grapheme_width(g);
            at = start + i + g.len();
        }
        self.cursor = at;
        true
    }

    fn text_width(&self) -> usize {
        if self.width == 0 {
            // Not drawn yet: no wrapping.
            return usize::MAX / 2;
        }
        (self.width as usize).saturating_sub(PROMPT_WIDTH).max(2)
    }

    /// Rows the box wants at `width` columns (without its border).
    pub(crate) fn wanted_rows(&self, width: u16) -> u16 {
        let text_width = (width as usize).saturating_sub(PROMPT_WIDTH).max(2);
        self.rows(text_width).len() as u16
    }

    fn refresh_completion(&mut self) {
        if self.dismissed.as_deref() == Some(self.text.as_str()) {
            self.completion = None;
            return;
        }
        self.dismissed = None;
        let previous = self.completion.take();
        self.completion = self.complete();
        if let (Some(new), Some(old)) = (&mut self.completion, previous)
            && let Some(i) = new
                .items
                .iter()
                .position(|it| Some(it) == old.items.get(old.selected))
        {
            new.selected = i;
        }
    }

    /// What the word under the cursor can complete to.
    fn complete(&self) -> Option<Completion> {
        let before = self.text.get(..self.cursor).unwrap_or_default();
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let end = self.cursor
            + self
                .text
                .get(self.cursor..)
                .unwrap_or_default()
                .find(char::is_whitespace)
                .unwrap_or(self.text.len() - self.cursor);
        let word = self.text.get(start..self.cursor).unwrap_or_default();
        let items: Vec<Item> = if start == 0 && word.starts_with('/') && !self.text.contains('\n') {
            commands::complete(word)
                .into_iter()
                .map(|c| Item {
                    insert: format!("/{}", c.name()),
                    label: format!("/{} {}", c.name(), c.args()),
                    detail: c.help().to_string(),
                })
                .collect()
        } else if let Some(pattern) = word.strip_prefix('@') {
            files(pattern, &self.repo_files, "")
        } else if start > 0 && self.text.starts_with('/') && !word.is_empty() {
            // An argument is completed once typing starts: right after a completion
            // (or a space) the list stays closed, so Enter sends.
            let command = self.text.split_whitespace().next().unwrap_or("");
            let completion = Command::find(command.strip_prefix('/').unwrap_or(command))
                .map_or(ArgCompletion::Nothing, Command::completion);
            match completion {
                ArgCompletion::RepoFiles => files(word, &self.repo_files, ""),
                ArgCompletion::ChatFiles => files(word, &self.chat_files, "in the chat"),
                ArgCompletion::Models => crate::engine::protocol::known_models()
                    .filter(|(name, _)| name.contains(word))
                    .take(MAX_COMPLETIONS)
                    .map(|(name, window)| Item {
                        insert: name.to_string(),
                        label: name.to_string(),
                        detail: format!("{}k window", window / 1000),
                    })
                    .collect(),
                ArgCompletion::Nothing => Vec::new(),
            }
        } else {
            Vec::new()
        };
        let done =
            items.len() == 1 && items[0].insert == self.text.get(start..end).unwrap_or_default();
        (!items.is_empty() && !done).then_some(Completion {
            start,
            end,
            items,
            selected: 0,
        })
    }

    fn accept_completion(&mut self) {
        let Some(c) = self.completion.take() else {
            return;
        };
        let Some(item) = c.items.get(c.selected) else {
            return;
        };
        let mut insert = item.insert.clone();
        let at_end = self.text.get(c.end..).unwrap_or_default().is_empty();
        if at_end {
            insert.push(' ');
        }
        self.splice(c.start..c.end, &insert);
    }

    /// Keys of the completion popup; false when the popup is closed or the key is not one
    /// of its keys.
    fn completion_key(&mut self, key: &KeyEvent, cx: &Cx<'_>) -> bool {
        let Some(c) = &mut self.completion else {
            return false;
        };
        let len = c.items.len();
        match key.code {
            KeyCode::Up => c.selected = (c.selected + len - 1) % len,
            KeyCode::Down => c.selected = (c.selected + 1) % len,
            KeyCode::Esc => {
                self.completion = None;
                self.dismissed = Some(self.text.clone());
            }
            _ if cx.keymap.is(key, Action::Complete) => self.accept_completion(),
            _ if cx.keymap.is(key, Action::Send) => {
                let word = self.text.get(c.start..c.end).unwrap_or_default();
                if c.items.get(c.selected).is_some_and(|i| i.insert == word) {
                    return false;
                }
                self.accept_completion();
            }
            _ => return false,
        }
        true
    }
}

impl InputPane {
    /// The text of `range` as drawn: tabs as spaces.
    fn shown(&self, range: std::ops::Range<usize>) -> String {
        self.text
            .get(range)
            .unwrap_or_default()
            .replace('\t', &" ".repeat(text::TAB_WIDTH))
    }
}

/// Width of the `› ` prompt.
const PROMPT_WIDTH: usize = 2;

fn files(pattern: &str, candidates: &[String], detail: &str) -> Vec<Item> {
    fuzzy::filter(pattern, candidates, MAX_COMPLETIONS)
        .into_iter()
        .map(|path| Item {
            insert: path.to_string(),
            label: path.to_string(),
            detail: detail.to_string(),
        })
        .collect()
}

impl Pane for InputPane {
    fn title(&self) -> String {
        "Message".into()
    }

    fn actions(&self) -> &'static [Action] {
        &[
            Action::Send,
            Action::Newline,
            Action::HistoryPrev,
            Action::HistoryNext,
            Action::Complete,
            Action::ExternalEditor,
            Action::ExpandPaste,
        ]
    }

    fn on_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool {
        match action {
            Action::Send => self.submit(cx),
            Action::Newline => self.insert("\n"),
            Action::ExpandPaste => self.expand_paste(cx),
            Action::ExternalEditor => cx.effect(Effect::Edit(EditRequest {
                target: EditTarget::Draft,
                text: self.expanded(),
                suffix: ".md".into(),
            })),
            Action::HistoryPrev => {
                if !self.move_row(-1) {
                    self.history_prev();
                }
            }
            Action::HistoryNext => {
                if !self.move_row(1) {
                    self.history_next();
                }
            }
            _ => return false,
        }
        true
    }

    fn on_key(&mut self, key: &KeyEvent, cx: &mut Cx<'_>) -> bool {
        if self.completion_key(key, cx) {
            return true;
        }
        // Bound keys first (Enter, Ctrl-J, Up, Down), but a plain character is text.
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let plain_char = matches!(key.code, KeyCode::Char(_)) && !ctrl && !alt;
        if !plain_char
            && let Some(action) = cx.keymap.action(key, self.actions())
            && self.actions().contains(&action)
        {
            return self.on_action(action, cx);
        }
        match key.code {
            KeyCode::Char(c) if !ctrl && !alt => {
                let mut buf = [0u8; 4];
                self.insert(c.encode_utf8(&mut buf));
            }
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(self.cursor),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(self.cursor),
            KeyCode::Char('u') if ctrl => {
                self.delete_range(self.line_start(self.cursor), self.cursor)
            }
            KeyCode::Char('k') if ctrl => {
                let end = self.line_end(self.cursor);
                let end = if end == self.cursor {
                    self.next_boundary(end)
                } else {
                    end
                };
                self.delete_range(self.cursor, end);
            }
            KeyCode::Char('w') if ctrl => {
                self.delete_range(self.word_left(self.cursor), self.cursor)
            }
            KeyCode::Backspace if alt || ctrl => {
                self.delete_range(self.word_left(self.cursor), self.cursor)
            }
            KeyCode::Char('b') if alt => self.cursor = self.word_left(self.cursor),
            KeyCode::Char('f') if alt => self.cursor = self.word_right(self.cursor),
            // A paste token goes as one character, with its paste.
            KeyCode::Backspace => match self
                .tokens()
                .into_iter()
                .find(|(r, _)| r.end == self.cursor)
            {
                Some((range, _)) => self.delete_range(range.start, range.end),
                None => self.delete_range(self.prev_boundary(self.cursor), self.cursor),
            },
            KeyCode::Delete => match self
                .tokens()
                .into_iter()
                .find(|(r, _)| r.start == self.cursor)
            {
                Some((range, _)) => self.delete_range(range.start, range.end),
                None => self.delete_range(self.cursor, self.next_boundary(self.cursor)),
            },
            KeyCode::Left if ctrl || alt => self.cursor = self.word_left(self.cursor),
            KeyCode::Right if ctrl || alt => self.cursor = self.word_right(self.cursor),
            KeyCode::Left => self.cursor = self.prev_boundary(self.cursor),
            KeyCode::Right => self.cursor = self.next_boundary(self.cursor),
            KeyCode::Home => self.cursor = self.line_start(self.cursor),
            KeyCode::End => self.cursor = self.line_end(self.cursor),
            _ => return false,
        }
        self.refresh_completion();
        true
    }

    fn scroll(&mut self, lines: i32) {
        self.scroll = (self.scroll as i64 + lines as i64).max(0) as usize;
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        self.width = area.width;
        self.cursor_at = None;
        if area.width <= PROMPT_WIDTH as u16 || area.height == 0 {
            return;
        }
        let prompt_style = Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD);
        if self.text.is_empty() {
            buf.set_string(area.x, area.y, "› ", prompt_style);
            let hint = "Message the model · / commands · @ files · Ctrl-J new line · Ctrl-G editor";
            buf.set_string(
                area.x + PROMPT_WIDTH as u16,
                area.y,
                text::truncate(hint, area.width as usize - PROMPT_WIDTH),
                theme.dim(),
            );
            if draw.focused {
                self.cursor_at = Some(Position::new(area.x + PROMPT_WIDTH as u16, area.y));
            }
            return;
        }
        let rows = self.rows(self.text_width());
        let (row, col) = self.cursor_cell(&rows);
        let height = area.height as usize;
        self.scroll =
            super::keep_visible(self.scroll.min(rows.len().saturating_sub(1)), row, height);
        let style = Style::new().fg(theme.c.fg);
        let token_style = Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD);
        let tokens = self.tokens();
        for (y, (start, end)) in rows.iter().enumerate().skip(self.scroll).take(height) {
            let screen_y = area.y + (y - self.scroll) as u16;
            let first_of_line = *start == 0 || self.text.as_bytes()[start - 1] == b'\n';
            let prompt = if *start == 0 {
                "› "
            } else if first_of_line {
                "· "
            } else {
                "  "
            };
            buf.set_string(
                area.x,
                screen_y,
                prompt,
                if *start == 0 {
                    prompt_style
                } else {
                    theme.dim()
                },
            );
            // The row in pieces: text, and the parts of paste tokens.
            let mut spans = Vec::new();
            let mut at = *start;
            for (range, _) in tokens
                .iter()
                .filter(|(r, _)| r.start < *end && r.end > *start)
            {
                let (from, to) = (range.start.max(*start), range.end.min(*end));
                spans.push(Span::styled(self.shown(at..from), style));
                spans.push(Span::styled(self.shown(from..to), token_style));
                at = to;
            }
            spans.push(Span::styled(self.shown(at..*end), style));
            buf.set_line(
                area.x + PROMPT_WIDTH as u16,
                screen_y,
                &Line::from(spans),
                area.width - PROMPT_WIDTH as u16,
            );
        }
        let hidden = rows.len().saturating_sub(self.scroll + height);
        if hidden > 0 || self.scroll > 0 {
            // Lines of the text, not rows of the box: a long line wraps into many.
            let note = format!(
                " {} ",
                crate::plural::count(text::line_count(&self.text), "line")
            );
            let w = note.len() as u16;
            if area.width > w + 4 {
                buf.set_string(area.right() - w, area.bottom() - 1, note, theme.dim());
            }
        }
        if draw.focused {
            let x = area.x + (PROMPT_WIDTH + col) as u16;
            self.cursor_at = Some(Position::new(
                x.min(area.right() - 1),
                area.y + (row - self.scroll) as u16,
            ));
        }
    }

    fn cursor(&self) -> Option<Position> {
        self.cursor_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Op;
    use crate::tui::keymap::Keymap;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(input: &mut InputPane, s: &str, ops: &mut Vec<Op>) {
        let keymap = Keymap::default();
        let mut effects = Vec::new();
        let mut cx = Cx {
            ops,
            effects: &mut effects,
            keymap: &keymap,
        };
        for c in s.chars() {
            let k = match c {
                '\n' => key(KeyCode::Enter),
                '\u{1}' => KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL),
                '\t' => key(KeyCode::Tab),
                '↑' => key(KeyCode::Up),
                '↓' => key(KeyCode::Down),
                '⌫' => key(KeyCode::Backspace),
                '←' => key(KeyCode::Left),
                c => key(KeyCode::Char(c)),
            };
            input.on_key(&k, &mut cx);
        }
    }

    #[test]
    fn enter_sends_ctrl_j_breaks_lines_and_history_recalls() {
        let mut input = InputPane::default();
        let mut ops = Vec::new();
        typed(&mut input, "one\u{1}two\n", &mut ops);
        assert_eq!(
            ops,
            [Op::Submit {
                text: "one\ntwo".into()
            }]
        );
        assert!(input.is_empty());
        typed(&mut input, "draft↑", &mut ops);
        assert_eq!(input.text(), "one\ntwo");
        typed(&mut input, "↓", &mut ops);
        assert_eq!(
            input.text(),
            "draft",
            "down past the newest restores the draft"
        );
        typed(&mut input, "⌫⌫x", &mut ops);
        assert_eq!(input.text(), "drax");
        assert!(input.take_changed());
        assert!(!input.take_changed());
    }

    #[test]
    fn slash_completes_commands_and_their_file_arguments() {
        let mut input = InputPane::default();
        input.set_repo_files(Arc::new(vec!["src/app.py".into(), "src/cli.py".into()]));
        let mut ops = Vec::new();
        typed(&mut input, "/to", &mut ops);
        let c = input.completion().expect("open");
        assert_eq!(c.items[0].insert, "/tokens");
        typed(&mut input, "\t", &mut ops);
        assert_eq!(input.text(), "/tokens ");
        input.clear();
        typed(&mut input, "/add cli\t", &mut ops);
        assert_eq!(input.text(), "/add src/cli.py ");
        assert!(input.completion().is_none(), "the list closes once taken");
        typed(&mut input, "\n", &mut ops);
        assert_eq!(
            ops,
            [Op::Command {
                command: Command::Add,
                args: "src/cli.py".into()
            }],
            "Enter runs the completed command"
        );
        ops.clear();
        typed(&mut input, "/add s", &mut ops);
        assert!(input.completion().is_some(), "typing opens it again");
        input.clear();
        typed(&mut input, "look at @app", &mut ops);
        assert_eq!(input.completion().unwrap().items[0].label, "src/app.py");
        typed(&mut input, "\n", &mut ops);
        assert_eq!(
            input.text(),
            "look at src/app.py ",
            "enter takes the completion"
        );
        assert!(ops.is_empty());
        typed(&mut input, "\n", &mut ops);
        assert_eq!(
            ops,
            [Op::Submit {
                text: "look at src/app.py".into()
            }]
        );
    }

    #[test]
    fn an_exact_command_sends_on_enter() {
        let mut input = InputPane::default();
        let mut ops = Vec::new();
        typed(&mut input, "/tokens\n", &mut ops);
        assert_eq!(
            ops,
            [Op::Command {
                command: Command::Tokens,
                args: String::new()
            }]
        );
    }

    #[test]
    fn paste_normalizes_and_rows_wrap() {
        let mut input = InputPane::default();
        input.paste("a\r\nb\rc\u{7}\td");
        assert_eq!(input.text(), "a\nb\nc\td");
        input.set_text("abcdefgh");
        assert_eq!(input.rows(3), [(0, 3), (3, 6), (6, 8)]);
        input.set_text("ab\n\ncd");
        assert_eq!(input.rows(10), [(0, 2), (3, 3), (4, 6)]);
        // Word boundaries: "hello " / "world " / "again".
        input.set_text("hello world again");
        assert_eq!(input.rows(8), [(0, 6), (6, 12), (12, 17)]);
        // A space at the edge stays on its row; a long word still breaks.
        input.set_text("abcde fghijklmnop");
        assert_eq!(input.rows(5), [(0, 6), (6, 11), (11, 16), (16, 17)]);
    }

    #[test]
    fn a_long_paste_is_a_token_sent_whole_and_deleted_whole() {
        let mut input = InputPane::default();
        let mut ops = Vec::new();
        typed(&mut input, "see: ", &mut ops);
        let pasted: String = (1..=12).map(|n| format!("line {n}\r\n")).collect();
        input.paste(&pasted);
        assert_eq!(input.text(), "see: [pasted 12 lines]");
        input.paste(&pasted);
        assert_eq!(input.text(), "see: [pasted 12 lines][pasted 12 lines #2]");
        typed(&mut input, "⌫", &mut ops);
        assert_eq!(
            input.text(),
            "see: [pasted 12 lines]",
            "backspace takes the token whole"
        );
        // A deleted token's number is free again: only the box's tokens are counted.
        input.paste(&pasted);
        typed(&mut input, "⌫", &mut ops);
        input.paste(&pasted);
        assert_eq!(input.text(), "see: [pasted 12 lines][pasted 12 lines #2]");
        typed(&mut input, "⌫⌫", &mut ops);
        input.paste(&pasted);
        assert_eq!(input.text(), "see: [pasted 12 lines]");
        typed(&mut input, "⌫", &mut ops);
        input.paste(&pasted);
        assert_eq!(input.text(), "see: [pasted 12 lines]");
        typed(&mut input, " ok\n", &mut ops);
        let whole = pasted.replace("\r\n", "\n");
        assert_eq!(
            ops,
            [Op::Submit {
                text: format!("see: {whole} ok")
            }]
        );
        // A short paste is text.
        input.paste("a\nb");
        assert_eq!(input.text(), "a\nb");
    }

    proptest::proptest! {
        // Failures are kept with the integration tests' (the crate root holds only
        // what the project is made of).
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/input_rows.txt",
                ),
            )),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any text at any width: the rows cover every byte in order, and a row is no
        /// wider than the box unless a space hangs at its end.
        #[test]
        fn rows_cover_the_text_and_fit(text in "(\\PC| |\n|\t){0,80}", width in 2usize..30) {
            let mut input = InputPane::default();
            input.set_text(&text);
            let text = input.text().to_string();
            let rows = input.rows(width);
            let mut at = 0;
            for (start, end) in &rows {
                proptest::prop_assert!(*start == at || (text.as_bytes().get(at) == Some(&b'\n') && *start == at + 1));
                let row = text.get(*start..*end).unwrap_or_default();
                let w = text::width(row.trim_end_matches(char::is_whitespace));
                let widest = row.graphemes(true).map(grapheme_width).max().unwrap_or(0);
                proptest::prop_assert!(w <= width.max(widest), "{row:?} at {width}");
                at = *end;
            }
            proptest::prop_assert_eq!(at, text.len());
        }
    }
}
