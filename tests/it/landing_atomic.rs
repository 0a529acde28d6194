//! A landing is all or nothing: git's `index.lock` is taken for all of it (a present
//! one refuses, naming it), the commit holds exactly the bytes tern wrote, the branch
//! moves by compare and swap, and a failure injected at any step leaves HEAD, the
//! index, the work tree and tern's notes exactly as they were.

use std::collections::BTreeMap;
use std::path::Path;

use strum::IntoEnumIterator;

use crate::landing::{OPTIONS, block, committed, proposal};
use crate::support::TempRepo;
use tern::edit::Proposal;
use tern::git::{self, CommitOptions, FailAt, LandOptions, Landed, Step, UndoError, UndoRefusal};

fn options(fail_at: Option<FailAt>) -> LandOptions<'static> {
    LandOptions {
        commit_options: CommitOptions {
            fail_at,
            ..OPTIONS.commit_options
        },
        ..OPTIONS
    }
}

fn accepted(repo: &TempRepo, reply: &str) -> Proposal {
    let out = proposal(repo, reply);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    out.proposal
}

fn land(repo: &TempRepo, proposal: &mut Proposal, fail_at: Option<FailAt>) -> Landed {
    git::land(Some(&repo.repo), proposal, options(fail_at), |_| {
        "feat: shout".into()
    })
}

/// Everything a landing could change that the user can see.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    refs: String,
    index: Vec<u8>,
    files: BTreeMap<String, Vec<u8>>,
    status: String,
}

fn snapshot(repo: &TempRepo) -> Snapshot {
    let mut files = BTreeMap::new();
    let mut dirs = vec![repo.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(repo.path()).unwrap();
                files.insert(rel.display().to_string(), std::fs::read(&path).unwrap());
            }
        }
    }
    Snapshot {
        // HEAD, every branch and refs/notes/tern.
        refs: repo.git(&["show-ref", "--head"]),
        index: std::fs::read(repo.path().join(".git/index")).unwrap_or_default(),
        files,
        // `git status` may rewrite the index to refresh its stat data (more often on a
        // loaded machine, where a file's mtime shares the index's second): without the
        // optional lock it only reads, so two snapshots differ only where tern wrote.
        status: repo.git(&[
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
        ]),
    }
}

/// A repository with tern's history (a commit with a note), the user's own
/// uncommitted change to a file tern edits (so a dirty commit is made first) and a
/// staged change to another, and a reply editing two files.
fn busy_repo() -> (TempRepo, String) {
    let repo = TempRepo::with_files(&[
        ("a.txt", "one\ntwo\n"),
        ("b.txt", "bee\n"),
        ("c.txt", "sea\n"),
    ]);
    let mut first = accepted(&repo, &block("c.txt", "sea\n", "SEA\n"));
    assert!(matches!(
        land(&repo, &mut first, None),
        Landed::Written {
            commit: Some(_),
            ..
        }
    ));
    repo.write("a.txt", "one\ntwo\nmine\n");
    repo.write("c.txt", "SEA\nstaged\n");
    repo.git(&["add", "c.txt"]);
    let reply = block("a.txt", "one\n", "ONE\n") + &block("b.txt", "bee\n", "BEE\n");
    (repo, reply)
}

#[test]
fn a_failure_injected_at_any_step_leaves_the_repository_exactly_as_it_was() {
    // Each step, for the commit of the user's own changes (1) and tern's (2).
    let mut tried = 0;
    // `Moved` is a step of a move of HEAD, which no landing reaches.
    let steps = || Step::iter().filter(|s| *s != Step::Moved);
    for step in steps() {
        for nth in [1, 2] {
            let (repo, reply) = busy_repo();
            let before = snapshot(&repo);
            let mut proposal = accepted(&repo, &reply);
            let fail_at = FailAt { step, nth };
            let landed = land(&repo, &mut proposal, Some(fail_at));
            let error = match &landed {
                Landed::Refused(e) | Landed::DirtyCommitFailed(e) => e.to_string(),
                Landed::RolledBack {
                    error,
                    not_restored,
                } => {
                    assert!(not_restored.is_empty(), "{fail_at:?}: {not_restored:?}");
                    error.to_string()
                }
                // The step comes once per landing: its second time never comes.
                Landed::Written { .. } if nth == 2 => continue,
                other => panic!("{fail_at:?}: {other:?}"),
            };
            tried += 1;
            assert!(
                error.contains(&format!("failure injected at step {step}")),
                "{fail_at:?}: {error}"
            );
            assert_eq!(snapshot(&repo), before, "{fail_at:?}: {landed:?}");
            assert!(!repo.path().join(".git/index.lock").exists(), "{fail_at:?}");
            // The proposal is as it was: landing it again lands all of it.
            let Landed::Written {
                dirty: Some(_),
                commit: Some(commit),
                ..
            } = land(&repo, &mut proposal, None)
            else {
                panic!("{fail_at:?}: the proposal did not land again");
            };
            assert_eq!(commit.paths.len(), 2, "{fail_at:?}");
            assert_eq!(repo.read("a.txt"), "ONE\ntwo\nmine\n");
            assert_eq!(repo.git(&["diff", "--cached", "--name-only"]), "c.txt\n");
        }
    }
    assert!(tried >= steps().count() + 3, "{tried} failures tried");
}

#[test]
fn a_present_index_lock_refuses_naming_it_and_commits_nothing_not_even_the_users_changes() {
    let (repo, reply) = busy_repo();
    std::fs::write(repo.path().join(".git/index.lock"), "").unwrap();
    let before = snapshot(&repo);
    let mut proposal = accepted(&repo, &reply);
    let landed = land(&repo, &mut proposal, None);
    let Landed::Refused(e) = &landed else {
        panic!("{landed:?}")
    };
    let lock = repo.path().join(".git/index.lock");
    assert!(e.to_string().contains(&lock.display().to_string()), "{e}");
    assert!(e.to_string().contains("another git process"), "{e}");
    assert_eq!(snapshot(&repo), before);
    assert!(lock.exists(), "git's lock is git's: tern leaves it");
    // /commit and undo respect it too.
    let options = options(None).commit_options;
    let commit = git::commit_user_changes(&repo.repo, &["a.txt".into()], None, &options);
    assert!(
        matches!(commit, Err(git::GitError::IndexLocked(_))),
        "{commit:?}"
    );
    assert!(matches!(
        git::undo(&repo.repo),
        Err(UndoError::Git(git::GitError::IndexLocked(_)))
    ));
    assert_eq!(snapshot(&repo), before);
}

#[cfg(unix)]
#[test]
fn git_refuses_to_write_the_index_while_tern_lands_and_hooks_still_get_their_index() {
    let repo = TempRepo::with_files(&[("a.txt", "one\n"), ("other.txt", "x\n")]);
    repo.write("other.txt", "y\n");
    // The hook sees its own index (GIT_INDEX_FILE, holding the commit's tree), and a
    // git command writing the repository's index fails: tern holds git's lock.
    repo.hook(
        "pre-commit",
        r#"git diff --cached --name-only > .git/hook-saw
test -n "$GIT_INDEX_FILE" || exit 1
(unset GIT_INDEX_FILE; git add other.txt) 2> .git/hook-git-add || true"#,
    );
    let mut proposal = accepted(&repo, &block("a.txt", "one\n", "ONE\n"));
    let landed = land(&repo, &mut proposal, None);
    committed(&landed);
    assert_eq!(repo.read(".git/hook-saw"), "a.txt\n");
    let refused = repo.read(".git/hook-git-add");
    assert!(refused.contains("index.lock"), "{refused}");
    assert_eq!(repo.git(&["diff", "--cached", "--name-only"]), "");
    assert!(!repo.path().join(".git/index.lock").exists());
}

#[cfg(unix)]
#[test]
fn the_commit_holds_the_bytes_tern_wrote_and_a_save_since_stays_the_users() {
    let repo = TempRepo::with_files(&[("a.txt", "one\ntwo\n")]);
    // The user saves the file while the commit is being made (here: from the hook).
    repo.hook("pre-commit", "printf 'saved by the user\\n' >> a.txt");
    let mut proposal = accepted(&repo, &block("a.txt", "one\n", "ONE\n"));
    let Landed::Written {
        commit: Some(commit),
        ..
    } = land(&repo, &mut proposal, None)
    else {
        panic!("no commit")
    };
    let committed = repo.git(&["show", &format!("{}:a.txt", commit.id)]);
    assert_eq!(committed, "ONE\ntwo\n", "only what tern wrote");
    assert_eq!(repo.read("a.txt"), "ONE\ntwo\nsaved by the user\n");
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        " M a.txt\n",
        "the save is the user's, uncommitted"
    );
    // Undo would take the user's line away: it refuses.
    match git::undo(&repo.repo) {
        Err(UndoError::Refused(UndoRefusal::Dirty(paths))) => {
            assert_eq!(paths, vec![Path::new("a.txt").to_path_buf()]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(repo.read("a.txt"), "ONE\ntwo\nsaved by the user\n");
}

#[cfg(unix)]
#[test]
fn a_branch_moved_by_someone_else_during_the_landing_is_kept_and_tern_rolls_back() {
    let repo = TempRepo::with_files(&[("a.txt", "one\n")]);
    // Someone commits meanwhile without the index (update-ref needs no index.lock).
    repo.hook(
        "pre-commit",
        r#"unset GIT_INDEX_FILE
c=$(git commit-tree 'HEAD^{tree}' -p HEAD -m theirs) && git update-ref HEAD "$c""#,
    );
    let mut proposal = accepted(&repo, &block("a.txt", "one\n", "ONE\n"));
    let landed = land(&repo, &mut proposal, None);
    let Landed::RolledBack {
        error,
        not_restored,
    } = &landed
    else {
        panic!("{landed:?}")
    };
    assert!(error.to_string().contains("main moved from"), "{error}");
    assert!(not_restored.is_empty());
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]), "theirs\n");
    assert_eq!(repo.read("a.txt"), "one\n", "the file is put back");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[cfg(unix)]
#[test]
fn a_refusing_hook_puts_the_files_back_and_commits_nothing() {
    let (repo, reply) = busy_repo();
    repo.hook("commit-msg", "echo 'no thanks' >&2; exit 1");
    let before = snapshot(&repo);
    let mut proposal = accepted(&repo, &reply);
    let landed = land(&repo, &mut proposal, None);
    let Landed::DirtyCommitFailed(e) = &landed else {
        panic!("{landed:?}")
    };
    assert!(e.to_string().contains("no thanks"), "{e}");
    assert_eq!(snapshot(&repo), before);
    // Only tern's commit refused (the second commit-msg): the files are put back.
    repo.hook(
        "commit-msg",
        "grep -q '^feat' \"$1\" && { echo 'no thanks' >&2; exit 1; }; exit 0",
    );
    let landed = land(&repo, &mut proposal, None);
    let Landed::RolledBack { error, .. } = &landed else {
        panic!("{landed:?}")
    };
    assert!(error.to_string().contains("no thanks"), "{error}");
    assert_eq!(snapshot(&repo), before);
}

#[test]
fn a_new_file_and_its_new_directories_are_removed_when_the_landing_rolls_back() {
    let repo = TempRepo::with_files(&[("a.txt", "one\n")]);
    let before = snapshot(&repo);
    let mut proposal = accepted(
        &repo,
        &(block("deep/er/new.txt", "", "fresh\n") + &block("a.txt", "one\n", "ONE\n")),
    );
    let fail_at = FailAt {
        step: Step::Ref,
        nth: 1,
    };
    let landed = land(&repo, &mut proposal, Some(fail_at));
    assert!(matches!(landed, Landed::RolledBack { .. }), "{landed:?}");
    assert_eq!(snapshot(&repo), before);
    assert!(!repo.path().join("deep").exists());
}

#[test]
fn an_undo_failing_at_any_step_leaves_the_repository_exactly_as_it_was() {
    for step in [Step::IndexLock, Step::Index, Step::Ref, Step::IndexCommit] {
        let repo = TempRepo::with_files(&[("a.txt", "one\n"), ("b.txt", "bee\n")]);
        let mut proposal = accepted(
            &repo,
            &(block("a.txt", "one\n", "ONE\n") + &block("new/c.txt", "", "sea\n")),
        );
        committed(&land(&repo, &mut proposal, None));
        repo.write("b.txt", "bee\nmine\n");
        let before = snapshot(&repo);
        let fail_at = FailAt { step, nth: 1 };
        let e = git::undo_failing(&repo.repo, Some(fail_at)).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("failure injected at step {step}")),
            "{step}: {e}"
        );
        assert_eq!(snapshot(&repo), before, "{step}");
        assert!(!repo.path().join(".git/index.lock").exists(), "{step}");
        // And then it undoes.
        git::undo(&repo.repo).unwrap();
        assert_eq!(repo.read("a.txt"), "one\n");
        assert!(!repo.path().join("new/c.txt").exists());
        assert_eq!(repo.git(&["status", "--porcelain"]), " M b.txt\n");
    }
}

#[test]
fn the_bytes_tern_wrote_go_through_gits_end_of_line_conversion_as_a_save_would() {
    let repo = TempRepo::empty();
    repo.repo
        .config()
        .unwrap()
        .set_bool("core.autocrlf", true)
        .unwrap();
    repo.write("a.txt", "one\r\ntwo\r\n");
    repo.commit("initial");
    assert_eq!(repo.git(&["show", "HEAD:a.txt"]), "one\ntwo\n");
    let mut proposal = accepted(&repo, &block("a.txt", "one\n", "ONE\n"));
    let commit = committed(&land(&repo, &mut proposal, None)).clone();
    assert_eq!(
        repo.read("a.txt"),
        "ONE\r\ntwo\r\n",
        "the file keeps its CRLF"
    );
    assert_eq!(
        repo.git(&["show", &format!("{}:a.txt", commit.id)]),
        "ONE\ntwo\n",
        "the commit holds what git would store"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[cfg(unix)]
#[test]
fn an_executable_stays_executable_in_the_commit() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TempRepo::empty();
    repo.write("run.sh", "echo one\n");
    let path = repo.path().join("run.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.commit("initial");
    let mut proposal = accepted(&repo, &block("run.sh", "echo one\n", "echo ONE\n"));
    committed(&land(&repo, &mut proposal, None));
    assert!(
        repo.git(&["ls-tree", "HEAD", "run.sh"])
            .starts_with("100755")
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
