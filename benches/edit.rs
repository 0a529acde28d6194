//! 200 SEARCH/REPLACE blocks applied to a 50,000-line file and split into hunks: the
//! whole `propose` path (parse the reply, read the file, match every block in order,
//! diff, hash hunk ids). Target: 50 ms.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tern::edit::{EditFormat, FileSet, Workspace, propose};

const LINES: usize = 50_000;
const BLOCKS: usize = 200;
/// Lines per generated function.
const FN_LINES: usize = 10;

/// A Rust-like file: functions of 10 lines with repetitive bodies (`}`, blank lines,
/// `let` lines that differ only by a number), as real code repeats itself.
fn source() -> String {
    let mut s = String::with_capacity(LINES * 32);
    for f in 0..LINES / FN_LINES {
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

/// Blocks spread over the file, each finding a function by its signature and changing
/// its limit, in file order as models write them.
fn reply() -> String {
    let fns = LINES / FN_LINES;
    let mut r = String::from("Here are the changes.\n\n");
    for b in 0..BLOCKS {
        let f = b * fns / BLOCKS;
        r.push_str(&format!(
            "src/handlers.rs\n```rust\n<<<<<<< SEARCH\nfn handler_{f}(ctx: &mut Context) -> Result<()> {{\n    let state = ctx.state();\n    let limit = {};\n=======\nfn handler_{f}(ctx: &mut Context) -> Result<()> {{\n    let state = ctx.state();\n    let limit = {} * 2;\n>>>>>>> REPLACE\n```\n\n",
            f % 97,
            f % 97
        ));
    }
    r
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/handlers.rs"), source()).unwrap();
    let ws = Workspace::discover(dir.path()).unwrap();
    let files = FileSet::new(vec!["src/handlers.rs".into()], vec![]);
    let reply = reply();

    let check = propose(&ws, &reply, EditFormat::Editblock, &files);
    assert!(check.errors.is_empty(), "{:?}", check.errors);
    assert_eq!(check.proposal.hunk_count(), BLOCKS);

    let mut group = c.benchmark_group("edit");
    group.sample_size(30);
    group.bench_function("200 blocks on a 50k-line file", |b| {
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

criterion_group!(benches, bench);
criterion_main!(benches);
