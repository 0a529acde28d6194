//! Git on real temporary repositories: committing exactly the accepted content, the
//! user's dirty changes first, unrelated staged work left alone, unborn branches,
//! detached HEADs, hooks, and undo with every refusal.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Once;

use git2::{Oid, Repository, Status};
use tern::edit::{ApplyOutcome, Decision, EditFormat, FileSet, Select, Workspace, propose};
use tern::git::{self, CommitOptions, GitError, NOTES_REF, UndoError, UndoRefusal};

const OPTS: CommitOptions<'static> = CommitOptions {
    verify_hooks: true,
    model: Some("gpt-test"),
    co_author_trailer: true,
    fail_at: None,
};

/// Keeps the developer's own global git config (hooksPath, templates) out of the tests.
fn isolate() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let empty = Path::new(env!("CARGO_TARGET_TMPDIR")).join("git-without-config");
        std::fs::create_dir_all(&empty).unwrap();
        for level in [
            git2::ConfigLevel::Global,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::System,
        ] {
            // SAFETY: called once, before any repository is opened by this test binary.
            unsafe { git2::opts::set_search_path(level, &empty).unwrap() };
        }
    });
}

fn new_repo() -> (tempfile::TempDir, Repository) {
    isolate();
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let mut cfg = repo.config().unwrap();
    cfg.set_str("user.name", "Test User").unwrap();
    cfg.set_str("user.email", "test@example.com").unwrap();
    (dir, repo)
}

fn write(repo: &Repository, path: &str, content: &str) {
    let p = repo.workdir().unwrap().join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn read(repo: &Repository, path: &str) -> String {
    std::fs::read_to_string(repo.workdir().unwrap().join(path)).unwrap()
}

/// Stages `paths` and commits them as the user would.
fn user_commit(repo: &Repository, paths: &[&str], message: &str) -> Oid {
    let mut index = repo.index().unwrap();
    for p in paths {
        index.add_path(Path::new(p)).unwrap();
    }
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = repo.signature().unwrap();
    let parents: Vec<git2::Commit<'_>> = repo
        .head()
        .ok()
        .map(|h| h.peel_to_commit().unwrap())
        .into_iter()
        .collect();
    let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .unwrap()
}

fn stage(repo: &Repository, path: &str) {
    let mut index = repo.index().unwrap();
    index.add_path(Path::new(path)).unwrap();
    index.write().unwrap();
}

fn blob_at(repo: &Repository, rev: &str, path: &str) -> Option<String> {
    let tree = repo
        .revparse_single(rev)
        .ok()?
        .peel_to_commit()
        .ok()?
        .tree()
        .ok()?;
    let entry = tree.get_path(Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    Some(String::from_utf8(blob.content().to_vec()).unwrap())
}

fn status(repo: &Repository, path: &str) -> Status {
    repo.status_file(Path::new(path)).unwrap()
}

fn changed_in(repo: &Repository, id: Oid) -> Vec<PathBuf> {
    let c = repo.find_commit(id).unwrap();
    let parent = c.parent(0).ok().map(|p| p.tree().unwrap());
    let diff = repo
        .diff_tree_to_tree(parent.as_ref(), Some(&c.tree().unwrap()), None)
        .unwrap();
    diff.deltas()
        .map(|d| d.new_file().path().unwrap().to_path_buf())
        .collect()
}

/// Proposes `reply` (SEARCH/REPLACE) in the repository, accepts the hunks `accept`
/// picks, applies, and returns the written paths.
fn apply(repo: &Repository, reply: &str, accept: impl Fn(usize) -> bool) -> Vec<PathBuf> {
    let ws = Workspace::discover(repo.workdir().unwrap()).unwrap();
    let files = FileSet::new(ws.files(), vec![]);
    let mut proposed = propose(&ws, reply, EditFormat::Editblock, &files);
    assert!(proposed.errors.is_empty(), "{:?}", proposed.errors);
    let ids: Vec<_> = proposed
        .proposal
        .files()
        .iter()
        .flat_map(|f| f.hunks())
        .map(|h| h.id)
        .collect();
    for (i, id) in ids.into_iter().enumerate() {
        let d = if accept(i) {
            Decision::Accept
        } else {
            Decision::Reject
        };
        proposed.proposal.decide(Select::Hunk(id), d).unwrap();
    }
    match proposed.proposal.apply() {
        ApplyOutcome::Applied(a) => a.written.into_iter().map(|w| w.real).collect(),
        other => panic!("{other:?}"),
    }
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n\n")
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[cfg(unix)]
fn hook(repo: &Repository, dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let _ = repo;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------- committing

#[test]
fn commits_only_the_edited_paths_and_keeps_unrelated_work() {
    let (_d, repo) = new_repo();
    write(&repo, "a.py", "a = 1\n");
    write(&repo, "b.py", "b = 1\n");
    write(&repo, "c.py", "c = 1\n");
    let base = user_commit(&repo, &["a.py", "b.py", "c.py"], "init");
    write(&repo, "b.py", "b = 2  # staged\n");
    stage(&repo, "b.py");
    write(&repo, "c.py", "c = 2  # dirty\n");

    let written = apply(&repo, &block("a.py", "a = 1\n", "a = 10\n"), |_| true);
    let commit = git::commit_edits(&repo, &written, "feat: bump a", &OPTS)
        .unwrap()
        .unwrap();

    assert_eq!(changed_in(&repo, commit.id), vec![PathBuf::from("a.py")]);
    assert_eq!(
        repo.find_commit(commit.id).unwrap().parent_id(0).unwrap(),
        base
    );
    assert_eq!(blob_at(&repo, "HEAD", "a.py").as_deref(), Some("a = 10\n"));
    assert_eq!(blob_at(&repo, "HEAD", "b.py").as_deref(), Some("b = 1\n"));
    assert_eq!(status(&repo, "a.py"), Status::CURRENT);
    assert_eq!(
        status(&repo, "b.py"),
        Status::INDEX_MODIFIED,
        "the staged change is still staged"
    );
    assert_eq!(
        status(&repo, "c.py"),
        Status::WT_MODIFIED,
        "the dirty change is still dirty"
    );
    assert_eq!(read(&repo, "c.py"), "c = 2  # dirty\n");
}

#[test]
fn partial_acceptance_commits_only_accepted_hunks() {
    let (_d, repo) = new_repo();
    write(&repo, "f.txt", &numbered(40));
    user_commit(&repo, &["f.txt"], "init");
    let reply = block("f.txt", "line 3\n", "LINE 3\n") + &block("f.txt", "line 30\n", "LINE 30\n");
    let written = apply(&repo, &reply, |i| i == 1);
    git::commit_edits(&repo, &written, "chore: edit", &OPTS)
        .unwrap()
        .unwrap();
    let want = numbered(40).replace("line 30\n", "LINE 30\n");
    assert_eq!(blob_at(&repo, "HEAD", "f.txt").unwrap(), want);
    assert_eq!(read(&repo, "f.txt"), want);
    assert_eq!(status(&repo, "f.txt"), Status::CURRENT);
}

#[test]
fn dirty_changes_are_committed_first_in_their_own_commit() {
    let (_d, repo) = new_repo();
    write(&repo, "a.py", &numbered(30));
    write(&repo, "b.py", "b\n");
    user_commit(&repo, &["a.py", "b.py"], "init");
    let users = numbered(30).replace("line 1\n", "# the user's own work\nline 1\n");
    write(&repo, "a.py", &users);

    let paths = [PathBuf::from("a.py"), PathBuf::from("b.py")];
    assert_eq!(
        git::dirty_paths(&repo, &paths).unwrap(),
        vec![PathBuf::from("a.py")]
    );
    let saved = git::commit_dirty(&repo, &paths, &OPTS).unwrap().unwrap();
    assert_eq!(saved.summary, "chore: save local changes to a.py");
    assert_eq!(blob_at(&repo, "HEAD", "a.py").unwrap(), users);
    assert!(
        git::commit_dirty(&repo, &paths, &OPTS).unwrap().is_none(),
        "clean now"
    );

    let written = apply(&repo, &block("a.py", "line 25\n", "LINE 25\n"), |_| true);
    let edit = git::commit_edits(&repo, &written, "feat: shout", &OPTS)
        .unwrap()
        .unwrap();
    let diff_of = |id: Oid| {
        let c = repo.find_commit(id).unwrap();
        let d = repo
            .diff_tree_to_tree(
                Some(&c.parent(0).unwrap().tree().unwrap()),
                Some(&c.tree().unwrap()),
                None,
            )
            .unwrap();
        let mut text = String::new();
        d.print(git2::DiffFormat::Patch, |_, _, l| {
            if matches!(l.origin(), '+' | '-') {
                text.push(l.origin());
                text.push_str(std::str::from_utf8(l.content()).unwrap());
            }
            true
        })
        .unwrap();
        text
    };
    assert_eq!(diff_of(saved.id), "+# the user's own work\n");
    assert_eq!(diff_of(edit.id), "-line 25\n+LINE 25\n");
    // Only the model's commit is marked as tern's, so undo never reverts the user's.
    assert!(repo.find_note(Some(NOTES_REF), saved.id).is_err());
    assert!(repo.find_note(Some(NOTES_REF), edit.id).is_ok());
    let message = repo
        .find_commit(saved.id)
        .unwrap()
        .message()
        .unwrap()
        .to_string();
    assert!(!message.contains("Co-authored-by"), "{message}");
}

#[test]
fn trailer_and_note_follow_the_options() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &["a.txt"], "init");
    write(&repo, "a.txt", "b\n");
    let with = git::commit_edits(&repo, &[PathBuf::from("a.txt")], "fix: b", &OPTS)
        .unwrap()
        .unwrap();
    let msg = repo
        .find_commit(with.id)
        .unwrap()
        .message()
        .unwrap()
        .to_string();
    assert_eq!(msg, "fix: b\n\nCo-authored-by: tern (gpt-test)\n");
    let note = repo.find_note(Some(NOTES_REF), with.id).unwrap();
    assert!(note.message().unwrap().contains("model: gpt-test"));

    write(&repo, "a.txt", "c\n");
    let off = CommitOptions {
        co_author_trailer: false,
        ..OPTS
    };
    let without = git::commit_edits(&repo, &[PathBuf::from("a.txt")], "fix: c", &off)
        .unwrap()
        .unwrap();
    assert_eq!(
        repo.find_commit(without.id).unwrap().message().unwrap(),
        "fix: c\n"
    );
    assert!(
        repo.find_note(Some(NOTES_REF), without.id).is_ok(),
        "still recognisable without the trailer"
    );
}

#[test]
fn nothing_to_commit_is_none() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &["a.txt"], "init");
    assert!(
        git::commit_edits(&repo, &[PathBuf::from("a.txt")], "x", &OPTS)
            .unwrap()
            .is_none()
    );
}

#[test]
fn unborn_branch_gets_its_first_commit() {
    let (_d, repo) = new_repo();
    write(&repo, "notes.txt", "mine\n");
    // An untracked file the user wrote is their uncommitted work too.
    let saved = git::commit_dirty(&repo, &[PathBuf::from("notes.txt")], &OPTS)
        .unwrap()
        .unwrap();
    assert_eq!(repo.find_commit(saved.id).unwrap().parent_count(), 0);

    let (_d2, fresh) = new_repo();
    let written = apply(&fresh, &block("src/main.py", "", "print('hi')\n"), |_| true);
    let c = git::commit_edits(&fresh, &written, "feat: add main", &OPTS)
        .unwrap()
        .unwrap();
    let head = fresh.head().unwrap();
    assert!(head.is_branch());
    assert_eq!(head.target(), Some(c.id));
    assert_eq!(
        blob_at(&fresh, "HEAD", "src/main.py").as_deref(),
        Some("print('hi')\n")
    );
    assert_eq!(status(&fresh, "src/main.py"), Status::CURRENT);
}

#[test]
fn detached_head_moves_along() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    let base = user_commit(&repo, &["a.txt"], "init");
    repo.set_head_detached(base).unwrap();
    write(&repo, "a.txt", "b\n");
    let c = git::commit_edits(&repo, &[PathBuf::from("a.txt")], "fix: b", &OPTS)
        .unwrap()
        .unwrap();
    assert!(repo.head_detached().unwrap());
    assert_eq!(repo.head().unwrap().target(), Some(c.id));
    assert_eq!(repo.find_commit(c.id).unwrap().parent_id(0).unwrap(), base);
}

#[test]
fn ignored_untracked_paths_are_written_but_not_committed() {
    let (_d, repo) = new_repo();
    write(&repo, ".gitignore", "*.log\n");
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &[".gitignore", "a.txt"], "init");
    write(&repo, "a.txt", "b\n");
    write(&repo, "debug.log", "x\n");
    let paths = [PathBuf::from("a.txt"), PathBuf::from("debug.log")];
    let c = git::commit_edits(&repo, &paths, "fix: b", &OPTS)
        .unwrap()
        .unwrap();
    assert_eq!(c.paths, vec![PathBuf::from("a.txt")]);
    assert_eq!(blob_at(&repo, "HEAD", "debug.log"), None);
}

#[test]
fn no_commit_or_undo_in_the_middle_of_a_merge() {
    let (d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &["a.txt"], "init");
    let c = tern_commit(&repo, "a.txt", "b\n");
    std::fs::write(d.path().join(".git/MERGE_HEAD"), format!("{c}\n")).unwrap();
    write(&repo, "a.txt", "c\n");
    let err = git::commit_edits(&repo, &[PathBuf::from("a.txt")], "fix: c", &OPTS).unwrap_err();
    assert!(
        matches!(err, GitError::Busy(ref s) if s == "merge"),
        "{err}"
    );
    assert!(matches!(
        git::undo(&repo),
        Err(UndoError::Git(GitError::Busy(_)))
    ));
    assert_eq!(repo.head().unwrap().target(), Some(c));
}

// ---------------------------------------------------------------- hooks

#[cfg(unix)]
#[test]
fn failing_pre_commit_hook_is_reported_and_nothing_is_committed() {
    let (d, repo) = new_repo();
    write(&repo, "a.py", "a = 1\n");
    let base = user_commit(&repo, &["a.py"], "init");
    hook(
        &repo,
        &d.path().join(".git/hooks"),
        "pre-commit",
        "echo 'lint: a.py has bad style' >&2\nexit 1",
    );
    write(&repo, "a.py", "a = 2\n");
    let err = git::commit_edits(&repo, &[PathBuf::from("a.py")], "fix: a", &OPTS).unwrap_err();
    match &err {
        GitError::Hook { hook, output, .. } => {
            assert_eq!(hook, "pre-commit");
            assert!(output.contains("lint: a.py has bad style"), "{output}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("nothing was committed"));
    assert_eq!(repo.head().unwrap().target(), Some(base));
    assert_eq!(
        status(&repo, "a.py"),
        Status::WT_MODIFIED,
        "the index was left as it was"
    );

    let skip = CommitOptions {
        verify_hooks: false,
        ..OPTS
    };
    assert!(
        git::commit_edits(&repo, &[PathBuf::from("a.py")], "fix: a", &skip)
            .unwrap()
            .is_some()
    );
}

#[cfg(unix)]
#[test]
fn pre_commit_hook_sees_exactly_the_commit() {
    let (d, repo) = new_repo();
    write(&repo, "a.py", "a\n");
    write(&repo, "b.py", "b\n");
    user_commit(&repo, &["a.py", "b.py"], "init");
    write(&repo, "b.py", "b staged\n");
    stage(&repo, "b.py");
    write(&repo, "a.py", "a edited\n");
    let out = d.path().join("hook-saw.txt");
    hook(
        &repo,
        &d.path().join(".git/hooks"),
        "pre-commit",
        &format!("git diff --cached --name-only > '{}'", out.display()),
    );
    git::commit_edits(&repo, &[PathBuf::from("a.py")], "fix: a", &OPTS)
        .unwrap()
        .unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "a.py\n");
}

#[cfg(unix)]
#[test]
fn hooks_path_and_commit_msg_hook_are_honoured() {
    let (d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &["a.txt"], "init");
    repo.config()
        .unwrap()
        .set_str("core.hooksPath", "githooks")
        .unwrap();
    hook(
        &repo,
        &d.path().join("githooks"),
        "commit-msg",
        "echo 'Reviewed-by: hook' >> \"$1\"",
    );
    write(&repo, "a.txt", "b\n");
    let c = git::commit_edits(&repo, &[PathBuf::from("a.txt")], "fix: b", &OPTS)
        .unwrap()
        .unwrap();
    let msg = repo
        .find_commit(c.id)
        .unwrap()
        .message()
        .unwrap()
        .to_string();
    assert!(
        msg.ends_with("Co-authored-by: tern (gpt-test)\nReviewed-by: hook\n"),
        "{msg}"
    );

    hook(
        &repo,
        &d.path().join("githooks"),
        "commit-msg",
        "echo 'message rejected' && exit 3",
    );
    write(&repo, "a.txt", "c\n");
    match git::commit_edits(&repo, &[PathBuf::from("a.txt")], "fix: c", &OPTS) {
        Err(GitError::Hook { hook, output, .. }) => {
            assert_eq!(hook, "commit-msg");
            assert_eq!(output, "message rejected");
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------- undo

fn tern_commit(repo: &Repository, path: &str, content: &str) -> Oid {
    write(repo, path, content);
    git::commit_edits(repo, &[PathBuf::from(path)], "feat: tern", &OPTS)
        .unwrap()
        .unwrap()
        .id
}

fn refusal(repo: &Repository) -> UndoRefusal {
    match git::undo(repo) {
        Err(UndoError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn undo_reverts_the_last_tern_commit() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    write(&repo, "keep.txt", "k\n");
    let base = user_commit(&repo, &["a.txt", "keep.txt"], "init");
    write(&repo, "keep.txt", "k staged\n");
    stage(&repo, "keep.txt");
    write(&repo, "a.txt", "A\n");
    write(&repo, "new.txt", "n\n");
    let c = git::commit_edits(
        &repo,
        &[PathBuf::from("a.txt"), PathBuf::from("new.txt")],
        "feat: x",
        &OPTS,
    )
    .unwrap()
    .unwrap();

    let undone = git::undo(&repo).unwrap();
    assert_eq!(undone.commit, c.id);
    assert_eq!(undone.head, base);
    assert_eq!(repo.head().unwrap().target(), Some(base));
    assert!(repo.head().unwrap().is_branch());
    assert_eq!(read(&repo, "a.txt"), "a\n");
    assert!(
        !repo.workdir().unwrap().join("new.txt").exists(),
        "a file the commit added is removed"
    );
    assert_eq!(status(&repo, "a.txt"), Status::CURRENT);
    assert_eq!(
        status(&repo, "keep.txt"),
        Status::INDEX_MODIFIED,
        "unrelated staged work survives"
    );
    // The commit before it was the user's: undo stops there.
    assert!(matches!(refusal(&repo), UndoRefusal::NotTern { .. }));
}

#[test]
fn undo_on_a_detached_head() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    let base = user_commit(&repo, &["a.txt"], "init");
    repo.set_head_detached(base).unwrap();
    tern_commit(&repo, "a.txt", "b\n");
    git::undo(&repo).unwrap();
    assert!(repo.head_detached().unwrap());
    assert_eq!(repo.head().unwrap().target(), Some(base));
    assert_eq!(read(&repo, "a.txt"), "a\n");
}

#[test]
fn undo_refuses_without_commits_or_a_tern_head() {
    let (_d, repo) = new_repo();
    assert_eq!(refusal(&repo), UndoRefusal::NoCommits);
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &["a.txt"], "init");
    write(&repo, "a.txt", "b\n");
    user_commit(&repo, &["a.txt"], "user's own");
    match refusal(&repo) {
        UndoRefusal::NotTern { summary, .. } => assert_eq!(summary, "user's own"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn undo_refuses_the_first_commit() {
    let (_d, repo) = new_repo();
    tern_commit(&repo, "a.txt", "a\n");
    assert_eq!(refusal(&repo), UndoRefusal::Root);
}

#[test]
fn undo_refuses_a_merge() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    let base = user_commit(&repo, &["a.txt"], "init");
    let side = tern_commit(&repo, "b.txt", "b\n");
    let sig = repo.signature().unwrap();
    let tree = repo.find_commit(side).unwrap().tree().unwrap();
    let parents = [
        &repo.find_commit(side).unwrap(),
        &repo.find_commit(base).unwrap(),
    ];
    let merge = repo
        .commit(Some("HEAD"), &sig, &sig, "merge", &tree, &parents)
        .unwrap();
    repo.note(&sig, &sig, Some(NOTES_REF), merge, "tern\n", true)
        .unwrap();
    assert_eq!(refusal(&repo), UndoRefusal::Merge);
}

#[test]
fn undo_refuses_when_the_files_changed_since() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &["a.txt"], "init");
    let c = tern_commit(&repo, "a.txt", "b\n");
    write(&repo, "a.txt", "user edit\n");
    assert_eq!(
        refusal(&repo),
        UndoRefusal::Dirty(vec![PathBuf::from("a.txt")])
    );
    assert_eq!(repo.head().unwrap().target(), Some(c));
    assert_eq!(read(&repo, "a.txt"), "user edit\n", "nothing touched");
}

#[test]
fn undo_refuses_a_commit_a_remote_branch_has() {
    let (_d, repo) = new_repo();
    write(&repo, "a.txt", "a\n");
    user_commit(&repo, &["a.txt"], "init");
    let c = tern_commit(&repo, "a.txt", "b\n");
    repo.reference("refs/remotes/origin/main", c, true, "push")
        .unwrap();
    assert_eq!(
        refusal(&repo),
        UndoRefusal::Published(vec!["origin/main".into()])
    );

    // A remote branch that is ahead of the commit contains it too.
    let (_d2, repo2) = new_repo();
    write(&repo2, "a.txt", "a\n");
    user_commit(&repo2, &["a.txt"], "init");
    let c2 = tern_commit(&repo2, "a.txt", "b\n");
    let sig = repo2.signature().unwrap();
    let tree = repo2.find_commit(c2).unwrap().tree().unwrap();
    let ahead = repo2
        .commit(
            None,
            &sig,
            &sig,
            "later",
            &tree,
            &[&repo2.find_commit(c2).unwrap()],
        )
        .unwrap();
    repo2
        .reference("refs/remotes/upstream/dev", ahead, true, "fetch")
        .unwrap();
    assert_eq!(
        refusal(&repo2),
        UndoRefusal::Published(vec!["upstream/dev".into()])
    );
}

#[test]
fn undo_takes_paths_literally_and_keeps_other_files_work() {
    let (_d, repo) = new_repo();
    for name in [
        "pages/[id].tsx",
        "pages/i.tsx",
        "pages/d.tsx",
        "src/*.rs",
        "src/main.rs",
    ] {
        write(&repo, name, "committed\n");
    }
    user_commit(
        &repo,
        &[
            "pages/[id].tsx",
            "pages/i.tsx",
            "pages/d.tsx",
            "src/*.rs",
            "src/main.rs",
        ],
        "init",
    );
    write(&repo, "pages/[id].tsx", "by tern\n");
    write(&repo, "src/*.rs", "by tern\n");
    git::commit_edits(
        &repo,
        &[PathBuf::from("pages/[id].tsx"), PathBuf::from("src/*.rs")],
        "feat: x",
        &OPTS,
    )
    .unwrap()
    .unwrap();
    // The user's own uncommitted work in files the globs would match.
    write(&repo, "pages/i.tsx", "mine, not committed\n");
    write(&repo, "src/main.rs", "mine too\n");
    git::undo(&repo).unwrap();
    assert_eq!(read(&repo, "pages/[id].tsx"), "committed\n");
    assert_eq!(read(&repo, "src/*.rs"), "committed\n");
    assert_eq!(read(&repo, "pages/i.tsx"), "mine, not committed\n");
    assert_eq!(read(&repo, "src/main.rs"), "mine too\n");
}

// ---------------------------------------------------------------- undo a turn

/// A repository with a user's first commit and a turn of three tern commits, one file
/// each; returns the turn's commits, oldest first, and the base.
fn three_commit_turn() -> (tempfile::TempDir, Repository, Vec<Oid>, Oid) {
    let (d, repo) = new_repo();
    for f in ["a.txt", "b.txt", "c.txt"] {
        write(&repo, f, "old\n");
    }
    let base = user_commit(&repo, &["a.txt", "b.txt", "c.txt"], "init");
    let turn = ["a.txt", "b.txt", "c.txt"]
        .iter()
        .map(|f| tern_commit(&repo, f, "new\n"))
        .collect();
    (d, repo, turn, base)
}

#[test]
fn a_three_commit_turn_is_undone_newest_first() {
    let (_d, repo, turn, base) = three_commit_turn();
    let done = git::undo_turn(&repo, &turn).unwrap();
    assert!(done.stopped.is_none(), "{done}");
    let order: Vec<Oid> = done.undone.iter().map(|u| u.commit).collect();
    assert_eq!(order, turn.iter().rev().copied().collect::<Vec<_>>());
    assert_eq!(repo.head().unwrap().target(), Some(base));
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(read(&repo, f), "old\n", "{f}");
        assert_eq!(status(&repo, f), Status::CURRENT, "{f}");
    }
    let said = done.to_string();
    assert_eq!(said.matches("undid ").count(), 3, "{said}");
}

#[test]
fn a_commit_of_the_users_on_top_refuses_the_turn_and_changes_nothing() {
    let (_d, repo, turn, _) = three_commit_turn();
    write(&repo, "notes.txt", "mine\n");
    let mine = user_commit(&repo, &["notes.txt"], "my own work");
    let e = git::undo_turn(&repo, &turn).unwrap_err();
    assert!(
        matches!(&e, UndoError::Turn(git::TurnRefusal::NotNewest { summary, .. }) if summary == "my own work"),
        "{e:?}"
    );
    let said = e.to_string();
    assert!(said.contains(&git::short_id(mine)), "{said}");
    // The front ends say that nothing was changed, once (`tern rewind` adds it).
    assert!(!said.contains("nothing was changed"), "{said}");
    // It is on top of the turn's commit, not in its place.
    assert!(
        said.contains(&format!(
            "\"my own work\" was committed on top of its commit {}",
            git::short_id(*turn.last().unwrap())
        )),
        "{said}"
    );
    assert_eq!(repo.head().unwrap().target(), Some(mine));
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(read(&repo, f), "new\n", "{f}");
    }
    // Commits that are not this turn's (or are no longer there) are refused the same way.
    assert!(matches!(
        git::undo_turn(&repo, &[]),
        Err(UndoError::Turn(git::TurnRefusal::NoTurn))
    ));
}

/// The middle commit was pushed after the turn: the newest is undone, the push stops
/// the rest, and the report says which were undone and which not.
#[test]
fn a_turn_stops_at_a_commit_that_cannot_be_undone_and_says_so() {
    let (_d, repo, turn, _) = three_commit_turn();
    repo.reference("refs/remotes/origin/main", turn[1], true, "push")
        .unwrap();
    let done = git::undo_turn(&repo, &turn).unwrap();
    assert_eq!(done.undone.len(), 1);
    assert_eq!(done.undone[0].commit, turn[2]);
    let stopped = done.stopped.as_ref().expect("stopped at the pushed commit");
    assert_eq!(stopped.at, turn[1]);
    assert_eq!(stopped.left, vec![turn[1], turn[0]]);
    assert!(matches!(
        stopped.why,
        UndoError::Refused(UndoRefusal::Published(_))
    ));
    assert_eq!(repo.head().unwrap().target(), Some(turn[1]));
    assert_eq!(read(&repo, "c.txt"), "old\n");
    assert_eq!(read(&repo, "b.txt"), "new\n");
    assert_eq!(read(&repo, "a.txt"), "new\n");
    let said = done.to_string();
    assert!(
        said.contains(&format!("stopped at {}", git::short_id(turn[1]))),
        "{said}"
    );
    assert!(said.contains("origin/main"), "{said}");
    assert!(
        said.ends_with(&format!(
            "not undone: {}, {}",
            git::short_id(turn[1]),
            git::short_id(turn[0])
        )),
        "{said}"
    );
}
