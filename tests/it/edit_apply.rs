//! Proposals and applying them: partial acceptance, concurrent modification, encodings
//! and line endings, permissions, confirmation of ignored files, and every path tern
//! refuses to write.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tern::edit::{
    Applied, ApplyOutcome, Decision, Edit, EditFormat, EditKind, FileSet, Occurrence, Problem,
    Proposal, Proposed, Refusal, Select, Workspace, propose, reflection_message,
};

fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    dir
}

fn editblock(dir: &Path, reply: &str) -> Proposed {
    let ws = Workspace::discover(dir).unwrap();
    let files = FileSet::new(ws.files(), vec![]);
    propose(&ws, reply, EditFormat::Editblock, &files)
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n\n")
}

fn applied(outcome: ApplyOutcome) -> Applied {
    match outcome {
        ApplyOutcome::Applied(a) => a,
        other => panic!("expected Applied, got {other:?}"),
    }
}

fn read(dir: &Path, path: &str) -> Vec<u8> {
    std::fs::read(dir.join(path)).unwrap()
}

// ---------------------------------------------------------------- partial acceptance

/// The original with the given (old range, new lines) hunks spliced in: an oracle
/// written independently of `content_with`.
fn splice(
    original: &[String],
    proposed: &[String],
    hunks: &[(std::ops::Range<usize>, std::ops::Range<usize>)],
) -> Vec<String> {
    let mut out = original.to_vec();
    for (old, new) in hunks.iter().rev() {
        out.splice(old.clone(), proposed[new.clone()].iter().cloned());
    }
    out
}

fn lines_text(lines: &[String], ending: &str) -> String {
    lines.iter().map(|l| format!("{l}{ending}")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// For any subset of accepted hunks the written file is the original with exactly
    /// those hunks; all gives the proposed content, none the original, in LF and CRLF.
    #[test]
    fn any_subset_of_hunks_applies_exactly_those(
        original_len in 1usize..60,
        changes in proptest::collection::vec((0usize..60, 0usize..3, 0usize..3), 1..8),
        accept_bits in any::<u64>(),
        crlf in any::<bool>(),
    ) {
        let ending = if crlf { "\r\n" } else { "\n" };
        let original: Vec<String> = (0..original_len).map(|i| format!("line {i}")).collect();
        let mut proposed = original.clone();
        for (k, (at, delete, insert)) in changes.iter().enumerate() {
            let at = at % (proposed.len() + 1);
            let end = (at + delete).min(proposed.len());
            let new: Vec<String> = (0..*insert).map(|j| format!("new {k}.{j}")).collect();
            proposed.splice(at..end, new);
        }
        // An empty whole-file block is refused (it would truncate the file).
        prop_assume!(!proposed.is_empty());
        let dir = dir_with(&[("f.txt", lines_text(&original, ending).as_bytes())]);
        let ws = Workspace::discover(dir.path()).unwrap();
        let edit = Edit {
            block: 1,
            path: PathBuf::from("f.txt"),
            kind: EditKind::Whole { content: lines_text(&proposed, "\n"), new_file: false },
            source: String::new(),
        };
        let (mut proposal, errors) = Proposal::build(&ws, &[edit], &FileSet::default());
        prop_assert!(errors.is_empty());
        if original == proposed {
            prop_assert!(proposal.is_empty());
            return Ok(());
        }
        let hunks = proposal.files()[0].hunks().to_vec();
        let accepted: Vec<_> = hunks
            .iter()
            .enumerate()
            .filter(|(i, _)| accept_bits >> (i % 64) & 1 == 1)
            .map(|(_, h)| h)
            .collect();
        for h in &hunks {
            let d = if accepted.iter().any(|a| a.id == h.id) { Decision::Accept } else { Decision::Reject };
            proposal.decide(Select::Hunk(h.id), d).unwrap();
        }
        let file = &proposal.files()[0];
        let all = file.content_with(|_| true);
        prop_assert_eq!(String::from_utf8(all).unwrap(), lines_text(&proposed, ending));
        let none = file.content_with(|_| false);
        prop_assert_eq!(String::from_utf8(none).unwrap(), lines_text(&original, ending));

        let outcome = proposal.apply();
        let on_disk = String::from_utf8(read(dir.path(), "f.txt")).unwrap();
        let ranges: Vec<_> = accepted.iter().map(|h| (h.old.clone(), h.new.clone())).collect();
        let want = lines_text(&splice(&original, &proposed, &ranges), ending);
        prop_assert_eq!(on_disk, want);
        if accepted.is_empty() {
            prop_assert!(applied(outcome).written.is_empty());
        } else {
            prop_assert_eq!(applied(outcome).written[0].hunks.len(), accepted.len());
        }
    }
}

#[test]
fn rejected_hunks_stay_in_the_proposal_and_can_be_applied_later() {
    let text: String = (0..40).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes())]);
    let reply = block("a.txt", "l5\n", "L5\n") + &block("a.txt", "l30\n", "L30\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    let ids: Vec<_> = p.files()[0].hunks().iter().map(|h| h.id).collect();
    assert_eq!(ids.len(), 2);
    p.decide(Select::Hunk(ids[0]), Decision::Accept).unwrap();
    p.decide(Select::Hunk(ids[1]), Decision::Reject).unwrap();
    let summary = p.clone().rejected_summary().unwrap();
    let first = applied(p.apply());
    assert_eq!(first.written[0].hunks, vec![ids[0]]);
    assert!(first.diff.contains("+L5") && !first.diff.contains("+L30"));
    assert_eq!(
        read(dir.path(), "a.txt"),
        text.replace("l5\n", "L5\n").into_bytes()
    );
    assert!(
        summary.contains("+L30") && !summary.contains("+L5"),
        "{summary}"
    );
    assert!(summary.contains(&ids[1].to_string()));

    // What is left is the rejected hunk, same id, same decision; accept it now.
    let left: Vec<_> = p.files()[0]
        .hunks()
        .iter()
        .map(|h| (h.id, h.decision))
        .collect();
    assert_eq!(left, vec![(ids[1], Decision::Reject)]);
    p.decide(Select::Hunk(ids[1]), Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(
        read(dir.path(), "a.txt"),
        text.replace("l5\n", "L5\n")
            .replace("l30\n", "L30\n")
            .into_bytes()
    );
    assert!(p.is_empty());
    assert_eq!(p.rejected_summary(), None);
}

#[test]
fn pending_hunks_are_not_written_and_files_decide_together() {
    let dir = dir_with(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let reply = block("a.txt", "a\n", "A\n") + &block("b.txt", "b\n", "B\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    assert_eq!(
        p.decide(Select::File(Path::new("b.txt")), Decision::Accept),
        Ok(1)
    );
    assert!(
        p.decide(Select::File(Path::new("c.txt")), Decision::Accept)
            .is_err()
    );
    let out = applied(p.apply());
    assert_eq!(out.written.len(), 1);
    assert_eq!(read(dir.path(), "a.txt"), b"a\n");
    assert_eq!(read(dir.path(), "b.txt"), b"B\n");
}

#[test]
fn hunk_ids_parse_back_and_lines_carry_numbers() {
    let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes())]);
    let p = editblock(dir.path(), &block("a.txt", "l5\n", "five\nFIVE\n")).proposal;
    let file = &p.files()[0];
    let id = file.hunks()[0].id;
    assert_eq!(id.to_string().parse::<tern::edit::HunkId>(), Ok(id));
    let lines = file.hunk_lines(0, 3);
    let shown: Vec<(Option<usize>, Option<usize>, &str)> = lines
        .iter()
        .map(|l| (l.old_line, l.new_line, l.text))
        .collect();
    assert_eq!(
        shown,
        vec![
            (Some(2), Some(2), "l2"),
            (Some(3), Some(3), "l3"),
            (Some(4), Some(4), "l4"),
            (Some(5), None, "l5"),
            (None, Some(5), "five"),
            (None, Some(6), "FIVE"),
            (Some(6), Some(7), "l6"),
            (Some(7), Some(8), "l7"),
            (Some(8), Some(9), "l8"),
        ]
    );
    let diff = tern::edit::unified_diff(file, |_| true, false);
    assert!(
        diff.starts_with(&format!("--- a/a.txt\n+++ b/a.txt\n@@ -2,7 +2,8 @@ {id}\n")),
        "{diff}"
    );
}

// ---------------------------------------------------------------- concurrent modification

#[test]
fn file_changed_on_disk_is_rediffed_not_overwritten() {
    let text: String = (0..30).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes())]);
    let reply = block("a.txt", "l3\n", "L3\n") + &block("a.txt", "l25\n", "L25\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    let ids: Vec<_> = p.files()[0].hunks().iter().map(|h| h.id).collect();
    p.decide(Select::Hunk(ids[0]), Decision::Accept).unwrap();
    p.decide(Select::Hunk(ids[1]), Decision::Reject).unwrap();

    // The user edits the file in their editor meanwhile.
    let theirs = text.replace("l14\n", "user was here\n");
    std::fs::write(dir.path().join("a.txt"), &theirs).unwrap();
    match p.apply() {
        ApplyOutcome::Stale(stale) => {
            assert_eq!(stale.len(), 1);
            assert_eq!(stale[0].path, Path::new("a.txt"));
            assert!(stale[0].errors.is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        read(dir.path(), "a.txt"),
        theirs.as_bytes(),
        "nothing overwritten"
    );
    // Each hunk found again in their content: same ids, and every decision back to
    // pending so the user reviews the new state.
    let after: Vec<_> = p.files()[0]
        .hunks()
        .iter()
        .map(|h| (h.id, h.decision))
        .collect();
    assert_eq!(
        after,
        vec![(ids[0], Decision::Pending), (ids[1], Decision::Pending)]
    );
    p.decide(Select::Hunk(ids[0]), Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(
        read(dir.path(), "a.txt"),
        theirs.replace("l3\n", "L3\n").into_bytes()
    );
}

#[test]
fn concurrent_change_that_breaks_an_edit_reports_it() {
    let dir = dir_with(&[("a.txt", b"alpha\nbeta\n")]);
    let mut p = editblock(dir.path(), &block("a.txt", "beta\n", "BETA\n")).proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\ngamma\n").unwrap();
    match p.apply() {
        ApplyOutcome::Stale(stale) => {
            assert!(matches!(stale[0].errors[0].problem, Problem::Stale(_)));
        }
        other => panic!("{other:?}"),
    }
    assert!(p.is_empty(), "no hunk of the broken edit is left to apply");
    assert_eq!(read(dir.path(), "a.txt"), b"alpha\ngamma\n");
}

#[test]
fn stale_file_rematches_each_hunk_by_its_own_lines() {
    // A rename in two places; meanwhile the user adds a line that the first SEARCH
    // would also match. Re-running the blocks would rename the user's line and drop a
    // hunk; each hunk found by its own lines and context lands where it was meant.
    let text = "fn a() {\n    old_name();\n}\n\nfn b() {}\nfn c() {}\nfn d() {}\nfn e() {}\n\nfn f() {\n    old_name();\n}\n";
    let dir = dir_with(&[("r.rs", text.as_bytes())]);
    let reply = block("r.rs", "    old_name();\n", "    new_name();\n")
        + &block(
            "r.rs",
            "fn f() {\n    old_name();\n",
            "fn f() {\n    new_name();\n",
        );
    let mut p = editblock(dir.path(), &reply).proposal;
    assert_eq!(p.hunk_count(), 2);
    p.decide(Select::All, Decision::Accept).unwrap();
    let theirs = format!("// old_name();\n{text}");
    std::fs::write(dir.path().join("r.rs"), &theirs).unwrap();
    match p.apply() {
        ApplyOutcome::Stale(stale) => assert!(stale[0].errors.is_empty()),
        other => panic!("{other:?}"),
    }
    assert_eq!(p.hunk_count(), 2, "no hunk disappeared");
    p.decide(Select::All, Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(
        String::from_utf8(read(dir.path(), "r.rs")).unwrap(),
        format!("// old_name();\n{}", text.replace("old_name", "new_name"))
    );
}

#[test]
fn stale_hunk_whose_lines_changed_is_reported_failed_not_dropped_silently() {
    let text: String = (0..30).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes())]);
    let reply = block("a.txt", "l3\n", "L3\n") + &block("a.txt", "l25\n", "L25\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    std::fs::write(dir.path().join("a.txt"), text.replace("l24\n", "theirs\n")).unwrap();
    let ApplyOutcome::Stale(stale) = p.apply() else {
        panic!("stale expected")
    };
    assert_eq!(stale[0].errors.len(), 1);
    assert!(stale[0].errors[0].to_string().contains("no longer applies"));
    assert!(
        stale[0].errors[0].source.contains("+L25"),
        "{}",
        stale[0].errors[0].source
    );
    assert_eq!(p.hunk_count(), 1);
    assert_eq!(p.files()[0].hunks()[0].decision, Decision::Pending);
}

#[test]
fn a_saved_proposal_restores_with_its_decisions_or_reviews_again() {
    let text: String = (0..40).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes())]);
    let reply = block("a.txt", "l3\n", "L3\n")
        + &block("a.txt", "l30\n", "L30\n")
        + &block("new.txt", "", "fresh\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    let ids: Vec<_> = p.hunk_ids().collect();
    p.decide(Select::Hunk(ids[0]), Decision::Accept).unwrap();
    p.decide(Select::Hunk(ids[1]), Decision::Reject).unwrap();
    let saved = serde_json::to_string(&p.snapshot()).unwrap();
    let saved: tern::edit::ProposalSnapshot = serde_json::from_str(&saved).unwrap();
    let ws = Workspace::discover(dir.path()).unwrap();

    // Nothing changed: the same hunks with the same decisions.
    let (restored, errors) = Proposal::restore(&ws, &saved);
    assert!(errors.is_empty(), "{errors:?}");
    let decisions = |p: &Proposal| {
        p.files()
            .iter()
            .flat_map(|f| f.hunks().iter().map(|h| (h.id, h.decision)))
            .collect::<Vec<_>>()
    };
    assert_eq!(decisions(&restored), decisions(&p));

    // The file changed: what still applies is found again, all pending; what does
    // not is reported, never applied somewhere else.
    std::fs::write(
        dir.path().join("a.txt"),
        format!("top\n{}", text.replace("l29\n", "theirs\n")),
    )
    .unwrap();
    let (mut restored, errors) = Proposal::restore(&ws, &saved);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].source.contains("+L30"));
    assert!(
        decisions(&restored)
            .iter()
            .all(|(_, d)| *d == Decision::Pending)
    );
    restored.decide(Select::All, Decision::Accept).unwrap();
    applied(restored.apply());
    assert_eq!(
        read(dir.path(), "a.txt"),
        format!(
            "top\n{}",
            text.replace("l29\n", "theirs\n").replace("l3\n", "L3\n")
        )
        .into_bytes()
    );
    assert_eq!(read(dir.path(), "new.txt"), b"fresh\n");
}

#[test]
fn a_proposal_that_deletes_most_of_a_file_says_so() {
    let text: String = (0..21).map(|i| format!("line {i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes())]);
    let ws = Workspace::discover(dir.path()).unwrap();
    let whole = |content: &str| Edit {
        block: 1,
        path: PathBuf::from("a.txt"),
        kind: EditKind::Whole {
            content: content.into(),
            new_file: false,
        },
        source: String::new(),
    };
    let (p, _) = Proposal::build(&ws, &[whole("junk\nline 3\nmore\n")], &FileSet::default());
    assert_eq!(p.files()[0].deletes_most(), Some(20));
    let edited = text.replace("line 4\n", "LINE 4\n");
    let (p, _) = Proposal::build(&ws, &[whole(&edited)], &FileSet::default());
    assert_eq!(p.files()[0].deletes_most(), None);
}

#[test]
fn new_file_created_meanwhile_is_not_clobbered() {
    let dir = dir_with(&[("a.txt", b"a\n")]);
    let mut p = editblock(dir.path(), &block("new.txt", "", "mine\n")).proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    std::fs::write(dir.path().join("new.txt"), "theirs\n").unwrap();
    assert!(matches!(p.apply(), ApplyOutcome::Stale(_)));
    assert_eq!(read(dir.path(), "new.txt"), b"theirs\n");
}

// ---------------------------------------------------------------- bytes on disk

#[test]
fn crlf_file_keeps_crlf_everywhere() {
    let dir = dir_with(&[("w.txt", b"one\r\ntwo\r\nthree\r\n")]);
    let mut p = editblock(dir.path(), &block("w.txt", "two\n", "TWO\n2\n")).proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(read(dir.path(), "w.txt"), b"one\r\nTWO\r\n2\r\nthree\r\n");
}

#[test]
fn mixed_line_endings_keep_each_kept_line_as_it_was() {
    let original = b"a\r\nb\nc\r\nd\n".to_vec();
    let dir = dir_with(&[("m.txt", &original)]);
    let mut p = editblock(dir.path(), &block("m.txt", "d\n", "D\n")).proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(read(dir.path(), "m.txt"), b"a\r\nb\nc\r\nD\n");
}

#[test]
fn invalid_utf8_outside_the_edit_is_kept_and_new_text_is_utf8() {
    // One stray Latin-1 byte: the file stays UTF-8 (no switch to Latin-1, which would
    // write `→` as something else or refuse it), and the byte is kept as it is.
    let original = b"caf\xe9 = 1\nname = 2\n".to_vec();
    let dir = dir_with(&[("l.py", &original)]);
    let mut p = editblock(
        dir.path(),
        &block("l.py", "name = 2\n", "name = \"→ ☕\"\n"),
    )
    .proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    applied(p.apply());
    let mut want = b"caf\xe9 = 1\n".to_vec();
    want.extend_from_slice("name = \"→ ☕\"\n".as_bytes());
    assert_eq!(read(dir.path(), "l.py"), want);
}

#[test]
fn an_edit_that_touches_invalid_utf8_is_refused() {
    let dir = dir_with(&[("l.py", b"a = 1\ncaf\xe9 = 1\nb = 2\n")]);
    let out = editblock(
        dir.path(),
        &block("l.py", "caf\u{FFFD} = 1\n", "cafe = 1\n"),
    );
    assert_eq!(out.errors[0].problem, Problem::InvalidUtf8 { line: 2 });
    assert!(out.proposal.is_empty());
    // Context lines that only keep it are fine.
    let out = editblock(
        dir.path(),
        &block(
            "l.py",
            "caf\u{FFFD} = 1\nb = 2\n",
            "caf\u{FFFD} = 1\nb = 3\n",
        ),
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let mut p = out.proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(read(dir.path(), "l.py"), b"a = 1\ncaf\xe9 = 1\nb = 3\n");
}

#[test]
fn bom_and_missing_final_newline_survive() {
    let dir = dir_with(&[("b.txt", b"\xEF\xBB\xBFfirst\nlast")]);
    let mut p = editblock(dir.path(), &block("b.txt", "first\n", "FIRST\n")).proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(read(dir.path(), "b.txt"), b"\xEF\xBB\xBFFIRST\nlast");
}

#[cfg(unix)]
#[test]
fn permissions_are_kept_and_no_temp_file_is_left() {
    use std::os::unix::fs::PermissionsExt;
    let dir = dir_with(&[("run.sh", b"#!/bin/sh\necho hi\n")]);
    let script = dir.path().join("run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let reply = block("run.sh", "echo hi\n", "echo hello\n") + &block("sub/new.txt", "", "n\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    let out = applied(p.apply());
    assert_eq!(out.written.len(), 2);
    assert!(out.written[1].created);
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o750
    );
    // A new file gets what any new file gets here (0666 less the umask).
    std::fs::write(dir.path().join("sub/plain.txt"), "x").unwrap();
    let mode = |p: &str| {
        std::fs::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("sub/new.txt"), mode("sub/plain.txt"));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".tern-")), "{names:?}");
}

#[test]
fn empty_new_file_can_be_created() {
    let dir = dir_with(&[("a.txt", b"a\n")]);
    let out = propose(
        &Workspace::discover(dir.path()).unwrap(),
        "pkg/__init__.py\n```python\n```\n",
        EditFormat::Whole,
        &FileSet::default(),
    );
    let mut p = out.proposal;
    assert_eq!(p.hunk_count(), 1);
    p.decide(Select::All, Decision::Accept).unwrap();
    applied(p.apply());
    assert_eq!(read(dir.path(), "pkg/__init__.py"), b"");
}

// ---------------------------------------------------------------- safety

fn refused(dir: &Path, path: &str) -> Problem {
    let edit = Edit {
        block: 1,
        path: PathBuf::from(path),
        kind: EditKind::SearchReplace {
            search: String::new(),
            replace: "x\n".into(),
            occurrence: Occurrence::First,
        },
        source: String::new(),
    };
    let ws = Workspace::discover(dir).unwrap();
    let (p, errors) = Proposal::build(&ws, &[edit], &FileSet::default());
    assert!(p.is_empty(), "{path} must not be proposed");
    errors.into_iter().next().expect("an error").problem
}

#[test]
fn paths_outside_the_root_are_refused() {
    let dir = dir_with(&[("a.txt", b"a\n")]);
    let outside = tempfile::tempdir().unwrap();
    let abs = outside.path().join("x.txt");
    assert!(matches!(
        refused(dir.path(), abs.to_str().unwrap()),
        Problem::Refused(Refusal::Outside(_))
    ));
    assert!(matches!(
        refused(dir.path(), "../x.txt"),
        Problem::Refused(Refusal::Escapes(_))
    ));
    assert!(matches!(
        refused(dir.path(), "sub/../../x.txt"),
        Problem::Refused(Refusal::Escapes(_))
    ));
    assert!(!abs.exists());
}

#[test]
fn absolute_path_inside_the_root_is_fine() {
    let dir = dir_with(&[("a.txt", b"a\n")]);
    let root = dir.path().canonicalize().unwrap();
    let reply = block(root.join("a.txt").to_str().unwrap(), "a\n", "A\n");
    let out = editblock(dir.path(), &reply);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.proposal.files()[0].path(), Path::new("a.txt"));
}

#[test]
fn git_dir_is_refused() {
    let dir = dir_with(&[(".git/config", b"[core]\n"), ("a.txt", b"a\n")]);
    assert!(matches!(
        refused(dir.path(), ".git/config"),
        Problem::Refused(Refusal::GitDir(_))
    ));
    assert!(matches!(
        refused(dir.path(), "sub/../.git/hooks/pre-commit"),
        Problem::Refused(Refusal::GitDir(_))
    ));
    assert!(matches!(
        refused(dir.path(), ".GIT/config"),
        Problem::Refused(Refusal::GitDir(_))
    ));
}

#[cfg(unix)]
#[test]
fn symlinks_leaving_the_root_are_refused() {
    let dir = dir_with(&[("a.txt", b"a\n")]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("dangling")).unwrap();
    assert!(matches!(
        refused(dir.path(), "linkdir/new.txt"),
        Problem::Refused(Refusal::Symlink { .. })
    ));
    assert!(matches!(
        refused(dir.path(), "link.txt"),
        Problem::Refused(Refusal::Symlink { .. })
    ));
    assert!(matches!(
        refused(dir.path(), "dangling"),
        Problem::Refused(Refusal::Dangling(_))
    ));
    assert_eq!(
        std::fs::read(outside.path().join("secret.txt")).unwrap(),
        b"s\n"
    );
    assert!(!outside.path().join("new.txt").exists());
}

#[cfg(unix)]
#[test]
fn symlink_inside_the_root_writes_its_target() {
    let dir = dir_with(&[("real.txt", b"a\n")]);
    std::os::unix::fs::symlink("real.txt", dir.path().join("alias.txt")).unwrap();
    let mut p = editblock(dir.path(), &block("alias.txt", "a\n", "A\n")).proposal;
    // The walk of a plain directory lists no symlinks: the file is outside the chat.
    p.decide(Select::File(Path::new("alias.txt")), Decision::Accept)
        .unwrap();
    let out = applied(p.apply());
    assert_eq!(out.written[0].real, Path::new("real.txt"));
    assert!(
        dir.path()
            .join("alias.txt")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read(dir.path(), "real.txt"), b"A\n");
}

#[test]
fn binary_files_and_directories_are_refused() {
    let dir = dir_with(&[
        ("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
        ("sub/a.txt", b"a\n"),
    ]);
    assert_eq!(refused(dir.path(), "img.png"), Problem::Binary);
    assert!(matches!(
        refused(dir.path(), "sub"),
        Problem::Refused(Refusal::NotAFile(_))
    ));
    assert!(matches!(
        refused(dir.path(), "sub/a.txt/x"),
        Problem::Refused(Refusal::NotAFile(_))
    ));
}

#[test]
fn gitignored_new_file_needs_confirmation() {
    let dir = dir_with(&[(".gitignore", b"*.log\n"), ("a.txt", b"a\n")]);
    git2::Repository::init(dir.path()).unwrap();
    let mut p = editblock(dir.path(), &block("debug.log", "", "x\n")).proposal;
    assert!(p.files()[0].needs_confirmation());
    p.decide(Select::All, Decision::Accept).unwrap();
    match p.apply() {
        ApplyOutcome::NeedsConfirmation(paths) => {
            assert_eq!(paths, vec![PathBuf::from("debug.log")])
        }
        other => panic!("{other:?}"),
    }
    assert!(!dir.path().join("debug.log").exists());
    p.confirm(Path::new("debug.log")).unwrap();
    applied(p.apply());
    assert_eq!(read(dir.path(), "debug.log"), b"x\n");
}

#[test]
fn nul_in_new_text_is_refused() {
    let dir = dir_with(&[("a.txt", b"a\n")]);
    let out = editblock(dir.path(), &block("a.txt", "a\n", "a\0b\n"));
    assert_eq!(out.errors[0].problem, Problem::Nul);
}

// ---------------------------------------------------------------- reflection

#[test]
fn reflection_names_file_block_and_nearest_lines() {
    let dir = dir_with(&[("calc.py", b"def add(a, b):\n    return a + b\n")]);
    let reply = block(
        "calc.py",
        "def add(a,b):\n    return a+b\n",
        "def add(a, b):\n    return b + a\n",
    ) + &block("calc.py", "def add(a, b):\n", "def add(a, b):  # sum\n");
    let out = editblock(dir.path(), &reply);
    assert_eq!(out.blocks, 2);
    let msg = reflection_message(
        &out.errors,
        out.blocks - out.errors.len(),
        EditFormat::Editblock,
    );
    assert!(
        msg.contains("Of your edit blocks, 1 failed and 1 went into the proposed changes, which the user reviews before anything is written"),
        "{msg}"
    );
    assert!(msg.contains("SEARCH/REPLACE block 1 for calc.py"), "{msg}");
    assert!(msg.contains("Did you mean these lines of calc.py (from line 1)?\n```\ndef add(a, b):\n    return a + b\n```"), "{msg}");
    assert!(
        msg.contains("<<<<<<< SEARCH\ndef add(a,b):"),
        "the failed block is quoted: {msg}"
    );
}

#[test]
fn reflection_reply_applies_on_top_of_the_proposal() {
    let text: String = (0..40).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes())]);
    let ws = Workspace::discover(dir.path()).unwrap();
    let files = FileSet::new(vec!["a.txt".into()], vec![]);
    let first = block("a.txt", "l2\n", "L2\n")
        + &block("a.txt", "l20 \nnope\n", "L20\n")
        + &block("a.txt", "l35\n", "L35\n");
    let mut out = propose(&ws, &first, EditFormat::Editblock, &files);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].block, 2);
    out.proposal.decide(Select::All, Decision::Accept).unwrap();
    let before: Vec<_> = out.proposal.hunk_ids().collect();

    // The model fixes block 2 and, believing block 1 applied, edits its result too.
    let second = block("a.txt", "l20\n", "L20\n") + &block("a.txt", "L2\n", "Line two\n");
    let report = out
        .proposal
        .add_reply(&ws, &second, EditFormat::Editblock, &files);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.blocks, 2);
    let file = &out.proposal.files()[0];
    assert_eq!(
        file.proposed(),
        text.replace("l2\n", "Line two\n")
            .replace("l20\n", "L20\n")
            .replace("l35\n", "L35\n")
    );
    let after: Vec<_> = file.hunks().iter().map(|h| (h.id, h.decision)).collect();
    assert_eq!(after.len(), 3);
    assert_ne!(
        after[0].0, before[0],
        "the first hunk changed, so it is new"
    );
    assert_eq!(after[0].1, Decision::Pending);
    assert_eq!(
        after[1].1,
        Decision::Pending,
        "the fixed block's hunk is new"
    );
    assert_eq!(
        after[2],
        (before[1], Decision::Accept),
        "untouched hunk keeps id and decision"
    );
}

#[test]
fn accepting_in_bulk_never_overrides_an_explicit_reject() {
    let text: String = (0..40).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.txt", text.as_bytes()), ("b.txt", b"b\n")]);
    let reply = block("a.txt", "l3\n", "L3\n")
        + &block("a.txt", "l30\n", "L30\n")
        + &block("b.txt", "b\n", "B\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    let ids: Vec<_> = p.hunk_ids().collect();
    p.decide(Select::Hunk(ids[1]), Decision::Reject).unwrap();
    assert_eq!(
        p.decide(Select::File(Path::new("a.txt")), Decision::Accept),
        Ok(1)
    );
    assert_eq!(p.decide(Select::All, Decision::Accept), Ok(2));
    let decisions: Vec<_> = p
        .files()
        .iter()
        .flat_map(|f| f.hunks())
        .map(|h| h.decision)
        .collect();
    assert_eq!(
        decisions,
        [Decision::Accept, Decision::Reject, Decision::Accept]
    );
    // The hunk itself can still be accepted.
    p.decide(Select::Hunk(ids[1]), Decision::Accept).unwrap();
    assert_eq!(p.files()[0].hunks()[1].decision, Decision::Accept);
}

#[test]
fn a_hunk_adding_invisible_characters_is_accepted_only_by_itself() {
    // A JavaScript comment that U+2028 ends: what follows runs, on what looks like the
    // comment's line. A bidi override turns a line around.
    let text: String = (0..40).map(|i| format!("l{i}\n")).collect();
    let dir = dir_with(&[("a.js", text.as_bytes()), ("b.js", b"b\n")]);
    let reply = block("a.js", "l3\n", "// fine\u{2028}execSync(cmd)\n")
        + &block("a.js", "l30\n", "L30\n")
        + &block("b.js", "b\n", "s = \"\u{202e}\u{2066}x\"\n");
    let mut p = editblock(dir.path(), &reply).proposal;
    let cautions: Vec<Vec<tern::edit::Caution>> =
        p.files().iter().flat_map(|f| f.hunk_cautions()).collect();
    let hidden = |chars: &[&str]| {
        vec![tern::edit::Caution::Invisible {
            characters: chars.iter().map(ToString::to_string).collect(),
        }]
    };
    assert_eq!(
        cautions,
        [hidden(&["U+2028"]), vec![], hidden(&["U+202E", "U+2066"])]
    );
    assert_eq!(
        cautions[0][0].to_string(),
        "holds invisible characters (U+2028)"
    );
    // Neither a file's accept nor everything's takes them.
    assert_eq!(
        p.decide(Select::File(Path::new("b.js")), Decision::Accept),
        Ok(0)
    );
    assert_eq!(p.decide(Select::All, Decision::Accept), Ok(1));
    let decisions = |p: &Proposal| -> Vec<Decision> {
        p.files()
            .iter()
            .flat_map(|f| f.hunks())
            .map(|h| h.decision)
            .collect()
    };
    assert_eq!(
        decisions(&p),
        [Decision::Pending, Decision::Accept, Decision::Pending]
    );
    // Each by itself, it is accepted, and the file gets the characters as written.
    let ids: Vec<_> = p.hunk_ids().collect();
    p.decide(Select::Hunk(ids[0]), Decision::Accept).unwrap();
    assert_eq!(decisions(&p)[0], Decision::Accept);
    let written = p.files()[0].content_with(|h| h.decision == Decision::Accept);
    assert!(
        String::from_utf8(written)
            .unwrap()
            .contains("// fine\u{2028}execSync(cmd)\n")
    );
    // Removing a hidden character, or keeping one the file had, is no caution.
    let dir = dir_with(&[("c.js", "a\u{200b}b\nc\n".as_bytes())]);
    let p = editblock(dir.path(), &block("c.js", "a\u{200b}b\n", "ab\n")).proposal;
    assert_eq!(
        p.files()[0].hunk_cautions(),
        [Vec::<tern::edit::Caution>::new()]
    );
    // An emoji's variation selector is part of it.
    let dir = dir_with(&[("d.md", b"x\n")]);
    let p = editblock(
        dir.path(),
        &block("d.md", "x\n", "\u{26a0}\u{fe0f} careful\n"),
    )
    .proposal;
    assert_eq!(
        p.files()[0].hunk_cautions(),
        [Vec::<tern::edit::Caution>::new()]
    );
}
