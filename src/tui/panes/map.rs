//! The repo map: ranked files with their scores, the map's tokens against its budget,
//! the rendered map text on a toggle, and for the selected file the edges that put it
//! there ("why is this here"). While tags are first extracted it shows progress; the
//! rest of the UI stays usable.

use std::collections::{HashMap, HashSet};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Cx, Draw, Pane, keep_visible, step};
use crate::engine::Op;
use crate::engine::protocol::{MapEdge, MapView};
use crate::tui::keymap::Action;
use crate::tui::paths;
use crate::tui::text::{self, thousands};
use crate::tui::theme::Theme;

#[derive(Default)]
pub struct MapPane {
    map: Option<MapView>,
    /// Tag extraction progress: (done, total), while it runs.
    progress: Option<(usize, usize)>,
    selected: usize,
    offset: usize,
    show_text: bool,
    text_scroll: usize,
    why: HashMap<String, Vec<MapEdge>>,
    asked: HashSet<String>,
    /// The engine has no map for this repository.
    unavailable: bool,
    /// For each ranked file, the directories that tell it from its namesakes (cut
    /// paths keep them: `paths`).
    telling: Vec<Vec<usize>>,
}

impl MapPane {
    pub(crate) fn set_map(&mut self, map: MapView) {
        self.progress = None;
        // An empty view: there is no map (the engine said why in the chat).
        self.unavailable = map.ranked.is_empty() && map.text.is_empty();
        if self.unavailable {
            self.map = None;
            return;
        }
        let keep = self.selected_path().map(str::to_string);
        let paths: Vec<&str> = map.ranked.iter().map(|(p, _)| p.as_str()).collect();
        self.telling = paths::telling_dirs(&paths);
        self.map = Some(map);
        self.progress = None;
        // Edges may have changed with the map.
        self.why.clear();
        self.asked.clear();
        let ranked = self.ranked_len();
        self.selected = keep
            .and_then(|p| self.map.as_ref()?.ranked.iter().position(|(f, _)| *f == p))
            .unwrap_or(0)
            .min(ranked.saturating_sub(1));
    }

    pub(crate) fn set_progress(&mut self, done: usize, total: usize) {
        self.progress = (done < total).then_some((done, total));
    }

    pub(crate) fn set_why(&mut self, path: String, edges: Vec<MapEdge>) {
        self.why.insert(path, edges);
    }

    fn telling_of(&self, i: usize) -> &[usize] {
        self.telling.get(i).map_or(&[], Vec::as_slice)
    }

    fn ranked_len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.ranked.len())
    }

    fn selected_path(&self) -> Option<&str> {
        self.map
            .as_ref()?
            .ranked
            .get(self.selected)
            .map(|(p, _)| p.as_str())
    }

    /// Asks the engine why the selected file is in the map, once per file and map.
    fn ask_why(&mut self, cx: &mut Cx<'_>) {
        if self.show_text {
            return;
        }
        let Some(path) = self.selected_path().map(str::to_string) else {
            return;
        };
        if !self.why.contains_key(&path) && self.asked.insert(path.clone()) {
            cx.send(Op::MapWhy { path });
        }
    }

    fn header(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        if let Some(map) = &self.map {
            let fill = map.tokens as f64 / map.budget.max(1) as f64;
            out.push(Line::from(vec![
                Span::styled(
                    thousands(map.tokens),
                    Style::new()
                        .fg(theme.fill(fill))
                        .add_modifier(Modifier::BOLD),
                ),
                Span::styled(
                    format!(
                        " / {} tokens · {}",
                        thousands(map.budget),
                        crate::plural::count(map.ranked.len(), "file")
                    ),
                    theme.dim(),
                ),
            ]));
        }
        if let Some((done, total)) = self.progress {
            let label = format!(" tags {done}/{total}");
            let cells = width.saturating_sub(label.len()).max(1);
            let filled = (done * cells / total.max(1)).min(cells);
            out.push(Line::from(vec![
                text::repeat('█', filled, Style::new().fg(theme.c.accent)),
                text::repeat('░', cells - filled, Style::new().fg(theme.c.free)),
                Span::styled(label, theme.dim()),
            ]));
        }
        out
    }

    fn render_ranked(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        let Some(map) = &self.map else { return };
        let width = area.width as usize;
        let why_rows = if area.height >= 10 {
            (area.height / 3).max(3)
        } else {
            0
        };
        let list_height = (area.height - why_rows) as usize;
        self.offset = keep_visible(self.offset, self.selected, list_height);
        let top_score = map
            .ranked
            .first()
            .map_or(1.0, |(_, s)| *s)
            .max(f64::MIN_POSITIVE);
        for (row, (i, (path, score))) in map
            .ranked
            .iter()
            .enumerate()
            .skip(self.offset)
            .take(list_height)
            .enumerate()
        {
            let y = area.y + row as u16;
            let cells = ((score / top_score) * 4.0).round().clamp(0.0, 4.0) as usize;
            let score_text = format!("{:>7}", score_label(*score));
            let path_width = width.saturating_sub(text::width(&score_text) + 6);
            let mut line = Line::from(vec![
                Span::styled(score_text, theme.dim()),
                Span::raw(" "),
                text::repeat('▮', cells, Style::new().fg(theme.c.repo_map)),
                Span::raw(" ".repeat(5 - cells)),
                Span::styled(
                    paths::fit(path, self.telling_of(i), path_width),
                    Style::new().fg(theme.c.fg),
                ),
            ]);
            if i == self.selected && draw.focused {
                buf.set_style(Rect::new(area.x, y, area.width, 1), theme.selected());
                line = line.patch_style(theme.selected());
            }
            buf.set_line(area.x, y, &line, area.width);
        }
        if why_rows == 0 {
            return;
        }
        let Some(path) = self.selected_path() else {
            return;
        };
        let mut lines = vec![Line::from(vec![
            Span::styled(
                "why ",
                Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                paths::fit(
                    path,
                    self.telling_of(self.selected),
                    width.saturating_sub(4),
                ),
                Style::new().fg(theme.c.fg),
            ),
        ])];
        match self.why.get(path) {
            None => lines.push(Line::styled("  asking…", theme.dim())),
            Some(edges) if edges.is_empty() => lines.push(Line::styled(
                "  mentioned in the chat or ranked on its own",
                theme.dim(),
            )),
            Some(edges) => {
                for e in edges {
                    let spans = [
                        Span::styled(
                            format!("  {}", e.ident),
                            Style::new().fg(theme.c.inline_code),
                        ),
                        Span::styled(" ← ", theme.dim()),
                        Span::styled(e.from.clone(), Style::new().fg(theme.c.fg)),
                        Span::styled(format!(" {:.2}", e.weight), theme.dim()),
                    ];
                    // Cut with `…`, never mid-number unmarked.
                    lines.push(Line::from(text::truncate_spans(&spans, width)));
                }
            }
        }
        let top = area.bottom() - why_rows;
        buf.set_string(area.x, top, "─".repeat(width), theme.dim());
        for (i, line) in lines.iter().take(why_rows as usize - 1).enumerate() {
            buf.set_line(area.x, top + 1 + i as u16, line, area.width);
        }
    }
}

/// A rank score in seven columns or fewer: PageRank scores of a big repository are
/// tiny, so small ones are written in scientific notation rather than as `0.0000`.
fn score_label(score: f64) -> String {
    if score >= 0.001 {
        format!("{score:.4}")
    } else if score > 0.0 {
        format!("{score:.1e}")
    } else {
        "0".to_string()
    }
}

impl Pane for MapPane {
    fn title(&self) -> String {
        if self.show_text {
            "Repo map · text".into()
        } else {
            "Repo map".into()
        }
    }

    fn actions(&self) -> &'static [Action] {
        &[
            Action::Up,
            Action::Down,
            Action::Top,
            Action::Bottom,
            Action::ToggleMapText,
            Action::RefreshMap,
        ]
    }

    fn on_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool {
        match action {
            Action::Up => self.scroll(-1),
            Action::Down => self.scroll(1),
            Action::Top => {
                self.selected = 0;
                self.text_scroll = 0;
            }
            Action::Bottom => self.selected = self.ranked_len().saturating_sub(1),
            Action::ToggleMapText => self.show_text = !self.show_text,
            Action::RefreshMap => cx.send(Op::Command {
                command: crate::engine::protocol::Command::MapRefresh,
                args: String::new(),
            }),
            _ => return false,
        }
        self.ask_why(cx);
        true
    }

    fn on_focus(&mut self, cx: &mut Cx<'_>) {
        self.ask_why(cx);
    }

    fn scroll(&mut self, lines: i32) {
        if self.show_text {
            self.text_scroll = (self.text_scroll as i64 + lines as i64).max(0) as usize;
        } else {
            self.selected = step(self.selected, lines, self.ranked_len());
        }
    }

    fn click(&mut self, row: u16, cx: &mut Cx<'_>) {
        if !self.show_text {
            let index = self.offset + row as usize;
            if index < self.ranked_len() {
                self.selected = index;
                self.ask_why(cx);
            }
        }
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        let header = self.header(theme, area.width as usize);
        super::draw_lines(area, buf, &header);
        let used = (header.len() as u16).min(area.height);
        let body = Rect::new(area.x, area.y + used, area.width, area.height - used);
        if self.map.is_none() {
            if body.height > 0 {
                let hint = if self.unavailable {
                    "No repo map for this repository (the chat says why)."
                } else if self.progress.is_some() {
                    "Reading the repository's tags; the map follows. Everything else works meanwhile."
                } else {
                    "No repo map yet: it appears once the repository's tags are read."
                };
                super::draw_text(body, buf, hint.to_string(), theme.dim());
            }
            return;
        }
        if self.show_text {
            let map_text = self.map.as_ref().map_or("", |m| m.text.as_str());
            let total = map_text.lines().count();
            self.text_scroll = self
                .text_scroll
                .min(total.saturating_sub(body.height as usize));
            let style = Style::new().fg(theme.c.fg);
            for (y, line) in map_text
                .lines()
                .skip(self.text_scroll)
                .take(body.height as usize)
                .enumerate()
            {
                buf.set_stringn(
                    body.x,
                    body.y + y as u16,
                    line.replace('\t', "    "),
                    body.width as usize,
                    style,
                );
            }
        } else {
            self.render_ranked(body, buf, draw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::score_label;

    #[test]
    fn scores_fit_seven_columns_and_small_ones_stay_readable() {
        assert_eq!(score_label(0.3120), "0.3120");
        assert_eq!(score_label(0.00004251), "4.3e-5");
        assert_eq!(score_label(0.0), "0");
        for s in [1.0, 0.5, 0.001, 0.000_999, 1e-12] {
            assert!(score_label(s).len() <= 7, "{s}");
        }
    }
}
