//! A headless run's two outputs: stdout carries the reply, stderr everything else. On
//! one terminal they share the screen, so a line on stderr first ends what the reply
//! left open: the text its end held back (a possible start of the key) is written, and
//! a reply with no line break of its own gets one on the screen, so the next line is
//! not glued to it.

use std::io::{self, IsTerminal, Write};

use crate::egress::Sink;

pub(crate) struct Streams {
    pub stdout: Sink<io::Stdout>,
    stderr: Sink<io::Stderr>,
    /// The reply's last line has no line break yet.
    open_line: bool,
    /// Both are terminals: probably the same screen.
    one_screen: bool,
}

impl Streams {
    /// `json`: stdout carries JSON lines, which escape control characters themselves
    /// (a visible escape would not be JSON).
    pub(crate) fn new(json: bool) -> Streams {
        Streams {
            stdout: match json {
                true => Sink::new(io::stdout(), false),
                false => crate::egress::stdout(),
            },
            stderr: crate::egress::stderr().by_line(),
            open_line: false,
            one_screen: io::stdout().is_terminal() && io::stderr().is_terminal(),
        }
    }

    /// Writes a piece of the reply to stdout.
    pub(crate) fn reply(&mut self, text: &str) -> io::Result<()> {
        self.stdout.write_all(text.as_bytes())?;
        self.stdout.flush()?;
        if !text.is_empty() {
            self.open_line = !text.ends_with('\n');
        }
        Ok(())
    }

    /// The reply is whole: what its end held back is written, and its last line ended.
    pub(crate) fn end_reply(&mut self) -> io::Result<()> {
        self.stdout.end_text()?;
        if std::mem::take(&mut self.open_line) {
            writeln!(self.stdout)?;
        }
        Ok(())
    }

    /// Stderr, once the reply's text so far is out and, on one screen, its line ended.
    pub(crate) fn err(&mut self) -> io::Result<&mut Sink<io::Stderr>> {
        self.stdout.end_text()?;
        if self.open_line && self.one_screen {
            self.open_line = false;
            writeln!(self.stderr)?;
        }
        Ok(&mut self.stderr)
    }
}
