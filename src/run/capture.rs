//! A command's output as it streams in, kept within a byte cap: the head and the tail,
//! with the middle only counted, so a command printing gigabytes never fills memory.
//! Bytes stay bytes until the end (a character may be split across reads); then they
//! become text, redacted (a key the command printed, from a file it read, is never
//! shown or sent) and then with every control character made visible.

use std::collections::VecDeque;

use crate::egress::{self, Redactor};
use crate::terminal_text::visible;

/// The whole output: head, tail, and what fell between them.
pub(super) struct Capture {
    /// The most bytes each of head and tail keeps.
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Bytes dropped from between head and tail, and the line breaks among them.
    dropped_bytes: u64,
    dropped_breaks: u64,
    breaks: usize,
    last_byte: Option<u8>,
}

impl Capture {
    pub fn new(max_bytes: usize) -> Self {
        let half = max_bytes / 2;
        Capture {
            half,
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped_bytes: 0,
            dropped_breaks: 0,
            breaks: 0,
            last_byte: None,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let Some(&last) = bytes.last() else { return };
        self.breaks += breaks(bytes);
        self.last_byte = Some(last);
        let room = self.half.saturating_sub(self.head.len()).min(bytes.len());
        let (head, rest) = bytes.split_at(room);
        self.head.extend_from_slice(head);
        if rest.len() >= self.half {
            let tail = std::mem::take(&mut self.tail);
            let (dropped, kept) = rest.split_at(rest.len() - self.half);
            self.drop_bytes(tail.iter().copied());
            self.drop_bytes(dropped.iter().copied());
            self.tail.extend(kept);
        } else {
            let excess = (self.tail.len() + rest.len()).saturating_sub(self.half);
            let dropped: Vec<u8> = self.tail.drain(..excess).collect();
            self.drop_bytes(dropped.into_iter());
            self.tail.extend(rest);
        }
    }

    fn drop_bytes(&mut self, bytes: impl ExactSizeIterator<Item = u8>) {
        self.dropped_bytes += bytes.len() as u64;
        self.dropped_breaks += bytes.filter(|&b| b == b'\n').count() as u64;
    }

    /// Lines printed in all (a last line without a break counts).
    pub fn lines(&self) -> usize {
        let unfinished = self.last_byte.is_some_and(|b| b != b'\n');
        self.breaks + usize::from(unfinished)
    }

    /// The kept output as visible text; when its middle was dropped, head and tail are
    /// trimmed to whole lines around a note of what was left out.
    pub fn finish(mut self) -> String {
        let mut tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        if self.dropped_bytes == 0 {
            self.head.append(&mut tail);
            return shown(&self.head);
        }
        // The head's unfinished last line and the tail's first (partial) line go too,
        // where that leaves something.
        if let Some(end) = self.head.iter().rposition(|&b| b == b'\n') {
            let cut: Vec<u8> = self.head.drain(end + 1..).collect();
            self.drop_bytes(cut.into_iter());
        }
        if let Some(start) = tail.iter().position(|&b| b == b'\n')
            && start + 1 < tail.len()
        {
            let cut: Vec<u8> = tail.drain(..=start).collect();
            self.drop_bytes(cut.into_iter());
        }
        let mut text = shown(&self.head);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&crate::prompts::command_bytes_omitted(
            self.dropped_breaks,
            self.dropped_bytes,
        ));
        text.push('\n');
        text.push_str(&shown(&tail));
        text
    }
}

fn breaks(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// The most bytes of new output one progress report carries.
const REPORT_MAX_BYTES: usize = 64 * 1024;
/// The most bytes of the last line kept for the status bar.
const LAST_LINE_MAX_BYTES: usize = 512;
/// The most characters of the last line a report shows.
const LAST_LINE_MAX_CHARS: usize = 200;

/// What was printed since the last progress report, and the last line.
pub(super) struct Recent {
    /// Redacts the reports as one stream: a key may be split between two.
    redactor: Redactor,
    pending: Vec<u8>,
    skipped: u64,
    /// The start of a character split by the last report.
    carry: Vec<u8>,
    /// The line being printed (its start) and the last non-blank line finished.
    current: Vec<u8>,
    last: Vec<u8>,
}

impl Recent {
    pub fn new() -> Recent {
        Recent {
            redactor: egress::redactor(),
            pending: Vec::new(),
            skipped: 0,
            carry: Vec::new(),
            current: Vec::new(),
            last: Vec::new(),
        }
    }

    /// Keeps the end of what was printed since the last report: the end is what the
    /// user waits for (a test run's summary), so a flood loses its start, from a line
    /// break on.
    pub fn push(&mut self, bytes: &[u8]) {
        let tail = bytes
            .len()
            .saturating_sub(REPORT_MAX_BYTES)
            .min(bytes.len());
        self.skipped += tail as u64;
        if tail > 0 {
            self.carry.clear();
        }
        self.pending
            .extend_from_slice(bytes.get(tail..).unwrap_or_default());
        if self.pending.len() > REPORT_MAX_BYTES {
            let over = self.pending.len() - REPORT_MAX_BYTES;
            // From the next line break on, so the shown text starts with a whole line.
            let cut = self
                .pending
                .iter()
                .skip(over)
                .position(|&b| b == b'\n')
                .map_or(over, |at| over + at + 1);
            self.pending.drain(..cut);
            self.skipped += cut as u64;
            self.carry.clear();
        }
        self.note_lines(bytes);
    }

    /// Follows the last line without looking at more than the last few of `bytes`.
    fn note_lines(&mut self, bytes: &[u8]) {
        let mut parts = bytes.rsplit(|&b| b == b'\n');
        let unfinished = parts.next().unwrap_or_default();
        let mut finished = parts.peekable();
        if finished.peek().is_none() {
            extend_capped(&mut self.current, unfinished);
            return;
        }
        while let Some(part) = finished.next() {
            let line = if finished.peek().is_none() {
                extend_capped(&mut self.current, part);
                std::mem::take(&mut self.current)
            } else {
                part.to_vec()
            };
            if !line.trim_ascii().is_empty() {
                self.last = line;
                break;
            }
        }
        self.current.clear();
        extend_capped(&mut self.current, unfinished);
    }

    /// Whether anything was printed since the last report.
    pub(crate) fn has_news(&self) -> bool {
        !self.pending.is_empty() || self.skipped > 0
    }

    /// The text since the last report, made visible. A character split at the end
    /// waits for the next report, unless this is the last or it was cut short anyway.
    pub(crate) fn take_text(&mut self, at_end: bool) -> String {
        let mut bytes = std::mem::take(&mut self.carry);
        bytes.append(&mut self.pending);
        if !at_end
            && self.skipped == 0
            && let Err(e) = std::str::from_utf8(&bytes)
            && e.error_len().is_none()
        {
            self.carry = bytes.split_off(e.valid_up_to());
        }
        let mut text = String::new();
        if self.skipped > 0 {
            // What was skipped may have held the start of a key: the rest is not it.
            text.push_str(&self.redactor.finish());
            text.push_str(&format!("[… {} bytes not shown …]\n", self.skipped));
            self.skipped = 0;
        }
        text.push_str(&self.redactor.push(&settled(&bytes)));
        if at_end {
            text.push_str(&self.redactor.finish());
        }
        visible(&text).into_owned()
    }

    pub fn last_line(&self) -> String {
        let line = if self.current.trim_ascii().is_empty() {
            &self.last
        } else {
            &self.current
        };
        let text = String::from_utf8_lossy(line);
        let text = match line.len() >= LAST_LINE_MAX_BYTES {
            // Cut at the cap: the start of a key there would still show.
            true => egress::redact_cut(text.trim()),
            false => egress::redact(text.trim()).into_owned(),
        };
        // A progress bar's `\r` starts the line over, as in the text reported: what it
        // shows last is its last part that is not blank (redacted first, whole, so a key
        // a `\r` cuts in two is still found).
        let shown = text
            .rsplit('\r')
            .find(|part| !part.trim().is_empty())
            .unwrap_or_default();
        visible(shown.trim())
            .chars()
            .take(LAST_LINE_MAX_CHARS)
            .collect()
    }
}

fn extend_capped(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = LAST_LINE_MAX_BYTES.saturating_sub(line.len());
    line.extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
}

/// Output bytes as text to show and send: redacted, then made visible.
fn shown(bytes: &[u8]) -> String {
    egress::terminal(&settled(bytes)).into_owned()
}

/// Output bytes as text: invalid UTF-8 replaced, a line a progress bar rewrote with
/// `\r` reduced to what it showed last.
fn settled(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if !text.contains('\r') {
        return text.into_owned();
    }
    text.split_inclusive('\n')
        .map(|line| {
            let body = line.strip_suffix('\n').unwrap_or(line);
            let ending = line.get(body.len()..).unwrap_or_default();
            // A CRLF's CR ends the line; others start it over.
            let (body, cr) = match body.strip_suffix('\r') {
                Some(b) if !ending.is_empty() => (b, "\r"),
                _ => (body, ""),
            };
            let last = body.rsplit('\r').next().unwrap_or(body);
            format!("{last}{cr}{ending}")
        })
        .collect()
}
