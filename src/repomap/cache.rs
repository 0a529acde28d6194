//! The on-disk caches: per repository under the user cache dir, never inside the
//! repository: the tags of every file, and the token counts of rendered map blocks (so a
//! new process can fit a map it fitted before without loading the tokenizer).
//!
//! Layout: an 8-byte magic, a format version, the xxh3 of the body, then the body in
//! bincode (fixed-width integers, so decoding is mostly copying; bincode is already in
//! the dependency tree through syntect). Anything that does not
//! check out (other version, short file, bad checksum, undecodable body) is treated as
//! no cache at all; the map is rebuilt and the file rewritten, never a crash.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bincode::Options;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::tags::FileTags;

const TAGS_MAGIC: &[u8; 8] = b"TERNTAGS";
const COUNTS_MAGIC: &[u8; 8] = b"TERNCNTS";
/// Bump whenever `Entry`, `FileTags` or the tag queries change meaning.
pub const VERSION: u32 = 2;
const HEADER: usize = 8 + 4 + 8;

/// What a file held when it was last read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Content {
    Tags(FileTags),
    /// A supported language's file with no definitions or references, or a file of no
    /// supported language: shown as a bare path.
    Untagged,
    Binary,
}

/// One cached file, valid while its size and mtime are unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub size: u64,
    pub mtime_ns: i64,
    /// xxh3 of the content, checked when the mtime is too close to the save time to
    /// prove the file did not change afterwards within the same clock tick.
    pub hash: u64,
    pub content: Content,
}

/// The cache file's body as read.
#[derive(Debug, Default, Deserialize)]
pub struct Body {
    /// When the tags were read, in nanoseconds since the epoch.
    pub saved_ns: i64,
    /// (root-relative path, entry).
    pub entries: Vec<(String, Entry)>,
}

/// The same layout as [`Body`], written from borrowed entries.
#[derive(Serialize)]
struct BodyOut<'a> {
    saved_ns: i64,
    entries: &'a [(&'a str, &'a Entry)],
}

/// Where the caches of the repository at `root` live under `cache_root` (normally
/// `dirs::cache_dir()/tern/tags`): `<stem>.tags` for tags, `<stem>.<encoding>.counts` for
/// block token counts.
pub fn stem_for(cache_root: &Path, root: &Path) -> PathBuf {
    let key = xxhash_rust::xxh3::xxh3_64(root.as_os_str().as_encoded_bytes());
    cache_root.join(format!("{key:016x}"))
}

/// Reads the tag cache; any problem gives an empty cache and a reason for the log.
pub fn load_tags(path: &Path) -> (Body, Option<String>) {
    read(path, TAGS_MAGIC)
}

/// Writes the tag cache.
pub fn save_tags(path: &Path, saved_ns: i64, entries: &[(&str, &Entry)]) -> std::io::Result<()> {
    write(path, TAGS_MAGIC, &BodyOut { saved_ns, entries })
}

/// Reads the block token counts (xxh3 of a rendered block -> tokens).
pub fn load_counts(path: &Path) -> HashMap<u64, u32> {
    read(path, COUNTS_MAGIC).0
}

pub fn save_counts(path: &Path, counts: &HashMap<u64, u32>) -> std::io::Result<()> {
    write(path, COUNTS_MAGIC, counts)
}

fn read<T: DeserializeOwned + Default>(path: &Path, magic: &[u8; 8]) -> (T, Option<String>) {
    match decode(path, magic) {
        Ok(body) => (body, None),
        Err(Missing) => (T::default(), None),
        Err(Bad(why)) => (T::default(), Some(why)),
    }
}

enum Unusable {
    Missing,
    Bad(String),
}
use Unusable::{Bad, Missing};

/// Checks the header and the checksum in one streaming pass, then decodes in a second:
/// the file is never held in memory next to what is decoded from it.
fn decode<T: DeserializeOwned>(path: &Path, magic: &[u8; 8]) -> Result<T, Unusable> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Missing),
        Err(e) => return Err(Bad(format!("cannot read: {e}"))),
    };
    let io = |e: std::io::Error| Bad(format!("cannot read: {e}"));
    let mut header = [0u8; HEADER];
    if file.read_exact(&mut header).is_err() || &header[..8] != magic {
        return Err(Bad("not a tern cache file".into()));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(Bad(format!("cache version {version}, expected {VERSION}")));
    }
    let sum = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut len = 0usize;
    loop {
        let n = file.read(&mut chunk).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&chunk[..n]);
        len += n;
    }
    if hasher.digest() != sum {
        return Err(Bad("checksum mismatch".into()));
    }
    file.seek(SeekFrom::Start(HEADER as u64)).map_err(io)?;
    options(len)
        .deserialize_from(std::io::BufReader::with_capacity(1 << 20, file))
        .map_err(|e| Bad(format!("undecodable: {e}")))
}

/// Writes atomically (temporary file, then rename), so a crash or a second tern process
/// never leaves a torn file behind. The body streams to disk through the checksum, so it
/// is never held in memory in encoded form as well.
fn write<T: Serialize + ?Sized>(path: &Path, magic: &[u8; 8], body: &T) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    let file = tmp.as_file_mut();
    file.write_all(magic)?;
    file.write_all(&VERSION.to_le_bytes())?;
    file.write_all(&0u64.to_le_bytes())?; // the checksum, once known
    let mut out = Checksummed {
        file: std::io::BufWriter::with_capacity(1 << 20, &mut *file),
        hasher: xxhash_rust::xxh3::Xxh3::new(),
    };
    options(usize::MAX)
        .serialize_into(&mut out, body)
        .map_err(std::io::Error::other)?;
    let sum = out.hasher.digest();
    out.file.flush()?;
    drop(out);
    file.seek(SeekFrom::Start(12))?;
    file.write_all(&sum.to_le_bytes())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A writer that hashes what passes through it.
struct Checksummed<W> {
    file: W,
    hasher: xxhash_rust::xxh3::Xxh3,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Fixed-width integers, and a size limit so a corrupt length can never make the
/// decoder allocate more than the file holds.
fn options(limit: usize) -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(limit as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary() -> Entry {
        Entry {
            size: 1,
            mtime_ns: 2,
            hash: 3,
            content: Content::Binary,
        }
    }

    #[test]
    fn round_trip_and_every_kind_of_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = stem_for(dir.path(), Path::new("/some/repo")).with_extension("tags");
        let entry = Entry {
            size: 3,
            mtime_ns: 7,
            hash: 9,
            content: Content::Tags(super::super::tags::extract(
                super::super::languages::Lang::Rust,
                b"fn main() {}",
            )),
        };
        save_tags(&path, 42, &[("a.rs", &entry), ("b.bin", &binary())]).unwrap();
        let (back, why) = load_tags(&path);
        assert_eq!(why, None);
        assert_eq!(back.saved_ns, 42);
        assert_eq!(
            back.entries,
            [("a.rs".to_string(), entry), ("b.bin".to_string(), binary())]
        );

        let good = std::fs::read(&path).unwrap();
        let damaged: [Vec<u8>; 4] = [
            good[..good.len() - 3].to_vec(),
            {
                let mut v = good.clone();
                v[8] = 99; // version
                v
            },
            {
                let mut v = good.clone();
                let last = v.len() - 1;
                v[last] ^= 0xff;
                v
            },
            b"garbage".to_vec(),
        ];
        for bytes in damaged {
            std::fs::write(&path, &bytes).unwrap();
            let (back, why) = load_tags(&path);
            assert!(back.entries.is_empty());
            assert!(why.is_some());
        }
        // Counts use another magic: a tags file is not a counts file.
        assert!(load_counts(&path).is_empty());
        let counts = HashMap::from([(1u64, 2u32), (3, 4)]);
        save_counts(&path, &counts).unwrap();
        assert_eq!(load_counts(&path), counts);
    }
}
