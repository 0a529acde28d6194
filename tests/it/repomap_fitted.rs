//! The last fitted map, reused by a new process when nothing it is made of changed, and
//! fitted again after any change to it: against real temporary repositories, each
//! fitted map compared with the map of a tern that keeps no cache at all.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::repomap::{NONE, Repo, counter};
use tern::repomap::{CacheLocation, MapResult, RepoMap};
use tern::tokens::{Encoding, TokenCounter};

/// Waits out the window in which a file's stat data proves nothing (50 ms here), so the
/// files just written are proven by it in the next run.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(200));
}

/// A new process's map: opened with the repository's cache, refreshed, built.
fn run(repo: &Repo, chat: &[&str], budget: usize) -> MapResult {
    repo.map().build(chat, &NONE, &NONE, budget)
}

/// The map of a tern without any cache.
fn uncached(root: &Path, chat: &[&str], budget: usize) -> MapResult {
    let mut map = RepoMap::open(root, counter(), CacheLocation::Disabled).unwrap();
    map.refresh(&|_| {});
    map.build(chat, &NONE, &NONE, budget)
}

/// Everything a map result says, but its timings.
fn said(r: &MapResult) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        r.text.clone(),
        r.tokens,
        r.budget,
        r.ranked_files.clone(),
        r.left_out.clone(),
        (r.shown_defs, r.shown_files, r.collapsed, r.collapsed_files),
        r.important.clone(),
    )
}

/// A change to a repository, applied between two runs.
type Change = dyn Fn(&Repo);

fn project() -> Repo {
    let repo = Repo::from_fixture("project");
    settle();
    repo
}

#[test]
fn an_unchanged_repository_reuses_the_last_map_and_explains_it() {
    let repo = project();
    let first = run(&repo, &NONE, 1024);
    assert!(!first.reused);
    let second = run(&repo, &NONE, 1024);
    assert!(second.reused);
    assert_eq!(said(&second), said(&first));
    assert_eq!(said(&second), said(&uncached(repo.path(), &NONE, 1024)));
    // Why a file is in the map needs the ranking the reused map did not make.
    let why = second.why("src/store.rs", 5);
    assert!(!why.is_empty());
    assert_eq!(why, first.why("src/store.rs", 5));
}

#[test]
fn other_inputs_miss_the_last_map() {
    let repo = project();
    run(&repo, &NONE, 1024);
    assert!(run(&repo, &NONE, 1024).reused);
    let chat = ["src/cli.rs"];
    let with_chat = run(&repo, &chat, 1024);
    assert!(!with_chat.reused);
    assert_eq!(said(&with_chat), said(&uncached(repo.path(), &chat, 1024)));
    assert!(run(&repo, &chat, 1024).reused);
    // Another chat file set, budget, mention or way of counting.
    assert!(!run(&repo, &["src/server.rs"], 1024).reused);
    assert!(!run(&repo, &["src/server.rs"], 512).reused);
    let mentioned = repo
        .map()
        .build(&["src/server.rs"], &NONE, &["format_bytes"], 512);
    assert!(!mentioned.reused);
    let mentioned = repo
        .map()
        .build(&["src/server.rs"], &["src/util.rs"], &["format_bytes"], 512);
    assert!(!mentioned.reused);
    let other_counter = RepoMap::open(
        repo.path(),
        TokenCounter::new(Encoding::Cl100kBase, false),
        CacheLocation::Dir(repo.cache.path().to_path_buf()),
    )
    .map(|mut map| {
        map.refresh(&|_| {});
        map.build(&["src/server.rs"], &["src/util.rs"], &["format_bytes"], 512)
    })
    .unwrap();
    assert!(!other_counter.reused);
}

#[test]
fn every_change_to_the_file_set_misses_the_last_map() {
    let repo = project();
    let changes: [(&str, &Change); 9] = [
        ("an edited file", &|r| {
            r.write(
                "src/util.rs",
                "pub fn format_bytes(bytes: &[u8]) -> String {\n    String::new()\n}\n\npub fn added_helper() {}\n",
            )
        }),
        ("an edit of the same size", &|r| {
            let text = r
                .read("src/util.rs")
                .replace("added_helper", "other_helper");
            r.write("src/util.rs", text)
        }),
        ("a new untracked file", &|r| {
            r.write(
                "src/extra.rs",
                "pub fn extra_thing() { format_bytes(&[]); }\n",
            )
        }),
        // (An ignore file is not in the set: hidden files are not walked.)
        ("a new .gitignore", &|r| {
            r.write(".gitignore", "src/extra.rs\n")
        }),
        ("a changed .gitignore", &|r| {
            r.write(".gitignore", "*.tmp\n")
        }),
        ("a changed .gitattributes", &|r| {
            r.write(".gitattributes", "src/util.rs linguist-generated\n");
            r.commit("attributes");
        }),
        // Outside the file set: only what it leaves out changes.
        ("changed info/attributes", &|r| {
            r.write(".git/info/attributes", "src/server.rs linguist-vendored\n")
        }),
        ("a renamed directory", &|r| r.rename("scripts", "tools")),
        // Where it sorts, the file set's contents in the same order.
        ("a renamed file", &|r| {
            r.rename("src/store.rs", "src/store2.rs")
        }),
    ];
    run(&repo, &NONE, 4096);
    for (what, change) in changes {
        assert!(run(&repo, &NONE, 4096).reused, "before {what}");
        change(&repo);
        settle();
        let after = run(&repo, &NONE, 4096);
        assert!(!after.reused, "{what}");
        assert_eq!(
            said(&after),
            said(&uncached(repo.path(), &NONE, 4096)),
            "{what}"
        );
    }
    let last = run(&repo, &NONE, 4096);
    assert!(last.text.contains("tools/seed.py"), "{}", last.text);
    assert!(!last.text.contains("src/util.rs"), "{}", last.text);
    assert!(!last.text.contains("src/server.rs"), "{}", last.text);
    assert!(last.text.contains("src/store2.rs"), "{}", last.text);
}

#[test]
fn a_file_changed_after_the_refresh_is_read_again_not_served_from_the_last_map() {
    let repo = project();
    let map = repo.map();
    let before = map.build(&NONE, &NONE, &NONE, 4096);
    assert!(before.text.contains("src/util.rs:\n"));
    assert!(map.build(&NONE, &NONE, &NONE, 4096).reused);
    // Changed on disk, not yet refreshed: shown as a bare path, and not kept.
    repo.write("src/util.rs", "// rewritten\n");
    let after = map.build(&NONE, &NONE, &NONE, 4096);
    assert!(!after.reused);
    assert!(after.text.contains("src/util.rs\n"), "{}", after.text);
    assert!(!map.build(&NONE, &NONE, &NONE, 4096).reused);
}

#[test]
fn a_damaged_or_foreign_fitted_map_is_fitted_again() {
    let repo = project();
    let first = run(&repo, &NONE, 1024);
    let checkouts = repo.cache.path().join("checkouts");
    let fitted = crate::repomap::only_file(&checkouts, "fitted");
    let snapshot = crate::repomap::only_file(&checkouts, "snap");
    let good = std::fs::read(&fitted).unwrap();
    let damaged: [Vec<u8>; 5] = [
        good[..good.len() / 2].to_vec(),
        {
            let mut v = good.clone();
            let middle = v.len() / 2;
            v[middle] ^= 0x5a;
            v
        },
        b"garbage".to_vec(),
        Vec::new(),
        std::fs::read(&snapshot).unwrap(),
    ];
    for bytes in damaged {
        std::fs::write(&fitted, &bytes).unwrap();
        let again = run(&repo, &NONE, 1024);
        assert!(!again.reused);
        assert_eq!(said(&again), said(&first));
        assert!(run(&repo, &NONE, 1024).reused);
    }
}
