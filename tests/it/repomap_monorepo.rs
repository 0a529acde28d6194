//! The repo map of a monorepo: important files by their package's rank, noise left
//! out, many files of one kind collapsed (real temporary repositories, real grammars).

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::repomap::{NONE, Repo, counter};
use tern::repomap::MapResult;

/// The paths (and collapsed lines) of the ranked list, best first.
fn ranked(result: &MapResult) -> Vec<&str> {
    result
        .ranked_files
        .iter()
        .map(|(p, _)| p.as_str())
        .collect()
}

/// `tern map --stats` in the repository: its map and its stats.
fn tern_map_stats(repo: &Repo) -> (String, String) {
    let out = crate::support::command(env!("CARGO_BIN_EXE_tern"))
        .args(["map", "--stats"])
        .current_dir(repo.path())
        .env("XDG_CACHE_HOME", repo.cache.path())
        .env("HOME", repo.cache.path())
        .env_remove("TERN_MODEL")
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

/// Four crates, no README at the root: `app` calls into `beta` only.
fn crates() -> Repo {
    let repo = Repo::empty();
    for name in ["alpha", "beta", "zeta", "app"] {
        let dir = if name == "app" {
            "app".to_string()
        } else {
            format!("crates/{name}")
        };
        repo.write(
            &format!("{dir}/Cargo.toml"),
            format!("[package]\nname = \"{name}\"\n"),
        );
        repo.write(&format!("{dir}/README.md"), format!("# {name}\n"));
        repo.write(&format!("{dir}/LICENSE-MIT"), "MIT\n");
        repo.write(&format!("{dir}/CHANGELOG.md"), "# 1.0\n");
    }
    repo.write(
        "crates/alpha/src/lib.rs",
        "pub fn alpha_lonely_function() {}\n",
    );
    repo.write(
        "crates/zeta/src/lib.rs",
        "pub fn zeta_lonely_function() {}\n",
    );
    repo.write(
        "crates/beta/src/lib.rs",
        "pub fn beta_shared_helper() {}\npub struct BetaConfiguration;\n",
    );
    repo.write(
        "crates/beta/src/more.rs",
        "pub fn beta_second_helper() {}\n",
    );
    repo.write(
        "app/src/main.rs",
        "fn main() {\n    beta_shared_helper();\n    beta_second_helper();\n    let _c = BetaConfiguration;\n}\n",
    );
    repo.write(
        "tools/src/lib.rs",
        "pub fn tools_helper() { beta_shared_helper(); beta_second_helper(); }\n",
    );
    repo.write("tools/Cargo.toml", "[package]\nname = \"tools\"\n");
    repo.commit("crates");
    repo
}

#[test]
fn important_files_follow_their_packages_rank_and_licences_stay_at_the_root() {
    let repo = crates();
    let map = repo.map();
    // `beta` is what the other crates use: its files come first (no chat files).
    let result = map.build(&NONE, &NONE, &NONE, 4096);
    assert_eq!(
        result.important[..2],
        ["crates/beta/README.md", "crates/beta/Cargo.toml"],
        "{:?}",
        result.important
    );
    assert!(
        result
            .text
            .starts_with("crates/beta/README.md\ncrates/beta/Cargo.toml\n"),
        "{}",
        result.text
    );
    // A package's licence and changelog say what the root's would: never listed.
    assert!(
        !result
            .important
            .iter()
            .any(|p| p.ends_with("LICENSE-MIT") || p.ends_with("CHANGELOG.md")),
        "{:?}",
        result.important
    );
    // The chat file's package comes first, then the package it uses.
    let result = map.build(&["tools/src/lib.rs"], &NONE, &NONE, 4096);
    assert_eq!(
        result.important[..3],
        [
            "tools/Cargo.toml",
            "crates/beta/README.md",
            "crates/beta/Cargo.toml"
        ],
        "{:?}",
        result.important
    );
    // At the root, they are listed.
    repo.write("LICENSE", "MIT\n");
    repo.write("CHANGELOG.md", "# 2.0\n");
    repo.commit("root docs");
    let result = repo.map().build(&NONE, &NONE, &NONE, 4096);
    assert_eq!(result.important[..2], ["LICENSE", "CHANGELOG.md"]);
    assert_eq!(result.tokens, counter().count(&result.text));
}

/// Source, with noise of every kind beside it.
fn noisy() -> Repo {
    let repo = Repo::empty();
    repo.write(
        "app/main.py",
        "from lib.store import open_store\nopen_store()\n",
    );
    repo.write("lib/store.py", "def open_store():\n    pass\n");
    repo.write("web/dist/app.min.js", "function minifiedByName(){}\n");
    repo.write("web/dist/app.js.map", "{\"version\":3}\n");
    let bundle = format!("function bundledHelper(){{{}}}\n", "var a=1;".repeat(300));
    repo.write("web/dist/bundle.js", bundle);
    repo.write("Cargo.lock", "# lock\n");
    repo.write("web/package-lock.json", "{}\n");
    repo.write("generated/api.py", "def generated_endpoint():\n    pass\n");
    repo.write(
        "third_party/vendored.py",
        "def vendored_helper():\n    pass\n",
    );
    repo.write("third_party/ours.py", "def our_helper():\n    pass\n");
    repo.write(
        ".gitattributes",
        "generated/** linguist-generated\nthird_party/** linguist-vendored=true\nthird_party/ours.py -linguist-vendored\n",
    );
    repo.write("config/settings.yaml", "key: value\n");
    repo.commit("noise");
    repo
}

#[test]
fn generated_minified_and_vendored_files_are_left_out_unless_the_chat_names_them() {
    let repo = noisy();
    let map = repo.map();
    let result = map.build(&NONE, &NONE, &NONE, 4096);
    let ranked = ranked(&result);
    for noise in [
        "web/dist/app.min.js",
        "web/dist/app.js.map",
        "web/dist/bundle.js",
        "Cargo.lock",
        "web/package-lock.json",
        "generated/api.py",
        "third_party/vendored.py",
    ] {
        assert!(!ranked.contains(&noise), "{noise} in {ranked:?}");
        assert!(!result.text.contains(noise), "{noise} in {}", result.text);
    }
    for kept in [
        "lib/store.py",
        "third_party/ours.py",
        "config/settings.yaml",
    ] {
        assert!(ranked.contains(&kept), "{kept} not in {ranked:?}");
    }
    assert_eq!(
        result.left_out,
        [
            ("lockfiles", 2),
            ("minified (.min.*)", 1),
            ("source maps", 1),
            ("long lines (minified or generated)", 1),
            ("linguist-generated", 1),
            ("linguist-vendored", 1),
        ]
    );
    // Named by the chat, a generated file is in the map after all.
    let result = map.build(&["app/main.py"], &["generated/api.py"], &NONE, 4096);
    assert!(
        result
            .text
            .contains("generated/api.py:\n│def generated_endpoint():"),
        "{}",
        result.text
    );
    assert!(
        !result
            .left_out
            .iter()
            .any(|(r, _)| *r == "linguist-generated")
    );

    // `tern map --stats` says what it left out and why.
    let (_, stderr) = tern_map_stats(&repo);
    assert!(
        stderr.contains(
            "left out: 2 lockfiles, 1 minified (.min.*), 1 source maps, 1 long lines (minified or generated), 1 linguist-generated, 1 linguist-vendored\n"
        ),
        "{stderr}"
    );
}

#[test]
fn an_edited_gitattributes_changes_what_is_left_out() {
    let repo = noisy();
    let mut map = repo.map();
    repo.write(".gitattributes", "third_party/** linguist-vendored\n");
    // libgit2 reads the index's `.gitattributes` beside the work tree's: a rule is gone
    // once the edit is staged.
    repo.commit("attributes");
    map.refresh_files(&[".gitattributes".to_string()]);
    let result = map.build(&NONE, &NONE, &NONE, 4096);
    let listed = ranked(&result);
    assert!(listed.contains(&"generated/api.py"), "{listed:?}");
    assert!(!listed.contains(&"third_party/ours.py"), "{listed:?}");
    // A new process, whose snapshot kept the answers, sees the same.
    drop(map);
    let result = repo.map().build(&NONE, &NONE, &NONE, 4096);
    assert_eq!(ranked(&result), listed);
}

#[test]
fn files_without_tags_rank_below_tagged_files_unless_named() {
    let repo = Repo::empty();
    repo.write("src/leaf.py", "def leaf_function():\n    pass\n");
    repo.write("src/other.py", "def other_function():\n    pass\n");
    // JSON: data without tags (YAML's keys are tags now).
    let json: String = (0..200)
        .map(|i| format!("\"key_{i}\": \"value\",\n"))
        .collect();
    repo.write("deploy/values.json", json);
    repo.write("db/schema.sql", "CREATE TABLE t (id INTEGER);\n".repeat(50));
    repo.write("Dockerfile.prod", "FROM scratch\n".repeat(40));
    repo.commit("mixed");
    let map = repo.map();
    let result = map.build(&NONE, &NONE, &NONE, 4096);
    let mut tagged_first = ranked(&result)[..2].to_vec();
    tagged_first.sort();
    assert_eq!(
        tagged_first,
        ["src/leaf.py", "src/other.py"],
        "{:?}",
        result.ranked_files
    );
    // Still in the map by name.
    for untagged in ["deploy/values.json", "db/schema.sql", "Dockerfile.prod"] {
        assert!(
            result.text.lines().any(|l| l == untagged),
            "{untagged}: {}",
            result.text
        );
    }
    // A mentioned one goes up with the tagged files.
    let result = map.build(&NONE, &["db/schema.sql"], &NONE, 4096);
    assert_eq!(ranked(&result)[0], "db/schema.sql");
}

#[test]
fn many_files_of_one_kind_in_one_tree_collapse_into_one_line() {
    let repo = Repo::empty();
    repo.write(
        "app/main.py",
        "from app.util import helper_function\nhelper_function()\n",
    );
    repo.write("app/util.py", "def helper_function():\n    pass\n");
    for lang in 0..36 {
        repo.write(
            &format!("locale/l{lang:02}/LC_MESSAGES/app.po"),
            "msgid \"a\"\nmsgstr \"b\"\n",
        );
    }
    for i in 0..3 {
        repo.write(&format!("config/c{i}.ini"), "key = value\n");
    }
    repo.commit("locales");
    let map = repo.map();
    let result = map.build(&NONE, &NONE, &NONE, 4096);
    assert!(
        result
            .text
            .lines()
            .any(|l| l == "locale/**/*.po (36 files)"),
        "{}",
        result.text
    );
    assert!(!result.text.contains("LC_MESSAGES"), "{}", result.text);
    // A few of a kind stay listed.
    assert!(result.text.contains("config/c0.ini\n"), "{}", result.text);
    let ranked = ranked(&result);
    assert!(ranked.contains(&"locale/**/*.po (36 files)"), "{ranked:?}");
    assert_eq!(ranked.len(), 2 + 1 + 3, "{ranked:?}");
    assert_eq!((result.collapsed, result.collapsed_files), (1, 36));
    assert_eq!(result.tokens, counter().count(&result.text));
    // Byte for byte the same the next time.
    assert_eq!(map.build(&NONE, &NONE, &NONE, 4096).text, result.text);
    // A mentioned catalog is listed on its own.
    let result = map.build(&NONE, &["locale/l07/LC_MESSAGES/app.po"], &NONE, 4096);
    assert!(
        result.text.contains("locale/l07/LC_MESSAGES/app.po\n")
            && result.text.contains("locale/**/*.po (35 files)\n"),
        "{}",
        result.text
    );

    let (stdout, stderr) = tern_map_stats(&repo);
    assert!(
        stderr.contains("collapsed: 36 files into 1 line\n"),
        "{stderr}"
    );
    assert!(stdout.contains("locale/**/*.po (36 files)\n"), "{stdout}");
}
