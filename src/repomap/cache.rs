//! The on-disk tag cache: one file per repository under the user cache dir
//! (`<cache>/tern/tags/<hash of the root>.bin`), never inside the repository.
//!
//! Layout: an 8-byte magic, a format version, the xxh3 of the body, then the body in
//! bincode (fixed-width integers, so decoding is a straight copy). Anything that does not
//! check out (other version, short file, bad checksum, undecodable body) is treated as
//! no cache at all; the map is rebuilt and the file rewritten, never a crash.

use std::io::Write;
use std::path::{Path, PathBuf};

use bincode::Options;
use serde::{Deserialize, Serialize};

use super::tags::FileTags;

const MAGIC: &[u8; 8] = b"TERNTAGS";
/// Bump whenever `Entry`, `FileTags` or the tag queries change meaning.
pub const VERSION: u32 = 1;
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

/// Where the cache of the repository at `root` lives under `cache_root`
/// (normally `dirs::cache_dir()/tern/tags`).
pub fn path_for(cache_root: &Path, root: &Path) -> PathBuf {
    let key = xxhash_rust::xxh3::xxh3_64(root.as_os_str().as_encoded_bytes());
    cache_root.join(format!("{key:016x}.bin"))
}

/// Reads a cache file; any problem gives an empty cache and a reason for the log.
pub fn load(path: &Path) -> (Body, Option<String>) {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Body::default(), None),
        Err(e) => return (Body::default(), Some(format!("cannot read: {e}"))),
    };
    match decode(&bytes) {
        Ok(body) => (body, None),
        Err(why) => (Body::default(), Some(why)),
    }
}

fn decode(bytes: &[u8]) -> Result<Body, String> {
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err("not a tern tag cache".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(format!("cache version {version}, expected {VERSION}"));
    }
    let sum = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    let body = &bytes[HEADER..];
    if xxhash_rust::xxh3::xxh3_64(body) != sum {
        return Err("checksum mismatch".into());
    }
    options(body.len())
        .deserialize(body)
        .map_err(|e| format!("undecodable: {e}"))
}

/// Writes the cache atomically (temporary file, then rename), so a crash or a second
/// tern process never leaves a torn file behind.
pub fn save(path: &Path, saved_ns: i64, entries: &[(&str, &Entry)]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let encoded = options(usize::MAX)
        .serialize(&BodyOut { saved_ns, entries })
        .map_err(std::io::Error::other)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(MAGIC)?;
    tmp.write_all(&VERSION.to_le_bytes())?;
    tmp.write_all(&xxhash_rust::xxh3::xxh3_64(&encoded).to_le_bytes())?;
    tmp.write_all(&encoded)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
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
        let path = path_for(dir.path(), Path::new("/some/repo"));
        let entry = Entry {
            size: 3,
            mtime_ns: 7,
            hash: 9,
            content: Content::Tags(super::super::tags::extract(
                super::super::languages::Lang::Rust,
                b"fn main() {}",
            )),
        };
        save(&path, 42, &[("a.rs", &entry), ("b.bin", &binary())]).unwrap();
        let (back, why) = load(&path);
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
            let (back, why) = load(&path);
            assert!(back.entries.is_empty());
            assert!(why.is_some());
        }
    }
}
