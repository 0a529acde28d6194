//! Review mode on real temporary git repositories, counted with the real tokenizer.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::support::TempRepo;
use tern::branch_review::{
    Body, ChangeSet, ContextOptions, DiffSource, FileStatus, Language, OUTPUT_BUFFER_HARD,
    OUTPUT_BUFFER_SOFT, OmitReason, Outcome, PlanMode, ReviewError, ReviewOptions, ReviewPlan,
    TRUNCATED, collect, extend, plan, section,
};
use tern::diff::LineKind;
use tern::tokens::{Encoding, TokenCounter};

/// The branch's changes against its default base.
fn changes(repo: &TempRepo) -> ChangeSet {
    collect(&repo.repo, &DiffSource::Branch { base: None }).unwrap()
}

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase, false)
}

fn options(budget: usize) -> ReviewOptions {
    ReviewOptions {
        budget,
        context: ContextOptions::default(),
        line_numbers: false,
        max_calls: 1,
    }
}

fn numbered(prefix: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{prefix} {i}\n")).collect()
}

/// The user message of a call.
fn user(plan: &ReviewPlan, call: usize) -> &str {
    &plan.calls[call].messages[1].content
}

/// Recounts a call's messages from scratch with a fresh counter (no shared cache).
fn recount(plan: &ReviewPlan, call: usize) -> usize {
    counter().count_request(plan.calls[call].messages.iter().map(|m| m.content.as_str()))
}

fn outcome(plan: &ReviewPlan, path: &str) -> Outcome {
    plan.files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} not in plan"))
        .outcome
}

/// Some Rust, Python and JavaScript source with functions, as a base for edits.
fn source(lang: &str, name: &str, functions: usize) -> String {
    let mut s = String::new();
    for f in 0..functions {
        match lang {
            "rs" => {
                s.push_str(&format!("pub fn {name}_{f}(input: &[u32]) -> u64 {{\n"));
                for l in 0..8 {
                    s.push_str(&format!(
                        "    let v{l} = input.get({l}).copied().unwrap_or({f}) as u64;\n"
                    ));
                }
                s.push_str("    v0 + v1 * v2 - v3\n}\n\n");
            }
            "py" => {
                s.push_str(&format!("def {name}_{f}(items):\n"));
                for l in 0..8 {
                    s.push_str(&format!(
                        "    value_{l} = items[{l}] if len(items) > {l} else {f}\n"
                    ));
                }
                s.push_str("    return value_0 + value_1\n\n\n");
            }
            _ => {
                s.push_str(&format!("export function {name}_{f}(items) {{\n"));
                for l in 0..8 {
                    s.push_str(&format!("  const v{l} = items[{l}] ?? {f};\n"));
                }
                s.push_str("  return v0 + v1;\n}\n\n");
            }
        }
    }
    s
}

/// Edits every third line that mentions `value`/`let`/`const`, as a reviewer would see
/// spread-out changes.
fn edit(text: &str, tag: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 3 == 1 && !l.trim().is_empty() {
                format!("{l} // {tag} {i}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

#[test]
fn a_small_diff_goes_out_extended_and_complete() {
    let r = TempRepo::empty();
    r.write("notes.txt", numbered("line", 30));
    r.write("gone.txt", "old\ncontent\n");
    r.commit("base");
    r.branch("feature");
    r.write(
        "notes.txt",
        numbered("line", 30).replace("line 15\n", "line fifteen\n"),
    );
    r.write("new.txt", "brand\nnew\n");
    r.remove("gone.txt");
    r.commit("change");

    let plan = plan(&changes(&r), &counter(), &options(128_000)).unwrap();
    assert_eq!(plan.mode, PlanMode::Extended);
    assert_eq!(plan.calls.len(), 1);
    assert!(
        plan.files
            .iter()
            .all(|f| matches!(f.outcome, Outcome::Included { call: 0 }))
    );
    let msg = user(&plan, 0);
    // git's 3 lines of context plus 5 before and 1 after: lines 7..=19.
    // git's default function context names the nearest line starting at column 0.
    let expected = "## File: 'notes.txt'\n\n@@ -7,13 +7,13 @@ line 11\n line 7\n line 8\n line 9\n \
                    line 10\n line 11\n line 12\n line 13\n line 14\n-line 15\n+line fifteen\n \
                    line 16\n line 17\n line 18\n line 19\n";
    assert!(msg.contains(expected), "{msg}");
    assert!(msg.contains("## File: 'new.txt' (new file)\n\n@@ -0,0 +1,2 @@\n+brand\n+new\n"));
    assert!(msg.contains("## File: 'gone.txt' (deleted)\n\n@@ -1,2 +0,0 @@\n-old\n-content\n"));
    assert!(msg.contains("The diff is complete"));
    assert!(!msg.contains("not shown"));
    assert_eq!(plan.calls[0].tokens, recount(&plan, 0));
    assert!(plan.calls[0].tokens + OUTPUT_BUFFER_SOFT <= 128_000);
}

#[test]
fn the_extended_diff_is_used_exactly_when_it_fits_under_the_soft_buffer() {
    let r = TempRepo::empty();
    r.write("src/lib.rs", source("rs", "calc", 20));
    r.commit("base");
    r.branch("feature");
    r.write("src/lib.rs", edit(&source("rs", "calc", 20), "tuned"));
    r.commit("change");
    let changes = changes(&r);
    let full = plan(&changes, &counter(), &options(1_000_000)).unwrap();
    let needed = full.calls[0].tokens + OUTPUT_BUFFER_SOFT;
    let at_limit = plan(&changes, &counter(), &options(needed)).unwrap();
    assert_eq!(at_limit.mode, PlanMode::Extended);
    let below = plan(&changes, &counter(), &options(needed - 1)).unwrap();
    assert_eq!(below.mode, PlanMode::Compressed);
}

#[test]
fn extra_context_is_clamped_to_the_file_and_never_repeats_a_line() {
    let r = TempRepo::empty();
    r.write("a.txt", numbered("row", 20));
    r.commit("base");
    r.branch("feature");
    let text = numbered("row", 20)
        .replace("row 2\n", "row two\n")
        .replace("row 12\n", "row twelve\n")
        .replace("row 20\n", "row twenty\n");
    r.write("a.txt", text);
    r.commit("edge edits");
    let changes = changes(&r);
    let Body::Text(diff) = &changes.files[0].body else {
        panic!("text expected")
    };
    // git: 1..=5, 9..=15, 17..=20 with 3 context lines.
    let wide = ContextOptions {
        before: 10,
        after: 10,
        dynamic: false,
    };
    let hunks = extend(diff, Language::Other, wide);
    assert_eq!(hunks.first().unwrap().old_first, 1);
    let last = hunks.last().unwrap();
    assert_eq!(last.old_first + last.old_len - 1, 20);
    let mut shown: Vec<u32> = hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind != LineKind::Added)
        .map(|l| l.old)
        .collect();
    let total = shown.len();
    shown.dedup();
    assert_eq!(shown.len(), total, "a line shown twice");
    assert_eq!(
        shown,
        (1..=20).collect::<Vec<_>>(),
        "every old line once, in order"
    );

    let plan = plan(&changes, &counter(), &options(128_000)).unwrap();
    let msg = user(&plan, 0);
    assert!(msg.contains("@@ -1,"), "{msg}");
    assert!(!msg.contains("@@ -0,") && !msg.contains("row 21"), "{msg}");
}

#[test]
fn context_lines_agree_with_both_files_for_every_setting() {
    let r = TempRepo::empty();
    for (i, lang) in ["rs", "py", "js"].iter().enumerate() {
        r.write(&format!("src/m{i}.{lang}"), source(lang, "f", 12));
    }
    r.commit("base");
    r.branch("feature");
    for (i, lang) in ["rs", "py", "js"].iter().enumerate() {
        let t = edit(&source(lang, "f", 12), "x");
        let (head, tail) = t.split_at_checked(t.len() / 2).unwrap();
        let t = format!("{head}inserted line\nanother\n{tail}");
        r.write(&format!("src/m{i}.{lang}"), t);
    }
    r.commit("edits");
    let changes = changes(&r);
    for before in [0, 1, 5, 10] {
        for dynamic in [false, true] {
            for f in &changes.files {
                let Body::Text(d) = &f.body else { panic!() };
                let opts = ContextOptions {
                    before,
                    after: 1,
                    dynamic,
                };
                for h in extend(d, Language::of(&f.path), opts) {
                    let (mut old, mut new) = (h.old_first, h.new_first);
                    for l in &h.lines {
                        match l.kind {
                            LineKind::Context => {
                                assert_eq!((l.old, l.new), (old, new));
                                assert_eq!(d.old.line(l.old), d.new.line(l.new));
                                old += 1;
                                new += 1;
                            }
                            LineKind::Removed => {
                                assert_eq!(l.old, old);
                                old += 1;
                            }
                            LineKind::Added => {
                                assert_eq!(l.new, new);
                                new += 1;
                            }
                        }
                    }
                    assert_eq!(old - h.old_first, h.old_len);
                    assert_eq!(new - h.new_first, h.new_len);
                }
            }
        }
    }
}

#[test]
fn dynamic_context_starts_at_the_enclosing_function() {
    let r = TempRepo::empty();
    let body: String = (0..12).map(|i| format!("    let x{i} = {i};\n")).collect();
    let code = format!("use std::fmt;\n\npub fn first() {{\n{body}}}\n");
    r.write("src/lib.rs", &code);
    r.commit("base");
    r.branch("feature");
    r.write("src/lib.rs", code.replace("let x8 = 8;", "let x8 = 80;"));
    r.commit("edit");
    let changes = changes(&r);
    let Body::Text(d) = &changes.files[0].body else {
        panic!()
    };
    let hunk = &d.hunks[0];
    // The change is on line 12; git's hunk starts at line 9; the header is on line 3.
    assert_eq!(hunk.old_first, 9);
    let dynamic = extend(d, Language::Rust, ContextOptions::default());
    assert_eq!(dynamic[0].old_first, 3);
    assert_eq!(d.old.line(dynamic[0].old_first), "pub fn first() {");
    let fixed = ContextOptions {
        dynamic: false,
        ..ContextOptions::default()
    };
    assert_eq!(extend(d, Language::Rust, fixed)[0].old_first, 4);
}

#[test]
fn line_numbered_hunks_number_the_new_side_and_show_the_old_side_only_for_removals() {
    let r = TempRepo::empty();
    r.write("a.txt", "one\ntwo\nthree\nfour\n");
    r.write("b.txt", "alpha\nbeta\n");
    r.commit("base");
    r.branch("feature");
    r.write("a.txt", "one\n2\nthree\nfour\n");
    r.write("b.txt", "alpha\nbeta\ngamma\n");
    r.commit("edit");
    let changes = changes(&r);
    let mut opts = options(128_000);
    opts.line_numbers = true;
    let plan = plan(&changes, &counter(), &opts).unwrap();
    let msg = user(&plan, 0);
    assert!(
        msg.contains(
            "## File: 'a.txt'\n\n@@ -1,4 +1,4 @@\n__new hunk__\n1  one\n2 +2\n3  three\n4  four\n\
             __old hunk__\n one\n-two\n three\n four\n"
        ),
        "{msg}"
    );
    assert!(
        msg.contains(
            "## File: 'b.txt'\n\n@@ -1,2 +1,3 @@\n__new hunk__\n1  alpha\n2  beta\n3 +gamma\n"
        ),
        "{msg}"
    );
    assert!(!msg.split_once("b.txt").unwrap().1.contains("__old hunk__"));
    assert!(plan.calls[0].messages[0].content.contains("__new hunk__"));
}

/// A branch that changes 48 source files in three languages plus docs, lockfiles,
/// deletions and a removal-only edit: far too big for small budgets.
fn big_repo() -> TempRepo {
    let r = TempRepo::empty();
    let langs = [("py", 20), ("rs", 14), ("js", 8)];
    for (lang, n) in langs {
        for i in 0..n {
            r.write(
                &format!("{lang}/file_{i}.{lang}"),
                source(lang, &format!("f{i}"), 4 + i % 6),
            );
        }
    }
    for i in 0..6 {
        r.write(&format!("docs/page_{i}.md"), numbered("paragraph", 40 + i));
    }
    r.write("Cargo.lock", numbered("checksum = \"abc\"", 200));
    r.write("legacy/old.py", numbered("OLD_SETTING =", 30));
    r.write("legacy/trim.rs", source("rs", "trim", 4));
    r.commit("base");
    r.branch("feature");
    for (lang, n) in langs {
        for i in 0..n {
            let path = format!("{lang}/file_{i}.{lang}");
            r.write(
                &path,
                edit(&source(lang, &format!("f{i}"), 4 + i % 6), "changed"),
            );
        }
    }
    for i in 0..6 {
        r.write(
            &format!("docs/page_{i}.md"),
            edit(&numbered("paragraph", 40 + i), "doc"),
        );
    }
    r.write(
        "Cargo.lock",
        edit(&numbered("checksum = \"abc\"", 200), "bump"),
    );
    r.write("py/new_module.py", source("py", "fresh", 10));
    r.write("docs/one_line.md", "a single line\n");
    r.remove("legacy/old.py");
    let trimmed: String = source("rs", "trim", 4)
        .lines()
        .skip(11)
        .map(|l| format!("{l}\n"))
        .collect();
    r.write("legacy/trim.rs", trimmed);
    r.commit("big change");
    r
}

#[test]
fn a_big_diff_is_compressed_within_every_budget() {
    let r = big_repo();
    let changes = changes(&r);
    let mut included_before = 0;
    for budget in [2_000, 4_000, 8_000, 16_000, 32_000, 64_000] {
        let plan = plan(&changes, &counter(), &options(budget)).unwrap();
        assert_eq!(plan.mode, PlanMode::Compressed, "{budget}");
        assert_eq!(plan.calls.len(), 1);
        let tokens = recount(&plan, 0);
        assert_eq!(tokens, plan.calls[0].tokens, "{budget}");
        assert!(tokens <= budget - OUTPUT_BUFFER_HARD, "{budget}: {tokens}");
        let msg = user(&plan, 0);
        assert!(msg.contains("compressed"));
        // Whole files only: every included file's compressed section is in the message.
        for f in plan.included() {
            let change = changes.files.iter().find(|c| c.path == f.path).unwrap();
            let Body::Text(d) = &change.body else {
                panic!()
            };
            assert!(
                msg.contains(&section(change, d, &d.adding_hunks(), false)),
                "{}",
                f.path
            );
        }
        let included = plan.included().count();
        assert!(
            included >= included_before,
            "{budget}: {included} < {included_before}"
        );
        included_before = included;
        // Lists name left-out files, or end clipped.
        let budget_omitted: Vec<_> = plan
            .omitted()
            .filter(|(_, r)| *r == OmitReason::Budget)
            .collect();
        if let Some((f, _)) = budget_omitted.first() {
            assert!(
                msg.contains(&format!("- {}\n", f.path)) || msg.contains(TRUNCATED),
                "{budget}"
            );
        }
    }
    assert!(
        included_before >= 25,
        "64k should hold most files: {included_before}"
    );
}

#[test]
fn compression_drops_removal_only_hunks_and_lists_deleted_files_and_lockfiles() {
    let r = big_repo();
    let changes = changes(&r);
    let plan = plan(&changes, &counter(), &options(64_000)).unwrap();
    let msg = user(&plan, 0);
    assert_eq!(
        outcome(&plan, "legacy/old.py"),
        Outcome::Omitted {
            reason: OmitReason::Deleted
        }
    );
    assert_eq!(
        outcome(&plan, "legacy/trim.rs"),
        Outcome::Omitted {
            reason: OmitReason::OnlyRemovals
        }
    );
    assert_eq!(
        outcome(&plan, "Cargo.lock"),
        Outcome::Omitted {
            reason: OmitReason::Lockfile
        }
    );
    assert!(msg.contains("Deleted files:\n- legacy/old.py\n"), "{msg}");
    assert!(msg.contains("- legacy/trim.rs (only removals)\n"));
    assert!(msg.contains("- Cargo.lock (lockfile)\n"));
    assert!(!msg.contains("## File: 'Cargo.lock'"));
    assert!(!msg.contains("## File: 'legacy/"));
    // The lists come in the order added, modified, deleted.
    let modified = msg.find("Modified files not shown:").unwrap();
    assert!(modified < msg.find("Deleted files:").unwrap());
    if let Some(added) = msg.find("Added files not shown:") {
        assert!(added < modified);
    }
}

#[test]
fn a_file_with_removal_only_and_other_hunks_keeps_only_the_others_when_compressed() {
    let r = TempRepo::empty();
    let base = numbered("entry", 60);
    r.write("list.txt", &base);
    r.write("pad.txt", numbered("padding line with some words", 1500));
    r.commit("base");
    r.branch("feature");
    let edited = base
        .replace("entry 10\nentry 11\nentry 12\n", "")
        .replace("entry 50\n", "entry fifty\n");
    r.write("list.txt", edited);
    r.write(
        "pad.txt",
        edit(&numbered("padding line with some words", 1500), "x"),
    );
    r.commit("edit");
    let changes = changes(&r);
    let extended = plan(&changes, &counter(), &options(128_000)).unwrap();
    assert!(user(&extended, 0).contains("-entry 11\n"));
    let compressed = plan(&changes, &counter(), &options(8_000)).unwrap();
    assert_eq!(compressed.mode, PlanMode::Compressed);
    let msg = user(&compressed, 0);
    assert!(msg.contains("+entry fifty\n"), "{msg}");
    assert!(!msg.contains("-entry 11\n"));
}

#[test]
fn files_are_ordered_by_language_then_by_size() {
    let r = big_repo();
    let changes = changes(&r);
    let plan = plan(&changes, &counter(), &options(1_000))
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(plan, ReviewError::BudgetTooSmall { .. }));
    let plan = tern::branch_review::plan(&changes, &counter(), &options(48_000)).unwrap();
    // Python has the most changed files (22 with the new and the deleted module), then Rust (15), then
    // JavaScript (8); docs and lockfiles are "other" and come last.
    let langs: Vec<Language> = plan.files.iter().map(|f| f.language).collect();
    let mut seen = Vec::new();
    for l in &langs {
        if seen.last() != Some(l) {
            assert!(!seen.contains(l), "language {l:?} split: {langs:?}");
            seen.push(*l);
        }
    }
    assert_eq!(
        seen,
        [
            Language::Python,
            Language::Rust,
            Language::JavaScript,
            Language::Other
        ]
    );
    for pair in plan.files.windows(2) {
        if pair[0].language == pair[1].language && pair[1].tokens > 0 {
            assert!(
                pair[0].tokens >= pair[1].tokens,
                "{} before {}",
                pair[0].path,
                pair[1].path
            );
        }
    }
    let msg = user(&plan, 0);
    let shown: Vec<usize> = plan.calls[0]
        .files
        .iter()
        .map(|p| msg.find(&format!("## File: '{p}'")).unwrap())
        .collect();
    assert!(shown.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn multi_call_chunks_each_fit_and_cover_distinct_files() {
    let r = big_repo();
    let changes = changes(&r);
    let budget = 8_000;
    let single = plan(&changes, &counter(), &options(budget)).unwrap();
    let mut opts = options(budget);
    opts.max_calls = 4;
    let multi = plan(&changes, &counter(), &opts).unwrap();
    assert!(
        multi.calls.len() > 1 && multi.calls.len() <= 4,
        "{}",
        multi.calls.len()
    );
    assert!(multi.included().count() > single.included().count());
    let mut all = Vec::new();
    for (i, call) in multi.calls.iter().enumerate() {
        assert_eq!(recount(&multi, i), call.tokens);
        assert!(
            call.tokens <= budget - OUTPUT_BUFFER_HARD,
            "call {i}: {}",
            call.tokens
        );
        assert!(!call.files.is_empty());
        assert!(user(&multi, i).contains(&format!(
            "This is part {} of {}",
            i + 1,
            multi.calls.len()
        )));
        for p in &call.files {
            assert_eq!(outcome(&multi, p), Outcome::Included { call: i });
        }
        all.extend(call.files.iter().cloned());
    }
    let total = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), total, "a file in two calls");
    // Every call starts with the same system prompt, so a prefix cache can serve it.
    assert!(
        multi
            .calls
            .iter()
            .all(|c| c.messages[0] == multi.calls[0].messages[0])
    );
}

#[test]
fn renames_are_detected_with_and_without_edits() {
    let r = TempRepo::empty();
    r.write("src/old_name.rs", source("rs", "moved", 6));
    r.write("src/same.rs", source("rs", "same", 6));
    r.commit("base");
    r.branch("feature");
    r.rename("src/old_name.rs", "src/new_name.rs");
    let edited = source("rs", "moved", 6).replace("v0 + v1 * v2 - v3", "v0 * v1");
    r.write("src/new_name.rs", edited);
    r.rename("src/same.rs", "src/moved_same.rs");
    r.commit("rename");
    let changes = changes(&r);
    let renamed = changes
        .files
        .iter()
        .find(|f| f.path == "src/new_name.rs")
        .unwrap();
    assert_eq!(renamed.status, FileStatus::Renamed);
    assert_eq!(renamed.old_path.as_deref(), Some("src/old_name.rs"));
    let plan = plan(&changes, &counter(), &options(128_000)).unwrap();
    let msg = user(&plan, 0);
    assert!(msg.contains("## File: 'src/new_name.rs' (renamed from 'src/old_name.rs')\n"));
    assert!(msg.contains("+    v0 * v1\n"));
    assert_eq!(
        outcome(&plan, "src/moved_same.rs"),
        Outcome::Omitted {
            reason: OmitReason::Unchanged
        }
    );
    assert!(msg.contains(
        "Modified files not shown:\n- src/moved_same.rs (renamed from 'src/same.rs', content unchanged)\n"
    ));
}

#[test]
fn binary_files_are_listed_not_diffed() {
    let r = TempRepo::empty();
    r.write("logo.dat", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".as_slice());
    r.write("a.txt", "a\n");
    r.commit("base");
    r.branch("feature");
    r.write(
        "logo.dat",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\x01".as_slice(),
    );
    r.write("icon.bin", b"\0\x01\x02".as_slice());
    r.write("a.txt", "b\n");
    r.commit("images");
    let changes = changes(&r);
    let logo = changes.files.iter().find(|f| f.path == "logo.dat").unwrap();
    assert!(matches!(logo.body, Body::Binary));
    let plan = plan(&changes, &counter(), &options(128_000)).unwrap();
    assert_eq!(plan.mode, PlanMode::Extended);
    let msg = user(&plan, 0);
    assert!(!msg.contains("## File: 'logo.dat'"));
    assert!(
        msg.contains("Added files not shown:\n- icon.bin (binary)\n"),
        "{msg}"
    );
    assert!(
        msg.contains("Modified files not shown:\n- logo.dat (binary)\n"),
        "{msg}"
    );
    assert!(msg.contains("## File: 'a.txt'"));
}

#[test]
fn the_worktree_source_sees_staged_unstaged_and_untracked_changes() {
    let r = TempRepo::empty();
    r.write("tracked.txt", "one\n");
    r.write("staged.txt", "s\n");
    r.commit("base");
    r.write("staged.txt", "s2\n");
    r.stage_all();
    r.write("tracked.txt", "one\ntwo\n");
    r.write("dir/untracked.txt", "new\n");
    let changes = collect(&r.repo, &DiffSource::Worktree).unwrap();
    let mut seen: Vec<(&str, FileStatus)> = changes
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect();
    seen.sort_by_key(|(p, _)| *p);
    assert_eq!(
        seen,
        [
            ("dir/untracked.txt", FileStatus::Added),
            ("staged.txt", FileStatus::Modified),
            ("tracked.txt", FileStatus::Modified),
        ]
    );
    assert!(changes.description.contains("uncommitted"));
}

#[test]
fn an_empty_diff_gives_a_clear_message() {
    let r = TempRepo::empty();
    r.write("a.txt", "a\n");
    r.commit("base");
    r.branch("feature");
    let err = collect(&r.repo, &DiffSource::Branch { base: None }).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ReviewError::Empty(_)));
    assert!(text.starts_with("nothing to review"), "{text}");
    assert!(text.contains("no commits of its own"), "{text}");
    let err = collect(&r.repo, &DiffSource::Worktree).unwrap_err();
    assert!(err.to_string().contains("no uncommitted changes"), "{err}");
}

#[test]
fn the_base_defaults_to_upstream_then_main_then_master() {
    // master only.
    let r = TempRepo::empty();
    r.write("a.txt", "a\n");
    r.commit("base");
    r.repo
        .branch(
            "master",
            &r.repo.head().unwrap().peel_to_commit().unwrap(),
            false,
        )
        .unwrap();
    r.branch("feature");
    // `main` still exists (initial head), so rename it away to leave only master.
    r.repo
        .find_branch("main", git2::BranchType::Local)
        .unwrap()
        .delete()
        .unwrap();
    r.write("a.txt", "b\n");
    r.commit("edit");
    let changes = changes(&r);
    assert!(
        changes.description.contains("merge base with `master`"),
        "{}",
        changes.description
    );

    // An upstream wins over master.
    let mut feature = r
        .repo
        .find_branch("feature", git2::BranchType::Local)
        .unwrap();
    r.repo
        .branch(
            "trunk",
            &r.repo.head().unwrap().peel_to_commit().unwrap(),
            false,
        )
        .unwrap();
    feature.set_upstream(Some("trunk")).unwrap();
    let err = collect(&r.repo, &DiffSource::Branch { base: None }).unwrap_err();
    assert!(err.to_string().contains("`trunk`"), "{err}");

    // No upstream, no main, no master: a clear error.
    feature.set_upstream(None).unwrap();
    r.repo
        .find_branch("master", git2::BranchType::Local)
        .unwrap()
        .delete()
        .unwrap();
    let err = collect(&r.repo, &DiffSource::Branch { base: None }).unwrap_err();
    assert!(matches!(err, ReviewError::NoBase), "{err}");

    let err = collect(
        &r.repo,
        &DiffSource::Branch {
            base: Some("no-such-ref".into()),
        },
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot use `no-such-ref` as the base"),
        "{err}"
    );
}

#[test]
fn a_repository_without_commits_has_no_branch_to_review_but_a_work_tree() {
    let r = TempRepo::empty();
    r.write("first.rs", "fn main() {}\n");
    let err = collect(&r.repo, &DiffSource::Branch { base: None }).unwrap_err();
    assert!(matches!(err, ReviewError::NoCommits));
    let changes = collect(&r.repo, &DiffSource::Worktree).unwrap();
    assert_eq!(changes.files.len(), 1);
    assert_eq!(changes.files[0].status, FileStatus::Added);
}

#[test]
fn hunks_match_the_git_command_line() {
    let r = big_repo();
    let changes = changes(&r);
    let git = |args: &[&str]| {
        crate::support::command("git")
            .args(args)
            .current_dir(r.path())
            .output()
    };
    let Ok(version) = git(&["--version"]) else {
        eprintln!("git is not installed: hunks not compared with it");
        return;
    };
    assert!(version.status.success());
    let mut compared = 0;
    for f in &changes.files {
        let Body::Text(d) = &f.body else { continue };
        let out = git(&[
            "diff",
            "--no-color",
            "--no-renames",
            "-U3",
            "main",
            "feature",
            "--",
            &f.path,
        ])
        .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let from_git = format!("@@{}", text.split_once("\n@@").unwrap().1);
        let ours = section(f, d, &d.hunks, false);
        let ours = format!("@@{}", ours.split_once("\n@@").unwrap().1);
        assert_eq!(ours, from_git, "{}", f.path);
        compared += 1;
    }
    assert!(compared > 40);
}
