//! Syntax highlighting with syntect, line by line and resumable: a block keeps its
//! parser state, so a code fence that grows while a reply streams, or a diff scrolled
//! further into view, continues where it stopped instead of starting over. Huge blocks
//! and very long lines are capped and shown plain, so one pasted log cannot stall a
//! frame.

use std::sync::{Arc, OnceLock};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::highlighting::{
    FontStyle, HighlightIterator, HighlightState, Highlighter, Theme as SyntaxTheme,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

/// Lines of one block that are highlighted; the rest are shown plain.
pub const MAX_LINES: usize = 5_000;
/// Lines longer than this (in bytes) are shown plain: syntect is slow on them and they
/// are rarely code a person reads.
pub const MAX_LINE_LEN: usize = 1_000;

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();

/// syntect's grammars (loading them takes tens of milliseconds, so `preload` starts it
/// on a thread while the terminal is being set up).
pub(crate) fn syntaxes() -> &'static SyntaxSet {
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

pub(crate) fn preload() {
    std::thread::spawn(syntaxes);
}

/// The grammar for a fence's language token (`rust`, `py`, `tsx`, ...), if any.
pub(crate) fn syntax_for_token(token: &str) -> Option<&'static SyntaxReference> {
    let token = token.trim();
    if token.is_empty() {
        return None;
    }
    let set = syntaxes();
    let alias = match token.to_ascii_lowercase().as_str() {
        "ts" | "typescript" | "tsx" => "js",
        "jsx" | "javascript" => "js",
        "shell" | "bash" | "zsh" | "console" => "sh",
        "toml" => "yaml",
        "c++" => "cpp",
        "c#" | "csharp" | "cs" => "cs",
        "golang" => "go",
        "py3" | "python3" => "py",
        _ => "",
    };
    set.find_syntax_by_token(token).or_else(|| {
        (!alias.is_empty())
            .then(|| set.find_syntax_by_token(alias))
            .flatten()
    })
}

/// The grammar for a file, by its extension.
pub(crate) fn syntax_for_path(path: &str) -> Option<&'static SyntaxReference> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?;
    syntax_for_token(ext)
}

/// The highlighted lines of one block, extended on demand.
pub struct Incremental {
    syntax: Option<&'static SyntaxReference>,
    theme: Arc<SyntaxTheme>,
    state: Option<(ParseState, HighlightState)>,
    /// One entry per source line, in order.
    pub lines: Vec<Vec<Span<'static>>>,
    /// Bytes of the source consumed by `extend_text` (whole lines only).
    consumed: usize,
}

impl Incremental {
    pub fn new(syntax: Option<&'static SyntaxReference>, theme: &Arc<SyntaxTheme>) -> Self {
        let state = syntax.map(|s| {
            let highlighter = Highlighter::new(theme);
            (
                ParseState::new(s),
                HighlightState::new(&highlighter, ScopeStack::new()),
            )
        });
        Incremental {
            syntax,
            theme: Arc::clone(theme),
            state,
            lines: Vec::new(),
            consumed: 0,
        }
    }

    pub(crate) fn is_for(&self, syntax: Option<&'static SyntaxReference>) -> bool {
        match (self.syntax, syntax) {
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// Highlights the next lines (without their newlines).
    pub(crate) fn push_lines<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        let highlighter = Highlighter::new(&self.theme);
        for line in lines {
            let spans = match &mut self.state {
                Some(state) if self.lines.len() < MAX_LINES && line.len() <= MAX_LINE_LEN => {
                    match highlight_line(state, line, &highlighter) {
                        Some(spans) => spans,
                        None => {
                            // A grammar error: the rest of the block is shown plain.
                            self.state = None;
                            vec![plain(line, &self.theme)]
                        }
                    }
                }
                _ => vec![plain(line, &self.theme)],
            };
            self.lines.push(spans);
        }
    }

    /// Highlights the whole lines of `text` not highlighted yet. Returns false when
    /// `text` does not continue what was highlighted before (start a new block then).
    /// A last line without its newline is left for later: it may still grow.
    pub(crate) fn extend_text(&mut self, text: &str) -> bool {
        let Some(fresh) = text.get(self.consumed..) else {
            return false;
        };
        let Some((complete, _)) = fresh.rsplit_once('\n') else {
            return true;
        };
        self.push_lines(complete.split('\n'));
        self.consumed += complete.len() + 1;
        true
    }

    /// The unfinished last line of `text` after `extend_text`, shown plain until it ends.
    pub fn pending<'t>(&self, text: &'t str) -> &'t str {
        text.get(self.consumed..).unwrap_or("")
    }

    pub fn plain(&self, line: &str) -> Span<'static> {
        plain(line, &self.theme)
    }
}

fn highlight_line(
    (parse, highlight): &mut (ParseState, HighlightState),
    line: &str,
    highlighter: &Highlighter<'_>,
) -> Option<Vec<Span<'static>>> {
    let with_newline = format!("{line}\n");
    let ops = parse.parse_line(&with_newline, syntaxes()).ok()?;
    let spans = HighlightIterator::new(highlight, &ops, &with_newline, highlighter)
        .filter_map(|(style, text)| {
            let text = text.trim_end_matches('\n');
            (!text.is_empty()).then(|| Span::styled(text.to_string(), convert(style)))
        })
        .collect();
    Some(spans)
}

fn plain(line: &str, theme: &SyntaxTheme) -> Span<'static> {
    let mut style = Style::new();
    if let Some(fg) = theme.settings.foreground {
        style = style.fg(Color::Rgb(fg.r, fg.g, fg.b));
    }
    Span::styled(line.to_string(), style)
}

/// syntect's style as a ratatui style: the foreground and font style only; the
/// background is the UI theme's.
fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        out = out.add_modifier(Modifier::UNDERLINED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::Theme;

    fn text_of(spans: &[Span<'_>]) -> String {
        spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn highlights_rust_with_more_than_one_colour() {
        let theme = Theme::default_theme();
        let mut block = Incremental::new(syntax_for_token("rust"), &theme.syntax);
        block.push_lines(["fn main() {", "    let x = \"hi\";", "}"]);
        assert_eq!(block.lines.len(), 3);
        assert_eq!(text_of(&block.lines[1]), "    let x = \"hi\";");
        let colours: std::collections::HashSet<_> =
            block.lines[1].iter().map(|s| s.style.fg).collect();
        assert!(colours.len() >= 2, "{:?}", block.lines[1]);
    }

    #[test]
    fn a_growing_block_continues_and_a_changed_one_is_refused() {
        let theme = Theme::default_theme();
        let mut block = Incremental::new(syntax_for_token("py"), &theme.syntax);
        assert!(block.extend_text("def f():\n    ret"));
        assert_eq!(block.lines.len(), 1);
        assert_eq!(block.pending("def f():\n    ret"), "    ret");
        assert!(block.extend_text("def f():\n    return 1\n"));
        assert_eq!(block.lines.len(), 2);
        assert_eq!(text_of(&block.lines[1]), "    return 1");
        assert!(!block.extend_text("class"), "shorter text is another block");
    }

    #[test]
    fn huge_blocks_and_long_lines_are_capped() {
        let theme = Theme::default_theme();
        let mut block = Incremental::new(syntax_for_token("rs"), &theme.syntax);
        let long = "x".repeat(MAX_LINE_LEN + 1);
        block.push_lines([long.as_str()]);
        assert_eq!(block.lines[0].len(), 1, "a long line is one plain span");
        let many: Vec<String> = (0..MAX_LINES + 5)
            .map(|i| format!("let a{i} = {i};"))
            .collect();
        block.push_lines(many.iter().map(String::as_str));
        assert_eq!(block.lines.len(), MAX_LINES + 6);
        assert_eq!(block.lines.last().unwrap().len(), 1, "past the cap: plain");
    }

    #[test]
    fn languages_are_found_by_fence_token_and_path() {
        for token in [
            "rust", "rs", "python", "py", "js", "ts", "go", "sh", "json", "c++",
        ] {
            assert!(syntax_for_token(token).is_some(), "{token}");
        }
        assert!(syntax_for_token("").is_none());
        assert!(syntax_for_path("src/app.py").is_some());
        assert!(syntax_for_path("Makefile").is_none());
    }
}
