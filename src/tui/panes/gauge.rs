//! The budget gauge: the whole input window as one stacked bar (a segment per request
//! section, the reserved output, the free space), a legend with tokens and percentages,
//! the history sub-budget with its checkpoint and swap marks, and what the last request
//! really cost.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::budget_control::{self, Target};
use super::{Cx, Draw, Pane};
use crate::engine::protocol::{BudgetReport, Counting, HistoryStatus, Section, WindowSource};
use crate::tui::keymap::Action;
use crate::tui::text::{self, thousands};
use crate::tui::theme::Theme;

#[derive(Default)]
pub struct GaugePane {
    report: Option<BudgetReport>,
    /// The latest history status (from the report or a `History` event).
    history: Option<HistoryStatus>,
    show_files: bool,
    scroll: usize,
    /// The row the control's keys act on (`budget_control`), kept across reports by
    /// what it is.
    selected: Option<Target>,
    /// The rows a key can act on, in order, with their lines, as last drawn.
    rows: Vec<(usize, Target)>,
    /// The selection moved: the next render scrolls it into view.
    reveal: bool,
}

/// The gauge's lines, and which of them are rows a key can act on.
struct Drawn {
    lines: Vec<Line<'static>>,
    rows: Vec<(usize, Target)>,
}

/// One segment of the bar.
struct Segment {
    tokens: usize,
    color: Color,
    glyph: char,
}

impl GaugePane {
    pub(crate) fn set_report(&mut self, report: BudgetReport) {
        self.history = Some(report.history.clone());
        self.report = Some(report);
    }

    pub(crate) fn set_history(&mut self, history: HistoryStatus) {
        self.history = Some(history);
    }

    pub fn report(&self) -> Option<&BudgetReport> {
        self.report.as_ref()
    }

    fn segments(report: &BudgetReport, theme: &Theme) -> Vec<Segment> {
        let mut out: Vec<Segment> = report
            .sections
            .iter()
            .filter(|s| s.tokens > 0)
            .map(|s| Segment {
                tokens: s.tokens,
                color: section_color(s.section, theme),
                glyph: '█',
            })
            .collect();
        let free = report
            .window
            .saturating_sub(report.total + report.reserved_output);
        out.push(Segment {
            tokens: free,
            color: theme.c.free,
            glyph: '░',
        });
        out.push(Segment {
            tokens: report.reserved_output,
            color: theme.c.reserved,
            glyph: '▒',
        });
        out
    }

    /// The stacked bar in `width` cells, to an eighth of a cell: a section smaller than
    /// a cell is a thin mark inside its neighbour's cell, so the bar stays proportional
    /// (1.9% of the window never fills 7 of 37 cells).
    fn bar(report: &BudgetReport, theme: &Theme, width: usize) -> Line<'static> {
        let segments = GaugePane::segments(report, theme);
        let ends = boundaries(
            &segments.iter().map(|s| s.tokens).collect::<Vec<_>>(),
            width * 8,
        );
        let mut spans = Vec::with_capacity(width);
        let mut start = 0;
        let mut first = 0;
        for cell in 0..width {
            let (from, to) = (cell * 8, cell * 8 + 8);
            // The segments that show in this cell, in order, with their eighths in it.
            let mut parts: Vec<(usize, usize)> = Vec::new();
            let mut i = first;
            let mut seg_start = start;
            while i < segments.len() && seg_start < to {
                let seg_end = ends[i];
                let covered = seg_end.min(to).saturating_sub(seg_start.max(from));
                if covered > 0 {
                    parts.push((i, covered));
                }
                if seg_end <= to {
                    first = i + 1;
                    start = seg_end;
                }
                seg_start = seg_end;
                i += 1;
            }
            spans.push(cell_span(&segments, &parts));
        }
        Line::from(spans)
    }

    /// A one-line gauge for the status line: the bar and the fill.
    pub fn mini(&self, theme: &Theme, width: usize) -> Line<'static> {
        let Some(report) = &self.report else {
            return Line::default();
        };
        let pct = format!(" {:.0}%", 100.0 * report.fill());
        let mut line = GaugePane::bar(report, theme, width.saturating_sub(pct.len()));
        line.spans.push(Span::styled(
            pct,
            Style::new()
                .fg(theme.fill(report.fill()))
                .add_modifier(Modifier::BOLD),
        ));
        line
    }

    fn lines(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        self.drawn(theme, width).lines
    }

    fn drawn(&self, theme: &Theme, width: usize) -> Drawn {
        let mut rows = Vec::new();
        let Some(report) = &self.report else {
            return Drawn {
                lines: vec![Line::styled("waiting for the engine…", theme.dim())],
                rows,
            };
        };
        let approx = if report.estimate() { "≈" } else { "" };
        let fill = report.fill();
        let fill_style = Style::new()
            .fg(theme.fill(fill))
            .add_modifier(Modifier::BOLD);
        let mut out = Vec::new();
        out.push(Line::from(vec![
            Span::styled(format!("{approx}{}", thousands(report.total)), fill_style),
            Span::styled(
                format!(" of {} tokens · ", thousands(report.window)),
                theme.dim(),
            ),
            Span::styled(format!("{:.1}%", 100.0 * fill), fill_style),
        ]));
        out.push(GaugePane::bar(report, theme, width));
        out.push(marks(fill, theme, width));
        if text::width(LEGEND_LINE) <= width {
            out.push(Line::styled(LEGEND_LINE, theme.dim()));
        }
        // Where the window comes from; a guess, or one learned by overflowing, warns.
        let window = report.window_describe();
        let guessed = matches!(
            report.window_source,
            WindowSource::Assumed | WindowSource::Server
        );
        if guessed {
            let warn = Style::new().fg(theme.c.warning);
            out.extend(text::wrap(
                &[Span::styled(window, warn)],
                width,
                &[Span::styled("⚠ ", warn)],
                &[Span::raw("  ")],
            ));
        } else if !window.is_empty() {
            out.extend(text::wrap(
                &[Span::styled(window, theme.dim())],
                width,
                &[],
                &[Span::raw("  ")],
            ));
        }
        match report.counting {
            Counting::Exact => {}
            Counting::Server => out.push(Line::styled("counts exact via server", theme.dim())),
            estimate => out.push(Line::styled(
                format!("counts {} ({})", estimate.label(), report.encoding),
                theme.dim(),
            )),
        }
        out.push(Line::default());
        let label_width = width.saturating_sub(18).clamp(6, 18);
        // `counted`: the number comes from the tokenizer (so it is "≈" for estimates);
        // the reserve is a setting.
        let row = |label: &str,
                   tokens: usize,
                   color: Color,
                   glyph: &str,
                   indent: bool,
                   counted: bool,
                   label_color: Color| {
            let approx = if counted { approx } else { "" };
            let pct = 100.0 * tokens as f64 / report.window.max(1) as f64;
            let label = if indent {
                format!("  {}", text::truncate_left(label, label_width - 2))
            } else {
                text::truncate(label, label_width)
            };
            Line::from(vec![
                Span::styled(format!("{glyph} "), Style::new().fg(color)),
                Span::styled(
                    format!("{label:<label_width$}"),
                    Style::new().fg(label_color),
                ),
                Span::styled(
                    format!("{:>9}", format!("{approx}{}", thousands(tokens))),
                    Style::new().fg(theme.c.fg),
                ),
                Span::styled(format!(" {pct:>5.1}%"), theme.dim()),
            ])
        };
        for s in &report.sections {
            if s.tokens == 0 && s.section != Section::Cur {
                continue;
            }
            // The map's row says when it is rebuilt, in the caution colour while it
            // is kept though files changed since it was built.
            let (label, label_color) = match (&report.map, s.section) {
                (Some(m), Section::Repo) => (
                    format!("{} · {}", s.label, m.refresh.label()),
                    if m.kept_stale {
                        theme.c.caution
                    } else {
                        theme.c.fg
                    },
                ),
                _ => (s.label.to_string(), theme.c.fg),
            };
            out.push(row(
                &label,
                s.tokens,
                section_color(s.section, theme),
                "■",
                false,
                true,
                label_color,
            ));
            rows.extend(Target::of_section(s.section).map(|t| (out.len() - 1, t)));
            if self.show_files {
                for f in report.files.iter().filter(|f| f.section == s.section) {
                    out.push(row(
                        &f.path,
                        f.tokens,
                        section_color(s.section, theme),
                        " ",
                        true,
                        true,
                        theme.c.fg,
                    ));
                    rows.extend(Target::of_item(s.section, &f.path).map(|t| (out.len() - 1, t)));
                }
            }
        }
        out.push(row(
            "reserved output",
            report.reserved_output,
            theme.c.reserved,
            "▒",
            false,
            false,
            theme.c.fg,
        ));
        let free = report
            .window
            .saturating_sub(report.total + report.reserved_output);
        out.push(row(
            "free",
            free,
            theme.c.free,
            "░",
            false,
            true,
            theme.c.fg,
        ));
        if report.remaining < 0 {
            let style = Style::new().fg(theme.c.danger).add_modifier(Modifier::BOLD);
            out.push(Line::styled(
                format!(
                    "over the limit by {}: drop files or /clear",
                    thousands(report.remaining.unsigned_abs() as usize)
                ),
                style,
            ));
        } else {
            out.push(Line::styled(
                format!(
                    "{} left before the limit",
                    thousands(report.remaining as usize)
                ),
                theme.dim(),
            ));
        }
        match &report.last_usage {
            Some(u) => {
                let approx = if report.last_usage_estimated {
                    "≈"
                } else {
                    ""
                };
                let mut spans = vec![
                    Span::styled("last ", theme.dim()),
                    Span::styled(
                        format!(
                            "↑{approx}{} ↓{approx}{}",
                            thousands(u.prompt_tokens),
                            thousands(u.completion_tokens)
                        ),
                        Style::new().fg(theme.c.fg),
                    ),
                ];
                if report.last_usage_estimated {
                    spans.push(Span::styled(" (not reported)", theme.dim()));
                }
                if u.cached_tokens > 0 {
                    spans.push(Span::styled(
                        format!(" · {} cached", thousands(u.cached_tokens)),
                        Style::new().fg(theme.c.ok),
                    ));
                }
                out.push(Line::from(spans));
                if let Some(drift) = report.last_drift {
                    let style = match drift.beyond_margin() {
                        true => Style::new().fg(theme.c.warning),
                        false => theme.dim(),
                    };
                    out.push(Line::styled(drift.describe(), style));
                }
            }
            None => out.push(Line::styled("no request yet", theme.dim())),
        }
        out.push(Line::from(vec![
            Span::styled("cost ", theme.dim()),
            Span::styled(
                format!("${:.4}", report.last_cost),
                Style::new().fg(theme.c.fg),
            ),
            Span::styled(" · session ", theme.dim()),
            Span::styled(report.session_spending(), Style::new().fg(theme.c.fg)),
        ]));
        if let Some(h) = self.history.as_ref().filter(|h| h.budget > 0) {
            out.push(Line::default());
            out.extend(history_lines(h, theme, width));
        }
        Drawn { lines: out, rows }
    }

    /// Moves the selection `by` rows a key can act on (none selected: the first).
    fn select(&mut self, by: i32) {
        let at = self
            .selected
            .as_ref()
            .and_then(|t| self.rows.iter().position(|(_, r)| r == t));
        let next = match at {
            Some(i) => super::step(i, by, self.rows.len()),
            None => 0,
        };
        self.selected = self.rows.get(next).map(|(_, t)| t.clone());
        self.reveal = true;
    }
}

/// Under the bar: the fill in its colour, and ticks where the colour changes.
fn marks(fill: f64, theme: &Theme, width: usize) -> Line<'static> {
    let filled = ((fill.min(1.0) * width as f64).round() as usize).min(width);
    let tick = |f: f64| ((f * width as f64).round() as usize).min(width.saturating_sub(1));
    let (t60, t85) = (tick(0.60), tick(0.85));
    let mut spans = Vec::new();
    for i in 0..width {
        let (c, style) = if i < filled {
            (
                '▔',
                Style::new().fg(theme.fill(i as f64 / width.max(1) as f64)),
            )
        } else if i == t60 || i == t85 {
            ('╵', theme.dim())
        } else {
            (' ', Style::new())
        };
        spans.push(Span::styled(c.to_string(), style));
    }
    Line::from(spans)
}

/// The history sub-budget: tokens of budget, a bar with the checkpoint and swap marks,
/// and the summarizer's phase.
fn history_lines(h: &HistoryStatus, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let fraction = h.tokens as f64 / h.budget.max(1) as f64;
    let color = theme.fill(fraction);
    let mut head = vec![
        Span::styled(
            "history ",
            Style::new()
                .fg(theme.c.history)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!("{} / {}", thousands(h.tokens), thousands(h.budget)),
            Style::new().fg(color),
        ),
        Span::styled(format!(" · {}", h.phase.label()), theme.dim()),
    ];
    if h.summaries > 0 {
        head.push(Span::styled(
            format!(
                " · {} summar{}",
                h.summaries,
                if h.summaries == 1 { "y" } else { "ies" }
            ),
            theme.dim(),
        ));
    }
    let cells = width.max(4);
    let pos = |tokens: usize| {
        ((tokens as f64 / h.budget.max(1) as f64 * cells as f64).round() as usize).min(cells - 1)
    };
    let filled = ((fraction.min(1.0) * cells as f64).round() as usize).min(cells);
    // With the classic summarizer there are no marks (they are 0): draw none.
    let marks = h.swap_mark > 0;
    let (checkpoint, swap) = (pos(h.checkpoint_mark), pos(h.swap_mark));
    let mut bar = Vec::new();
    for i in 0..cells {
        let span = if marks && (i == checkpoint || i == swap) {
            Span::styled(
                "┃",
                Style::new()
                    .fg(if i < filled { color } else { theme.c.dim })
                    .add_modifier(Modifier::BOLD),
            )
        } else if i < filled {
            Span::styled("━", Style::new().fg(color))
        } else {
            Span::styled("─", Style::new().fg(theme.c.free))
        };
        bar.push(span);
    }
    let mut legend = if marks {
        format!(
            "checkpoint {} · swap {}",
            thousands(h.checkpoint_mark),
            thousands(h.swap_mark)
        )
    } else {
        "summarized when full".to_string()
    };
    if h.summary_tokens > 0 {
        legend.push_str(&format!(" · summary {}", thousands(h.summary_tokens)));
    }
    vec![
        Line::from(head),
        Line::from(bar),
        Line::styled(text::truncate(&legend, width), theme.dim()),
    ]
}

pub(crate) fn section_color(section: Section, theme: &Theme) -> Color {
    match section {
        Section::System => theme.c.system,
        Section::Examples => theme.c.examples,
        Section::ReadonlyFiles => theme.c.readonly_files,
        Section::Repo => theme.c.repo_map,
        Section::Done => theme.c.history,
        Section::ChatFiles => theme.c.editable_files,
        Section::CommandOutput => theme.c.command_output,
        Section::ReviewDiff => theme.c.review_diff,
        Section::Cur => theme.c.current,
        Section::Reminder => theme.c.reminder,
    }
}

/// One cell of the bar from the segments in it and their eighths: the part the
/// sections take as a left block (so the fill is exact to an eighth) in the colour of
/// the largest of them; a cell with no section shows the free space or the reserve,
/// whichever is larger.
fn cell_span(segments: &[Segment], parts: &[(usize, usize)]) -> Span<'static> {
    let used = |i: &usize| segments[*i].glyph == '█';
    let largest = |used_parts: bool| {
        parts
            .iter()
            .filter(|(i, _)| used(i) == used_parts)
            .max_by_key(|(_, n)| *n)
            .map(|(i, _)| *i)
    };
    let eighths: usize = parts.iter().filter(|(i, _)| used(i)).map(|(_, n)| n).sum();
    match (largest(true), largest(false)) {
        (Some(i), _) => {
            let glyph = if eighths >= 8 {
                '█'
            } else {
                LEFT_BLOCKS[eighths.max(1)]
            };
            Span::styled(glyph.to_string(), Style::new().fg(segments[i].color))
        }
        (None, Some(i)) => Span::styled(
            segments[i].glyph.to_string(),
            Style::new().fg(segments[i].color),
        ),
        (None, None) => Span::raw(" "),
    }
}

/// Left blocks by eighths of a cell (index 1 to 7).
const LEFT_BLOCKS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/// Where each of `values` ends when `units` are shared among them in proportion: the
/// cumulative share, rounded, with every non-zero value at least one unit (a thin mark)
/// when there is room. The last end is `units`.
pub fn boundaries(values: &[usize], units: usize) -> Vec<usize> {
    let total: usize = values.iter().sum();
    let mut ends = Vec::with_capacity(values.len());
    if total == 0 {
        ends.resize(values.len(), 0);
        return ends;
    }
    let mut cumulative = 0usize;
    let mut previous = 0usize;
    for (i, v) in values.iter().enumerate() {
        cumulative += v;
        let exact = (cumulative as f64 * units as f64 / total as f64).round() as usize;
        // Room the values after this one still need for their minimum.
        let after = values[i + 1..].iter().filter(|v| **v > 0).count();
        let mut end = exact.max(previous);
        if *v > 0 && end == previous {
            end = previous + 1;
        }
        end = end.min(units.saturating_sub(after)).max(previous);
        ends.push(end);
        previous = end;
    }
    if let Some(last) = ends.last_mut() {
        *last = units;
    }
    ends
}

/// The marks under the bar and around it, for `?`.
pub const LEGEND: &[(&str, &str)] = &[
    (
        "▔",
        "the window's fill: green, yellow past 60%, red past 85%",
    ),
    ("╵", "the 60% and 85% marks"),
    ("░", "free"),
    ("▒", "reserved for the reply"),
    ("▏▌", "sections that fill part of a cell (to an eighth)"),
];

/// The legend line under the bar, when the pane is wide enough for it.
const LEGEND_LINE: &str = "▔ fill · ╵ 60%/85% · ░ free · ▒ reply";

impl Pane for GaugePane {
    fn title(&self) -> String {
        match &self.report {
            Some(r) => format!("Budget · {}", r.model),
            None => "Budget".into(),
        }
    }

    fn actions(&self) -> &'static [Action] {
        &[
            Action::ToggleFileRows,
            Action::Up,
            Action::Down,
            Action::DropRow,
            Action::ReadOnlyRow,
            Action::ShrinkMap,
            Action::CompactHistory,
        ]
    }

    fn ask(&self, action: Action) -> Option<String> {
        budget_control::question(action, self.selected.as_ref()?, self.report.as_ref()?)
    }

    fn on_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool {
        match action {
            Action::ToggleFileRows => self.show_files = !self.show_files,
            Action::Up => self.select(-1),
            Action::Down => self.select(1),
            Action::DropRow | Action::ReadOnlyRow | Action::ShrinkMap | Action::CompactHistory => {
                let (Some(target), Some(report)) = (&self.selected, &self.report) else {
                    return false;
                };
                let ops = budget_control::ops(action, target, report);
                if ops.is_empty() {
                    return false;
                }
                ops.into_iter().for_each(|op| cx.send(op));
            }
            _ => return false,
        }
        true
    }

    fn click(&mut self, row: u16, _cx: &mut Cx<'_>) {
        let line = self.scroll + row as usize;
        if let Some((_, target)) = self.rows.iter().find(|(l, _)| *l == line) {
            self.selected = Some(target.clone());
        }
    }

    fn scroll(&mut self, lines: i32) {
        self.scroll = (self.scroll as i64 + lines as i64).max(0) as usize;
    }

    fn legend(&self) -> &'static [(&'static str, &'static str)] {
        LEGEND
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let Drawn { mut lines, rows } = self.drawn(draw.theme, area.width as usize);
        self.rows = rows;
        // A selected row that went (a file dropped) gives way to the first, and the
        // focused pane always has one.
        let gone = |t: &Target| !self.rows.iter().any(|(_, r)| r == t);
        if self.selected.as_ref().map_or(draw.focused, gone) {
            self.selected = self.rows.first().map(|(_, t)| t.clone());
        }
        // Focused, the last row is the footer: the selected row's keys.
        let footer = draw.focused && area.height > 1;
        let height = area.height as usize - usize::from(footer);
        let selected_line = self
            .rows
            .iter()
            .find(|(_, t)| Some(t) == self.selected.as_ref())
            .map(|(line, _)| *line);
        if let Some(line) = selected_line.filter(|_| draw.focused) {
            if std::mem::take(&mut self.reveal) {
                self.scroll = super::keep_visible(self.scroll, line, height);
            }
            if let Some(l) = lines.get_mut(line) {
                *l = std::mem::take(l).patch_style(draw.theme.selected());
            }
        }
        self.scroll = self.scroll.min(lines.len().saturating_sub(height));
        super::draw_lines(
            Rect::new(area.x, area.y, area.width, height as u16),
            buf,
            &lines[self.scroll..],
        );
        if footer {
            let text = budget_control::footer(self.selected.as_ref(), draw.keymap);
            buf.set_string(
                area.x,
                area.bottom() - 1,
                text::truncate(&text, area.width as usize),
                draw.theme.dim(),
            );
        }
    }
}

/// Rows the gauge needs to show everything at `width` (focused: and its footer).
pub(crate) fn wanted_rows(pane: &GaugePane, theme: &Theme, width: u16, focused: bool) -> u16 {
    pane.lines(theme, width as usize).len() as u16 + u16::from(focused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_proportional_and_keep_small_sections_as_thin_marks() {
        assert_eq!(boundaries(&[50, 50], 80), [40, 80]);
        assert_eq!(boundaries(&[1, 999_999], 80), [1, 80]);
        assert_eq!(boundaries(&[0, 3, 0], 56), [0, 56, 56]);
        // Five small sections of a 37-cell bar (1.9% of the window) take about 0.7
        // cells in eighths, not seven cells.
        let ends = boundaries(&[300, 250, 200, 150, 100, 52_000], 37 * 8);
        assert_eq!(ends.len(), 6);
        assert!(ends[4] <= 8, "{ends:?}");
        assert!(
            ends.windows(2).all(|w| w[0] < w[1]),
            "each visible: {ends:?}"
        );
        assert_eq!(*ends.last().unwrap(), 37 * 8);
        assert_eq!(boundaries(&[], 5), Vec::<usize>::new());
        // More non-zero values than units: monotone, never past the end.
        let ends = boundaries(&[1, 1, 1, 1], 2);
        assert!(
            ends.windows(2).all(|w| w[0] <= w[1]) && ends[3] == 2,
            "{ends:?}"
        );
    }
}
