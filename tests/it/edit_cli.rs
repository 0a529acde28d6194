//! `tern apply` and `tern undo` as a user runs them: output, files, commits, exit codes.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use git2::Repository;

struct Repo {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    repo: Repository,
}

impl Repo {
    fn new(files: &[(&str, &str)]) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut cfg = repo.config().unwrap();
        cfg.set_str("user.name", "Test User").unwrap();
        cfg.set_str("user.email", "test@example.com").unwrap();
        let r = Repo { dir, home, repo };
        for (p, c) in files {
            r.write(p, c);
        }
        {
            let mut index = r.repo.index().unwrap();
            for (p, _) in files {
                index.add_path(Path::new(p)).unwrap();
            }
            index.write().unwrap();
            let tree = r.repo.find_tree(index.write_tree().unwrap()).unwrap();
            let sig = r.repo.signature().unwrap();
            r.repo
                .commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
                .unwrap();
        }
        r
    }

    fn write(&self, path: &str, content: &str) {
        let p = self.dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(path)).ok()
    }

    /// Runs tern with a clean environment: no user config, no model variables.
    fn tern(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = crate::support::command(env!("CARGO_BIN_EXE_tern"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path())
            .env("TERN_STATE_DIR", self.home.path().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("TERN_MODEL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_BASE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(input);
        child.wait_with_output().unwrap()
    }

    fn reply(&self, text: &str) -> String {
        let path = self.home.path().join("reply.md");
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn head_summary(&self) -> String {
        let c = self.repo.head().unwrap().peel_to_commit().unwrap();
        c.summary().unwrap().unwrap().to_string()
    }

    fn commits(&self) -> usize {
        let mut walk = self.repo.revwalk().unwrap();
        walk.push_head().unwrap();
        walk.count()
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The hunk ids in a printed diff, in order.
fn ids(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("@@"))
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect()
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n\n")
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn dry_run_prints_hunks_with_ids_and_writes_nothing() {
    let r = Repo::new(&[("f.txt", &numbered(30))]);
    let reply = r.reply(
        &(block("f.txt", "line 2\n", "LINE 2\n") + &block("f.txt", "line 20\n", "LINE 20\n")),
    );
    let out = r.tern(&["apply", &reply, "--dry-run"], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -1,5 +1,5 @@ "),
        "{stdout}"
    );
    assert!(stdout.contains("-line 2\n+LINE 2\n"));
    assert_eq!(ids(&stdout).len(), 2);
    assert_eq!(r.read("f.txt").unwrap(), numbered(30));
    assert_eq!(r.commits(), 1);
}

#[test]
fn accepting_one_id_writes_and_commits_only_that_hunk() {
    let r = Repo::new(&[("f.txt", &numbered(30))]);
    let reply = r.reply(
        &(block("f.txt", "line 2\n", "LINE 2\n") + &block("f.txt", "line 20\n", "LINE 20\n")),
    );
    let shown = ids(&text(&r.tern(&["apply", &reply, "--dry-run"], None).stdout));
    let out = r.tern(&["apply", &reply, "--accept", &shown[1]], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        r.read("f.txt").unwrap(),
        numbered(30).replace("line 20\n", "LINE 20\n")
    );
    assert_eq!(r.head_summary(), "docs: update f.txt");
    let msg = r
        .repo
        .head()
        .unwrap()
        .peel_to_commit()
        .unwrap()
        .message()
        .unwrap()
        .to_string();
    assert!(msg.ends_with("Co-authored-by: tern (gpt-4o)\n"), "{msg}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("not applied: hunks {}", shown[0])),
        "{stderr}"
    );
}

#[test]
fn failed_block_exits_1_and_applies_the_rest() {
    let r = Repo::new(&[("f.txt", &numbered(10))]);
    let reply =
        r.reply(&(block("f.txt", "line 99\n", "x\n") + &block("f.txt", "line 5\n", "LINE 5\n")));
    let out = r.tern(&["apply", &reply], None);
    assert_eq!(code(&out), 1);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error: block 1 (f.txt): the SEARCH text does not match"),
        "{stderr}"
    );
    assert_eq!(
        r.read("f.txt").unwrap(),
        numbered(10).replace("line 5\n", "LINE 5\n")
    );
    assert_eq!(r.commits(), 2);
}

/// A reply whose every block fails says why each failed, never "nothing to change"
/// (which says the reply asked for no change), and exits 1 with nothing written.
#[test]
fn a_reply_whose_every_block_fails_says_so_not_nothing_to_change() {
    let r = Repo::new(&[("f.txt", &numbered(10))]);
    let reply = r.reply(&block("f.txt", "line 99\n", "x\n"));
    let out = r.tern(&["apply", &reply], None);
    assert_eq!(code(&out), 1);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error: block 1 (f.txt)"), "{stderr}");
    assert!(!stderr.contains("nothing to change"), "{stderr}");
    assert_eq!(r.read("f.txt").unwrap(), numbered(10));
    assert_eq!(r.commits(), 1);
}

#[test]
fn unknown_id_exits_2_and_writes_nothing() {
    let r = Repo::new(&[("f.txt", "a\n")]);
    let reply = r.reply(&block("f.txt", "a\n", "b\n"));
    let out = r.tern(&["apply", &reply, "--accept", "0000000"], None);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("0000000 is not a hunk id or file of this reply"));
    assert_eq!(r.read("f.txt").unwrap(), "a\n");
}

#[test]
fn accept_none_and_accept_by_file() {
    let r = Repo::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let reply = r.reply(&(block("a.txt", "a\n", "A\n") + &block("b.txt", "b\n", "B\n")));
    assert_eq!(
        code(&r.tern(&["apply", &reply, "--accept", "none"], None)),
        0
    );
    assert_eq!(r.read("a.txt").unwrap(), "a\n");
    assert_eq!(
        code(&r.tern(&["apply", &reply, "--accept", "b.txt"], None)),
        0
    );
    assert_eq!(r.read("a.txt").unwrap(), "a\n");
    assert_eq!(r.read("b.txt").unwrap(), "B\n");
}

#[test]
fn no_commit_writes_only() {
    let r = Repo::new(&[("f.txt", "a\n")]);
    let reply = r.reply(&block("f.txt", "a\n", "b\n"));
    assert_eq!(code(&r.tern(&["apply", &reply, "--no-commit"], None)), 0);
    assert_eq!(r.read("f.txt").unwrap(), "b\n");
    assert_eq!(r.commits(), 1);
}

#[test]
fn reply_from_stdin_and_files_limit_name_matching() {
    let r = Repo::new(&[("src/util.py", "x = 1\n"), ("tests/util.py", "y = 1\n")]);
    let out = r.tern(
        &["apply", "-", "tests/util.py"],
        Some(&block("util.py", "y = 1\n", "y = 2\n")),
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(r.read("tests/util.py").unwrap(), "y = 2\n");
    assert_eq!(r.read("src/util.py").unwrap(), "x = 1\n");
}

/// A file name the reply gives that names no file is matched to one (the same
/// basename, a close spelling), and that is said: the diff header alone was easy to
/// miss.
#[test]
fn a_name_taken_as_another_file_is_said() {
    let r = Repo::new(&[("la.txt", "line1\n")]);
    let out = r.tern(
        &["apply", "-"],
        Some(&block("a.txt", "line1\n", "CHANGED\n")),
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "the reply names a.txt, which is no file here: its edits are taken as edits to la.txt"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(r.read("la.txt").unwrap(), "CHANGED\n");
    // A name that is a file is taken as it is, and nothing is said.
    let out = r.tern(
        &["apply", "-"],
        Some(&block("./la.txt", "CHANGED\n", "back\n")),
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("taken as"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn reply_without_blocks_exits_1() {
    let r = Repo::new(&[("f.txt", "a\n")]);
    let out = r.tern(&["apply", "-"], Some("Sure, I can help with that!\n"));
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr)
            .contains("no edit blocks found in the reply (tern looked for the editblock format's)")
    );
}

#[test]
fn users_dirty_changes_get_their_own_commit() {
    let r = Repo::new(&[("f.txt", &numbered(20))]);
    r.write(
        "f.txt",
        &numbered(20).replace("line 1\n", "line one (mine)\n"),
    );
    let reply = r.reply(&block("f.txt", "line 15\n", "LINE 15\n"));
    let out = r.tern(&["apply", &reply], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(r.commits(), 3);
    let head = r.repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(
        head.parent(0).unwrap().summary().unwrap(),
        Some("chore: save local changes to f.txt")
    );

    let out = r.tern(&["apply", &reply, "--no-dirty-commits"], None);
    assert_eq!(
        code(&out),
        1,
        "the block no longer matches: it was applied already"
    );
}

#[cfg(unix)]
#[test]
fn hook_failure_exits_3_and_puts_the_files_back() {
    use std::os::unix::fs::PermissionsExt;
    let r = Repo::new(&[("f.txt", "a\n")]);
    let hook = r.dir.path().join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, "#!/bin/sh\necho 'no commits today'\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let reply = r.reply(&block("f.txt", "a\n", "b\n"));
    let out = r.tern(&["apply", &reply], None);
    assert_eq!(code(&out), 3);
    assert!(text(&out.stderr).contains("no commits today"));
    assert!(text(&out.stderr).contains("were put back as they were"));
    assert_eq!(
        r.read("f.txt").unwrap(),
        "a\n",
        "a commit is all or nothing"
    );
    assert_eq!(r.commits(), 1);
    assert_eq!(code(&r.tern(&["apply", &reply, "--no-verify"], None)), 0);
    assert_eq!(r.commits(), 2);
}

#[test]
fn gitignored_new_file_needs_yes() {
    let r = Repo::new(&[(".gitignore", "*.env\n"), ("f.txt", "a\n")]);
    let reply = r.reply(&block("local.env", "", "KEY=1\n"));
    let out = r.tern(&["apply", &reply], None);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("git ignores it (rerun with --yes"));
    assert_eq!(r.read("local.env"), None);
    let out = r.tern(&["apply", &reply, "--yes"], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(r.read("local.env").as_deref(), Some("KEY=1\n"));
    assert_eq!(r.commits(), 1, "an ignored file is written, not committed");
}

#[test]
fn undo_after_apply_then_refuses() {
    let r = Repo::new(&[("f.txt", "a\n")]);
    let reply = r.reply(&block("f.txt", "a\n", "b\n"));
    assert_eq!(code(&r.tern(&["apply", &reply], None)), 0);
    let out = r.tern(&["undo"], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("undid "));
    assert_eq!(r.read("f.txt").unwrap(), "a\n");
    let out = r.tern(&["undo"], None);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("is not a commit tern made"));
}

/// `tern undo --turn` undoes the saved session's last turn (here two landings),
/// newest first, and leaves the model a note for `--resume`; with nothing left, it
/// refuses.
#[test]
fn undo_turn_undoes_the_saved_sessions_last_turn() {
    let r = Repo::new(&[("f.txt", "a\n"), ("g.txt", "x\n")]);
    for (file, old, new) in [("f.txt", "a\n", "b\n"), ("g.txt", "x\n", "y\n")] {
        let reply = r.reply(&block(file, old, new));
        assert_eq!(code(&r.tern(&["apply", &reply], None)), 0);
    }
    let head = r.repo.head().unwrap().peel_to_commit().unwrap();
    let (second, first) = (head.id(), head.parent_id(0).unwrap());
    // Saved by an older tern, one file per repository: it is moved into a session of
    // its own first.
    let state = r.home.path().join("state");
    let session = old_session_file(&state, r.dir.path());
    std::fs::create_dir_all(session.parent().unwrap()).unwrap();
    std::fs::write(
        &session,
        format!(
            r#"{{"version": 1, "model": "gpt-4o", "mode": "code", "files": [], "history": [],
                "summary_at_front": false, "checkpoint": null, "summaries": 0,
                "session_cost": 0.0, "turns": [["{first}", "{second}"]]}}"#
        ),
    )
    .unwrap();

    let out = r.tern(&["undo", "--turn"], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert_eq!(said.matches("undid ").count(), 2, "{said}");
    assert!(
        said.find(&tern::git::short_id(second)) < said.find(&tern::git::short_id(first)),
        "newest first: {said}"
    );
    assert_eq!(r.read("f.txt").unwrap(), "a\n");
    assert_eq!(r.read("g.txt").unwrap(), "x\n");
    assert!(!session.exists(), "moved into the new layout");
    let store = tern::engine::persist::Store::in_state_dir(&state, r.dir.path());
    let moved = store.list();
    assert_eq!(moved.len(), 1);
    let saved = tern::engine::persist::load(&moved[0].dir.join("state.json"))
        .unwrap()
        .unwrap();
    assert!(saved.turns.is_empty());
    assert_eq!(saved.notes.len(), 1);
    assert!(
        saved.notes[0].starts_with("I undid 2 of your commits"),
        "{}",
        saved.notes[0]
    );

    let out = r.tern(&["undo", "--turn"], None);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("no turn of this session"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn help_documents_exit_codes() {
    let r = Repo::new(&[("f.txt", "a\n")]);
    let out = r.tern(&["apply", "--help"], None);
    assert!(text(&out.stdout).contains("Exit codes:\n  0  every block of the reply applied"));
    let out = r.tern(&["undo", "--help"], None);
    assert!(text(&out.stdout).contains("1  refused"));
}

/// `tern apply` and `tern review` run engines of their own: the session the user saved
/// for the repository is neither read nor replaced, and none is created.
#[test]
fn apply_and_review_leave_the_saved_session_alone() {
    let r = Repo::new(&[("a.txt", "a\n")]);
    let state = r.home.path().join("state");
    let saved = old_session_file(&state, r.dir.path());
    std::fs::create_dir_all(saved.parent().unwrap()).unwrap();
    std::fs::write(&saved, "not a session: tern must not read or replace it").unwrap();
    let reply = r.reply(&block("a.txt", "a\n", "A\n"));
    let out = r.tern(&["apply", &reply], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(r.read("a.txt").unwrap(), "A\n");
    let out = r.tern(&["review", "--worktree", "--print-diff"], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));

    let files: Vec<_> = walk(&state);
    assert_eq!(files, vec![saved.clone()]);
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        "not a session: tern must not read or replace it"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_hunk_with_invisible_characters_is_shown_marked_and_accepted_only_by_its_id() {
    let r = Repo::new(&[("a.js", &numbered(30))]);
    let reply = r.reply(
        &(block("a.js", "line 2\n", "// note\u{2028}run()\n")
            + &block("a.js", "line 20\n", "LINE 20\n")),
    );
    // A pipe gets the bytes as they are, with the caution on a `#` line.
    let out = r.tern(&["apply", &reply, "--dry-run"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("+// note\u{2028}run()\n"), "{stdout}");
    let held = ids(&stdout)[0].clone();
    assert!(
        stdout.contains(&format!(
            "# caution: a.js: hunk {held} holds invisible characters (U+2028) (accepted only by itself)"
        )),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("only `--accept {held}` accepts it")),
        "{stderr}"
    );
    // Neither `all` nor the file's path accepts it.
    for accept in ["all", "a.js"] {
        let out = r.tern(&["apply", &reply, "--accept", accept, "--no-commit"], None);
        assert_eq!(code(&out), 1, "{accept}: {}", text(&out.stderr));
        let now = r.read("a.js").unwrap();
        assert!(
            now.contains("LINE 20\n") && !now.contains('\u{2028}'),
            "{now}"
        );
        assert!(text(&out.stderr).contains(&format!("not applied: hunks {held}")));
        r.write("a.js", &numbered(30));
    }
    let out = r.tern(&["apply", &reply, "--accept", &held], None);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(r.read("a.js").unwrap().contains("// note\u{2028}run()\n"));
}

#[test]
fn a_file_named_read_only_is_never_edited_even_when_every_file_is_editable() {
    let r = Repo::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let reply = r.reply(&(block("a.txt", "a\n", "A\n") + &block("b.txt", "b\n", "B\n")));
    // Without FILES every tracked file is editable, except the one named read-only.
    let out = r.tern(&["apply", &reply, "--read", "a.txt"], None);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("read-only"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(r.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(r.read("b.txt").as_deref(), Some("B\n"));
    // Named both ways, it is read-only.
    let reply = r.reply(&block("a.txt", "a\n", "A\n"));
    let out = r.tern(&["apply", &reply, "a.txt", "--read", "a.txt"], None);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert_eq!(r.read("a.txt").as_deref(), Some("a\n"));
}

/// Where an older tern saved the session of the repository at `root`: one file per
/// repository.
fn old_session_file(state: &Path, root: &Path) -> PathBuf {
    state
        .join("sessions")
        .join(format!("{}.json", tern::config::repo_key(root)))
}
