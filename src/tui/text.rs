//! Laying out styled text in terminal cells: display widths, word wrapping that keeps
//! styles and indentation, and truncation.

use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

/// Columns a tab takes.
pub const TAB_WIDTH: usize = 4;

/// Columns one grapheme cluster takes, measured as ratatui measures it when drawing:
/// an emoji sequence (`👩‍💻`, `❤️`) takes what a terminal gives it, not the sum of its
/// characters' widths. A tab is laid out as spaces; a cluster holding a control
/// character is not drawn.
pub(crate) fn grapheme_width(g: &str) -> usize {
    if g == "\t" {
        TAB_WIDTH
    } else if g.contains(char::is_control) {
        0
    } else {
        usize::from(g.cell_width())
    }
}

/// `s` with each tab expanded to spaces up to the next tab stop (every [`TAB_WIDTH`]
/// columns), for views that draw a line cell by cell (the review): a terminal cell
/// cannot hold a tab, and a tab dropped makes `a<TAB>b` look like `ab`.
pub(crate) fn expand_tabs(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\t') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + TAB_WIDTH);
    let mut column = 0;
    for g in s.graphemes(true) {
        if g == "\t" {
            let n = TAB_WIDTH - column % TAB_WIDTH;
            out.extend(std::iter::repeat_n(' ', n));
            column += n;
        } else {
            out.push_str(g);
            column += grapheme_width(g);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub fn width(s: &str) -> usize {
    s.graphemes(true).map(grapheme_width).sum()
}

pub(crate) fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width(&s.content)).sum()
}

/// `spans` without their first `columns` columns (a wide character cut in half
/// becomes a space), for views that scroll sideways.
pub(crate) fn skip_columns(spans: &[Span<'static>], columns: usize) -> Vec<Span<'static>> {
    let mut left = columns;
    let mut out = Vec::new();
    for span in spans {
        if left == 0 {
            out.push(span.clone());
            continue;
        }
        let mut kept = String::new();
        for g in span.content.graphemes(true) {
            let w = grapheme_width(g);
            if left == 0 {
                kept.push_str(g);
            } else if w > left {
                kept.push_str(&" ".repeat(w - left));
                left = 0;
            } else {
                left -= w;
            }
        }
        if !kept.is_empty() {
            out.push(Span::styled(kept, span.style));
        }
    }
    out
}

/// Word-wraps `spans` to `width` columns. The first output line starts with `first`,
/// the others with `rest` (a list bullet and its hanging indent, a quote bar, a code
/// gutter). Words longer than a line are broken; spaces at a break are dropped. Always
/// returns at least one line.
pub(crate) fn wrap(
    spans: &[Span<'static>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let avail_first = width.saturating_sub(spans_width(first)).max(1);
    let avail_rest = width.saturating_sub(spans_width(rest)).max(1);
    let mut out: Vec<Line<'static>> = Vec::new();
    // The line being built: grapheme clusters and the index of the span each came from.
    let mut cur: Vec<(&str, usize)> = Vec::new();
    let mut cur_width = 0;
    // Index in `cur` of the last space: the place to break.
    let mut last_space: Option<usize> = None;
    let emit = |out: &mut Vec<Line<'static>>, cur: &[(&str, usize)]| {
        let prefix = if out.is_empty() { first } else { rest };
        let mut line: Vec<Span<'static>> = prefix.to_vec();
        line.extend(group(cur, spans));
        out.push(Line::from(line));
    };
    for (index, span) in spans.iter().enumerate() {
        for g in span.content.graphemes(true) {
            let (g, w) = match g {
                "\t" => (" ", TAB_WIDTH),
                "\n" | "\r" | "\r\n" => continue,
                g => (g, grapheme_width(g)),
            };
            let avail = if out.is_empty() {
                avail_first
            } else {
                avail_rest
            };
            if cur_width + w > avail && !cur.is_empty() {
                match last_space {
                    Some(at) if at > 0 => {
                        let tail = cur.split_off(at + 1);
                        trim_end(&mut cur);
                        emit(&mut out, &cur);
                        cur = tail;
                    }
                    _ => {
                        emit(&mut out, &cur);
                        cur.clear();
                    }
                }
                cur_width = cur.iter().map(|(g, _)| grapheme_width(g)).sum();
                last_space = None;
                if g == " " && cur.is_empty() {
                    continue;
                }
            }
            if g == " " {
                last_space = Some(cur.len());
            }
            // A tab is laid out as spaces so widths stay exact.
            let repeat = if w == TAB_WIDTH && g == " " {
                TAB_WIDTH
            } else {
                1
            };
            for _ in 0..repeat {
                cur.push((g, index));
            }
            cur_width += w;
        }
    }
    if !cur.is_empty() || out.is_empty() {
        emit(&mut out, &cur);
    }
    out
}

fn trim_end(cur: &mut Vec<(&str, usize)>) {
    while cur.last().is_some_and(|(g, _)| *g == " ") {
        cur.pop();
    }
}

/// Runs of grapheme clusters with the same source span, back into spans.
fn group(chars: &[(&str, usize)], spans: &[Span<'static>]) -> Vec<Span<'static>> {
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut current: Option<usize> = None;
    for &(g, index) in chars {
        if current != Some(index) {
            if let Some(prev) = current {
                out.push(Span::styled(std::mem::take(&mut text), spans[prev].style));
            }
            current = Some(index);
        }
        text.push_str(g);
    }
    if let Some(prev) = current {
        out.push(Span::styled(text, spans[prev].style));
    }
    out
}

/// Pasted text with its line ends as `\n`: `\r\n` is one end, and so is every other `\r`
/// (what terminals send for Enter, and for each `\n` of a paste through tmux). A CRLF text
/// pasted through tmux arrives as `\r\r` per end, the same bytes as an LF text with blank
/// lines, so it shows its line ends doubled: nothing is lost either way.
pub fn paste_line_ends(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\r', "\n")
}

/// The lines of `s` as a person counts them: `\r\n`, `\r` (what many terminals paste)
/// and `\n` each end one, and a line ending at the very end starts no new line.
pub fn line_count(s: &str) -> usize {
    if s.is_empty() {
        return 0;
    }
    let mut lines = 0;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' | '\n' => lines += 1,
            _ => {}
        }
    }
    let ended = s.ends_with(['\n', '\r']);
    lines + usize::from(!ended)
}

/// `s` cut to `max` columns, with `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    cut(s, max)
}

/// A line of `spans` cut to `max` columns, with `…` (in the style of the span it
/// cuts) when something was cut: a line set into a buffer is otherwise cut with no
/// mark.
pub(crate) fn truncate_spans(spans: &[Span<'static>], max: usize) -> Vec<Span<'static>> {
    if spans_width(spans) <= max {
        return spans.to_vec();
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let w = width(&span.content);
        // Whole while room for the `…` is left after it.
        if used + w < max {
            out.push(span.clone());
            used += w;
            continue;
        }
        out.push(Span::styled(cut(&span.content, max - used), span.style));
        break;
    }
    out
}

/// The start of `s` in `max` columns, less one for the `…` that ends it.
fn cut(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for g in s.graphemes(true) {
        let w = grapheme_width(g);
        if used + w + 1 > max {
            break;
        }
        out.push_str(g);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// A question and its answer `keys` in `max` columns: the question is cut (with `…`)
/// so that the keys always show.
pub fn question(ask: &str, keys: &str, max: usize) -> String {
    let room = max.saturating_sub(width(keys) + 1);
    format!("{} {keys}", truncate(ask, room))
}

/// `s` cut from the left to `max` columns (`…/src/app.py`): the end of a path matters
/// more than its start.
pub(crate) fn truncate_left(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 1;
    for g in s.graphemes(true).rev() {
        let w = grapheme_width(g);
        if used + w > max {
            break;
        }
        kept.push(g);
        used += w;
    }
    let mut out = String::from("…");
    out.extend(kept.into_iter().rev());
    out
}

pub use crate::engine::protocol::thousands;

/// `spans` with the markers of hidden characters (`terminal_text::markers`, which made
/// text holds where a character would draw as nothing) drawn in `style`, so that a
/// marker never reads as the text it stands beside. A marker may cross spans (syntax
/// highlighting splits it).
pub(crate) fn mark_hidden(spans: &[Span<'static>], style: Style) -> Vec<Span<'static>> {
    if !spans.iter().any(|s| s.content.contains('⟨')) {
        return spans.to_vec();
    }
    let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
    let ranges: Vec<std::ops::Range<usize>> = crate::terminal_text::markers(&text).collect();
    if ranges.is_empty() {
        return spans.to_vec();
    }
    // Every span cut where a marker starts or ends; the pieces inside one restyled.
    let mut cuts: Vec<usize> = ranges.iter().flat_map(|r| [r.start, r.end]).collect();
    let mut out = Vec::with_capacity(spans.len() + cuts.len());
    let mut at = 0;
    for span in spans {
        let end = at + span.content.len();
        cuts.push(end);
        let mut from = at;
        for &cut in cuts.iter().filter(|&&c| c > at && c <= end) {
            if cut <= from {
                continue;
            }
            let piece = text.get(from..cut).unwrap_or_default().to_string();
            let inside = ranges.iter().any(|r| r.start <= from && cut <= r.end);
            let piece_style = match inside {
                true => span.style.patch(style),
                false => span.style,
            };
            out.push(Span::styled(piece, piece_style));
            from = cut;
        }
        cuts.pop();
        at = end;
    }
    out
}

/// [`mark_hidden`] on every line.
pub(crate) fn mark_hidden_lines(lines: &mut [Line<'static>], style: Style) {
    for line in lines {
        if line.spans.iter().any(|s| s.content.contains('⟨')) {
            line.spans = mark_hidden(&line.spans, style);
        }
    }
}

/// A span of `n` copies of `c`.
pub fn repeat(c: char, n: usize, style: Style) -> Span<'static> {
    Span::styled(std::iter::repeat_n(c, n).collect::<String>(), style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_line_of_spans_is_cut_with_a_mark_in_the_style_it_cuts() {
        let red = Style::new().fg(Color::Red);
        let spans = vec![
            Span::raw("· pending"),
            Span::styled(" ⚠ holds invisible characters (U+202E, U+2066)", red),
        ];
        let cut = truncate_spans(&spans, 30);
        assert_eq!(
            Line::from(cut.clone()).to_string(),
            "· pending ⚠ holds invisible c…"
        );
        assert_eq!(cut[1].style, red);
        assert_eq!(truncate_spans(&spans, 80), spans, "what fits is whole");
        // A span that ends at the edge with more after it is cut too.
        let cut = truncate_spans(&[Span::raw("abc"), Span::raw("de")], 3);
        assert_eq!(Line::from(cut).to_string(), "ab…");
    }

    #[test]
    fn tabs_expand_to_the_next_tab_stop() {
        assert_eq!(expand_tabs("a\tb"), "a   b");
        assert_eq!(expand_tabs("\tx"), "    x");
        assert_eq!(expand_tabs("abcd\te"), "abcd    e");
        assert_eq!(
            expand_tabs("漢\tx"),
            "漢  x",
            "a wide character takes two columns"
        );
        assert!(matches!(
            expand_tabs("no tab"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    proptest::proptest! {
        #[test]
        fn expanded_text_holds_no_tab_and_only_the_tabs_changed(s in "[\\PC\t]{0,40}") {
            let out = expand_tabs(&s);
            proptest::prop_assert!(!out.contains('\t'));
            proptest::prop_assert_eq!(out.replace(' ', ""), s.replace(['\t', ' '], ""));
            proptest::prop_assert!(width(&out) <= width(&s));
        }

        #[test]
        fn cut_spans_fit_keep_their_start_and_end_with_a_mark(
            parts in proptest::collection::vec("\\PC{0,12}", 0..5),
            max in 0usize..40,
        ) {
            let spans: Vec<Span<'static>> = parts.iter().map(|p| Span::raw(p.clone())).collect();
            let whole: String = parts.concat();
            let cut: String = truncate_spans(&spans, max).iter().map(|s| s.content.as_ref()).collect();
            proptest::prop_assert!(width(&cut) <= max, "{cut:?} in {max}");
            if width(&whole) <= max {
                proptest::prop_assert_eq!(cut, whole);
            } else if max > 0 {
                let start = cut.strip_suffix('…').unwrap_or_else(|| panic!("no mark: {cut:?}"));
                proptest::prop_assert!(whole.starts_with(start));
            }
        }
    }

    #[test]
    fn wraps_at_spaces_and_keeps_styles() {
        let spans = vec![
            Span::raw("the quick "),
            Span::styled("brown fox", Style::new().fg(Color::Red)),
            Span::raw(" jumps over"),
        ];
        let lines = wrap(&spans, 12, &[], &[]);
        assert_eq!(texts(&lines), ["the quick", "brown fox", "jumps over"]);
        assert_eq!(lines[1].spans[0].style.fg, Some(Color::Red));
    }

    #[test]
    fn prefixes_hang_and_long_words_break() {
        let spans = vec![Span::raw("abcdefghij klm")];
        let lines = wrap(&spans, 6, &[Span::raw("• ")], &[Span::raw("  ")]);
        assert_eq!(texts(&lines), ["• abcd", "  efgh", "  ij", "  klm"]);
        assert!(lines.iter().all(|l| l.width() <= 6));
    }

    #[test]
    fn wide_characters_and_tabs_take_their_columns() {
        let lines = wrap(&[Span::raw("日本語です")], 5, &[], &[]);
        assert_eq!(texts(&lines), ["日本", "語で", "す"]);
        let lines = wrap(&[Span::raw("\tx")], 10, &[], &[]);
        assert_eq!(texts(&lines), ["    x"]);
        assert_eq!(wrap(&[], 10, &[Span::raw("> ")], &[]).len(), 1);
    }

    #[test]
    fn emoji_sequences_and_combining_marks_are_measured_whole() {
        assert_eq!(width("👩\u{200d}💻"), 2);
        assert_eq!(width("❤\u{fe0f}"), 2);
        assert_eq!(width("e\u{301}"), 1);
        let lines = wrap(&[Span::raw("❤\u{fe0f}".repeat(3))], 4, &[], &[]);
        assert_eq!(texts(&lines), ["❤\u{fe0f}❤\u{fe0f}", "❤\u{fe0f}"]);
        assert_eq!(truncate("👩\u{200d}💻👩\u{200d}💻", 3), "👩\u{200d}💻…");
        assert_eq!(truncate_left("a/e\u{301}e\u{301}", 3), "…e\u{301}e\u{301}");
    }

    #[test]
    fn truncation_and_numbers() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(truncate_left("src/deep/app.py", 8), "…/app.py");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
