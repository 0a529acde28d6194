//! Markdown (pulldown-cmark) laid out as terminal lines at a given width: headings,
//! emphasis, lists with hanging indents, quotes, tables, rules, links, and fenced code
//! highlighted with syntect. Works on partial text, so a reply renders while it streams
//! (an unclosed fence is a code block running to the end).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::{self, Incremental};
use super::text::{self, wrap};
use super::theme::Theme;

/// Prose wraps at this width even in a wider pane: long lines are hard to read. Code
/// and tables use the whole width.
pub const MAX_PROSE_WIDTH: usize = 100;

/// The code blocks of one text, by position: kept by the caller between renders so a
/// block is highlighted once, and a growing one only for its new lines.
pub type CodeCache = Vec<Incremental>;

/// A text's layout, kept block by block (blocks are separated by blank lines outside
/// code fences). While a reply streams only its last block changes, so only that block
/// is laid out again: the cost of a frame does not grow with the reply.
#[derive(Default)]
pub struct Blocks {
    entries: Vec<Block>,
}

struct Block {
    hash: u64,
    width: usize,
    lines: Vec<Line<'static>>,
    code: CodeCache,
}

/// Lays out `source` in `width` columns, reusing the blocks laid out before.
pub(crate) fn render_blocks(
    source: &str,
    width: usize,
    theme: &Theme,
    cache: &mut Blocks,
) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut count = 0;
    let source = fence_bare_edits(source);
    for (i, block) in split_blocks(&source).into_iter().enumerate() {
        count = i + 1;
        let hash = xxhash_rust::xxh3::xxh3_64(block.as_bytes());
        let fresh = cache
            .entries
            .get(i)
            .is_some_and(|b| b.hash == hash && b.width == width);
        if !fresh {
            let mut code = match cache.entries.get_mut(i) {
                Some(b) => std::mem::take(&mut b.code),
                None => Vec::new(),
            };
            let lines = render(block, width, theme, &mut code);
            let entry = Block {
                hash,
                width,
                lines,
                code,
            };
            if i < cache.entries.len() {
                cache.entries[i] = entry;
            } else {
                cache.entries.push(entry);
            }
        }
        let lines = &cache.entries[i].lines;
        if !lines.is_empty() {
            if !out.is_empty() {
                out.push(Line::default());
            }
            out.extend(lines.iter().cloned());
        }
    }
    cache.entries.truncate(count);
    out
}

/// Whether the lines seen so far leave a code fence open.
#[derive(Default)]
struct Fences(Option<(char, usize)>);

impl Fences {
    /// Sees one line (without its line ending): it may open or close a fence. Returns
    /// the run of fence characters the line starts with (after up to three spaces).
    fn see(&mut self, line: &str) -> Option<(char, usize)> {
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let marker = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let run = body.chars().take_while(|c| *c == marker).count();
        match self.0 {
            None if indent < 4 && run >= 3 => self.0 = Some((marker, run)),
            Some((m, n))
                if marker == m && run >= n && body.trim_start_matches(m).trim().is_empty() =>
            {
                self.0 = None
            }
            _ => {}
        }
        Some((marker, run))
    }

    fn is_open(&self) -> bool {
        self.0.is_some()
    }
}

/// `source` with a fence around each SEARCH/REPLACE block written without one (ask
/// mode's replies often are): bare, its `>>>>>>> REPLACE` reads as seven nested quotes
/// and its code as prose. The fence is of tildes, longer than any run in the text, so
/// nothing inside closes it; an unfinished block (still streaming) runs to the end.
fn fence_bare_edits(source: &str) -> std::borrow::Cow<'_, str> {
    if !source
        .lines()
        .any(|l| edit_marker(l) == Some(EditSection::Search))
    {
        return source.into();
    }
    let longest = source
        .lines()
        .map(|l| l.trim_start().chars().take_while(|c| *c == '~').count())
        .max()
        .unwrap_or(0);
    let fence = "~".repeat(longest.max(2) + 1);
    let mut out = String::with_capacity(source.len() + 16);
    let mut fences = Fences::default();
    let mut in_edit = false;
    for line in source.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if in_edit {
            out.push_str(line);
            if edit_marker(trimmed) == Some(EditSection::None) {
                if !line.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&fence);
                out.push('\n');
                in_edit = false;
            }
            continue;
        }
        let was_open = fences.is_open();
        fences.see(trimmed);
        if !was_open && !fences.is_open() && edit_marker(trimmed) == Some(EditSection::Search) {
            out.push_str(&fence);
            out.push('\n');
            in_edit = true;
        }
        out.push_str(line);
    }
    out.into()
}

/// The contents of the complete code blocks of `markdown`, in order (bare
/// SEARCH/REPLACE blocks too, as the chat draws them): what the chat's `c` copies.
pub(crate) fn code_blocks(markdown: &str) -> Vec<String> {
    let source = fence_bare_edits(markdown);
    let mut fences = Fences::default();
    let mut blocks = Vec::new();
    let mut open: Option<Vec<&str>> = None;
    for line in source.lines() {
        let was_open = fences.is_open();
        fences.see(line);
        match (was_open, fences.is_open(), &mut open) {
            (false, true, _) => open = Some(Vec::new()),
            (true, false, Some(_)) => blocks.extend(open.take().map(|l| l.join("\n"))),
            (true, true, Some(lines)) => lines.push(line),
            _ => {}
        }
    }
    blocks
}

/// Splits markdown at blank lines that are outside code fences and followed by a line
/// that starts a new block (not indented: an indented line continues a list item).
fn split_blocks(source: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut start = 0;
    let mut fences = Fences::default();
    let mut blank_before = false;
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        let indent = trimmed.len() - trimmed.trim_start_matches(' ').len();
        let (marker, run) = fences.see(trimmed).map_or((None, 0), |(m, n)| (Some(m), n));
        let fence = fences.0;
        let is_blank = trimmed.trim().is_empty();
        let opens_block = !is_blank && indent == 0 && !trimmed.starts_with('\t');
        if blank_before
            && opens_block
            && offset > start
            && fence.is_none_or(|_| marker.is_some() && run >= 3)
        {
            blocks.push(source.get(start..offset).unwrap_or_default().trim_end());
            start = offset;
        }
        if fence.is_none() || marker.is_some() {
            blank_before = is_blank && fence.is_none();
        }
        offset += line.len();
    }
    if let Some(rest) = source.get(start..).filter(|r| !r.is_empty()) {
        blocks.push(rest);
    }
    blocks
}

/// Lays out `source` in `width` columns.
pub fn render(
    source: &str,
    width: usize,
    theme: &Theme,
    code: &mut CodeCache,
) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        width: width.max(8),
        code,
        out: Vec::new(),
        inline: Vec::new(),
        styles: vec![Style::new().fg(theme.c.fg)],
        containers: Vec::new(),
        code_block: None,
        code_blocks_seen: 0,
        links: Vec::new(),
        table: None,
        gap: false,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(source, options) {
        r.event(event);
    }
    r.flush();
    if let Some((lang, body)) = r.code_block.take() {
        r.emit_code(&lang, &body);
    }
    r.out
}

enum Container {
    Quote,
    List { next: Option<u64> },
    Item { bullet: String, first: bool },
}

struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    head_rows: usize,
}

struct Renderer<'a> {
    theme: &'a Theme,
    width: usize,
    code: &'a mut CodeCache,
    out: Vec<Line<'static>>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// The open code block: its language and text so far.
    code_block: Option<(String, String)>,
    code_blocks_seen: usize,
    /// Destinations of the open links.
    links: Vec<String>,
    table: Option<Table>,
    /// A blank line is owed before the next block.
    gap: bool,
}

impl Renderer<'_> {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if let Some((_, body)) = &mut self.code_block {
                    body.push_str(&t);
                } else {
                    self.push_text(&t, self.style());
                }
            }
            Event::Code(t) => {
                let style = Style::new().fg(self.theme.c.inline_code);
                self.push_text(&t, style);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => self.push_text(&t, self.style()),
            Event::Html(t) | Event::InlineHtml(t) => {
                let style = self.theme.dim();
                self.push_text(t.trim_end_matches('\n'), style);
            }
            Event::FootnoteReference(t) => self.push_text(&format!("[^{t}]"), self.theme.dim()),
            Event::SoftBreak => self.push_text(" ", self.style()),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_start();
                let rule = text::repeat('─', self.width.min(80), self.theme.dim());
                self.out.push(Line::from(rule));
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.push_text(mark, self.theme.dim());
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                let mut style = Style::new()
                    .fg(self.theme.c.heading)
                    .add_modifier(Modifier::BOLD);
                if level == HeadingLevel::H1 {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code_block = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if !self.in_item() {
                    self.block_start();
                }
                self.containers.push(Container::List { next: start });
            }
            Tag::Item => {
                self.flush();
                let depth = self
                    .containers
                    .iter()
                    .filter(|c| matches!(c, Container::List { .. }))
                    .count();
                let bullet = match self.containers.last_mut() {
                    Some(Container::List { next: Some(n) }) => {
                        let bullet = format!("{n}. ");
                        *n += 1;
                        bullet
                    }
                    _ if depth > 1 => "◦ ".to_string(),
                    _ => "• ".to_string(),
                };
                self.containers.push(Container::Item {
                    bullet,
                    first: true,
                });
            }
            Tag::Emphasis => self.push_style(Modifier::ITALIC),
            Tag::Strong => self.push_style(Modifier::BOLD),
            Tag::Strikethrough => self.push_style(Modifier::CROSSED_OUT),
            Tag::Superscript | Tag::Subscript => self.styles.push(self.style()),
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                let style = Style::new()
                    .fg(self.theme.c.link)
                    .add_modifier(Modifier::UNDERLINED);
                self.styles.push(style);
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.push_text("[image: ", self.theme.dim());
                self.styles.push(self.theme.dim());
            }
            Tag::Table(_) => {
                self.block_start();
                self.table = Some(Table {
                    rows: Vec::new(),
                    head_rows: 0,
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.block_start(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::FootnoteDefinition => {
                self.flush();
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, body)) = self.code_block.take() {
                    self.emit_code(&lang, &body);
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.containers.pop();
                if !self.in_item() {
                    self.gap = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
                self.gap = false;
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                let dest = self.links.pop().unwrap_or_default();
                let shown: String = self.inline.iter().map(|s| s.content.as_ref()).collect();
                if !dest.is_empty() && !shown.ends_with(&dest) {
                    self.push_text(&format!(" ({dest})"), self.theme.dim());
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                self.links.pop();
                self.push_text("]", self.theme.dim());
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.head_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.emit_table(table);
                }
                self.gap = true;
            }
            TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush();
                self.gap = true;
            }
        }
    }

    fn style(&self) -> Style {
        *self.styles.last().expect("the base style is never popped")
    }

    fn push_style(&mut self, modifier: Modifier) {
        self.styles.push(self.style().add_modifier(modifier));
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if !text.is_empty() {
            self.inline.push(Span::styled(text.to_string(), style));
        }
    }

    fn in_item(&self) -> bool {
        self.containers
            .iter()
            .any(|c| matches!(c, Container::Item { .. }))
    }

    /// Before a block: finish the text so far and leave the blank line owed.
    fn block_start(&mut self) {
        self.flush();
        if self.gap && !self.out.is_empty() {
            let (_, rest) = self.prefixes(false);
            self.out.push(Line::from(rest));
        }
        self.gap = false;
    }

    /// The prefixes of the next line and of its continuations. `consume` marks the
    /// innermost item's bullet as used.
    fn prefixes(&mut self, consume: bool) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        let quote = Style::new().fg(self.theme.c.dim);
        let bullet_style = Style::new().fg(self.theme.c.accent);
        let innermost_item = self
            .containers
            .iter()
            .rposition(|c| matches!(c, Container::Item { .. }));
        for (i, container) in self.containers.iter_mut().enumerate() {
            match container {
                Container::Quote => {
                    first.push(Span::styled("│ ", quote));
                    rest.push(Span::styled("│ ", quote));
                }
                Container::List { .. } => {}
                Container::Item {
                    bullet,
                    first: fresh,
                } => {
                    let indent = " ".repeat(text::width(bullet));
                    if *fresh && Some(i) == innermost_item {
                        first.push(Span::styled(bullet.clone(), bullet_style));
                        if consume {
                            *fresh = false;
                        }
                    } else {
                        first.push(Span::raw(indent.clone()));
                    }
                    rest.push(Span::raw(indent));
                }
            }
        }
        (first, rest)
    }

    fn flush(&mut self) {
        if self.inline.is_empty() || self.table.is_some() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes(true);
        let width = self.width.min(MAX_PROSE_WIDTH);
        self.out.extend(wrap(&spans, width, &first, &rest));
    }

    fn emit_code(&mut self, lang: &str, body: &str) {
        let index = self.code_blocks_seen;
        self.code_blocks_seen += 1;
        let syntax = highlight::syntax_for_token(lang);
        let reuse = self
            .code
            .get_mut(index)
            .is_some_and(|block| block.is_for(syntax) && block.extend_text(body));
        if !reuse {
            let mut block = Incremental::new(syntax, &self.theme.syntax);
            block.extend_text(body);
            if index < self.code.len() {
                self.code[index] = block;
            } else {
                self.code.push(block);
            }
        }
        let (first, rest) = self.prefixes(true);
        let block = &self.code[index];
        let gutter = Span::styled("▎ ", Style::new().fg(self.theme.c.code_gutter));
        let pending = block.pending(body);
        let lines = block
            .lines
            .iter()
            .cloned()
            .chain((!pending.is_empty()).then(|| vec![block.plain(pending)]));
        // SEARCH/REPLACE blocks read as a diff while they stream in: the old text
        // marked `-`, the new `+`.
        let mut section = EditSection::None;
        for (n, spans) in lines.enumerate() {
            let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
            let (mark, spans) = match edit_marker(&text) {
                Some(next) => {
                    section = next;
                    let style = Style::new()
                        .fg(self.theme.c.hunk_header)
                        .add_modifier(Modifier::BOLD);
                    (gutter.clone(), vec![Span::styled(text, style)])
                }
                None => match section {
                    EditSection::Search => (
                        Span::styled("- ", Style::new().fg(self.theme.c.removed)),
                        spans,
                    ),
                    EditSection::Replace => (
                        Span::styled("+ ", Style::new().fg(self.theme.c.added)),
                        spans,
                    ),
                    EditSection::None => (gutter.clone(), spans),
                },
            };
            let mut prefix = if n == 0 { first.clone() } else { rest.clone() };
            prefix.push(mark.clone());
            let mut continuation = rest.clone();
            continuation.push(mark);
            self.out
                .extend(wrap(&spans, self.width, &prefix, &continuation));
        }
    }

    fn emit_table(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(text::spans_width(cell));
            }
        }
        // Shrink the widest columns until the table fits.
        let (_, rest) = self.prefixes(false);
        let budget = self
            .width
            .saturating_sub(text::spans_width(&rest) + 3 * (columns - 1));
        while widths.iter().sum::<usize>() > budget && widths.iter().any(|w| *w > 3) {
            let widest = (0..columns).max_by_key(|i| widths[*i]).unwrap_or(0);
            widths[widest] -= 1;
        }
        let sep = Span::styled(" │ ", self.theme.dim());
        for (r, row) in table.rows.iter().enumerate() {
            let mut line = rest.clone();
            for (i, width) in widths.iter().enumerate() {
                if i > 0 {
                    line.push(sep.clone());
                }
                let cell: String = row
                    .get(i)
                    .map(|c| c.iter().map(|s| s.content.as_ref()).collect())
                    .unwrap_or_default();
                let style = row
                    .get(i)
                    .and_then(|c| c.first())
                    .map_or(Style::new().fg(self.theme.c.fg), |s| s.style);
                let style = if r < table.head_rows {
                    style.add_modifier(Modifier::BOLD)
                } else {
                    style
                };
                let shown = text::truncate(&cell, *width);
                let pad = width.saturating_sub(text::width(&shown));
                line.push(Span::styled(format!("{shown}{}", " ".repeat(pad)), style));
            }
            self.out.push(Line::from(line));
            if r + 1 == table.head_rows {
                let mut rule = rest.clone();
                let total = widths.iter().sum::<usize>() + 3 * (columns - 1);
                rule.push(text::repeat('─', total, self.theme.dim()));
                self.out.push(Line::from(rule));
            }
        }
    }
}

/// Where a line of a code block is within a SEARCH/REPLACE edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EditSection {
    None,
    Search,
    Replace,
}

/// The section a marker line starts (`<<<<<<< SEARCH`, `=======`, `>>>>>>> REPLACE`).
fn edit_marker(line: &str) -> Option<EditSection> {
    let line = line.trim_end();
    if line.starts_with("<<<<<<<") && line.ends_with("SEARCH") {
        Some(EditSection::Search)
    } else if line.len() >= 7 && line.chars().all(|c| c == '=') {
        Some(EditSection::Replace)
    } else if line.starts_with(">>>>>>>") && line.ends_with("REPLACE") {
        Some(EditSection::None)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(src: &str, width: usize) -> Vec<String> {
        let theme = Theme::default_theme();
        let mut cache = Vec::new();
        render(src, width, &theme, &mut cache)
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn paragraphs_lists_and_quotes() {
        let src = "Intro *text* here.\n\n- one\n- two that wraps around\n  1. nested\n\n> quoted\n";
        assert_eq!(
            lines(src, 20),
            [
                "Intro text here.",
                "",
                "• one",
                "• two that wraps",
                "  around",
                "  1. nested",
                "",
                "│ quoted",
            ]
        );
    }

    #[test]
    fn code_is_highlighted_behind_a_gutter_and_grows() {
        let theme = Theme::default_theme();
        let mut cache = Vec::new();
        let partial = "Here:\n\n```rust\nfn main() {\n    let x";
        let out = render(partial, 40, &theme, &mut cache);
        let text: Vec<String> = out.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["Here:", "", "▎ fn main() {", "▎     let x"]);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache[0].lines.len(), 1, "the unfinished line waits");
        let full = format!("{partial} = 1;\n}}\n```\n\nDone.");
        let out = render(&full, 40, &theme, &mut cache);
        let text: Vec<String> = out.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text,
            [
                "Here:",
                "",
                "▎ fn main() {",
                "▎     let x = 1;",
                "▎ }",
                "",
                "Done."
            ]
        );
        assert_eq!(cache[0].lines.len(), 3);
        let keyword = &out[2].spans[1];
        assert_eq!(keyword.content, "fn");
        assert_ne!(
            keyword.style.fg,
            Some(theme.c.fg),
            "fn is coloured as a keyword"
        );
    }

    #[test]
    fn blocks_split_at_blank_lines_outside_fences_and_indents() {
        let src =
            "# T\n\npara one\nstill one\n\n```py\na\n\nb\n```\n\n- item\n\n  more item\n\nlast";
        assert_eq!(
            split_blocks(src),
            [
                "# T",
                "para one\nstill one",
                "```py\na\n\nb\n```",
                "- item\n\n  more item",
                "last"
            ]
        );
        assert_eq!(split_blocks("```\nopen\n\nfence"), ["```\nopen\n\nfence"]);
    }

    #[test]
    fn block_layout_matches_the_whole_and_reuses_unchanged_blocks() {
        let theme = Theme::default_theme();
        let src = "Intro.\n\n```rust\nfn a() {}\n```\n\n1. one\n2. two\n\nEnd.";
        let mut blocks = Blocks::default();
        let by_block: Vec<String> = render_blocks(src, 40, &theme, &mut blocks)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(by_block, lines(src, 40));
        let grown = format!("{src} More");
        render_blocks(&grown, 40, &theme, &mut blocks);
        assert_eq!(blocks.entries.len(), 4);
        assert_eq!(blocks.entries[1].code[0].lines.len(), 1, "kept, not redone");
    }

    #[test]
    fn search_replace_blocks_read_as_a_diff() {
        let src = "f.py\n```python\n<<<<<<< SEARCH\nold()\n=======\nnew()\n>>>>>>> REPLACE\n```\n";
        assert_eq!(
            lines(src, 40),
            [
                "f.py",
                "",
                "▎ <<<<<<< SEARCH",
                "- old()",
                "▎ =======",
                "+ new()",
                "▎ >>>>>>> REPLACE",
            ]
        );
    }

    /// Laid out as the chat lays out a reply.
    fn reply_lines(src: &str, width: usize) -> Vec<String> {
        let theme = Theme::default_theme();
        render_blocks(src, width, &theme, &mut Blocks::default())
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn bare_search_replace_blocks_read_as_code_not_quotes() {
        let fenced =
            "f.py\n```\n<<<<<<< SEARCH\nold()\n\n=======\nnew()\n>>>>>>> REPLACE\n```\n\nDone.";
        let bare = "f.py\n<<<<<<< SEARCH\nold()\n\n=======\nnew()\n>>>>>>> REPLACE\n\nDone.";
        let shown = reply_lines(bare, 40);
        assert_eq!(shown, reply_lines(fenced, 40));
        assert!(
            shown.contains(&"▎ >>>>>>> REPLACE".to_string()),
            "{shown:?}"
        );
        // Streaming, the open block is code to the end; a fence inside it stays text.
        let open = "<<<<<<< SEARCH\n~~~\nold()\n";
        assert_eq!(
            reply_lines(open, 40),
            ["▎ <<<<<<< SEARCH", "- ~~~", "- old()"]
        );
        // Inside a fence of the reply's own, nothing is added.
        assert_eq!(reply_lines(fenced, 40), lines(fenced, 40));
    }

    #[test]
    fn headings_rules_links_and_tables() {
        let src =
            "# Title\n\nSee [docs](https://x.dev).\n\n---\n\n| a | bb |\n|---|---|\n| 1 | 2 |\n";
        assert_eq!(
            lines(src, 30),
            [
                "Title",
                "",
                "See docs (https://x.dev).",
                "",
                "──────────────────────────────",
                "",
                "a │ bb",
                "──────",
                "1 │ 2 ",
            ]
        );
    }
}
