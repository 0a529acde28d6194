//! The repo map kept fresh from file-system events: a real watch on a real temporary
//! repository; what it reports is applied with `refresh_changed`, and the map's counts
//! say whether that took the changed files only or a rescan.

use std::sync::mpsc;
use std::time::Duration;

use crate::repomap::Repo;
use tern::repomap::watch::{Changes, Watch};
use tern::repomap::{RepoMap, WatchCounts};

const NONE: [&str; 0] = [];

/// A committed repository, its refreshed map, and a watch whose batches arrive on the
/// receiver.
fn watched(files: &[(&str, &str)]) -> (Repo, RepoMap, Watch, mpsc::Receiver<Changes>) {
    let repo = Repo::empty();
    for (path, text) in files {
        repo.write(path, text);
    }
    repo.commit("initial");
    let map = repo.map();
    let (tx, rx) = mpsc::channel();
    let mut watch = Watch::start(map.root(), move |c| tx.send(c).is_ok()).unwrap();
    watch.cover(map.files().iter().map(String::as_str)).unwrap();
    (repo, map, watch, rx)
}

/// The next batch that names `path` (batches before it are applied too).
fn apply_until(map: &mut RepoMap, rx: &mpsc::Receiver<Changes>, path: &str) {
    loop {
        let changes = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no event named {path}"));
        map.refresh_changed(&changes, &|_| {});
        if changes.paths.contains(path) {
            return;
        }
    }
}

fn text(map: &RepoMap) -> String {
    map.build(&NONE, &NONE, &NONE, 4096).text
}

#[test]
fn an_edit_and_a_new_file_refresh_those_files_without_a_rescan() {
    let (repo, mut map, _watch, rx) = watched(&[
        ("src/app.py", "from lib import helper\nhelper()\n"),
        ("src/lib.py", "def helper():\n    pass\n"),
        ("README.md", "# project\n"),
    ]);
    repo.write(
        "src/lib.py",
        "def helper():\n    pass\n\ndef edited_while_watched():\n    pass\n",
    );
    apply_until(&mut map, &rx, "src/lib.py");
    assert!(text(&map).contains("def edited_while_watched()"));
    assert_eq!(map.watch_counts().rescans, 0);

    // A new file in a directory that is watched already.
    repo.write("src/new_module.py", "def made_later():\n    pass\n");
    apply_until(&mut map, &rx, "src/new_module.py");
    assert!(text(&map).contains("def made_later()"));
    assert!(map.files().contains(&"src/new_module.py".to_string()));
    let counts = map.watch_counts();
    assert!(counts.by_file >= 2 && counts.rescans == 0, "{counts:?}");
}

#[test]
fn ignored_files_stay_out_and_an_ignore_file_or_a_directory_means_a_rescan() {
    let (repo, mut map, mut watch, rx) = watched(&[
        (".gitignore", "*.log\n"),
        ("src/lib.py", "def helper():\n    pass\n"),
    ]);
    repo.write("src/noise.log", "def not_code():\n");
    apply_until(&mut map, &rx, "src/noise.log");
    assert!(!map.files().contains(&"src/noise.log".to_string()));
    assert_eq!(map.watch_counts().rescans, 0);

    // No longer ignored: the set changes with the ignore file.
    repo.write(".gitignore", "");
    apply_until(&mut map, &rx, ".gitignore");
    assert!(map.files().contains(&"src/noise.log".to_string()));
    assert_eq!(map.watch_counts().rescans, 1);

    // A directory renamed: its files move with it.
    repo.rename("src", "lib");
    apply_until(&mut map, &rx, "lib");
    assert!(map.files().contains(&"lib/lib.py".to_string()));
    assert!(!map.files().iter().any(|f| f.starts_with("src/")));
    watch.cover(map.files().iter().map(String::as_str)).unwrap();
    assert!(watch.directories() >= 2);

    // Lost events: only a rescan is exact.
    let before = map.watch_counts();
    map.refresh_changed(
        &Changes {
            lost: true,
            ..Changes::default()
        },
        &|_| {},
    );
    assert_eq!(
        map.watch_counts(),
        WatchCounts {
            rescans: before.rescans + 1,
            ..before
        }
    );
}
