//! Repo map tests against real temporary git repositories, the real tree-sitter grammars
//! and the real tokenizer.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::support::TempRepo;
use tern::repomap::{CacheLocation, MapResult, RepoMap, default_budget};
use tern::tokens::{Encoding, TokenCounter};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/repomap");

/// A temporary repository plus a separate temporary cache dir.
pub(crate) struct Repo {
    repo: TempRepo,
    pub(crate) cache: tempfile::TempDir,
}

impl std::ops::Deref for Repo {
    type Target = TempRepo;

    fn deref(&self) -> &TempRepo {
        &self.repo
    }
}

impl Repo {
    pub(crate) fn empty() -> Repo {
        Repo {
            repo: TempRepo::empty(),
            cache: tempfile::tempdir().unwrap(),
        }
    }

    /// A repository holding a copy of `fixture`, committed.
    pub(crate) fn from_fixture(fixture: &str) -> Repo {
        let repo = Repo::empty();
        copy_dir(&Path::new(FIXTURES).join(fixture), repo.path());
        repo.commit("fixture");
        repo
    }

    pub(crate) fn open(&self) -> RepoMap {
        RepoMap::open(
            self.path(),
            counter(),
            CacheLocation::Dir(self.cache.path().to_path_buf()),
        )
        .unwrap()
    }

    /// Opens and refreshes.
    pub(crate) fn map(&self) -> RepoMap {
        let mut map = self.open();
        map.refresh(&|_| {});
        map
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub(crate) fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase, false)
}

pub(crate) const NONE: [&str; 0] = [];

fn plain(map: &RepoMap, budget: usize) -> MapResult {
    map.build(&NONE, &NONE, &NONE, budget)
}

fn score(result: &MapResult, path: &str) -> f64 {
    result
        .ranked_files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} not ranked"))
        .1
}

#[test]
fn every_language_fixture_shows_its_main_definition() {
    let repo = Repo::from_fixture("langs");
    let map = repo.map();
    let text = plain(&map, 8192).text;
    let expected = [
        ("shapes.rs", "pub struct GeometryPoint {"),
        (
            "shapes.rs",
            "    pub fn distance_to(&self, other: &GeometryPoint) -> f64 {",
        ),
        ("inventory.py", "class InventoryLedger:"),
        (
            "inventory.py",
            "    def restock_item(self, name: str, count: int) -> None:",
        ),
        ("cart.js", "export class ShoppingCart {"),
        ("session.ts", "export class UserSession {"),
        ("session.ts", "export interface SessionStore {"),
        (
            "Toolbar.tsx",
            "export function ToolbarButton({ title, onSave }: ToolbarProps) {",
        ),
        ("server.go", "type HealthHandler struct {"),
        (
            "server.go",
            "func NewHealthHandler(version string) *HealthHandler {",
        ),
        ("OrderService.java", "public class OrderService {"),
        (
            "OrderService.java",
            "    public List<Order> pendingOrders() {",
        ),
        ("ringbuf.c", "struct ring_buffer {"),
        (
            "ringbuf.c",
            "int ring_push(struct ring_buffer *rb, int value)",
        ),
        ("matrix.cpp", "class DenseMatrix {"),
        ("billing.rb", "  class InvoiceBuilder"),
        ("billing.rb", "    def add_charge(amount)"),
        (
            "Payments.cs",
            "    public class StripeGateway : IPaymentGateway",
        ),
        ("Payments.cs", "    public interface IPaymentGateway"),
        ("orbits.jl", "struct OrbitalBody <: Body"),
        (
            "orbits.jl",
            "function orbital_period(body::OrbitalBody, star_mass::Float64)",
        ),
        (
            "orbits.jl",
            "escape_velocity(mass, radius) = sqrt(2 * GRAVITATIONAL_CONSTANT * mass / radius)",
        ),
        ("orbits.jl", "const GRAVITATIONAL_CONSTANT = …"),
        ("flake.nix", "  outputs = { self, nixpkgs }:"),
        ("flake.nix", "      mkService = name: port:"),
        ("flake.nix", "  inputs.nixpkgs.url = \"…\";"),
        ("service.toml", "[server]"),
        ("service.toml", "port = 8080"),
        ("service.toml", "url = \"…\""),
        ("service.toml", "[[jobs]]"),
        ("ci.yml", "  test:"),
        ("ci.yml", "      DATABASE_URL: …"),
        ("ci.yml", "        run: …"),
    ];
    for (file, line) in expected {
        let block = block_of(&text, file);
        assert!(
            block.contains(&format!("│{line}\n")),
            "{file} should show {line:?}; its block:\n{block}\nwhole map:\n{text}"
        );
    }
}

/// The lines of `file`'s block in a rendered map: its `path:` line and what follows.
fn block_of(text: &str, file: &str) -> String {
    text.split_inclusive('\n')
        .skip_while(|l| *l != format!("{file}:\n"))
        .take_while(|l| l.starts_with(['│', '⋮']) || *l == format!("{file}:\n"))
        .collect()
}

/// Aider's own per-language fixtures (`tests/fixtures/repomap/aider/`, see its README):
/// each file's block shows, on one of its definition lines, the symbol that aider's
/// `test_language_repo_map` expects of it.
#[test]
fn aider_fixtures_show_the_symbols_aider_expects() {
    let repo = Repo::from_fixture("aider");
    let map = repo.map();
    let text = plain(&map, 32768).text;
    let expected = [
        ("test.c", "main"),
        ("test.cpp", "main"),
        ("test.ino", "setup"),
        ("test.cs", "IGreeter"),
        ("test.go", "Greeter"),
        ("test.java", "Greeting"),
        ("test.js", "Person"),
        ("test.py", "Person"),
        ("test.rb", "greet"),
        ("test.rs", "Person"),
        ("test.ts", "greet"),
        ("test.tsx", "UserProps"),
        ("test.sh", "greet"),
        ("test.php", "greet"),
        ("test.kt", "Greeting"),
        ("test.scala", "Greeter"),
        ("test.swift", "Greeter"),
        ("test.dart", "Person"),
        ("test.lua", "greet"),
        ("test.ex", "Greeter"),
        ("test.hs", "add"),
        ("test.zig", "add"),
        ("test.ml", "Greeter"),
        ("test.mli", "Greeter"),
        ("test.tf", "aws_vpc"),
        ("test.r", "calculate"),
        ("test.elm", "Person"),
        ("test.sol", "SimpleStorage"),
    ];
    for (file, symbol) in expected {
        let block = block_of(&text, file);
        assert!(
            block
                .lines()
                .any(|l| l.starts_with('│') && l.contains(symbol)),
            "{file} should show {symbol:?}; its block:\n{block}\nwhole map:\n{text}"
        );
    }
}

#[test]
fn golden_map_of_the_fixture_project() {
    let repo = Repo::from_fixture("project");
    let map = repo.map();
    let result = map.build(&["src/cli.rs"], &NONE, &NONE, 1024);
    let small = plain(&map, 120);
    insta::with_settings!({ snapshot_path => "../fixtures/repomap/snapshots" }, {
        insta::assert_snapshot!("project_chat_cli", result.text);
        insta::assert_snapshot!("project_120_tokens", small.text);
    });
}

#[test]
fn chat_files_are_left_out_and_personalize_the_rank() {
    let repo = Repo::from_fixture("project");
    let map = repo.map();
    let result = map.build(&["src/store.rs"], &NONE, &NONE, 4096);
    assert!(!result.text.contains("src/store.rs"), "{}", result.text);
    assert!(result.ranked_files.iter().all(|(p, _)| p != "src/store.rs"));
    // Absolute chat paths under the root work too.
    let abs = map.root().join("src/store.rs");
    let result = map.build(&[abs], &NONE, &NONE, 4096);
    assert!(!result.text.contains("src/store.rs"));
}

#[test]
fn a_file_referenced_from_many_outranks_a_leaf() {
    let repo = Repo::from_fixture("project");
    let map = repo.map();
    let result = plain(&map, 4096);
    assert!(score(&result, "src/store.rs") > score(&result, "src/util.rs"));
    assert!(score(&result, "src/store.rs") > score(&result, "src/cli.rs"));
    assert_eq!(result.ranked_files[0].0, "src/store.rs");
    assert!(
        result
            .text
            .contains("src/store.rs:\n⋮\n│pub struct KeyValueStore {\n")
    );
    // The store is there because the others call into it.
    let why = result.why("src/store.rs", 10);
    assert!(!why.is_empty());
    let from: Vec<&str> = why.iter().map(|e| e.from.as_str()).collect();
    assert!(
        from.contains(&"src/server.rs") && from.contains(&"src/cli.rs"),
        "{why:?}"
    );
    assert!(why.windows(2).all(|w| w[0].weight >= w[1].weight));
    assert!(why.iter().any(|e| e.ident == "KeyValueStore"));
    assert!(result.why("no/such/file.rs", 5).is_empty());
}

#[test]
fn mentioning_an_identifier_pulls_its_definer_into_a_small_map() {
    let repo = Repo::from_fixture("project");
    let map = repo.map();
    let budget = 40;
    let before = plain(&map, budget);
    assert!(!before.text.contains("format_bytes"), "{}", before.text);
    let after = map.build(&NONE, &NONE, &["format_bytes"], budget);
    assert!(
        after.text.contains("│pub fn format_bytes"),
        "{}",
        after.text
    );
    assert!(after.tokens <= budget);
    // Mentioning the file works as well.
    let by_file = map.build(&NONE, &["src/util.rs"], &NONE, budget);
    assert!(by_file.text.contains("src/util.rs"), "{}", by_file.text);
}

#[test]
fn mentions_come_from_chat_text() {
    let repo = Repo::from_fixture("project");
    let map = repo.map();
    let m = map
        .mentions("Make format_bytes in util.rs faster, then update README.md and KeyValueStore.");
    assert_eq!(m.files, ["README.md", "src/util.rs"]);
    assert_eq!(m.idents, ["KeyValueStore", "format_bytes"]);
}

#[test]
fn the_budget_is_never_exceeded() {
    // Real code: tern's own sources.
    let repo = Repo::empty();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &repo.path().join("src").tap_create(),
    );
    repo.commit("fixture");
    let map = repo.map();
    let count = counter();
    let whole = map.build(&["src/main.rs"], &NONE, &NONE, 1_000_000).tokens;
    let mut previous = 0;
    for budget in [
        64, 65, 80, 100, 127, 128, 200, 256, 300, 512, 777, 1024, 1500, 2048, 3000, 4096, 6000,
        8192,
    ] {
        let result = map.build(&["src/main.rs"], &NONE, &NONE, budget);
        let real = count.count(&result.text);
        assert_eq!(result.tokens, real);
        assert!(real <= budget, "{real} > {budget}");
        assert!(real >= previous, "a larger budget gave a smaller map");
        previous = real;
        if budget >= 256 && whole > budget {
            assert!(
                real * 10 >= budget * 8,
                "{real} of {budget}: the fit wastes space"
            );
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Any budget from 64 to 8192, any chat file: counted with the real tokenizer, the
    /// map fits.
    #[test]
    fn no_budget_is_ever_exceeded(budget in 64usize..=8192, chat in 0usize..7) {
        let repo = Repo::from_fixture("langs");
        copy_dir(&Path::new(FIXTURES).join("project"), repo.path());
        let map = repo.map();
        let chat_file = map.files()[chat % map.files().len()].clone();
        let result = map.build(&[chat_file], &NONE, &NONE, budget);
        proptest::prop_assert!(result.tokens <= budget);
        proptest::prop_assert_eq!(result.tokens, counter().count(&result.text));
    }
}

trait TapCreate {
    fn tap_create(self) -> Self;
}

impl TapCreate for PathBuf {
    fn tap_create(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn the_cache_is_hit_after_a_restart_and_invalidated_by_an_edit() {
    let repo = Repo::from_fixture("project");
    let mut first = repo.open();
    let cold = first.refresh(&|_| {});
    assert_eq!(cold.parsed, 7);
    assert_eq!(cold.from_cache, 0);
    let text = plain(&first, 1024).text;
    drop(first);

    let mut second = repo.open();
    let warm = second.refresh(&|_| {});
    assert_eq!((warm.parsed, warm.from_cache), (0, 7));
    assert_eq!(plain(&second, 1024).text, text);

    // Edit one file; a new process re-parses only it.
    repo.write(
        "src/util.rs",
        "pub fn format_bytes(bytes: &[u8]) -> String {\n    String::new()\n}\n\npub fn shiny_new_helper() {}\n",
    );
    let mut third = repo.open();
    let after_edit = third.refresh(&|_| {});
    assert_eq!((after_edit.parsed, after_edit.from_cache), (1, 6));
    assert!(plain(&third, 4096).text.contains("shiny_new_helper"));

    // Inside a running process, refresh_files re-parses just the named file.
    repo.write("src/server.rs", "pub fn replaced_server() {}\n");
    let incremental = third.refresh_files(&["src/server.rs".to_string()]);
    assert_eq!((incremental.parsed, incremental.files_seen), (1, 7));
    let text = plain(&third, 4096).text;
    assert!(text.contains("replaced_server") && !text.contains("serve_requests"));
    // Its tags reach the disk cache on save (or drop), not on every edit.
    third.save();
    let restarted = repo.map();
    assert!(plain(&restarted, 4096).text.contains("replaced_server"));
    drop(restarted);
    assert_eq!(repo.open().refresh(&|_| {}).parsed, 0);

    // A deleted file leaves the map.
    std::fs::remove_file(repo.path().join("scripts/seed.py")).unwrap();
    let removed = third.refresh(&|_| {});
    assert_eq!(removed.files_seen, 6);
    assert!(!plain(&third, 4096).text.contains("seed.py"));
}

#[test]
fn a_corrupt_cache_is_rebuilt() {
    let repo = Repo::from_fixture("project");
    repo.map();
    let snapshot = only_file(&repo.cache.path().join("checkouts"), "snap");
    let mut bytes = std::fs::read(&snapshot).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&snapshot, &bytes).unwrap();

    // The snapshot is gone, the shared store still has every file's tags.
    let mut map = repo.open();
    let stats = map.refresh(&|_| {});
    assert_eq!((stats.parsed, stats.from_store), (0, 7));
    assert!(stats.cache_discarded.is_some());
    assert!(plain(&map, 1024).text.contains("KeyValueStore"));
    // And the rewritten snapshot is good again.
    let stats = repo.open().refresh(&|_| {});
    assert_eq!((stats.parsed, stats.from_cache), (0, 7), "{stats:?}");
    assert!(stats.cache_discarded.is_none());

    // A damaged store is a miss: the files are parsed again.
    std::fs::write(&snapshot, b"TERNSNAP").unwrap();
    let segment = only_file(&repo.cache.path().join("store"), "tseg");
    let mut bytes = std::fs::read(&segment).unwrap();
    let end = bytes.len();
    for b in &mut bytes[end - 64..] {
        *b ^= 0x5a;
    }
    std::fs::write(&segment, &bytes).unwrap();
    let mut map = repo.open();
    let stats = map.refresh(&|_| {});
    assert!(
        stats.parsed >= 1 && stats.parsed + stats.from_store == 7,
        "{stats:?}"
    );
    assert!(plain(&map, 1024).text.contains("KeyValueStore"));
}

pub(crate) fn only_file(dir: &Path, extension: &str) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// `git worktree add` through git itself, as a user would.
fn add_worktree(repo: &TempRepo, name: &str) -> tempfile::TempDir {
    let parent = tempfile::tempdir().unwrap();
    let out = crate::support::command("git")
        .args(["worktree", "add", "-q", "-b", name])
        .arg(parent.path().join(name))
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parent
}

fn open_at(root: &Path, cache: &Path) -> RepoMap {
    RepoMap::open(root, counter(), CacheLocation::Dir(cache.to_path_buf())).unwrap()
}

#[test]
fn two_worktrees_parse_each_content_once() {
    let repo = Repo::from_fixture("project");
    let cold = repo.open().refresh(&|_| {});
    assert_eq!(cold.parsed, 7);
    let text = plain(&repo.map(), 1024).text;

    // A new worktree of the same commit finds every file's tags in the shared store.
    let first = add_worktree(&repo, "first");
    let mut map = open_at(&first.path().join("first"), repo.cache.path());
    let stats = map.refresh(&|_| {});
    assert_eq!((stats.parsed, stats.from_store), (0, 7), "{stats:?}");
    assert_eq!(plain(&map, 1024).text, text);

    // Its files were written in the second its index was: their stat data proves
    // nothing, so they were read to find their blob ids. Once the index is written
    // later than its files, the blob ids come from it and nothing is read at all.
    let second = add_worktree(&repo, "second");
    let root = second.path().join("second");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let git = git2::Repository::open(&root).unwrap();
    let mut index = git.index().unwrap();
    index.read(true).unwrap();
    index.write().unwrap();
    let mut map = open_at(&root, repo.cache.path());
    let stats = map.refresh(&|_| {});
    assert_eq!(
        (stats.parsed, stats.hashed, stats.from_store),
        (0, 0, 7),
        "{stats:?}"
    );
    assert_eq!(plain(&map, 1024).text, text);

    // An edit in one worktree is parsed there, and only its new content.
    std::fs::write(
        root.join("src/util.rs"),
        "pub fn worktree_only_helper() {}\n",
    )
    .unwrap();
    let stats = map.refresh(&|_| {});
    assert_eq!((stats.parsed, stats.unchanged), (1, 6), "{stats:?}");
    assert_eq!(stats.changed, ["src/util.rs"]);
    assert!(plain(&map, 4096).text.contains("worktree_only_helper"));
}

#[test]
fn back_to_back_runs_in_a_new_worktree_do_not_read_its_files_again() {
    let repo = Repo::from_fixture("project");
    repo.open().refresh(&|_| {});
    let fresh = add_worktree(&repo, "fresh");
    let root = fresh.path().join("fresh");
    // Untracked files are read to find their blob ids; stat'ed a clock tick after they
    // were written, their stat data proves them in the next run, right after.
    std::fs::write(root.join("notes.py"), "def untracked_note():\n    pass\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let first = open_at(&root, repo.cache.path()).refresh(&|_| {});
    assert!(first.hashed >= 1, "{first:?}");
    let second = open_at(&root, repo.cache.path()).refresh(&|_| {});
    assert_eq!((second.hashed, second.parsed), (0, 0), "{second:?}");
    assert_eq!(second.from_cache, second.files_seen, "{second:?}");
}

#[test]
fn a_file_changed_in_the_index_second_with_the_same_size_is_not_served_stale() {
    let repo = Repo::empty();
    repo.write("src/util.rs", "pub fn alpha_one() {}\n");
    repo.write("src/main.rs", "fn main() { alpha_one(); omega_two(); }\n");
    repo.commit("fixture");
    let git = git2::Repository::open(repo.path()).unwrap();
    let entry = git
        .index()
        .unwrap()
        .get_path(Path::new("src/util.rs"), 0)
        .unwrap();
    let staged = std::time::UNIX_EPOCH
        + std::time::Duration::new(entry.mtime.seconds() as u64, entry.mtime.nanoseconds());
    // The index is written in the second the file was staged (its content untouched),
    // and the file then changes in that second, to the same size, keeping its time as
    // a coarse clock would.
    let index_file = std::fs::File::options()
        .append(true)
        .open(git.path().join("index"))
        .unwrap();
    index_file.set_modified(staged).unwrap();
    std::fs::write(repo.path().join("src/util.rs"), "pub fn omega_two() {}\n").unwrap();
    let file = std::fs::File::options()
        .append(true)
        .open(repo.path().join("src/util.rs"))
        .unwrap();
    file.set_modified(staged).unwrap();
    let meta = std::fs::metadata(repo.path().join("src/util.rs")).unwrap();
    assert_eq!(
        (meta.len(), meta.modified().unwrap()),
        (u64::from(entry.file_size), staged)
    );

    let mut map = repo.open();
    let stats = map.refresh(&|_| {});
    assert!(stats.hashed >= 1, "{stats:?}");
    let text = plain(&map, 4096).text;
    assert!(
        text.contains("│pub fn omega_two() {}") && !text.contains("│pub fn alpha_one"),
        "{text}"
    );
}

#[test]
fn important_files_come_first_root_first_within_their_share_of_the_budget() {
    let repo = Repo::from_fixture("project");
    repo.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    repo.write(".github/workflows/ci.yml", "on: push\n");
    repo.write("crates/extra/Cargo.toml", "[package]\nname = \"extra\"\n");
    repo.write("crates/extra/src/lib.rs", "pub fn extra_thing() {}\n");
    repo.write("docs/README.md", "# not a package\n");
    repo.commit("manifests");
    let map = repo.map();
    let result = map.build(&["src/cli.rs"], &NONE, &NONE, 1024);
    assert_eq!(
        result.important,
        [
            "README.md",
            "Cargo.toml",
            ".github/workflows/ci.yml",
            "crates/extra/Cargo.toml"
        ]
    );
    assert!(
        result.text.starts_with(
            "README.md\nCargo.toml\n.github/workflows/ci.yml\ncrates/extra/Cargo.toml\n"
        ),
        "{}",
        result.text
    );
    // Listed once, and ranked definitions still follow.
    assert_eq!(result.text.matches("Cargo.toml").count(), 2);
    assert!(result.text.contains("│pub struct KeyValueStore {"));
    assert_eq!(result.tokens, counter().count(&result.text));
    // A chat file is never listed.
    let result = map.build(&["README.md"], &NONE, &NONE, 1024);
    assert!(result.text.starts_with("Cargo.toml\n"), "{}", result.text);
    assert!(
        !result.text.lines().any(|l| l == "README.md"),
        "{}",
        result.text
    );
}

#[test]
fn two_thousand_packages_do_not_fill_the_map_with_manifests() {
    let repo = Repo::from_fixture("project");
    for i in 0..2000 {
        repo.write(
            &format!("packages/pkg-{i:04}/package.json"),
            "{\"name\": \"p\"}\n",
        );
    }
    repo.commit("packages");
    let map = repo.map();
    let budget = 1024;
    let result = map.build(&NONE, &NONE, &NONE, budget);
    let listed: String = result.important.iter().map(|p| format!("{p}\n")).collect();
    assert!(result.text.starts_with(&listed));
    assert!(result.important.len() > 5, "{:?}", result.important);
    assert_eq!(result.important[0], "README.md");
    assert!(counter().count(&listed) * 100 <= budget * 15);
    assert!(result.tokens <= budget);
    assert!(
        result.text.contains("│pub struct KeyValueStore {"),
        "{}",
        result.text
    );
}

#[test]
fn when_every_score_is_zero_the_map_ranks_by_mentions_then_references_then_size() {
    let repo = Repo::empty();
    // The chat file references nothing the repository defines: every other score is 0.
    repo.write("chat.py", "print('hello')\n");
    repo.write("a_small.py", "def tiny_helper():\n    pass\n");
    repo.write("b_hub.py", "def hub_function():\n    pass\n");
    repo.write(
        "c_user.py",
        "from b_hub import hub_function\nhub_function()\n",
    );
    repo.write(
        "d_user.py",
        "from b_hub import hub_function\nhub_function()\n",
    );
    let large: String = (0..40)
        .map(|i| format!("def large_function_{i}():\n    return {i}\n\n"))
        .collect();
    repo.write("z_large.py", large);
    repo.commit("fixture");
    let map = repo.map();
    let order = |result: &MapResult| -> Vec<String> {
        result.ranked_files.iter().map(|(p, _)| p.clone()).collect()
    };
    let result = map.build(&["chat.py"], &NONE, &NONE, 4096);
    assert!(result.ranked_files.iter().all(|(_, s)| *s == 0.0));
    assert_eq!(
        order(&result),
        [
            "b_hub.py",
            "z_large.py",
            "c_user.py",
            "d_user.py",
            "a_small.py"
        ]
    );
    // The map shows the most referenced file's definitions first.
    let small = map.build(&["chat.py"], &NONE, &NONE, 30);
    assert!(
        small
            .text
            .starts_with("b_hub.py:\n│def hub_function():\n⋮\nz_large.py:"),
        "{}",
        small.text
    );
    // A mentioned identifier puts its file first.
    let result = map.build(&["chat.py"], &NONE, &["tiny_helper"], 4096);
    assert_eq!(order(&result)[0], "a_small.py");
}

#[test]
fn an_empty_repository_gives_an_empty_map() {
    let repo = Repo::empty();
    let mut map = repo.open();
    let stats = map.refresh(&|_| {});
    assert_eq!(stats.files_seen, 0);
    let result = plain(&map, 1024);
    assert_eq!((result.text.as_str(), result.tokens), ("", 0));
    assert!(result.ranked_files.is_empty());
}

#[test]
fn unsupported_files_are_listed_as_bare_paths() {
    let repo = Repo::empty();
    repo.write("README.md", "# hello\n");
    repo.write("data/config.json", "{\"a\": 1}\n");
    repo.write("notes.txt", "plain text\n");
    repo.commit("fixture");
    let map = repo.map();
    let result = plain(&map, 1024);
    assert_eq!(result.text, "README.md\ndata/config.json\nnotes.txt\n");
    assert_eq!(result.shown_defs, 0);
}

#[test]
fn the_file_set_follows_git_ignore_rules_and_skips_binary_and_large_files() {
    let repo = Repo::empty();
    repo.write("tracked.py", "def tracked_function():\n    pass\n");
    repo.write(".gitignore", "build/\n");
    repo.commit("fixture");
    repo.write("untracked.py", "def untracked_function():\n    pass\n");
    repo.write("build/out.py", "def ignored_function():\n    pass\n");
    repo.write("vendor/lib.py", "def vendored_function():\n    pass\n");
    repo.write(".ternignore", "vendor/\n");
    repo.write("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    repo.write("huge.py", "x = 1\n".repeat(200_000));
    let mut map = repo.open();
    let progress = std::sync::Mutex::new(Vec::new());
    let stats = map.refresh(&|p| progress.lock().unwrap().push(p));
    assert_eq!(stats.skipped_binary, 1);
    assert_eq!(stats.skipped_large, 1);
    let progress = progress.into_inner().unwrap();
    assert_eq!(progress.len(), stats.parsed);
    assert!(
        progress
            .iter()
            .all(|p| p.total == stats.parsed && p.parsed <= p.total)
    );
    let text = plain(&map, 4096).text;
    assert!(text.contains("tracked_function") && text.contains("untracked_function"));
    assert!(!text.contains("ignored_function") && !text.contains("vendored_function"));
    assert!(!text.contains("logo.png") && !text.contains("huge.py"));
}

#[test]
fn submodule_contents_are_not_part_of_the_map() {
    let repo = Repo::empty();
    repo.write("main.py", "def main_entry():\n    pass\n");
    repo.write(
        "vendor/lib/inner.py",
        "def submodule_function():\n    pass\n",
    );
    repo.commit("fixture");
    // Turn vendor/lib into a gitlink, as `git submodule add` leaves it.
    let git = git2::Repository::open(repo.path()).unwrap();
    let mut index = git.index().unwrap();
    index.remove_dir(Path::new("vendor/lib"), 0).unwrap();
    let oid = git.head().unwrap().target().unwrap();
    let mut entry = index.get_path(Path::new("main.py"), 0).unwrap();
    entry.mode = 0o160000;
    entry.id = oid;
    entry.path = b"vendor/lib".to_vec();
    entry.file_size = 0;
    index.add(&entry).unwrap();
    index.write().unwrap();
    let text = plain(&repo.map(), 4096).text;
    assert!(text.contains("main_entry"), "{text}");
    assert!(!text.contains("vendor/lib"), "{text}");
}

#[test]
fn default_budget_matches_the_design() {
    assert_eq!(default_budget(128_000, true), 4096);
    assert_eq!(default_budget(128_000, false), 32_768);
}

#[test]
fn tern_map_prints_the_map_json_and_stats() {
    let repo = Repo::from_fixture("project");
    let run = |args: &[&str]| {
        crate::support::command(env!("CARGO_BIN_EXE_tern"))
            .args(args)
            .current_dir(repo.path().join("src"))
            .env("XDG_CACHE_HOME", repo.cache.path())
            .env("HOME", repo.cache.path())
            .env_remove("TERN_MODEL")
            .output()
            .unwrap()
    };
    let out = run(&["map", "--tokens", "300", "--chat", "cli.rs", "--stats"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("src/store.rs:\n") && !text.contains("src/cli.rs"));
    assert!(counter().count(&text) <= 300);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("files: 7 seen, 7 parsed, 0 from cache"),
        "{stderr}"
    );
    assert!(stderr.contains("time: scan+load"), "{stderr}");

    let out = run(&["map", "--json", "--mention", "format_bytes", "--stats"]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["version"], 1);
    let tokens = json["tokens"].as_u64().unwrap();
    // No --tokens and no chat files: the default budget of gpt-4o's window.
    assert_eq!(
        json["budget"].as_u64().unwrap(),
        default_budget(128_000, false) as u64
    );
    assert_eq!(
        tokens as usize,
        counter().count(json["text"].as_str().unwrap())
    );
    assert!(json["files"].as_array().unwrap().len() == 7);
    assert!(String::from_utf8_lossy(&out.stderr).contains("0 parsed, 7 from cache"));

    let out = run(&["map", "--chat", "/definitely/not/here.rs"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--chat /definitely/not/here.rs"));

    // Any budget a flag can give, the largest too, is a budget: no overflow.
    let out = run(&["map", "--tokens", &usize::MAX.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("src/store.rs:\n"));
}

#[test]
fn a_file_changed_since_its_tags_were_taken_is_shown_as_a_bare_path() {
    let repo = Repo::from_fixture("project");
    let map = repo.map();
    assert!(plain(&map, 4096).text.contains("src/util.rs:\n"));
    // Changed on disk, not yet refreshed: its old line offsets would show wrong lines.
    repo.write("src/util.rs", "// rewritten\n");
    let text = plain(&map, 4096).text;
    assert!(
        text.contains("src/util.rs\n") && !text.contains("format_bytes(bytes"),
        "{text}"
    );
}

#[test]
fn the_same_request_gives_the_same_map_byte_for_byte() {
    // The map sits early in the prompt: if it wobbled between turns, provider prefix
    // caches would miss.
    let repo = Repo::from_fixture("project");
    let map = repo.map();
    let first = map
        .build(&["src/cli.rs"], &NONE, &["format_bytes"], 300)
        .text;
    let other = map.build(&["src/server.rs"], &NONE, &NONE, 300).text;
    assert_ne!(first, other);
    let again = map
        .build(&["src/cli.rs"], &NONE, &["format_bytes"], 300)
        .text;
    assert_eq!(first, again);
    let fresh = repo
        .map()
        .build(&["src/cli.rs"], &NONE, &["format_bytes"], 300)
        .text;
    assert_eq!(first, fresh);
}
