//! `?`: the keys of the focused pane, then the keys that work everywhere, as bound in
//! the current keymap.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use crate::tui::keymap::{self, Action, Keymap};
use crate::tui::theme::Theme;
use crate::tui::typing::{self, Letter};

/// Editing keys of the message box, which are not remappable actions.
const EDITING: &[(&str, &str)] = &[
    ("ctrl-a / ctrl-e", "start / end of the line"),
    ("ctrl-u / ctrl-k", "delete to the start / end of the line"),
    ("ctrl-w", "delete the word before the cursor"),
    ("alt-b / alt-f", "word left / right"),
];

/// Where printable keys go outside the message box (`typing`).
const TYPING: &[(&str, &str)] = &[
    ("/ @", "go to the message box from any pane"),
    (
        "other letters",
        "no key of the pane's: typed in the message box",
    ),
    (
        "within 1 s",
        "a letter after another is typed (j j y and y n still act)",
    ),
    (
        "typed after keys",
        "the review's keys are taken back and typed too; e opens only after a pause",
    ),
    ("y", "answers a key that asks first; any other types both"),
];

/// The help lines for a pane titled `title` with `actions`.
pub fn lines(
    title: &str,
    actions: &[Action],
    legend: &[(&str, &str)],
    editing: bool,
    keymap: &Keymap,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let head = Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD);
    let key = Style::new().fg(theme.c.inline_code);
    let row = |keys: String, help: &str| {
        Line::from(vec![
            Span::styled(format!("  {keys:<18}"), key),
            Span::styled(help.to_string(), Style::new().fg(theme.c.fg)),
        ])
    };
    let mut out = vec![Line::styled(title.to_string(), head)];
    for action in actions {
        let help = keymap::spec_of(*action).help;
        match typing::letter(*action) {
            Letter::Asks => out.push(row(
                keymap.describe(*action),
                &format!("{help} (asks first)"),
            )),
            _ => out.push(row(keymap.describe(*action), help)),
        }
    }
    if editing {
        for (keys, help) in EDITING {
            out.push(row(keys.to_string(), help));
        }
    }
    if !legend.is_empty() {
        out.push(Line::default());
        out.push(Line::styled("Marks", head));
        for (mark, meaning) in legend {
            out.push(row(mark.to_string(), meaning));
        }
    }
    out.push(Line::default());
    out.push(Line::styled("Everywhere", head));
    for action in keymap::GLOBAL {
        out.push(row(keymap.describe(*action), keymap::spec_of(*action).help));
    }
    out.push(row(
        "mouse".into(),
        "click focuses, the wheel scrolls; shift-drag selects text",
    ));
    out.push(Line::default());
    out.push(Line::styled("Typing", head));
    for (keys, help) in TYPING {
        out.push(row(keys.to_string(), help));
    }
    out.push(Line::default());
    out.push(Line::styled(
        "Rebind any key in [keys] of the config: accept = \"y space\"",
        theme.dim(),
    ));
    out
}

/// Draws the help popup centred in `area`, from line `scroll` on; returns the scroll
/// clamped to what can be shown.
pub fn render(
    lines: &[Line<'static>],
    scroll: usize,
    area: Rect,
    buf: &mut Buffer,
    theme: &Theme,
) -> usize {
    let width = (lines.iter().map(Line::width).max().unwrap_or(20) as u16 + 4).min(area.width);
    // Lines wider than the popup wrap under their text, never cut at the edge.
    let text_width = usize::from(width.saturating_sub(3)).max(1);
    let wrapped: Vec<Line<'static>> = lines
        .iter()
        .flat_map(|line| {
            let indent = line
                .spans
                .first()
                .filter(|_| line.spans.len() > 1)
                .map_or(0, |s| crate::tui::text::width(&s.content))
                .min(text_width / 2);
            crate::tui::text::wrap(
                &line.spans,
                text_width,
                &[],
                &[Span::raw(" ".repeat(indent))],
            )
        })
        .collect();
    let lines = &wrapped;
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    let rows = height.saturating_sub(2) as usize;
    let scroll = scroll.min(lines.len().saturating_sub(rows));
    let more = lines.len() > scroll + rows;
    Clear.render(popup, buf);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(true))
        .title(Span::styled(" Keys · esc closes ", theme.border(true)))
        .style(theme.text());
    if more {
        block = block.title_bottom(Span::styled(" ↓ more (j/↓) ", theme.border(true)));
    }
    let inner = block.inner(popup);
    block.render(popup, buf);
    for (y, line) in lines
        .iter()
        .skip(scroll)
        .take(inner.height as usize)
        .enumerate()
    {
        buf.set_line(
            inner.x + 1,
            inner.y + y as u16,
            line,
            inner.width.saturating_sub(1),
        );
    }
    scroll
}
