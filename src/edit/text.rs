//! File content as tern edits it: decoded to a `String` with `\n` line endings, while
//! remembering the exact bytes so that every line the user keeps is written back
//! byte for byte (encoding, BOM, CRLF and a missing final newline included).

/// How a file's bytes map to text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// UTF-8 with a byte-order mark, kept on write.
    Utf8Bom,
    /// Anything that is not valid UTF-8 is read as Latin-1: one char per byte, so it
    /// round-trips exactly; new text must stay within U+0000..=U+00FF.
    Latin1,
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

/// A character the file's encoding cannot hold (a Latin-1 file given an emoji).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{ch:?} cannot be written in this file (NUL never; Latin-1 files hold U+0000..=U+00FF only)"
)]
pub struct Unencodable {
    pub ch: char,
}

/// Git's heuristic: a NUL byte in the first 8000 bytes makes a file binary.
const BINARY_PROBE: usize = 8000;
const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileText {
    raw: Vec<u8>,
    text: String,
    encoding: Encoding,
    line_ending: LineEnding,
}

impl FileText {
    /// Decodes a file's bytes. CRLF line endings are folded to `\n` when they are the
    /// majority; a stray `\r` in an LF file stays part of its line.
    pub fn decode(raw: Vec<u8>) -> Result<FileText, Binary> {
        if raw[..raw.len().min(BINARY_PROBE)].contains(&0) {
            return Err(Binary);
        }
        let (encoding, body) = match std::str::from_utf8(&raw) {
            Ok(s) if s.as_bytes().starts_with(BOM) => {
                (Encoding::Utf8Bom, s[BOM.len()..].to_string())
            }
            Ok(s) => (Encoding::Utf8, s.to_string()),
            Err(_) => (Encoding::Latin1, raw.iter().map(|&b| b as char).collect()),
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
        })
    }

    /// The text a new file gets: UTF-8 with `\n` endings.
    pub fn new_file() -> FileText {
        FileText {
            raw: Vec::new(),
            text: String::new(),
            encoding: Encoding::Utf8,
            line_ending: LineEnding::Lf,
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

    /// Appends one line of text (with or without its `\n`) in this file's encoding and
    /// line ending.
    pub(crate) fn encode_line(&self, line: &str, out: &mut Vec<u8>) -> Result<(), Unencodable> {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(body) => (body, true),
            None => (line, false),
        };
        match self.encoding {
            Encoding::Utf8 | Encoding::Utf8Bom => out.extend_from_slice(body.as_bytes()),
            Encoding::Latin1 => {
                for ch in body.chars() {
                    let byte = u8::try_from(u32::from(ch)).map_err(|_| Unencodable { ch })?;
                    out.push(byte);
                }
            }
        }
        if newline {
            out.extend_from_slice(self.line_ending.bytes());
        }
        Ok(())
    }

    /// Whether `text` can be written in this file's encoding (and without making the
    /// file binary: no NUL).
    pub(crate) fn check_encodable(&self, text: &str) -> Result<(), Unencodable> {
        let latin1 = self.encoding == Encoding::Latin1;
        match text
            .chars()
            .find(|&c| c == '\0' || (latin1 && u32::from(c) > 0xFF))
        {
            Some(ch) => Err(Unencodable { ch }),
            None => Ok(()),
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
    fn latin1_round_trips_and_refuses_wide_chars() {
        let f = FileText::decode(vec![b'c', b'a', b'f', 0xE9, b'\n']).unwrap();
        assert_eq!(f.encoding(), Encoding::Latin1);
        assert_eq!(f.text(), "café\n");
        let mut out = Vec::new();
        f.encode_line("café\n", &mut out).unwrap();
        assert_eq!(out, f.raw());
        assert_eq!(f.encode_line("→", &mut out), Err(Unencodable { ch: '→' }));
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
