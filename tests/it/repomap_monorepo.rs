//! The repo map of a monorepo: important files by their package's rank, noise left
//! out, many files of one kind collapsed (real temporary repositories, real grammars).

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::repomap::{NONE, Repo, counter};

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
