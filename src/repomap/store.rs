//! The tag store shared by every checkout, clone and worktree of every repository: the
//! tags of a file's content, keyed by what they were made from (the content's git blob
//! id, the language, and that language's grammar and query version), so a new worktree
//! or a fresh clone parses only content that no checkout has seen.
//!
//! The store is a directory of immutable segment files, each written whole by one
//! process (temporary file, then rename), so readers never see a torn file and any
//! number of processes can share it without locks. A segment holds a sorted table of
//! keys with the offset, length and checksum of each entry's body; bodies are read only
//! when asked for. A segment's modification time is its last use: a process bumps the
//! segments it read from, and when the store outgrows its cap the least recently used
//! segments are deleted whole. A checkout whose entries are spread over many segments
//! rewrites them into one, so old segments stop being used and age out.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use bincode::Options;
use serde::{Deserialize, Serialize};
use strum::VariantArray;

use super::languages::Grammar;
use super::tags::FileTags;

/// The default cap on the store's size on disk.
pub const DEFAULT_CAP_BYTES: u64 = 1 << 30;

const MAGIC: &[u8; 8] = b"TERNSEG1";
/// Bump whenever `Content`, `FileTags` or the extraction change meaning (2: the
/// literals that shown lines elide; 3: text of long lines is `LongLines`, not parsed;
/// 4: an unclosed string in a parse error is elided from its opener).
const FORMAT: u32 = 4;
const HEADER: usize = 8 + 4 + 4;
const ROW: usize = 32 + 8 + 4 + 8;
const EXTENSION: &str = "tseg";
/// A checkout whose entries come from more segments than this rewrites them into one.
const MAX_SPREAD: usize = 6;

/// What a file's content holds for the map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Content {
    Tags(FileTags),
    /// A supported language's file with no definitions or references, or a file of no
    /// supported language: shown as a bare path.
    Untagged,
    Binary,
    /// Minified or generated text (`noise::has_long_lines`): not parsed, left out.
    LongLines,
}

/// A [`Content`] borrowed for writing; it serializes the same way.
#[derive(Debug, Clone, Copy, Serialize)]
pub enum ContentRef<'a> {
    Tags(&'a FileTags),
    Untagged,
    Binary,
    LongLines,
}

#[cfg(test)]
impl Content {
    pub fn as_ref(&self) -> ContentRef<'_> {
        match self {
            Content::Tags(t) => ContentRef::Tags(t),
            Content::Untagged => ContentRef::Untagged,
            Content::Binary => ContentRef::Binary,
            Content::LongLines => ContentRef::LongLines,
        }
    }
}

/// What an entry is keyed by: the git blob id of the content (20 bytes), the language
/// (by its extension), and the version of that language's grammar and query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key(#[serde(with = "super::cache::byte_array")] [u8; 32]);

impl Key {
    pub fn new(blob: &[u8], lang: Option<Grammar>) -> Key {
        let mut key = [0u8; 32];
        let n = blob.len().min(20);
        key[..n].copy_from_slice(&blob[..n]);
        key[20] = lang.map_or(0, |l| l as u8 + 1);
        let version = lang.map_or(0, version_of) ^ u64::from(FORMAT);
        key[24..].copy_from_slice(&version.to_le_bytes());
        Key(key)
    }

    /// The git blob id of some content.
    pub(crate) fn blob_id(content: &[u8]) -> [u8; 20] {
        let mut id = [0u8; 20];
        if let Ok(oid) = git2::Oid::hash_object(git2::ObjectType::Blob, content) {
            let n = oid.as_bytes().len().min(20);
            id[..n].copy_from_slice(&oid.as_bytes()[..n]);
        }
        id
    }

    pub fn blob(&self) -> &[u8] {
        &self.0[..20]
    }

    /// Whether this key is the one this tern makes for its content: one written by a
    /// tern with other grammars, queries or format names tags this one would not make.
    pub(crate) fn is_current(&self, lang: Option<Grammar>) -> bool {
        *self == Key::new(self.blob(), lang)
    }
}

/// Each language's tags version, computed once.
fn version_of(lang: Grammar) -> u64 {
    static VERSIONS: [std::sync::OnceLock<u64>; Grammar::VARIANTS.len()] =
        [const { std::sync::OnceLock::new() }; Grammar::VARIANTS.len()];
    *VERSIONS[lang as usize].get_or_init(|| lang.tags_version())
}

/// One row of a segment's table.
#[derive(Debug, Clone, Copy)]
struct Row {
    key: Key,
    offset: u64,
    len: u32,
    sum: u64,
}

struct Segment {
    path: PathBuf,
    file: Mutex<File>,
    rows: Vec<Row>,
    /// Read from by this process (its use time is bumped on save).
    used: AtomicBool,
}

impl Segment {
    fn open(path: PathBuf) -> Option<Segment> {
        let mut file = crate::regular_file::open(&path).ok()?;
        let mut header = [0u8; HEADER];
        file.read_exact(&mut header).ok()?;
        if &header[..8] != MAGIC || u32_at(&header, 8) != FORMAT {
            return None;
        }
        // A damaged header's count or a row's place is checked against the file
        // before anything is allocated for it: never more than the file holds.
        let size = file.metadata().ok()?.len();
        let count = u32_at(&header, 12) as usize;
        let table_len = count.checked_mul(ROW)?;
        if (HEADER as u64).checked_add(table_len as u64)? > size {
            return None;
        }
        let mut table = vec![0u8; table_len];
        file.read_exact(&mut table).ok()?;
        let rows = table
            .chunks_exact(ROW)
            .map(|r| Row {
                key: Key(r[..32].try_into().unwrap_or([0; 32])),
                offset: u64_at(r, 32),
                len: u32_at(r, 40),
                sum: u64_at(r, 44),
            })
            .filter(|r| {
                r.offset
                    .checked_add(u64::from(r.len))
                    .is_some_and(|end| end <= size)
            })
            .collect();
        Some(Segment {
            path,
            file: Mutex::new(file),
            rows,
            used: AtomicBool::new(false),
        })
    }

    fn find(&self, key: &Key) -> Option<Row> {
        let i = self.rows.binary_search_by(|r| r.key.cmp(key)).ok()?;
        Some(self.rows[i])
    }

    /// The body of `row`, if it reads back whole and checks out.
    fn body(&self, row: Row) -> Option<Vec<u8>> {
        let mut body = vec![0u8; row.len as usize];
        {
            let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
            file.seek(SeekFrom::Start(row.offset)).ok()?;
            file.read_exact(&mut body).ok()?;
        }
        (xxhash_rust::xxh3::xxh3_64(&body) == row.sum).then_some(body)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// The store, as one process sees it: the segments that existed when it was opened
/// plus the ones it wrote.
pub struct Store {
    dir: PathBuf,
    cap: u64,
    /// Most recently used first, so current entries are found in the first segment.
    segments: Vec<Segment>,
}

impl Store {
    /// Opens the store in `dir` (created when first written). Unreadable segments are
    /// skipped: the store is an optimization, never a reason to fail.
    pub fn open(dir: &Path, cap: u64) -> Store {
        let mut found: Vec<(SystemTime, PathBuf)> = list(dir)
            .into_iter()
            .map(|(path, meta)| (meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), path))
            .collect();
        found.sort_by_key(|f| std::cmp::Reverse(f.0));
        Store {
            dir: dir.to_path_buf(),
            cap,
            segments: found
                .into_iter()
                .filter_map(|(_, path)| Segment::open(path))
                .collect(),
        }
    }

    /// The content stored under `key`, if any segment has it and it reads back.
    pub fn get(&self, key: &Key) -> Option<Content> {
        self.raw(key)
            .and_then(|(i, body)| decode(&body).inspect(|_| self.mark_used(i)))
    }

    /// Whether some segment has `key` (its body is not checked).
    pub fn contains(&self, key: &Key) -> bool {
        self.segments.iter().any(|s| s.find(key).is_some())
    }

    fn raw(&self, key: &Key) -> Option<(usize, Vec<u8>)> {
        self.segments
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.find(key).and_then(|row| s.body(row)).map(|b| (i, b)))
    }

    fn mark_used(&self, segment: usize) {
        self.segments[segment].used.store(true, Ordering::Relaxed);
    }

    /// Saves what a checkout learned: `fresh` entries no segment has yet, and `live`,
    /// every key the checkout uses. Writes one segment with the fresh entries, or, when
    /// the live keys are spread over too many segments, one with all of them; then
    /// bumps the use time of the segments read from and evicts beyond the cap.
    pub fn save(&mut self, fresh: &[(Key, ContentRef)], live: &[Key]) -> std::io::Result<()> {
        let spread = self.spread(live);
        let mut bodies: Vec<(Key, Vec<u8>)> = fresh
            .iter()
            .filter(|(k, _)| !self.contains(k))
            .filter_map(|(k, c)| encode(c).map(|b| (*k, b)))
            .collect();
        if spread > MAX_SPREAD {
            bodies.extend(
                live.iter()
                    .filter_map(|k| self.raw(k).map(|(_, body)| (*k, body))),
            );
        }
        let mut rewritten = false;
        if !bodies.is_empty() {
            let path = self.write_segment(bodies)?;
            rewritten = spread > MAX_SPREAD;
            if let Some(segment) = Segment::open(path) {
                segment.used.store(true, Ordering::Relaxed);
                self.segments.insert(0, segment);
            }
        }
        for (i, s) in self.segments.iter().enumerate() {
            // After a rewrite only the new segment is in use.
            if s.used.swap(false, Ordering::Relaxed) && (i == 0 || !rewritten) {
                // Losing a use time only makes a segment older: never an error.
                let _ = crate::regular_file::touch(&s.path);
            }
        }
        self.evict();
        Ok(())
    }

    /// How many segments the newest copies of `live` are in.
    fn spread(&self, live: &[Key]) -> usize {
        let mut used = vec![false; self.segments.len()];
        for key in live {
            if let Some(i) = self.segments.iter().position(|s| s.find(key).is_some()) {
                used[i] = true;
            }
        }
        used.iter().filter(|u| **u).count()
    }

    fn write_segment(&self, mut bodies: Vec<(Key, Vec<u8>)>) -> std::io::Result<PathBuf> {
        bodies.sort_by_key(|b| b.0);
        bodies.dedup_by(|a, b| a.0 == b.0);
        std::fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT.to_le_bytes())?;
        out.write_all(&(bodies.len() as u32).to_le_bytes())?;
        let mut offset = (HEADER + bodies.len() * ROW) as u64;
        for (key, body) in &bodies {
            out.write_all(&key.0)?;
            out.write_all(&offset.to_le_bytes())?;
            out.write_all(&(body.len() as u32).to_le_bytes())?;
            out.write_all(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes())?;
            offset += body.len() as u64;
        }
        for (_, body) in &bodies {
            out.write_all(body)?;
        }
        out.flush()?;
        drop(out);
        let name = format!(
            "{:016x}.{EXTENSION}",
            xxhash_rust::xxh3::xxh3_64(tmp.path().as_os_str().as_encoded_bytes())
        );
        let path = self.dir.join(name);
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(path)
    }

    /// Deletes the least recently used segments while the store is over its cap.
    fn evict(&mut self) {
        let mut found: Vec<(SystemTime, u64, PathBuf)> = list(&self.dir)
            .into_iter()
            .map(|(path, meta)| {
                let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                (used, meta.len(), path)
            })
            .collect();
        let mut total: u64 = found.iter().map(|f| f.1).sum();
        found.sort_by_key(|f| f.0);
        for (_, len, path) in found {
            if total <= self.cap {
                break;
            }
            // Another process may have removed it already; either way it is gone.
            let _ = std::fs::remove_file(&path);
            total -= len;
            self.segments.retain(|s| s.path != path);
        }
    }

    /// The segments on disk and their total size, for `--stats`.
    pub fn usage(&self) -> (usize, u64) {
        let found = list(&self.dir);
        (found.len(), found.iter().map(|f| f.1.len()).sum())
    }
}

fn list(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == EXTENSION))
        .filter_map(|p| std::fs::metadata(&p).ok().map(|m| (p, m)))
        .collect()
}

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(1 << 28)
}

fn encode(content: &ContentRef) -> Option<Vec<u8>> {
    options().serialize(content).ok()
}

fn decode(body: &[u8]) -> Option<Content> {
    options().deserialize(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repomap::tags::extract;

    fn tags(src: &str) -> Content {
        Content::Tags(extract(Grammar::Rust, src.as_bytes()))
    }

    #[test]
    fn entries_are_shared_found_by_key_and_damage_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let a = tags("fn alpha() {}");
        let key_a = Key::new(&Key::blob_id(b"fn alpha() {}"), Some(Grammar::Rust));
        let key_b = Key::new(&Key::blob_id(b"\0\x01"), None);
        let mut one = Store::open(dir.path(), DEFAULT_CAP_BYTES);
        one.save(
            &[(key_a, a.as_ref()), (key_b, ContentRef::Binary)],
            &[key_a, key_b],
        )
        .unwrap();

        // Another process sees both; the same blob in another language is another key.
        let two = Store::open(dir.path(), DEFAULT_CAP_BYTES);
        assert_eq!(two.get(&key_a), Some(a));
        assert_eq!(two.get(&key_b), Some(Content::Binary));
        assert_eq!(
            two.get(&Key::new(&Key::blob_id(b"fn alpha() {}"), Some(Grammar::C))),
            None
        );
        assert_eq!(two.usage().0, 1);

        // A flipped byte in a body is a miss, not a crash or wrong tags.
        let (path, _) = list(dir.path()).pop().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let three = Store::open(dir.path(), DEFAULT_CAP_BYTES);
        let misses = [key_a, key_b]
            .into_iter()
            .filter(|k| three.get(k).is_none());
        assert_eq!(misses.count(), 1);
        std::fs::write(&path, b"TERNSEG1 and then garbage").unwrap();
        assert_eq!(Store::open(dir.path(), DEFAULT_CAP_BYTES).get(&key_a), None);
    }

    #[test]
    fn the_least_recently_used_segments_go_first_when_over_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<Key> = (0..3)
            .map(|i| {
                Key::new(
                    &Key::blob_id(format!("fn f{i}() {{}}").as_bytes()),
                    Some(Grammar::Rust),
                )
            })
            .collect();
        let content = tags("fn f() {}");
        for key in &keys {
            Store::open(dir.path(), DEFAULT_CAP_BYTES)
                .save(&[(*key, content.as_ref())], &[*key])
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let size = Store::open(dir.path(), DEFAULT_CAP_BYTES).usage().1;
        // Using the oldest makes it the most recent; a cap for two drops the middle one.
        let mut store = Store::open(dir.path(), size * 2 / 3 + 1);
        assert!(store.get(&keys[0]).is_some());
        store.save(&[], &[keys[0]]).unwrap();
        let after = Store::open(dir.path(), DEFAULT_CAP_BYTES);
        assert_eq!(after.usage().0, 2);
        assert!(after.get(&keys[0]).is_some());
        assert!(after.get(&keys[1]).is_none());
        assert!(after.get(&keys[2]).is_some());
    }

    /// A segment whose header counts more rows than the file holds, or whose row points
    /// past its end, is no segment (or no row): never an allocation of what it claims.
    #[test]
    fn a_damaged_segment_claims_nothing_it_does_not_hold() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::new(&Key::blob_id(b"fn f() {}"), Some(Grammar::Rust));
        let content = tags("fn f() {}");
        Store::open(dir.path(), DEFAULT_CAP_BYTES)
            .save(&[(key, content.as_ref())], &[key])
            .unwrap();
        let (path, _) = list(dir.path()).pop().unwrap();
        let good = std::fs::read(&path).unwrap();
        assert_eq!(
            Store::open(dir.path(), DEFAULT_CAP_BYTES).get(&key),
            Some(content)
        );
        let mut huge_count = good.clone();
        huge_count[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut row_past_end = good.clone();
        row_past_end[HEADER + 40..HEADER + 44].copy_from_slice(&u32::MAX.to_le_bytes());
        for bytes in [huge_count, row_past_end] {
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(Store::open(dir.path(), DEFAULT_CAP_BYTES).get(&key), None);
        }
    }

    #[test]
    fn a_checkout_spread_over_many_segments_is_rewritten_into_one() {
        let dir = tempfile::tempdir().unwrap();
        let content = tags("fn f() {}");
        let keys: Vec<Key> = (0..=MAX_SPREAD)
            .map(|i| {
                Key::new(
                    &Key::blob_id(format!("{i}").as_bytes()),
                    Some(Grammar::Rust),
                )
            })
            .collect();
        for key in &keys {
            Store::open(dir.path(), DEFAULT_CAP_BYTES)
                .save(&[(*key, content.as_ref())], &[*key])
                .unwrap();
        }
        let mut store = Store::open(dir.path(), DEFAULT_CAP_BYTES);
        assert_eq!(store.spread(&keys), MAX_SPREAD + 1);
        store.save(&[], &keys).unwrap();
        let after = Store::open(dir.path(), DEFAULT_CAP_BYTES);
        assert_eq!(after.spread(&keys), 1);
        assert!(keys.iter().all(|k| after.get(k) == Some(content.clone())));
    }
}
