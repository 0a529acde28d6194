//! The document an edit works on, kept as spans: runs of the original's lines and runs
//! of new lines from the edits. An edit replaces a window of lines; the lines it keeps
//! stay references to the original, so they are written back byte for byte, and the
//! hunks come from the spans (see `hunks.rs`) instead of re-diffing the whole file: two
//! one-line edits a million lines apart are two one-line hunks, found without looking at
//! the lines in between.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

/// A run of the document's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Span<'a> {
    /// Lines of the original, by index.
    Orig(Range<usize>),
    /// New lines, without their `\n`.
    New(Vec<Cow<'a, str>>),
}

/// One line of the document: one of the original's, or new text.
#[derive(Debug, Clone)]
pub(crate) enum Line<'a> {
    Orig(usize),
    New(Cow<'a, str>),
}

/// An edit would replace an original line that holds bytes that are not UTF-8 (the
/// 0-based line); such lines are kept exactly or not touched at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TouchesInvalid(pub usize);

#[derive(Debug, Clone)]
pub(crate) struct Doc<'a> {
    orig: Vec<&'a str>,
    /// Sorted indices of original lines that hold invalid UTF-8 (their text shows U+FFFD).
    invalid: &'a [usize],
    spans: Vec<Span<'a>>,
    /// Where each span starts in the document, plus its length at the end.
    starts: Vec<usize>,
    final_newline: bool,
    /// (hash of the trimmed line << 32 | index) of every original line, sorted: where a
    /// SEARCH line can be, without comparing it to every line of a long file.
    index: OnceCell<Vec<u64>>,
}

/// Lines of a text without their `\n`; a final `\n` does not start another line.
pub(crate) fn lines_of(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    }
}

fn key_hash(line: &str) -> u32 {
    (xxhash_rust::xxh3::xxh3_64(line.trim().as_bytes()) >> 32) as u32
}

impl<'a> Doc<'a> {
    /// The document of `text`, unedited.
    pub(crate) fn new(text: &'a str) -> Doc<'a> {
        Doc::with_spans(text, &[], None)
    }

    /// The document of `original` (decoded text) with `invalid` lines, and the spans of
    /// earlier edits (`None`: unedited).
    pub(crate) fn with_spans(
        original: &'a str,
        invalid: &'a [usize],
        spans: Option<(Vec<Span<'a>>, bool)>,
    ) -> Doc<'a> {
        let orig = lines_of(original);
        let (spans, final_newline) = spans.unwrap_or_else(|| {
            let all = if orig.is_empty() {
                Vec::new()
            } else {
                vec![Span::Orig(0..orig.len())]
            };
            (all, original.is_empty() || original.ends_with('\n'))
        });
        let mut doc = Doc {
            orig,
            invalid,
            spans: Vec::new(),
            starts: Vec::new(),
            final_newline,
            index: OnceCell::new(),
        };
        doc.set_spans(spans);
        doc
    }

    fn set_spans(&mut self, spans: Vec<Span<'a>>) {
        let mut merged: Vec<Span<'a>> = Vec::with_capacity(spans.len());
        for span in spans {
            match (merged.last_mut(), span) {
                (_, Span::Orig(r)) if r.is_empty() => {}
                (_, Span::New(v)) if v.is_empty() => {}
                (Some(Span::Orig(a)), Span::Orig(b)) if a.end == b.start => a.end = b.end,
                (Some(Span::New(a)), Span::New(b)) => a.extend(b),
                (_, span) => merged.push(span),
            }
        }
        self.starts = Vec::with_capacity(merged.len() + 1);
        let mut at = 0;
        for span in &merged {
            self.starts.push(at);
            at += span_len(span);
        }
        self.starts.push(at);
        self.spans = merged;
    }

    pub(crate) fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The span holding line `pos` and the line's offset in it.
    fn span_at(&self, pos: usize) -> (usize, usize) {
        let span = self.starts.partition_point(|&s| s <= pos) - 1;
        (span, pos - self.starts[span])
    }

    /// Line `pos` of the document (`pos < len()`).
    pub(crate) fn line(&self, pos: usize) -> &str {
        let (span, off) = self.span_at(pos);
        match &self.spans[span] {
            Span::Orig(r) => self.orig[r.start + off],
            Span::New(v) => &v[off],
        }
    }

    /// Line `pos` as a reference that keeps its origin.
    pub(crate) fn line_ref(&self, pos: usize) -> Line<'a> {
        let (span, off) = self.span_at(pos);
        match &self.spans[span] {
            Span::Orig(r) => Line::Orig(r.start + off),
            Span::New(v) => Line::New(v[off].clone()),
        }
    }

    /// Lines `range` of the document.
    pub(crate) fn lines(&self, range: Range<usize>) -> impl Iterator<Item = &str> + '_ {
        range.map(|pos| self.line(pos))
    }

    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for span in &self.spans {
            match span {
                Span::Orig(r) => self.orig[r.clone()].iter().for_each(|l| {
                    out.push_str(l);
                    out.push('\n');
                }),
                Span::New(v) => v.iter().for_each(|l| {
                    out.push_str(l);
                    out.push('\n');
                }),
            }
        }
        if !self.final_newline {
            out.pop();
        }
        out
    }

    /// Replaces lines `range` by `with`. The original lines in `with` must come from
    /// `range`, in order (an edit keeps lines, it never moves them).
    pub(crate) fn replace(
        &mut self,
        range: Range<usize>,
        with: Vec<Line<'a>>,
    ) -> Result<(), TouchesInvalid> {
        self.check_invalid_kept(range.clone(), &with)?;
        let mut spans = Vec::with_capacity(self.spans.len() + 3);
        for (i, span) in self.spans.iter().enumerate() {
            let (s, e) = (self.starts[i], self.starts[i + 1]);
            if s < range.start {
                spans.push(slice(span, 0..e.min(range.start) - s));
            }
        }
        let mut run: Vec<Cow<'a, str>> = Vec::new();
        for line in with {
            match line {
                Line::New(text) => run.push(text),
                Line::Orig(i) => {
                    spans.push(Span::New(std::mem::take(&mut run)));
                    spans.push(Span::Orig(i..i + 1));
                }
            }
        }
        spans.push(Span::New(run));
        for (i, span) in self.spans.iter().enumerate() {
            let (s, e) = (self.starts[i], self.starts[i + 1]);
            if e > range.end {
                spans.push(slice(span, range.end.max(s) - s..e - s));
            }
        }
        self.set_spans(spans);
        Ok(())
    }

    /// Every invalid original line in `range` must be kept by `with`.
    fn check_invalid_kept(
        &self,
        range: Range<usize>,
        with: &[Line<'a>],
    ) -> Result<(), TouchesInvalid> {
        if self.invalid.is_empty() {
            return Ok(());
        }
        for pos in range {
            if let Line::Orig(i) = self.line_ref(pos)
                && self.invalid.binary_search(&i).is_ok()
                && !with.iter().any(|l| matches!(l, Line::Orig(j) if *j == i))
            {
                return Err(TouchesInvalid(i));
            }
        }
        Ok(())
    }

    /// Adds `lines` at the end (an empty SEARCH); `final_newline`: whether they end
    /// with one.
    pub(crate) fn push_lines(&mut self, lines: Vec<Line<'a>>, final_newline: bool) {
        let end = self.len();
        // Appending never removes a line, so no invalid line is touched.
        let _ = self.replace(end..end, lines);
        self.final_newline = final_newline;
    }

    pub(crate) fn set_final_newline(&mut self, final_newline: bool) {
        self.final_newline = final_newline;
    }

    /// Positions of the lines whose trimmed text is `key` (trimmed), in order.
    pub(crate) fn positions_of(&self, key: &str) -> Vec<usize> {
        let key = key.trim();
        let index = self.index.get_or_init(|| {
            let mut index: Vec<u64> = self
                .orig
                .iter()
                .enumerate()
                .map(|(i, l)| (u64::from(key_hash(l)) << 32) | i as u64)
                .collect();
            index.sort_unstable();
            index
        });
        let h = u64::from(key_hash(key)) << 32;
        let lo = index.partition_point(|&e| e < h);
        let hi = index.partition_point(|&e| e <= (h | 0xFFFF_FFFF));
        let same_hash = &index[lo..hi];
        let mut out = Vec::new();
        for (s, span) in self.spans.iter().enumerate() {
            let base = self.starts[s];
            match span {
                Span::Orig(r) => {
                    let from = same_hash.partition_point(|&e| (e & 0xFFFF_FFFF) < r.start as u64);
                    for &e in &same_hash[from..] {
                        let i = (e & 0xFFFF_FFFF) as usize;
                        if i >= r.end {
                            break;
                        }
                        if self.orig[i].trim() == key {
                            out.push(base + i - r.start);
                        }
                    }
                }
                Span::New(v) => out.extend(
                    v.iter()
                        .enumerate()
                        .filter(|(_, l)| l.trim() == key)
                        .map(|(j, _)| base + j),
                ),
            }
        }
        out
    }

    /// The spans with their new lines owned, to keep beyond the edits' text.
    pub(crate) fn into_owned_spans(self) -> (Vec<Span<'static>>, bool) {
        let spans = self
            .spans
            .into_iter()
            .map(|span| match span {
                Span::Orig(r) => Span::Orig(r),
                Span::New(v) => {
                    Span::New(v.into_iter().map(|l| Cow::Owned(l.into_owned())).collect())
                }
            })
            .collect();
        (spans, self.final_newline)
    }
}

fn span_len(span: &Span<'_>) -> usize {
    match span {
        Span::Orig(r) => r.len(),
        Span::New(v) => v.len(),
    }
}

/// Lines `range` (relative to the span's start) of `span`.
fn slice<'a>(span: &Span<'a>, range: Range<usize>) -> Span<'a> {
    match span {
        Span::Orig(r) => Span::Orig(r.start + range.start..r.start + range.end),
        Span::New(v) => Span::New(v[range].to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_final_newline() {
        for text in ["", "a", "a\n", "a\nb", "a\n\n"] {
            assert_eq!(Doc::new(text).text(), text);
        }
    }

    #[test]
    fn replace_keeps_original_lines_as_references() {
        let mut doc = Doc::new("a\nb\nc\nd\n");
        doc.replace(1..3, vec![Line::Orig(1), Line::New("x".into())])
            .unwrap();
        assert_eq!(doc.text(), "a\nb\nx\nd\n");
        assert_eq!(doc.positions_of("  d "), vec![3]);
        assert_eq!(doc.positions_of("x"), vec![2]);
        assert!(doc.positions_of("c").is_empty());
        assert_eq!(
            doc.into_owned_spans().0,
            vec![
                Span::Orig(0..2),
                Span::New(vec!["x".into()]),
                Span::Orig(3..4)
            ]
        );
    }

    #[test]
    fn invalid_lines_are_kept_or_refused() {
        let invalid = [1];
        let mut doc = Doc::with_spans("a\n\u{FFFD}\nc\n", &invalid, None);
        assert_eq!(
            doc.replace(0..3, vec![Line::New("z".into())]),
            Err(TouchesInvalid(1))
        );
        doc.replace(0..3, vec![Line::New("z".into()), Line::Orig(1)])
            .unwrap();
        assert_eq!(doc.text(), "z\n\u{FFFD}\n");
    }
}
