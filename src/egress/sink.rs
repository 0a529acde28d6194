//! Writers that redact what passes through them: the terminal's streams and the log
//! file.

use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;

use super::Redactor;

/// A stream of text to `W`, redacted on the way (what may begin the key waits for the
/// next write, or for the end) and, when `W` is a terminal, with its control
/// characters made visible. What is held back is written when the sink is dropped.
pub struct Sink<W: Write> {
    inner: W,
    redactor: Redactor,
    terminal: bool,
    /// The bytes of a character cut by the end of a write.
    partial: Vec<u8>,
    /// A CR at the end of a write: dropped when a line feed follows (a CRLF ending),
    /// shown otherwise.
    cr: bool,
    /// Each write that ends a line ends the text (`by_line`).
    by_line: bool,
}

/// Standard output, redacted, made visible when it is a terminal.
pub fn stdout() -> Sink<io::Stdout> {
    let terminal = io::stdout().is_terminal();
    Sink::new(io::stdout(), terminal)
}

/// Standard error, redacted, made visible when it is a terminal.
pub fn stderr() -> Sink<io::Stderr> {
    let terminal = io::stderr().is_terminal();
    Sink::new(io::stderr(), terminal)
}

/// Standard output for text that carries its own styling (a coloured diff) and was
/// made safe by what made it: redacted only.
pub(crate) fn stdout_styled() -> Sink<io::Stdout> {
    Sink::new(io::stdout(), false)
}

impl<W: Write> Sink<W> {
    /// A sink to `inner`; `terminal`: make control characters visible.
    pub fn new(inner: W, terminal: bool) -> Sink<W> {
        Sink {
            inner,
            redactor: super::redactor(),
            terminal,
            partial: Vec::new(),
            cr: false,
            by_line: false,
        }
    }

    /// This sink for whole messages, a line or more each (a run's notices and errors on
    /// stderr): a write that ends a line writes what it held back, so the end of one
    /// message never waits for the next (it would come after another stream's output).
    /// A key cut across the pieces of one `writeln!` is still seen whole.
    pub(crate) fn by_line(mut self) -> Sink<W> {
        self.by_line = true;
        self
    }

    /// Writes what was held back, as no more text follows (for now: what comes next
    /// is redacted as a new text), and flushes.
    pub(crate) fn end_text(&mut self) -> io::Result<()> {
        let mut rest = String::from_utf8_lossy(&std::mem::take(&mut self.partial)).into_owned();
        rest = self.redactor.push(&rest);
        rest.push_str(&self.redactor.finish());
        self.emit(&rest, true)?;
        self.inner.flush()
    }

    fn emit(&mut self, text: &str, at_end: bool) -> io::Result<()> {
        if !self.terminal {
            return self.inner.write_all(text.as_bytes());
        }
        let mut all = String::with_capacity(text.len() + 1);
        if std::mem::take(&mut self.cr) {
            all.push('\r');
        }
        all.push_str(text);
        if !at_end && all.ends_with('\r') {
            all.pop();
            self.cr = true;
        }
        let shown = crate::terminal_text::visible(&all);
        self.inner.write_all(shown.as_bytes())
    }
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        let text = match std::str::from_utf8(&self.partial) {
            Ok(text) => {
                let text = self.redactor.push(text);
                self.partial.clear();
                text
            }
            Err(e) if e.error_len().is_none() => {
                // A character cut at the end: the rest comes with the next write.
                let cut = e.valid_up_to();
                let whole = String::from_utf8_lossy(self.partial.get(..cut).unwrap_or_default())
                    .into_owned();
                self.partial.drain(..cut);
                self.redactor.push(&whole)
            }
            Err(_) => {
                let lossy = String::from_utf8_lossy(&self.partial).into_owned();
                self.partial.clear();
                self.redactor.push(&lossy)
            }
        };
        self.emit(&text, false)?;
        if self.by_line && buf.ends_with(b"\n") {
            self.end_text()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Sink<W> {
    fn drop(&mut self) {
        // Nowhere to report a failure to: the stream is gone.
        let _ = self.end_text();
    }
}

/// The log file, for `tracing_subscriber`: each event is redacted, then has its control
/// characters made visible (tracing's own escaping of them is turned off: it would
/// come first, and hide a key with an escape inside from the redaction).
pub struct LogFile(Mutex<std::fs::File>);

impl LogFile {
    pub fn new(file: std::fs::File) -> LogFile {
        LogFile(Mutex::new(file))
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFile {
    type Writer = LogEvent<'a>;

    fn make_writer(&'a self) -> LogEvent<'a> {
        LogEvent {
            file: &self.0,
            text: Vec::new(),
        }
    }
}

/// One event's text, written to the log file, redacted, when it is complete.
pub struct LogEvent<'a> {
    file: &'a Mutex<std::fs::File>,
    text: Vec<u8>,
}

impl Write for LogEvent<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LogEvent<'_> {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let text = super::terminal(&text);
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // A log line that cannot be written is lost: logging never stops tern.
        let _ = file.write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::MARKER;
    use crate::egress::tests::{KEY, register_test_key};

    /// A sink `by_line` writes each message whole at its line end (CJK, CRLF, a cut
    /// character and all), and still redacts a key cut across one message's pieces.
    #[test]
    fn a_sink_by_line_ends_each_message_and_redacts_within_it() {
        register_test_key();
        let mut out = Vec::new();
        let mut sink = Sink::new(&mut out, true).by_line();
        let (a, b) = (KEY.get(..7).unwrap(), KEY.get(7..).unwrap());
        write!(sink, "tern: 日本語 {a}").unwrap();
        write!(sink, "{b} is s").unwrap();
        sink.write_all(
            "
"
            .as_bytes(),
        )
        .unwrap();
        let cut = "é s".as_bytes();
        sink.write_all(&cut[..1]).unwrap();
        sink.write_all(&cut[1..]).unwrap();
        sink.write_all(
            b"
",
        )
        .unwrap();
        let shown = String::from_utf8(std::mem::take(sink.inner)).unwrap();
        assert_eq!(shown, format!("tern: 日本語 {MARKER} is s\né s\n"));
        drop(sink);
        assert!(out.is_empty(), "nothing was left held back");
    }

    #[test]
    fn a_terminal_sink_redacts_across_writes_then_shows_controls() {
        register_test_key();
        let mut out = Vec::new();
        {
            let mut sink = Sink::new(&mut out, true);
            let text = format!("key: {KEY}\u{1b}[2J and é\r\n");
            let (a, b) = text.as_bytes().split_at(12);
            let (b, c) = b.split_at(b.len() - 4);
            for piece in [a, b, c] {
                sink.write_all(piece).unwrap();
            }
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("key: {MARKER}\\u{{1b}}[2J and é\n")
        );
        let mut out = Vec::new();
        {
            let mut sink = Sink::new(&mut out, false);
            let (a, b) = KEY.split_at_checked(5).unwrap();
            write!(sink, "{a}{b}\r").unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), format!("{MARKER}\r"));
    }
}
