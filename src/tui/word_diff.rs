//! What changed inside a hunk's changed lines, as `git diff --word-diff` and delta show
//! it: in each run of removed lines followed by added lines, the i-th removed line is
//! paired with the i-th added one and their words compared (`similar`'s word diff), so
//! the review can mark a missing space or a renamed variable inside a long line.

use std::ops::Range;
use std::time::Duration;

use ratatui::style::Style;
use ratatui::text::Span;
use similar::{ChangeTag, TextDiff};

use crate::engine::protocol::{DiffLine, LineKind};

/// Longest a pair of lines is compared for: a huge minified line is marked whole.
const TIMEOUT: Duration = Duration::from_millis(20);

/// Byte ranges of a line's text.
type Ranges = Vec<Range<usize>>;

/// For each of `lines`, the byte ranges of its text that differ from its pair's (none
/// for context, an unpaired line, or a pair with no word in common: a rewrite).
pub(crate) fn changed_ranges(lines: &[DiffLine]) -> Vec<Ranges> {
    let mut out = vec![Vec::new(); lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if lines[i].kind != LineKind::Removed {
            i += 1;
            continue;
        }
        let removed = i;
        while lines.get(i).is_some_and(|l| l.kind == LineKind::Removed) {
            i += 1;
        }
        let added = i;
        while lines.get(i).is_some_and(|l| l.kind == LineKind::Added) {
            i += 1;
        }
        for (r, a) in (removed..added).zip(added..i) {
            if let Some((old, new)) = words(&lines[r].text, &lines[a].text) {
                out[r] = old;
                out[a] = new;
            }
        }
    }
    out
}

/// The changed byte ranges of `old` and of `new`; None when no word is shared.
fn words(old: &str, new: &str) -> Option<(Ranges, Ranges)> {
    let diff = TextDiff::configure().timeout(TIMEOUT).diff_words(old, new);
    let (mut at_old, mut at_new) = (0, 0);
    let (mut old_ranges, mut new_ranges) = (Vec::new(), Vec::new());
    let mut shared = false;
    for change in diff.iter_all_changes() {
        let value = change.value();
        let len = value.len();
        match change.tag() {
            ChangeTag::Equal => {
                shared |= !value.trim().is_empty();
                at_old += len;
                at_new += len;
            }
            ChangeTag::Delete => {
                extend(&mut old_ranges, at_old..at_old + len);
                at_old += len;
            }
            ChangeTag::Insert => {
                extend(&mut new_ranges, at_new..at_new + len);
                at_new += len;
            }
        }
    }
    shared.then_some((old_ranges, new_ranges))
}

/// Adds `range`, joined to the last one when they touch.
fn extend(ranges: &mut Vec<Range<usize>>, range: Range<usize>) {
    match ranges.last_mut() {
        Some(last) if last.end == range.start => last.end = range.end,
        _ => ranges.push(range),
    }
}

/// `spans` (one line's text, split by style) with `style` laid over the bytes in
/// `ranges`.
pub(crate) fn emphasize(
    spans: &[Span<'static>],
    ranges: &[Range<usize>],
    style: Style,
) -> Vec<Span<'static>> {
    if ranges.is_empty() {
        return spans.to_vec();
    }
    let mut out = Vec::with_capacity(spans.len() + ranges.len() * 2);
    let mut at = 0;
    for span in spans {
        let text = span.content.as_ref();
        let end = at + text.len();
        // Cut points inside this span: range edges that fall on character boundaries.
        let mut cuts: Vec<usize> = ranges
            .iter()
            .flat_map(|r| [r.start, r.end])
            .filter(|&c| c > at && c < end && text.is_char_boundary(c - at))
            .map(|c| c - at)
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut from = 0;
        for to in cuts.into_iter().chain([text.len()]) {
            let Some(piece) = text.get(from..to) else {
                continue;
            };
            let inside = ranges
                .iter()
                .any(|r| r.start <= at + from && at + from < r.end);
            let styled = match inside {
                true => span.style.patch(style),
                false => span.style,
            };
            if !piece.is_empty() {
                out.push(Span::styled(piece.to_string(), styled));
            }
            from = to;
        }
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratatui::style::Modifier;

    fn line(kind: LineKind, text: &str) -> DiffLine {
        DiffLine {
            kind,
            old_line: None,
            new_line: None,
            text: text.to_string(),
            no_newline: false,
        }
    }

    #[test]
    fn a_missing_space_is_the_change_of_its_pair() {
        let lines = [
            line(LineKind::Context, "fn main() {"),
            line(LineKind::Removed, "    let total = price*count;"),
            line(LineKind::Removed, "    println!(\"{total}\");"),
            line(LineKind::Added, "    let total = price * count;"),
            line(LineKind::Added, "    log(total);"),
            line(LineKind::Added, "    done();"),
        ];
        let ranges = changed_ranges(&lines);
        assert!(ranges[0].is_empty());
        let old = &lines[1].text;
        let new = &lines[3].text;
        let shown = |text: &str, r: &[Range<usize>]| -> Vec<String> {
            r.iter()
                .map(|r| text.get(r.clone()).unwrap_or_default().to_string())
                .collect()
        };
        assert_eq!(shown(old, &ranges[1]), ["price*count;"]);
        assert_eq!(shown(new, &ranges[3]), ["price * count;"]);
        // A rewrite shares no word: nothing is marked inside it.
        assert!(ranges[2].is_empty() && ranges[4].is_empty(), "{ranges:?}");
        assert!(ranges[5].is_empty(), "unpaired");
    }

    #[test]
    fn emphasis_splits_spans_and_keeps_the_text() {
        let spans = vec![
            Span::raw("let x"),
            Span::styled(" = 1;", Style::new().add_modifier(Modifier::ITALIC)),
        ];
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let out = emphasize(&spans, &[Range { start: 4, end: 7 }], bold);
        let text: Vec<&str> = out.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, ["let ", "x", " =", " 1;"]);
        assert!(out[1].style.add_modifier.contains(Modifier::BOLD));
        assert!(
            out[2]
                .style
                .add_modifier
                .contains(Modifier::BOLD | Modifier::ITALIC)
        );
        assert!(!out[3].style.add_modifier.contains(Modifier::BOLD));
    }

    proptest! {
        /// Any pair of lines (any Unicode, control characters, CRs): the ranges cut
        /// at character boundaries within the text, and emphasis keeps the text.
        #[test]
        fn ranges_are_within_the_text_and_emphasis_keeps_it(
            old in "\\PC{0,40}[\\r\\t\\u{200b}]?\\PC{0,20}",
            new in "\\PC{0,40}[\\r\\t\\u{200b}]?\\PC{0,20}",
        ) {
            let lines = [line(LineKind::Removed, &old), line(LineKind::Added, &new)];
            let ranges = changed_ranges(&lines);
            for (l, r) in lines.iter().zip(&ranges) {
                for range in r {
                    prop_assert!(l.text.get(range.clone()).is_some());
                }
                let spans = vec![Span::raw(l.text.clone())];
                let out = emphasize(&spans, r, Style::new().add_modifier(Modifier::BOLD));
                let joined: String = out.iter().map(|s| s.content.as_ref()).collect();
                prop_assert_eq!(&joined, &l.text);
            }
        }
    }
}
