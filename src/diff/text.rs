//! File content as tern edits and reviews it: decoded to a `String` with `\n` line
//! endings, while remembering the exact bytes so that every line the user keeps is
//! written back byte for byte (BOM, CRLF, a missing final newline and bytes that are
//! not UTF-8 included), and split into numbered lines once.
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

/// Whether content is binary by git's rule (a NUL byte in its first 8000 bytes): the
/// one test of it, for edits, reviews, the map and the files a model asks for.
pub(crate) fn is_binary(content: &[u8]) -> bool {
    content.iter().take(BINARY_PROBE).any(|&b| b == 0)
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileText {
    raw: Vec<u8>,
    text: String,
    encoding: Encoding,
    line_ending: LineEnding,
    /// 0-based lines holding bytes that are not UTF-8, in order.
    invalid: Vec<usize>,
    /// Byte offset in `text` where each line starts, plus `text.len()` at the end.
    starts: Vec<usize>,
}

impl FileText {
    /// Decodes a file's bytes. CRLF line endings are folded to `\n` when they are the
    /// majority; a stray `\r` in an LF file stays part of its line.
    pub(crate) fn decode(raw: Vec<u8>) -> Result<FileText, Binary> {
        if is_binary(&raw) {
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
            starts: line_starts(&text),
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
            starts: vec![0],
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Number of lines (a final line without a newline counts).
    pub(crate) fn line_count(&self) -> u32 {
        (self.starts.len() - 1) as u32
    }

    /// Line `n` (1-based) without its line ending; empty past the end.
    pub fn line(&self, n: u32) -> &str {
        let i = n as usize;
        if i == 0 || i >= self.starts.len() {
            return "";
        }
        let line = self
            .text
            .get(self.starts[i - 1]..self.starts[i])
            .unwrap_or_default();
        let line = line.strip_suffix('\n').unwrap_or(line);
        line.strip_suffix('\r').unwrap_or(line)
    }

    /// 0-based lines holding bytes that are not UTF-8 (U+FFFD in `text()`).
    pub(crate) fn invalid_lines(&self) -> &[usize] {
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

/// Where each line of `text` starts, plus `text.len()` at the end.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::with_capacity(text.len() / 32 + 2);
    starts.push(0);
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    if *starts.last().unwrap_or(&0) != text.len() {
        starts.push(text.len());
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the text (CRLF, lone `\r`, control and invisible characters), the
        /// numbered lines are its `\n`-separated lines, endings stripped, none lost.
        #[test]
        fn numbered_lines_are_the_texts_lines(text in "[a\r\n\u{7f}\u{202e}é\t ]{0,40}") {
            let t = FileText::decode(text.clone().into_bytes()).unwrap();
            let expected: Vec<&str> = t
                .text()
                .split_inclusive('\n')
                .map(|l| l.strip_suffix('\n').unwrap_or(l))
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .collect();
            let lines: Vec<&str> = (1..=t.line_count()).map(|n| t.line(n)).collect();
            prop_assert_eq!(lines, expected);
            prop_assert_eq!(t.line(t.line_count() + 1), "");
        }
    }

    #[test]
    fn crlf_is_folded_and_raw_lines_line_up() {
        let f = FileText::decode(b"a\r\nb\r\nc".to_vec()).unwrap();
        assert_eq!(f.text(), "a\nb\nc");
        assert_eq!(f.line_ending, LineEnding::Crlf);
        let raw: Vec<_> = f.raw_lines().collect();
        assert_eq!(raw, vec![&b"a\r\n"[..], b"b\r\n", b"c"]);
    }

    #[test]
    fn invalid_bytes_stay_utf8_and_are_recorded_per_line() {
        let f = FileText::decode(b"ok\ncaf\xE9\n\xC3\xA9t\xE9\n".to_vec()).unwrap();
        assert_eq!(f.encoding, Encoding::Utf8);
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

    #[test]
    fn only_a_nul_within_gits_8000_bytes_means_binary() {
        let mut late = vec![b'a'; BINARY_PROBE];
        assert!(!is_binary(&late));
        late.push(0);
        assert!(!is_binary(&late));
        late[BINARY_PROBE - 1] = 0;
        assert!(is_binary(&late));
    }

    #[test]
    fn lines_are_numbered_from_one_without_their_endings() {
        let t = FileText::decode(b"a\r\nb\n\nlast".to_vec()).unwrap();
        assert_eq!(t.line_count(), 4);
        assert_eq!(
            [t.line(1), t.line(2), t.line(3), t.line(4)],
            ["a", "b", "", "last"]
        );
        assert_eq!(t.line(0), "");
        assert_eq!(t.line(5), "");
        assert_eq!(FileText::new_file().line_count(), 0);
        assert_eq!(FileText::decode(b"x\n".to_vec()).unwrap().line_count(), 1);
    }
}
