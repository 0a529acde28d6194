//! Review mode on a large real branch: a few hundred Rust files copied from the cargo
//! registry, committed on `main`, then edited on `feature` for about 50,000 changed
//! lines (edits spread through every file, inserted blocks, a deleted block, new,
//! deleted and renamed files, a lockfile).
//!
//! The repository is built once under `target/review-bench/repo` and reused, so the
//! same branch can be timed as a whole process:
//! `cargo bench --bench review`, then
//! `cd target/review-bench/repo && /usr/bin/time -v ../../release/tern review --print-diff >/dev/null`.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]
// Tests and benchmarks print what they measure or skip, with no key to redact.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, criterion_group, criterion_main};
use git2::{IndexAddOption, Repository, Signature};
use tern::branch_review::{ContextOptions, DiffSource, ReviewOptions, collect, plan};
use tern::llm::ModelInfo;

const FILES: usize = 400;
const TARGET_CHANGED_LINES: usize = 50_000;

fn bench_repo() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/review-bench/repo");
    if root.join(".git/refs/heads/feature").exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let mut init = git2::RepositoryInitOptions::new();
    init.initial_head("main");
    let repo = Repository::init_opts(&root, &init).unwrap();

    let sources = registry_sources();
    assert!(
        sources.len() >= FILES / 2,
        "need Rust sources under ~/.cargo/registry/src to build the bench repository"
    );
    let files: Vec<(String, String)> = sources
        .into_iter()
        .take(FILES)
        .filter_map(|(rel, path)| Some((rel, std::fs::read_to_string(path).ok()?)))
        .collect();
    for (rel, text) in &files {
        write(&root, rel, text);
    }
    write(&root, "Cargo.lock", &lockfile(2000, "1.0.0"));
    commit(&repo, "base: registry sources");

    let head = repo.head().unwrap().peel_to_commit().unwrap();
    repo.branch("feature", &head, false).unwrap();
    repo.set_head("refs/heads/feature").unwrap();
    let total_lines: usize = files.iter().map(|(_, t)| t.lines().count()).sum();
    // Each edited line is one removed and one added line; inserted and removed blocks,
    // the deleted, renamed and new files, the lockfile and git pairing lines
    // differently add about 90% more.
    let every = (total_lines * 2 * 19 / 10 / TARGET_CHANGED_LINES).max(2);
    for (n, (rel, text)) in files.iter().enumerate() {
        match n % 50 {
            0 => std::fs::remove_file(root.join(rel)).unwrap(),
            1 => {
                std::fs::remove_file(root.join(rel)).unwrap();
                write(
                    &root,
                    &rel.replace(".rs", "_moved.rs"),
                    &edited(text, every * 4),
                );
            }
            _ => write(&root, rel, &edited(text, every)),
        }
    }
    write(&root, "src/brand_new.rs", &files[2].1);
    write(&root, "Cargo.lock", &lockfile(2000, "1.0.1"));
    commit(&repo, "feature: edits everywhere");
    root
}

/// `.rs` files between 4 and 60 KB from the registry, in a stable order, spread over
/// crates (at most 12 per crate).
fn registry_sources() -> Vec<(String, PathBuf)> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::home_dir().unwrap().join(".cargo"));
    let mut crates: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .collect();
    crates.sort();
    let mut out = Vec::new();
    for krate in crates {
        let mut files: Vec<PathBuf> = walk(&krate)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .filter(|p| {
                let len = p.metadata().map(|m| m.len()).unwrap_or(0);
                (4_000..60_000).contains(&len)
            })
            .collect();
        files.sort();
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        for p in files.into_iter().take(12) {
            let rel = p
                .strip_prefix(&krate)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((format!("crates/{name}/{rel}"), p));
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.extend(walk(&p)),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
    out
}

/// Every `every`-th non-blank line changed, a block inserted every 97 lines and the
/// first 3 lines of every 200 removed.
fn edited(text: &str, every: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for (i, line) in text.lines().enumerate() {
        if i % 200 == 199 || i % 200 == 198 || i % 200 == 197 {
            continue;
        }
        if i % every == every / 2 && !line.trim().is_empty() {
            out.push_str(line);
            out.push_str(" // reviewed\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
        if i % 97 == 96 {
            out.push_str("    // inserted: check the bounds before indexing\n");
            out.push_str("    debug_assert!(true);\n");
        }
    }
    out
}

fn lockfile(packages: usize, version: &str) -> String {
    (0..packages)
        .map(|i| format!("[[package]]\nname = \"dep-{i}\"\nversion = \"{version}\"\n\n"))
        .collect()
}

fn write(root: &Path, rel: &str, text: &str) {
    let full = root.join(rel);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

fn commit(repo: &Repository, message: &str) {
    let mut index = repo.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.update_all(["*"], None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Bench", "bench@example.com").unwrap();
    let parent = repo.head().ok().map(|h| h.peel_to_commit().unwrap());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .unwrap();
}

fn options(budget: usize, max_calls: usize) -> ReviewOptions {
    ReviewOptions {
        budget,
        context: ContextOptions::default(),
        line_numbers: false,
        max_calls,
    }
}

/// CPU time of every thread of this process (from `/proc/self/task/*/schedstat`, in
/// nanoseconds): on a shared machine wall time mostly measures the other tenants, CPU
/// time measures tern. Rayon's workers live for the whole run, so none is missed.
struct ProcessCpu;

fn cpu_time() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").expect("Linux /proc");
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

static WALL: WallTime = WallTime;

impl Measurement for ProcessCpu {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        cpu_time()
    }
    fn end(&self, start: Duration) -> Duration {
        cpu_time().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}

fn review<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    let root = bench_repo();
    let repo = Repository::open(&root).unwrap();
    let source = DiffSource::Branch {
        base: Some("main".into()),
    };
    let model = ModelInfo::lookup("gpt-4o");
    let changes = collect(&repo, &source).unwrap();
    let first = plan(
        &changes,
        &model.token_counter(),
        &options(model.context_window, 1),
    )
    .unwrap();
    let (added, removed) = first
        .files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    eprintln!(
        "bench repository {}: {} files, {} changed lines (+{added} -{removed})\n{}",
        root.display(),
        changes.files.len(),
        added + removed,
        first.summary()
    );

    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.bench_function("collect", |b| b.iter(|| collect(&repo, &source).unwrap()));
    // A fresh counter each time: no token count is served from an earlier run's cache.
    group.bench_function("plan_128k", |b| {
        b.iter(|| plan(&changes, &model.token_counter(), &options(128_000, 1)).unwrap())
    });
    group.bench_function("plan_128k_4_calls", |b| {
        b.iter(|| plan(&changes, &model.token_counter(), &options(128_000, 4)).unwrap())
    });
    group.bench_function("collect_and_plan_128k", |b| {
        b.iter(|| {
            let changes = collect(&repo, &source).unwrap();
            plan(&changes, &model.token_counter(), &options(128_000, 1)).unwrap()
        })
    });
    group.finish();
}

fn wall(c: &mut Criterion) {
    review(c, "review");
}

fn cpu(c: &mut Criterion<ProcessCpu>) {
    review(c, "review_cpu");
}

criterion_group!(wall_time, wall);
criterion_group! {
    name = cpu_time_group;
    config = Criterion::default().with_measurement(ProcessCpu);
    targets = cpu
}
criterion_main!(wall_time, cpu_time_group);
