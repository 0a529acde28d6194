//! Token counting throughput on real source code: the Rust crates in cargo's registry
//! (what `cargo fetch` downloaded for this project), about 8 MB of them.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]
// Tests and benchmarks print what they measure or skip, with no key to redact.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tern::tokens::{Encoding, TokenCounter};

const CORPUS_BYTES: usize = 8 << 20;

fn registry_src() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".cargo")))
        .expect("CARGO_HOME or a home directory");
    home.join("registry").join("src")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The first `CORPUS_BYTES` of `.rs` files in path order: the same corpus every run.
fn corpus() -> Vec<String> {
    let mut paths = Vec::new();
    collect(&registry_src(), &mut paths);
    let mut texts = Vec::new();
    let mut bytes = 0;
    for path in paths {
        if bytes >= CORPUS_BYTES {
            break;
        }
        if let Ok(text) = std::fs::read_to_string(&path) {
            bytes += text.len();
            texts.push(text);
        }
    }
    assert!(
        bytes >= 5 << 20,
        "need at least 5 MB of source under {}",
        registry_src().display()
    );
    texts
}

fn counting(c: &mut Criterion) {
    let texts = corpus();
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut group = c.benchmark_group("count");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);

    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        group.bench_function(format!("bpe-openai {}", encoding.name()), |b| {
            b.iter(|| texts.iter().map(|t| encoding.count(t)).sum::<usize>())
        });
    }

    let joined = texts.concat();
    group.bench_function("bpe-openai o200k_base, one 8 MB text on all cores", |b| {
        b.iter(|| Encoding::O200kBase.count(&joined))
    });

    let reference = tiktoken_rs::o200k_base().unwrap();
    group.bench_function("tiktoken-rs o200k_base (reference)", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| reference.encode_ordinary(t).len())
                .sum::<usize>()
        })
    });

    let cached = TokenCounter::new(Encoding::O200kBase, false);
    let total: usize = texts.iter().map(|t| cached.count(t)).sum();
    group.bench_function("TokenCounter o200k_base, all cached", |b| {
        b.iter(|| {
            let n = texts.iter().map(|t| cached.count(t)).sum::<usize>();
            assert_eq!(n, total);
            n
        })
    });
    group.finish();
    eprintln!(
        "corpus: {} files, {:.1} MB, {} o200k_base tokens",
        texts.len(),
        bytes as f64 / 1e6,
        total
    );
}

criterion_group!(benches, counting);
criterion_main!(benches);
