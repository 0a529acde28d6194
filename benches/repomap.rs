//! Repo map benchmarks. By default they run on a temporary git repository holding a copy
//! of tern's own `src/`; set `TERN_BENCH_REPO=/path/to/repo` to measure a large real tree,
//! and `TERN_BENCH_CACHE=/some/dir` to keep its tag cache between runs.
//!
//! The trees in the repo map's reported numbers are whole crates copied from
//! `~/.cargo/registry/src/*/`, in name order, until about 1,000 or 10,000 files, then
//! `git init && git add -A && git commit` (so the file set comes from a real index).
//!
//! - `warm_open`: a new `RepoMap` loading its checkout's snapshot (what a new process
//!   does; tags are read from the shared store only for the files the map shows), plus
//!   one map;
//! - `build_after_chat_change`: ranking and fitting again for another chat file;
//! - `one_file_change`: an edited file re-parsed (`refresh_files`) and the map rebuilt.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]
// Tests and benchmarks print what they measure or skip, with no key to redact.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use tern::repomap::{CacheLocation, RepoMap};
use tern::tokens::{Encoding, TokenCounter};

const NONE: [&str; 0] = [];

struct Setup {
    root: PathBuf,
    cache: CacheDir,
    _own_copy: Option<tempfile::TempDir>,
}

enum CacheDir {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl CacheDir {
    fn path(&self) -> &Path {
        match self {
            CacheDir::Temp(dir) => dir.path(),
            CacheDir::Kept(path) => path,
        }
    }
}

fn setup() -> Setup {
    let cache = match std::env::var("TERN_BENCH_CACHE") {
        Ok(dir) => CacheDir::Kept(PathBuf::from(dir)),
        Err(_) => CacheDir::Temp(tempfile::tempdir().unwrap()),
    };
    if let Ok(repo) = std::env::var("TERN_BENCH_REPO") {
        return Setup {
            root: PathBuf::from(repo),
            cache,
            _own_copy: None,
        };
    }
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &dir.path().join("src"),
    );
    git2::Repository::init(dir.path()).unwrap();
    Setup {
        root: dir.path().to_path_buf(),
        cache,
        _own_copy: Some(dir),
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

fn open(s: &Setup) -> RepoMap {
    RepoMap::open(
        &s.root,
        TokenCounter::new(Encoding::O200kBase, false),
        CacheLocation::Dir(s.cache.path().to_path_buf()),
    )
    .unwrap()
}

fn benches(c: &mut Criterion) {
    let s = setup();
    let mut map = open(&s);
    map.refresh(&|_| {}); // cold: fills the cache
    let files: Vec<String> = map
        .files()
        .iter()
        .filter(|p| p.ends_with(".rs"))
        .take(16)
        .cloned()
        .collect();
    let mut group = c.benchmark_group("repomap");
    group.sample_size(10);

    group.bench_function("warm_open", |b| {
        b.iter(|| {
            let mut m = open(&s);
            m.refresh(&|_| {});
            m.build(&NONE, &NONE, &NONE, 4096).tokens
        })
    });

    let mut k = 0;
    group.bench_function("build_after_chat_change", |b| {
        b.iter(|| {
            k = (k + 1) % files.len();
            map.build(&[&files[k]], &NONE, &NONE, 4096).tokens
        })
    });

    // Appending to a scratch file keeps the measured tree's own files untouched.
    let scratch = "tern_bench_scratch.rs";
    let mut n = 0;
    group.bench_function("one_file_change", |b| {
        b.iter(|| {
            n += 1;
            let body: String = (0..n % 7 + 1)
                .map(|i| format!("pub fn bench_fn_{i}() {{}}\n"))
                .collect();
            std::fs::write(s.root.join(scratch), body).unwrap();
            map.refresh_files(&[scratch.to_string()]);
            map.build(&[&files[0]], &NONE, &NONE, 4096).tokens
        })
    });
    group.finish();
    let _ = std::fs::remove_file(s.root.join(scratch));
}

criterion_group!(repomap, benches);
criterion_main!(repomap);
