//! Each checkout's own caches, under the user cache dir, never inside the repository:
//! the snapshot of its file set (what a warm start needs to rank without reading any
//! tags: every file's stat data, content key, and the identifiers it defines and
//! references), and the token counts of rendered map blocks (so a new process can fit a
//! map it fitted before without loading the tokenizer). The tags themselves live in the
//! store that all checkouts share (`store.rs`).
//!
//! Layout: an 8-byte magic, a format version, the xxh3 of the body, then the body in
//! bincode (fixed-width integers, so decoding is mostly copying; bincode is already in
//! the dependency tree through syntect). Anything that does not
//! check out (other version, short file, bad checksum, undecodable body) is treated as
//! no cache at all; the map is rebuilt and the file rewritten, never a crash.

use std::collections::HashMap;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bincode::Options;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::files::StagedMemo;
use super::fitted::Fitted;
use super::interner::Names;
use super::left_out::AttributeMemo;
use super::store::Key;

const SNAPSHOT_MAGIC: &[u8; 8] = b"TERNSNAP";
const COUNTS_MAGIC: &[u8; 8] = b"TERNCNTS";
const STAGED_MAGIC: &[u8; 8] = b"TERNSTGD";
const FITTED_MAGIC: &[u8; 8] = b"TERNFITD";
/// Bump whenever `Known` or `Snapshot` change meaning (4: `Kind::LongLines`, the
/// attribute answers; 5: identifier lists and name spans as bytes).
pub const VERSION: u32 = 5;
const HEADER: usize = 8 + 4 + 8;

/// What kind of content a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// Tagged source: how many definitions and referenced names its tags hold.
    Tags {
        defs: u32,
        refs: u32,
    },
    /// Shown as a bare path: no supported language, or no definitions or references.
    Untagged,
    Binary,
    /// Minified or generated text: not parsed, left out of the map.
    LongLines,
}

/// What is known about one file of the set without its tags: enough to tell whether
/// it changed and to rank it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub size: u64,
    pub mtime_ns: i64,
    pub ino: u64,
    /// The key of its tags in the shared store.
    pub key: Key,
    pub kind: Kind,
    /// Distinct global identifier ids the file defines, sorted (shared with the
    /// reference graph, `graph_cell.rs`).
    pub defines: Words<u32>,
    /// (global identifier id, references), sorted.
    pub refs: Words<(u32, u32)>,
}

/// A file's identifier list: a run of a list that a loaded snapshot's files share, so
/// loading one costs no allocation per file, and a copy costs a reference count.
#[derive(Clone)]
pub struct Words<T> {
    all: Arc<[T]>,
    start: usize,
    len: usize,
}

impl<T> std::ops::Deref for Words<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.all
            .get(self.start..self.start + self.len)
            .unwrap_or_default()
    }
}

impl<T> From<Vec<T>> for Words<T> {
    fn from(words: Vec<T>) -> Self {
        let len = words.len();
        Words {
            all: words.into(),
            start: 0,
            len,
        }
    }
}

impl<T> Default for Words<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<T: PartialEq> PartialEq for Words<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Words<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for Words<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// A file as the snapshot stores it: [`Known`] with its lists' lengths, the lists
/// themselves being runs of two lists all files share, kept as little-endian bytes:
/// decoding copies them in one pass instead of visiting each of the two million
/// numbers a large snapshot holds, and allocates nothing per file.
#[derive(Serialize, Deserialize)]
struct Stored {
    size: u64,
    mtime_ns: i64,
    ino: u64,
    key: Key,
    kind: Kind,
    defines: u32,
    refs: u32,
}

/// A checkout's snapshot as read.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// When the files were stat'ed, in nanoseconds since the epoch.
    pub saved_ns: i64,
    /// The identifiers the files' ids refer to.
    pub names: Names,
    /// (root-relative path, what is known about it).
    pub files: Vec<(String, Known)>,
    pub attributes: AttributeMemo,
}

/// The layout of a snapshot on disk.
#[derive(Deserialize)]
struct SnapshotIn<'a> {
    saved_ns: i64,
    names: Names,
    files: Vec<(String, Stored)>,
    defines: &'a [u8],
    refs: &'a [u8],
    attributes: AttributeMemo,
}

/// The same layout, written from borrowed data.
#[derive(Serialize)]
struct SnapshotOut<'a> {
    saved_ns: i64,
    names: &'a Names,
    files: Vec<(&'a str, Stored)>,
    defines: &'a [u8],
    refs: &'a [u8],
    attributes: &'a AttributeMemo,
}

/// A number as the snapshot's lists store it.
pub(super) trait Word: Copy {
    const BYTES: usize;
    fn put(self, out: &mut Vec<u8>);
    /// From exactly `BYTES` bytes.
    fn take(bytes: &[u8]) -> Self;
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(b) = bytes.get(at..at + 4) {
        word.copy_from_slice(b);
    }
    u32::from_le_bytes(word)
}

impl Word for u32 {
    const BYTES: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn take(bytes: &[u8]) -> Self {
        u32_at(bytes, 0)
    }
}

impl Word for (u32, u32) {
    const BYTES: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        self.0.put(out);
        self.1.put(out);
    }
    fn take(bytes: &[u8]) -> Self {
        (u32_at(bytes, 0), u32_at(bytes, 4))
    }
}

/// The words of `bytes`; None unless they are a whole number of words.
fn words<T: Word, C: FromIterator<T>>(bytes: &[u8]) -> Option<C> {
    bytes
        .len()
        .is_multiple_of(T::BYTES)
        .then(|| bytes.chunks_exact(T::BYTES).map(T::take).collect())
}

/// A list kept as little-endian bytes (`#[serde(with = "cache::word_bytes")]`), read
/// in one pass.
pub(super) mod word_bytes {
    use serde::{Deserializer, Serializer, de};

    use super::Word;

    pub(in super::super) fn serialize<S: Serializer, T: Word>(
        words: &[T],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(words.len() * T::BYTES);
        words.iter().for_each(|&w| w.put(&mut bytes));
        s.serialize_bytes(&bytes)
    }

    pub(in super::super) fn deserialize<'de, D: Deserializer<'de>, T: Word>(
        d: D,
    ) -> Result<Vec<T>, D::Error> {
        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<T: Word> de::Visitor<'_> for Visitor<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a multiple of {} bytes", T::BYTES)
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Vec<T>, E> {
                super::words(bytes).ok_or_else(|| E::invalid_length(bytes.len(), &self))
            }
        }
        d.deserialize_bytes(Visitor(std::marker::PhantomData))
    }
}

/// A byte array kept as one run of bytes (`#[serde(with = "cache::byte_array")]`):
/// serde reads an array one element at a time, which for the content keys and blob ids
/// of 17k files was a fifth of a warm start's decoding.
pub(super) mod byte_array {
    use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

    pub(in super::super) fn serialize<S: Serializer, const N: usize>(
        bytes: &[u8; N],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytes)
    }

    pub(in super::super) fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
        d: D,
    ) -> Result<[u8; N], D::Error> {
        struct Visitor<const N: usize>;
        impl<const N: usize> de::Visitor<'_> for Visitor<N> {
            type Value = [u8; N];
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "{N} bytes")
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<[u8; N], E> {
                bytes
                    .try_into()
                    .map_err(|_| E::invalid_length(bytes.len(), &self))
            }
        }
        d.deserialize_bytes(Visitor::<N>)
    }

    /// The same for an optional array.
    pub(in super::super) mod option {
        use super::*;

        #[derive(Serialize, Deserialize)]
        struct Array<const N: usize>(#[serde(with = "super")] [u8; N]);

        pub(in super::super::super) fn serialize<S: Serializer, const N: usize>(
            bytes: &Option<[u8; N]>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            bytes.map(Array).serialize(s)
        }

        pub(in super::super::super) fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
            d: D,
        ) -> Result<Option<[u8; N]>, D::Error> {
            Ok(Option::<Array<N>>::deserialize(d)?.map(|a| a.0))
        }
    }
}

/// The list all files share, and a cursor handing out its runs in file order.
struct Runs<T> {
    all: Arc<[T]>,
    next: usize,
}

impl<T: Word> Runs<T> {
    fn of(bytes: &[u8], what: &str) -> Result<Self, String> {
        let all = words(bytes).ok_or_else(|| {
            format!(
                "undecodable: {what}: {} bytes, not a multiple of {}",
                bytes.len(),
                T::BYTES
            )
        })?;
        Ok(Runs { all, next: 0 })
    }

    /// The next `len` words; None past the end.
    fn take(&mut self, len: u32) -> Option<Words<T>> {
        let start = self.next;
        self.next = start.checked_add(len as usize)?;
        (self.next <= self.all.len()).then(|| Words {
            all: Arc::clone(&self.all),
            start,
            len: len as usize,
        })
    }
}

impl SnapshotIn<'_> {
    fn resolve(self) -> Result<Snapshot, String> {
        let mut defines = Runs::<u32>::of(self.defines, "definitions")?;
        let mut refs = Runs::<(u32, u32)>::of(self.refs, "references")?;
        // Ids index the name table: one past it is a damaged file, not a panic later.
        let names = self.names.len();
        let named = |id: u32| (id as usize) < names;
        if !defines.all.iter().all(|&id| named(id)) || !refs.all.iter().all(|&(id, _)| named(id)) {
            return Err("undecodable: an identifier id past the name table".into());
        }
        let files = self
            .files
            .into_iter()
            .map(|(path, s)| {
                let (Some(d), Some(r)) = (defines.take(s.defines), refs.take(s.refs)) else {
                    return Err(format!("undecodable: {path}: lists past their end"));
                };
                let known = Known {
                    size: s.size,
                    mtime_ns: s.mtime_ns,
                    ino: s.ino,
                    key: s.key,
                    kind: s.kind,
                    defines: d,
                    refs: r,
                };
                Ok((path, known))
            })
            .collect::<Result<_, String>>()?;
        Ok(Snapshot {
            saved_ns: self.saved_ns,
            names: self.names,
            files,
            attributes: self.attributes,
        })
    }
}

/// Where the caches of the checkout at `root` live under `dir` (normally
/// `dirs::cache_dir()/tern/tags/checkouts`): `<stem>.snap` for the snapshot,
/// `<stem>.<encoding>.counts` for block token counts, `<stem>.staged` for the index's
/// entries as last read, `<stem>.fitted` for the last fitted map (`fitted.rs`).
pub(crate) fn stem_for(dir: &Path, root: &Path) -> PathBuf {
    let key = xxhash_rust::xxh3::xxh3_64(root.as_os_str().as_encoded_bytes());
    dir.join(format!("{key:016x}"))
}

/// The most the snapshots and counts of all checkouts may take together: past it, the
/// least recently used go (a checkout whose snapshot went rebuilds it from the store).
pub const CHECKOUTS_CAP_BYTES: u64 = 256 << 20;

/// Reads a snapshot; any problem gives an empty one and a reason for the log. Its
/// modification time becomes its last use.
pub(crate) fn load_snapshot(path: &Path) -> (Snapshot, Option<String>) {
    let decoded = decode_with(path, SNAPSHOT_MAGIC, |body| {
        let stored: SnapshotIn = options(body.len())
            .deserialize(body)
            .map_err(|e| Bad(format!("undecodable: {e}")))?;
        stored.resolve().map_err(Bad)
    });
    let loaded = match decoded {
        Ok(snapshot) => (snapshot, None),
        Err(Missing) => (Snapshot::default(), None),
        Err(Bad(why)) => (Snapshot::default(), Some(why)),
    };
    // Losing a use time only makes a snapshot older: never an error.
    let _ = crate::regular_file::touch(path);
    loaded
}

/// Deletes the least recently used checkout files in `dir` while they take more than
/// `cap` bytes, never those of `keep` (a stem).
pub(crate) fn evict_checkouts(dir: &Path, keep: &Path, cap: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let used = meta.modified().ok()?;
            meta.is_file().then(|| (used, meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort_by_key(|f| f.0);
    let keep = keep.as_os_str().as_encoded_bytes();
    for (_, len, path) in files {
        if total <= cap {
            break;
        }
        if path.as_os_str().as_encoded_bytes().starts_with(keep) {
            continue;
        }
        // Another process may have removed it already; either way it is gone.
        let _ = std::fs::remove_file(&path);
        total -= len;
    }
}

/// Writes a snapshot.
pub(crate) fn save_snapshot(
    path: &Path,
    saved_ns: i64,
    names: &Names,
    files: &[(&str, &Known)],
    attributes: &AttributeMemo,
) -> std::io::Result<()> {
    let (mut defines, mut refs) = (Vec::new(), Vec::new());
    let files = files
        .iter()
        .map(|&(path, k)| {
            k.defines.iter().for_each(|&w| w.put(&mut defines));
            k.refs.iter().for_each(|&w| w.put(&mut refs));
            let stored = Stored {
                size: k.size,
                mtime_ns: k.mtime_ns,
                ino: k.ino,
                key: k.key,
                kind: k.kind,
                defines: k.defines.len() as u32,
                refs: k.refs.len() as u32,
            };
            (path, stored)
        })
        .collect();
    write(
        path,
        SNAPSHOT_MAGIC,
        &SnapshotOut {
            saved_ns,
            names,
            files,
            defines: &defines,
            refs: &refs,
            attributes,
        },
    )
}

/// Reads the block token counts (xxh3 of a rendered block -> tokens).
pub(crate) fn load_counts(path: &Path) -> HashMap<u64, u32> {
    read(path, COUNTS_MAGIC).0
}

pub(crate) fn save_counts(path: &Path, counts: &HashMap<u64, u32>) -> std::io::Result<()> {
    write(path, COUNTS_MAGIC, counts)
}

/// Reads the index's entries as last read (none if missing or damaged: the index is
/// read instead).
pub(crate) fn load_staged(path: &Path) -> StagedMemo {
    read(path, STAGED_MAGIC).0
}

pub(crate) fn save_staged(path: &Path, staged: &StagedMemo) -> std::io::Result<()> {
    write(path, STAGED_MAGIC, staged)
}

/// Reads the last fitted map (None if missing or damaged: the map is fitted again).
pub(crate) fn load_fitted(path: &Path) -> Option<Fitted> {
    decode(path, FITTED_MAGIC).ok()
}

pub(crate) fn save_fitted(path: &Path, fitted: &Fitted) -> std::io::Result<()> {
    write(path, FITTED_MAGIC, fitted)
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

/// Maps the file and checks its header and checksum, then decodes straight from the
/// mapping: the file is read once, from the page cache, and never copied to the heap
/// next to what is decoded from it. Cache files are only ever replaced by a rename
/// (never truncated in place), so the mapping cannot shrink under the decoder.
fn decode<T: DeserializeOwned>(path: &Path, magic: &[u8; 8]) -> Result<T, Unusable> {
    decode_with(path, magic, |body| {
        options(body.len())
            .deserialize(body)
            .map_err(|e| Bad(format!("undecodable: {e}")))
    })
}

/// Like [`decode`], with `decode` given the checked body.
fn decode_with<T>(
    path: &Path,
    magic: &[u8; 8],
    decode: impl FnOnce(&[u8]) -> Result<T, Unusable>,
) -> Result<T, Unusable> {
    let file = match crate::regular_file::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Missing),
        Err(e) => return Err(Bad(format!("cannot read: {e}"))),
    };
    // SAFETY: the mapping is read-only and private to this process; the file is a
    // regular file that tern replaces by renaming another over it, never by writing
    // into it, so its pages stay valid while mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Bad(format!("cannot read: {e}")))?;
    let bytes: &[u8] = &map;
    let (Some(header), Some(body)) = (bytes.get(..HEADER), bytes.get(HEADER..)) else {
        return Err(Bad("not a tern cache file".into()));
    };
    if &header[..8] != magic {
        return Err(Bad("not a tern cache file".into()));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(Bad(format!("cache version {version}, expected {VERSION}")));
    }
    let sum = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
    if xxhash_rust::xxh3::xxh3_64(body) != sum {
        return Err(Bad("checksum mismatch".into()));
    }
    decode(body)
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

    fn known(kind: Kind) -> Known {
        Known {
            size: 1,
            mtime_ns: 2,
            ino: 3,
            key: Key::new(&Key::blob_id(b"x"), None),
            kind,
            defines: vec![0, 7].into(),
            refs: vec![(0, 2), (7, u32::MAX)].into(),
        }
    }

    /// An interner of `n` names, `name0` on.
    fn names(n: u32) -> super::super::interner::Interner {
        let mut interner = super::super::interner::Interner::default();
        for i in 0..n {
            interner.intern(&format!("name{i}"));
        }
        interner
    }

    #[test]
    fn round_trip_and_every_kind_of_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = stem_for(dir.path(), Path::new("/some/repo")).with_extension("snap");
        let interner = names(8);
        let a = known(Kind::Tags { defs: 1, refs: 1 });
        let b = known(Kind::Binary);
        let attributes = AttributeMemo::default();
        let files = [("a.rs", &a), ("b.bin", &b)];
        save_snapshot(&path, 42, interner.names(), &files, &attributes).unwrap();
        let (back, why) = load_snapshot(&path);
        assert_eq!(why, None);
        assert_eq!(back.saved_ns, 42);
        assert_eq!(back.names.get(7), "name7");
        assert_eq!(
            back.files,
            [("a.rs".to_string(), a), ("b.bin".to_string(), b)]
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
            let (back, why) = load_snapshot(&path);
            assert!(back.files.is_empty());
            assert!(why.is_some());
        }
        // Over the cap, the least recently used checkout's files go, never our own.
        let other = stem_for(dir.path(), Path::new("/other/repo")).with_extension("snap");
        std::fs::write(&other, vec![0u8; 100]).unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .append(true)
            .open(&other)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let ours = stem_for(dir.path(), Path::new("/some/repo"));
        evict_checkouts(dir.path(), &ours, 1);
        assert!(!other.exists());
        assert!(path.exists());

        // Counts use another magic: a snapshot is not a counts file.
        assert!(load_counts(&path).is_empty());
        let counts = HashMap::from([(1u64, 2u32), (3, 4)]);
        save_counts(&path, &counts).unwrap();
        assert_eq!(load_counts(&path), counts);
    }

    /// Identifier lists of any length and value come back as they went in; a list
    /// whose byte length is not a whole number of words is a bad file, not a panic.
    #[test]
    fn identifier_lists_round_trip_and_a_torn_list_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.snap");
        let interner = names(70_001);
        let names = interner.names().as_ref();
        let attributes = AttributeMemo::default();
        let mut a = known(Kind::Tags { defs: 3, refs: 2 });
        a.defines = (0..=70_000u32).collect::<Vec<_>>().into();
        a.refs = vec![(70_000, 0), (1, u32::MAX)].into();
        let mut b = known(Kind::Untagged);
        (b.defines, b.refs) = (Words::default(), Words::default());
        save_snapshot(&path, 1, names, &[("a", &a), ("b", &b)], &attributes).unwrap();
        let (back, why) = load_snapshot(&path);
        assert_eq!(
            (why, back.files),
            (None, vec![("a".into(), a), ("b".into(), b)])
        );

        // Lists torn or shorter than their files say, with a checksum that matches:
        // refused, never half read.
        let torn = known(Kind::Untagged);
        let stored = |defines| Stored {
            size: torn.size,
            mtime_ns: torn.mtime_ns,
            ino: torn.ino,
            key: torn.key,
            kind: torn.kind,
            defines,
            refs: 0,
        };
        for (defines, bytes, why) in [
            (0, &[1u8, 2, 3][..], "not a multiple of 4"),
            (2, &[1, 0, 0, 0][..], "t: lists past their end"),
            (u32::MAX, &[][..], "t: lists past their end"),
            (1, &[255, 255, 255, 255][..], "past the name table"),
        ] {
            let out = SnapshotOut {
                saved_ns: 0,
                names,
                files: vec![("t", stored(defines))],
                defines: bytes,
                refs: &[],
                attributes: &attributes,
            };
            write(&path, SNAPSHOT_MAGIC, &out).unwrap();
            let (back, said) = load_snapshot(&path);
            assert!(back.files.is_empty());
            assert!(said.unwrap().contains(why));
        }
    }
}
