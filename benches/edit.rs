//! 200 SEARCH/REPLACE blocks applied to a file and split into hunks: the whole
//! `propose` path (parse the reply, read the file, match every block in order, build
//! the hunks from the replaced spans, hash hunk ids). On a 50,000-line file (target
//! 50 ms) and on a 1,000,000-line file with one block near the end and every fifth
//! block indented differently from the file, so it needs tolerant matching (target
//! 300 ms).

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]
// Tests and benchmarks print what they measure or skip, with no key to redact.
#![allow(clippy::disallowed_macros)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tern::edit::{EditFormat, FileSet, Workspace, propose};

const BLOCKS: usize = 200;
/// Lines per generated function.
const FN_LINES: usize = 10;

/// A Rust-like file of `lines` lines: functions of 10 lines with repetitive bodies
/// (`}`, blank lines, `let` lines that differ only by a number), as real code repeats
/// itself.
fn source(lines: usize) -> String {
    let mut s = String::with_capacity(lines * 32);
    for f in 0..lines / FN_LINES {
        s.push_str(&format!(
            "fn handler_{f}(ctx: &mut Context) -> Result<()> {{\n"
        ));
        s.push_str("    let state = ctx.state();\n");
        s.push_str(&format!("    let limit = {};\n", f % 97));
        s.push_str("    if state.count > limit {\n");
        s.push_str("        return Err(Error::Limit);\n");
        s.push_str("    }\n");
        s.push_str(&format!("    ctx.record(\"handler_{f}\");\n"));
        s.push_str("    Ok(())\n");
        s.push_str("}\n");
        s.push('\n');
    }
    s
}

/// Blocks spread over the file (the last one in its final function), each finding a
/// function by its signature and changing its limit, in file order as models write
/// them. With `tolerant`, every fifth block's SEARCH and REPLACE are indented by two
/// more spaces than the file.
fn reply(lines: usize, tolerant: bool) -> String {
    let fns = lines / FN_LINES;
    let mut r = String::from("Here are the changes.\n\n");
    for b in 0..BLOCKS {
        let f = if b + 1 == BLOCKS {
            fns - 1
        } else {
            b * fns / BLOCKS
        };
        let pad = if tolerant && b % 5 == 4 { "  " } else { "" };
        let limit = f % 97;
        r.push_str(&format!(
            "src/handlers.rs\n```rust\n<<<<<<< SEARCH\n{pad}fn handler_{f}(ctx: &mut Context) -> Result<()> {{\n{pad}    let state = ctx.state();\n{pad}    let limit = {limit};\n=======\n{pad}fn handler_{f}(ctx: &mut Context) -> Result<()> {{\n{pad}    let state = ctx.state();\n{pad}    let limit = {limit} * 2;\n>>>>>>> REPLACE\n```\n\n",
        ));
    }
    r
}

fn bench_file(c: &mut Criterion, name: &str, lines: usize, tolerant: bool, samples: usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/handlers.rs"), source(lines)).unwrap();
    let ws = Workspace::discover(dir.path()).unwrap();
    let files = FileSet::new(vec!["src/handlers.rs".into()], vec![]);
    let reply = reply(lines, tolerant);

    let check = propose(&ws, &reply, EditFormat::Editblock, &files);
    assert!(check.errors.is_empty(), "{:?}", check.errors);
    assert_eq!(check.proposal.hunk_count(), BLOCKS);
    assert!(
        check.proposal.files()[0]
            .hunks()
            .iter()
            .all(|h| h.old.len() == 1 && h.new.len() == 1),
        "every block changes one line"
    );

    let mut group = c.benchmark_group("edit");
    group.sample_size(samples);
    group.bench_function(name, |b| {
        b.iter(|| {
            black_box(propose(
                &ws,
                black_box(&reply),
                EditFormat::Editblock,
                &files,
            ))
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    bench_file(c, "200 blocks on a 50k-line file", 50_000, false, 30);
    bench_file(
        c,
        "200 blocks on a 1M-line file, 40 tolerant",
        1_000_000,
        true,
        10,
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
