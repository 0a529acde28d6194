//! A landing killed (a real SIGKILL, `TERN_DIE_AT`) at each of its steps, through the
//! real binary against the loopback server in real temporary repositories: the next
//! tern finds the repository exactly as before the landing (the files, HEAD, the
//! index, tern's notes; the user's own uncommitted changes intact) or exactly as after
//! it (HEAD at the commit, git's index following it, `tern undo` taking it back), and
//! says which. A file the user changed since the kill is never overwritten; a journal
//! tern did not write is refused, naming it, with nothing written.

use std::time::Duration;

use crate::headless::repo;
use crate::rewind::{head, run};
use crate::support::{MockServer, Reply, TempRepo, output_within, texts};

const WAIT: Duration = Duration::from_secs(30);
const ORIGINAL: &str = "def greet(name):\n    return 'hello ' + name\n";
const AFTER: &str = "def greet(name):\n    return 'hello, ' + name\n";
const JOURNAL: &str = ".git/tern-move.json";

/// Every step a landing reaches after its journal is written, in order; the last is
/// past the branch's move.
const STEPS: [&str; 8] = [
    "written",
    "blobs",
    "tree",
    "commit-object",
    "index",
    "notes",
    "ref",
    "index-commit",
];

/// The model's reply adding a comma to src/greet.py (and the commit message's).
fn push_the_comma(server: &MockServer) {
    server.push_for_model("gpt-4o-mini", Reply::text("Add a comma after hello"));
    server.push_for_model(
        "gpt-4o",
        Reply::text(
            "src/greet.py\n```python\n<<<<<<< SEARCH\n    return 'hello ' + name\n=======\n    return 'hello, ' + name\n>>>>>>> REPLACE\n```\n",
        ),
    );
}

const TURN: [&str; 6] = [
    "--yes",
    "--model",
    "gpt-4o",
    "-m",
    "add a comma",
    "src/greet.py",
];

/// A turn that lands the comma, killed at `step`.
fn killed_at(repo: &TempRepo, server: &MockServer, step: &str) {
    push_the_comma(server);
    killed(repo, server, step, &TURN);
}

/// `tern ARGS` killed at `step`, its journal left behind.
fn killed(repo: &TempRepo, server: &MockServer, step: &str, args: &[&str]) {
    let mut killed = repo.tern(&server.base_url());
    killed.env("TERN_DIE_AT", step).args(args);
    let out = output_within(&mut killed, WAIT);
    assert_eq!(out.status.code(), None, "{step}: killed, {:?}", texts(&out));
    assert!(repo.path().join(JOURNAL).exists(), "{step}: no journal");
}

/// The next tern: a question in a new session (its start settles what it finds);
/// what it said on stderr.
fn next_tern(repo: &TempRepo, server: &MockServer) -> String {
    server.push_for_model("gpt-4o", Reply::text("It greets."));
    let (_, stderr, code) = run(
        repo,
        server,
        &["--model", "gpt-4o", "-m", "what does greet do?"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    stderr
}

fn notes(repo: &TempRepo) -> String {
    repo.git(&["for-each-ref", "refs/notes/tern"])
}

/// Before the branch moved the landing is rolled back whole; once it moved, it is
/// finished; either way the user's own change to another file is kept, and what
/// follows works (landing again, or undoing).
#[test]
fn a_landing_killed_at_any_step_is_rolled_back_or_finished_whole() {
    for step in STEPS {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let start = head(&repo);
        repo.write("README.md", "# Demo, mine\n");
        killed_at(&repo, &server, step);
        assert_eq!(repo.read("src/greet.py"), AFTER, "{step}: written");

        let said = next_tern(&repo, &server);
        assert!(!repo.path().join(JOURNAL).exists(), "{step}");
        assert!(!repo.path().join(".git/index.lock").exists(), "{step}");
        assert_eq!(repo.read("README.md"), "# Demo, mine\n", "{step}");
        assert_eq!(
            repo.git(&["status", "--porcelain"]),
            " M README.md\n",
            "{step}: {said}"
        );
        if step == "index-commit" {
            let tip = head(&repo);
            assert_ne!(tip, start, "{step}");
            assert_eq!(repo.read("src/greet.py"), AFTER, "{step}");
            assert!(
                said.contains(&format!(
                    "a landing killed part way was finished: the index now follows {}",
                    tip.get(..7).unwrap()
                )),
                "{step}: {said}"
            );
            let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
            assert_eq!(code, Some(0), "{step}: {stdout}{stderr}");
            assert_eq!(repo.read("src/greet.py"), ORIGINAL, "{step}");
            assert_eq!(repo.git(&["status", "--porcelain"]), " M README.md\n");
        } else {
            assert_eq!(head(&repo), start, "{step}");
            assert_eq!(repo.read("src/greet.py"), ORIGINAL, "{step}");
            assert_eq!(notes(&repo), "", "{step}: a note of a commit never made");
            assert!(
                said.contains("a landing killed part way was rolled back: 1 file put back"),
                "{step}: {said}"
            );
            // The same edit lands again, whole.
            push_the_comma(&server);
            let (_, stderr, code) = run(&repo, &server, &TURN);
            assert_eq!(code, Some(0), "{step}: {stderr}");
            assert_ne!(head(&repo), start, "{step}");
            assert_eq!(repo.read("src/greet.py"), AFTER, "{step}");
            assert_eq!(repo.git(&["status", "--porcelain"]), " M README.md\n");
        }
    }
}

/// Without commits (`--no-auto-commits`) a landing killed part way through its writes
/// is rolled back too: the next tern finds no file half of the landing's.
#[test]
fn a_landing_without_commits_killed_after_its_writes_is_rolled_back() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let start = head(&repo);
    push_the_comma(&server);
    let mut args = vec!["--no-auto-commits"];
    args.extend(TURN);
    killed(&repo, &server, "written", &args);
    assert_eq!(repo.read("src/greet.py"), AFTER);

    let said = next_tern(&repo, &server);
    assert!(
        said.contains("a landing killed part way was rolled back: 1 file put back"),
        "{said}"
    );
    assert_eq!(repo.read("src/greet.py"), ORIGINAL);
    assert_eq!(head(&repo), start);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// `tern undo` right after a landing killed once its branch moved: the landing is
/// finished first (and said), then taken back.
#[test]
fn tern_undo_after_a_kill_finishes_the_landing_says_so_and_takes_it_back() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let start = head(&repo);
    killed_at(&repo, &server, "index-commit");
    let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("tern: a landing killed part way was finished: the index now follows"),
        "{stderr}"
    );
    assert_eq!(head(&repo), start);
    assert_eq!(repo.read("src/greet.py"), ORIGINAL);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert!(!repo.path().join(JOURNAL).exists());
}

/// Killed after tern's note was written and before the branch moved: that note goes,
/// and the notes of tern's earlier commits stay as they were.
#[test]
fn a_note_of_a_commit_never_made_goes_and_earlier_notes_stay() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    push_the_comma(&server);
    let (_, stderr, code) = run(&repo, &server, &TURN);
    assert_eq!(code, Some(0), "{stderr}");
    let landed = head(&repo);
    let noted = notes(&repo);
    assert!(noted.contains("refs/notes/tern"), "{noted}");

    server.push_for_model("gpt-4o-mini", Reply::text("Type the name"));
    server.push_for_model(
        "gpt-4o",
        Reply::text(
            "src/greet.py\n```python\n<<<<<<< SEARCH\ndef greet(name):\n=======\ndef greet(name: str):\n>>>>>>> REPLACE\n```\n",
        ),
    );
    killed(
        &repo,
        &server,
        "ref",
        &[
            "--yes",
            "--model",
            "gpt-4o",
            "-m",
            "type the name",
            "src/greet.py",
        ],
    );
    assert_ne!(
        notes(&repo),
        noted,
        "the note was written when it was killed"
    );

    let said = next_tern(&repo, &server);
    assert_eq!(notes(&repo), noted, "{said}");
    assert_eq!(head(&repo), landed);
    assert_eq!(repo.read("src/greet.py"), AFTER);
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
}

/// A file the user saved between the kill and the next tern is theirs: it is left as
/// it is and named.
#[test]
fn a_file_changed_after_the_kill_is_left_as_the_user_left_it() {
    for step in ["written", "ref", "index-commit"] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let start = head(&repo);
        killed_at(&repo, &server, step);
        let mine = "def greet(name):\n    return 'hi, ' + name\n";
        repo.write("src/greet.py", mine);

        let said = next_tern(&repo, &server);
        assert_eq!(repo.read("src/greet.py"), mine, "{step}");
        assert!(!repo.path().join(JOURNAL).exists(), "{step}");
        assert_eq!(
            repo.git(&["status", "--porcelain"]),
            " M src/greet.py\n",
            "{step}"
        );
        match step {
            "index-commit" => assert_ne!(head(&repo), start),
            _ => {
                assert_eq!(head(&repo), start, "{step}");
                assert!(
                    said.contains("changed since, so left as they are: src/greet.py"),
                    "{step}: {said}"
                );
            }
        }
    }
}

/// A turn that adds `path` holding "# Notes", killed once its commits are made and
/// before the branch moves.
fn notes_killed(repo: &TempRepo, server: &MockServer, path: &str) {
    server.push_for_model("gpt-4o-mini", Reply::text("Add notes"));
    server.push_for_model(
        "gpt-4o",
        Reply::text(format!(
            "{path}\n```markdown\n<<<<<<< SEARCH\n=======\n# Notes\n>>>>>>> REPLACE\n```\n"
        )),
    );
    killed(
        repo,
        server,
        "ref",
        &["--yes", "--model", "gpt-4o", "-m", "add notes"],
    );
}

/// A new file, in directories made for it, goes with them.
#[test]
fn a_new_file_and_its_new_directories_go_when_a_killed_landing_is_rolled_back() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let start = head(&repo);
    notes_killed(&repo, &server, "docs/deep/notes.md");
    assert_eq!(repo.read("docs/deep/notes.md"), "# Notes\n");

    let said = next_tern(&repo, &server);
    assert!(!repo.path().join("docs").exists(), "{said}");
    assert_eq!(head(&repo), start);
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
}

/// A symlink the user put in place of a new file tern wrote holds its target, not the
/// bytes it leads to: even when those are what tern wrote, it is the user's, and stays
/// (it used to be read through, taken for tern's file and removed).
#[test]
fn a_symlink_put_in_place_of_a_killed_landings_file_is_left_as_it_is() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let start = head(&repo);
    notes_killed(&repo, &server, "docs/notes.md");
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("notes.md");
    std::fs::write(&target, "# Notes\n").unwrap();
    let link = repo.path().join("docs/notes.md");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();

    let said = next_tern(&repo, &server);
    assert!(
        said.contains("changed since, so left as they are: docs/notes.md"),
        "{said}"
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), target);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "# Notes\n");
    assert_eq!(head(&repo), start);
    assert!(!repo.path().join(JOURNAL).exists());
}

/// With dirty_commits on and the user's own change in the file tern edits: rolled
/// back, the change is uncommitted again and intact; finished, it is in a commit of
/// its own under tern's, and `tern undo` takes back only tern's.
#[test]
fn the_users_own_change_to_the_landed_file_survives_a_kill_with_dirty_commits() {
    let mine = format!("{ORIGINAL}# mine\n");
    let landed = format!("{AFTER}# mine\n");
    for step in ["written", "index", "ref", "index-commit"] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let start = head(&repo);
        repo.write("src/greet.py", &mine);
        killed_at(&repo, &server, step);

        let said = next_tern(&repo, &server);
        assert!(!repo.path().join(JOURNAL).exists(), "{step}");
        if step == "index-commit" {
            assert_eq!(repo.read("src/greet.py"), landed, "{step}");
            assert_eq!(repo.git(&["status", "--porcelain"]), "", "{step}: {said}");
            let users = repo.git(&["rev-parse", "HEAD~1"]).trim().to_string();
            assert_ne!(users, start, "{step}: the user's own commit first");
            let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
            assert_eq!(code, Some(0), "{step}: {stdout}{stderr}");
            assert_eq!(head(&repo), users, "{step}");
            assert_eq!(repo.read("src/greet.py"), mine, "{step}");
        } else {
            assert_eq!(head(&repo), start, "{step}");
            assert_eq!(repo.read("src/greet.py"), mine, "{step}");
            assert_eq!(
                repo.git(&["status", "--porcelain"]),
                " M src/greet.py\n",
                "{step}: {said}"
            );
        }
    }
}

/// `/commit` killed once the branch moved and before git's index followed: the next
/// tern finishes it, so `git status` never shows the commit staged in reverse; killed
/// before, nothing of it is left, and the change is still the user's to commit.
#[test]
fn a_slash_commit_killed_part_way_is_finished_or_rolled_back() {
    for step in ["notes", "ref", "index-commit"] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let start = head(&repo);
        repo.write("README.md", "# Demo, mine\n");
        killed(
            &repo,
            &server,
            step,
            &["--model", "gpt-4o", "-m", "/commit save the readme"],
        );

        let said = next_tern(&repo, &server);
        assert!(!repo.path().join(JOURNAL).exists(), "{step}");
        assert!(!repo.path().join(".git/index.lock").exists(), "{step}");
        assert_eq!(repo.read("README.md"), "# Demo, mine\n", "{step}");
        if step == "index-commit" {
            assert_ne!(head(&repo), start, "{step}");
            assert_eq!(repo.git(&["status", "--porcelain"]), "", "{step}: {said}");
            assert!(
                said.contains("a commit killed part way was finished"),
                "{step}: {said}"
            );
        } else {
            assert_eq!(head(&repo), start, "{step}");
            assert_eq!(
                repo.git(&["status", "--porcelain"]),
                " M README.md\n",
                "{step}: {said}"
            );
            assert!(
                said.contains("a commit killed part way was rolled back"),
                "{step}: {said}"
            );
        }
    }
}

/// A journal cut short, or one naming a file outside the work tree, is not tern's:
/// the next tern refuses with its name, writes nothing and leaves it.
#[test]
fn a_journal_tern_did_not_write_is_refused_by_name_and_nothing_is_written() {
    let foreign = [
        "{\"kind\":\"landing\",\"from\":".to_string(),
        format!(
            "{{\"kind\":\"landing\",\"from\":null,\"to\":null,\"paths\":[{}],\"before\":[[{}, null]],\"wrote\":[\"{}\"]}}",
            bytes_json("../outside.txt"),
            bytes_json("../outside.txt"),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
        ),
    ];
    for text in foreign {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let start = head(&repo);
        repo.write("README.md", "# Demo, mine\n");
        std::fs::write(repo.path().join(JOURNAL), &text).unwrap();
        let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
        assert_ne!(code, Some(0), "{stdout}{stderr}");
        assert!(code.is_some(), "no panic, no signal: {stderr}");
        assert!(
            stderr.contains("tern-move.json is not a journal tern wrote"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(
            std::fs::read(repo.path().join(JOURNAL)).unwrap(),
            text.as_bytes()
        );
        assert!(!repo.path().parent().unwrap().join("outside.txt").exists());
        assert_eq!(head(&repo), start);
        assert_eq!(repo.read("src/greet.py"), ORIGINAL);
        assert_eq!(repo.git(&["status", "--porcelain"]), " M README.md\n");
    }
}

/// A path as the journal keeps it: its bytes, as a JSON array.
fn bytes_json(path: &str) -> String {
    serde_json::to_string(path.as_bytes()).unwrap()
}
