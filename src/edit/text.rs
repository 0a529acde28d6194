//! File content as tern edits it: decoded to a `String` with `\n` line endings, while
//! remembering the exact bytes so that every line the user keeps is written back
//! byte for byte (BOM, CRLF, a missing final newline and bytes that are not UTF-8
//! included).
//!
//! Text is always UTF-8. A line holding bytes that are not UTF-8 is shown with U+FFFD
//! in their place and recorded, so that it is kept as it is or not edited at all: one
//! stray byte never switches the whole file to another encoding.

/// How a file's bytes map to text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// UTF-8 with a byte-order mark, kept on write.
    Utf8Bom,
}

/// The line ending new lines get. Lines that are kept keep their own ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    Crlf,
}

impl LineEnding {
    fn bytes(self) -> &'static [u8] {
        match self {
            LineEnding::Lf => b"\n",
            LineEnding::Crlf => b"\r\n",
        }
    }
}

/// A file that cannot be edited as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("binary file (it contains NUL bytes)")]
pub struct Binary;

/// New text with a NUL character, which would make the file binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the text has a NUL character, which would make the file binary")]
pub struct HasNul;

/// Git's heuristic: a NUL byte in the first 8000 bytes makes a file binary.
const BINARY_PROBE: usize = 8000;
const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileText {
    raw: Vec<u8>,
    text: String,
    encoding: Encoding,
    line_ending: LineEnding,
    /// 0-based lines holding bytes that are not UTF-8, in order.
    invalid: Vec<usize>,
}

impl FileText {
    /// Decodes a file's bytes. CRLF line endings are folded to `\n` when they are the
    /// majority; a stray `\r` in an LF file stays part of its line.
    pub fn decode(raw: Vec<u8>) -> Result<FileText, Binary> {
        if raw[..raw.len().min(BINARY_PROBE)].contains(&0) {
            return Err(Binary);
        }
        let (encoding, bytes) = match raw.strip_prefix(BOM) {
            Some(rest) => (Encoding::Utf8Bom, rest),
            None => (Encoding::Utf8, &raw[..]),
        };
        let (body, invalid) = match std::str::from_utf8(bytes) {
            Ok(s) => (s.to_string(), Vec::new()),
            // `\n` is never part of a UTF-8 sequence, so lines decode on their own.
            Err(_) => (
                String::from_utf8_lossy(bytes).into_owned(),
                bytes
                    .split_inclusive(|&b| b == b'\n')
                    .enumerate()
                    .filter(|(_, line)| std::str::from_utf8(line).is_err())
                    .map(|(i, _)| i)
                    .collect(),
            ),
        };
        let newlines = body.bytes().filter(|&b| b == b'\n').count();
        let crlf = body.matches("\r\n").count();
        let (line_ending, text) = if crlf > newlines - crlf {
            (LineEnding::Crlf, body.replace("\r\n", "\n"))
        } else {
            (LineEnding::Lf, body)
        };
        Ok(FileText {
            raw,
            text,
            encoding,
            line_ending,
            invalid,
        })
    }

    /// The text a new file gets: UTF-8 with `\n` endings.
    pub fn new_file() -> FileText {
        FileText {
            raw: Vec::new(),
            text: String::new(),
            encoding: Encoding::Utf8,
            line_ending: LineEnding::Lf,
            invalid: Vec::new(),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn line_ending(&self) -> LineEnding {
        self.line_ending
    }

    /// 0-based lines holding bytes that are not UTF-8 (U+FFFD in `text()`).
    pub fn invalid_lines(&self) -> &[usize] {
        &self.invalid
    }

    /// The bytes of each line as stored, ending included; one per line of `text()`
    /// (`\r\n` folding never changes the number of `\n`).
    pub(crate) fn raw_lines(&self) -> impl Iterator<Item = &[u8]> {
        let body = match self.encoding {
            Encoding::Utf8Bom => &self.raw[BOM.len()..],
            _ => &self.raw[..],
        };
        body.split_inclusive(|&b| b == b'\n')
    }

    /// The bytes that start the file before any line (the BOM).
    pub(crate) fn prefix(&self) -> &'static [u8] {
        match self.encoding {
            Encoding::Utf8Bom => BOM,
            _ => b"",
        }
    }

    /// Appends one line of text (with or without its `\n`) with this file's line
    /// ending.
    pub(crate) fn encode_line(&self, line: &str, out: &mut Vec<u8>) {
        match line.strip_suffix('\n') {
            Some(body) => {
                out.extend_from_slice(body.as_bytes());
                out.extend_from_slice(self.line_ending.bytes());
            }
            None => out.extend_from_slice(line.as_bytes()),
        }
    }

    /// Whether `text` can be written without making the file binary (no NUL).
    pub(crate) fn check_encodable(text: &str) -> Result<(), HasNul> {
        if text.contains('\0') {
            Err(HasNul)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_is_folded_and_raw_lines_line_up() {
        let f = FileText::decode(b"a\r\nb\r\nc".to_vec()).unwrap();
        assert_eq!(f.text(), "a\nb\nc");
        assert_eq!(f.line_ending(), LineEnding::Crlf);
        let raw: Vec<_> = f.raw_lines().collect();
        assert_eq!(raw, vec![&b"a\r\n"[..], b"b\r\n", b"c"]);
    }

    #[test]
    fn invalid_bytes_stay_utf8_and_are_recorded_per_line() {
        let f = FileText::decode(b"ok\ncaf\xE9\n\xC3\xA9t\xE9\n".to_vec()).unwrap();
        assert_eq!(f.encoding(), Encoding::Utf8);
        assert_eq!(f.text(), "ok\ncaf\u{FFFD}\n\u{e9}t\u{FFFD}\n");
        assert_eq!(f.invalid_lines(), &[1, 2]);
        let mut out = Vec::new();
        f.encode_line("→\n", &mut out);
        assert_eq!(out, "→\n".as_bytes());
    }

    #[test]
    fn bom_is_kept_apart_from_the_text() {
        let f = FileText::decode(b"\xEF\xBB\xBFx\n".to_vec()).unwrap();
        assert_eq!(f.text(), "x\n");
        assert_eq!(f.prefix(), BOM);
        assert_eq!(f.raw_lines().collect::<Vec<_>>(), vec![&b"x\n"[..]]);
    }

    #[test]
    fn nul_means_binary() {
        assert_eq!(FileText::decode(b"PNG\0\0".to_vec()), Err(Binary));
    }
}
