//! Finer than a hunk: splitting a hunk where unchanged lines separate its changes and
//! editing a hunk's new lines, on real files. Applying writes exactly the accepted
//! parts; parts and edits survive a saved session and a file changed on disk.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use proptest::prelude::*;
use tern::edit::{
    ApplyOutcome, Decision, EditFormat, FileSet, HunkId, Proposal, RefineError, Select, Workspace,
    propose,
};

fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        std::fs::write(dir.path().join(path), content).unwrap();
    }
    dir
}

fn proposal(dir: &Path, reply: &str, format: EditFormat) -> Proposal {
    let ws = Workspace::discover(dir).unwrap();
    let files = FileSet::new(ws.files(), vec![]);
    let out = propose(&ws, reply, format, &files);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    out.proposal
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n\n")
}

fn numbered(n: usize) -> String {
    (0..n).map(|i| format!("line {i}\n")).collect()
}

fn ids(p: &Proposal) -> Vec<HunkId> {
    p.hunk_ids().collect()
}

fn decisions(p: &Proposal) -> Vec<(HunkId, Decision, bool)> {
    p.files()
        .iter()
        .flat_map(|f| f.hunks().iter().map(|h| (h.id, h.decision, h.edited)))
        .collect()
}

/// The bytes applying would write for `path` now.
fn accepted_bytes(p: &Proposal, path: &str) -> Vec<u8> {
    p.file(Path::new(path))
        .unwrap()
        .content_with(|h| h.decision == Decision::Accept)
}

/// One block changing lines 10 and 12 (line 11 unchanged between them): one hunk.
fn two_changes_one_hunk() -> (tempfile::TempDir, Proposal) {
    let dir = dir_with(&[("f.txt", numbered(30).as_bytes())]);
    let reply = block(
        "f.txt",
        "line 10\nline 11\nline 12\n",
        "LINE 10\nline 11\nLINE 12\n",
    );
    let p = proposal(dir.path(), &reply, EditFormat::Editblock);
    assert_eq!(p.hunk_count(), 1);
    (dir, p)
}

#[test]
fn a_hunk_splits_where_an_unchanged_line_separates_its_changes() {
    let (dir, mut p) = two_changes_one_hunk();
    let whole = ids(&p)[0];
    p.decide(Select::Hunk(whole), Decision::Accept).unwrap();
    let parts = p.split(whole).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(ids(&p), parts, "the parts replace the hunk, in order");
    assert!(!parts.contains(&whole), "each part has an id of its own");
    let hunks = p.files()[0].hunks();
    assert_eq!(
        (hunks[0].old.clone(), hunks[1].old.clone()),
        (10..11, 12..13)
    );
    assert!(
        hunks.iter().all(|h| h.decision == Decision::Accept),
        "the parts keep the hunk's decision"
    );

    // A part has one change: it cannot be split further, and nothing changes.
    let before = decisions(&p);
    assert_eq!(p.split(parts[0]), Err(RefineError::CannotSplit(parts[0])));
    assert!(
        RefineError::CannotSplit(parts[0])
            .to_string()
            .contains("cannot be split")
    );
    assert_eq!(decisions(&p), before);
    // The old id names its parts, each with one change.
    assert_eq!(p.split(whole), Err(RefineError::CannotSplit(parts[0])));

    // Each part has its own decision: only the second is written.
    p.decide(Select::Hunk(parts[0]), Decision::Reject).unwrap();
    assert!(matches!(p.apply(), ApplyOutcome::Applied(_)));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        numbered(30).replace("line 12\n", "LINE 12\n")
    );
    assert_eq!(
        ids(&p),
        [parts[0]],
        "the rejected part stays in the proposal"
    );
    let summary = p.rejected_summary().unwrap();
    assert!(summary.contains("-line 10\n+LINE 10"), "{summary}");
}

#[test]
fn split_parts_survive_a_saved_session_and_a_file_changed_on_disk() {
    let (dir, mut p) = two_changes_one_hunk();
    let parts = p.split(ids(&p)[0]).unwrap();
    p.decide(Select::Hunk(parts[0]), Decision::Reject).unwrap();
    p.decide(Select::Hunk(parts[1]), Decision::Accept).unwrap();
    let saved: tern::edit::ProposalSnapshot =
        serde_json::from_str(&serde_json::to_string(&p.snapshot()).unwrap()).unwrap();
    let ws = Workspace::discover(dir.path()).unwrap();

    let (restored, errors) = Proposal::restore(&ws, &saved);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        decisions(&restored),
        decisions(&p),
        "parts, ids and decisions"
    );

    // The file changes above the hunk: both parts are found again, still two, pending.
    std::fs::write(
        dir.path().join("f.txt"),
        format!("a new first line\n{}", numbered(30)),
    )
    .unwrap();
    let (restored, errors) = Proposal::restore(&ws, &saved);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(ids(&restored), parts);
    assert_eq!(restored.files()[0].hunks()[0].old, 11..12);

    // The same on applying: the stale file is re-diffed, the parts stay apart.
    let ApplyOutcome::Stale(stale) = p.apply() else {
        panic!("the file changed: stale")
    };
    assert!(stale[0].errors.is_empty(), "{:?}", stale[0].errors);
    assert_eq!(ids(&p), parts);
    assert!(
        decisions(&p)
            .iter()
            .all(|(_, d, _)| *d == Decision::Pending)
    );
    p.decide(Select::Hunk(parts[1]), Decision::Accept).unwrap();
    assert!(matches!(p.apply(), ApplyOutcome::Applied(_)));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        format!("a new first line\n{}", numbered(30)).replace("line 12\n", "LINE 12\n")
    );
}

#[test]
fn an_edited_hunk_is_accepted_as_the_users_lines_and_kept_lines_keep_their_bytes() {
    // CRLF: the lines the user leaves alone stay the file's own bytes.
    let text = numbered(30).replace('\n', "\r\n");
    let dir = dir_with(&[("f.txt", text.as_bytes())]);
    let reply = block(
        "f.txt",
        "line 10\nline 11\nline 12\n",
        "LINE 10\nline 11\nLINE 12\n",
    );
    let mut p = proposal(dir.path(), &reply, EditFormat::Editblock);
    let id = ids(&p)[0];
    assert_eq!(p.hunk_text(id).unwrap(), "LINE 10\nline 11\nLINE 12\n");
    let now = p.edit(id, "mine 10\nline 11\nLINE 12\nmine 12b\n").unwrap();
    let hunks = p.files()[0].hunks();
    assert_eq!(hunks.iter().map(|h| h.id).collect::<Vec<_>>(), now);
    assert!(
        hunks
            .iter()
            .all(|h| h.decision == Decision::Accept && h.edited)
    );
    assert_eq!(
        p.hunk_text(now[0]).unwrap(),
        "mine 10\nline 11\nLINE 12\nmine 12b\n"
    );

    // The model is told the applied lines are the user's, never that they were its own.
    let rewritten = p.rewritten_diffs();
    assert_eq!(rewritten.len(), 1);
    assert!(rewritten[0].1.contains("+mine 12b"), "{}", rewritten[0].1);
    assert!(p.rejected_summary().is_none());

    assert!(matches!(p.apply(), ApplyOutcome::Applied(_)));
    assert_eq!(
        std::fs::read(dir.path().join("f.txt")).unwrap(),
        text.replace("line 10\r\n", "mine 10\r\n")
            .replace("line 12\r\n", "LINE 12\r\nmine 12b\r\n")
            .into_bytes()
    );
}

#[test]
fn lines_from_the_editor_take_the_files_line_ending() {
    // The editor writes back CRLF for an LF file, LF or CRLF for a CRLF one.
    for (ending, back) in [("\n", "\r\n"), ("\r\n", "\n"), ("\r\n", "\r\n")] {
        let text = numbered(30).replace('\n', ending);
        let dir = dir_with(&[("f.txt", text.as_bytes())]);
        let reply = block("f.txt", "line 10\n", "LINE 10\n");
        let mut p = proposal(dir.path(), &reply, EditFormat::Editblock);
        let id = ids(&p)[0];
        let mine = "mine 10\nmine 10b\n".replace('\n', back);
        p.edit(id, &mine).unwrap();
        let want = text.replace(
            &format!("line 10{ending}"),
            &format!("mine 10{ending}mine 10b{ending}"),
        );
        assert_eq!(
            String::from_utf8(accepted_bytes(&p, "f.txt")).unwrap(),
            want,
            "file {ending:?}, editor {back:?}"
        );
    }
    // A mostly-LF file keeps the CR of a CRLF line the user left as it was.
    let text = "a\nb\r\nc\nd\n";
    let dir = dir_with(&[("m.txt", text.as_bytes())]);
    let reply = block("m.txt", "a\n", "A\n") + &block("m.txt", "c\n", "C\n");
    let mut p = proposal(dir.path(), &reply, EditFormat::Editblock);
    let id = ids(&p)[0];
    assert_eq!(p.hunk_text(id).unwrap(), "A\nb\r\nC\n");
    p.edit(id, "AA\nb\r\nC\n").unwrap();
    assert_eq!(accepted_bytes(&p, "m.txt"), b"AA\nb\r\nC\nd\n");
}

#[test]
fn an_edited_hunk_survives_a_saved_session_as_the_users() {
    let (dir, mut p) = two_changes_one_hunk();
    let now = p.edit(ids(&p)[0], "LINE 10\nline 11\nyours 12\n").unwrap();
    let saved = p.snapshot();
    let ws = Workspace::discover(dir.path()).unwrap();
    let (mut restored, errors) = Proposal::restore(&ws, &saved);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(decisions(&restored), decisions(&p));
    assert!(decisions(&restored).iter().all(|(_, _, edited)| *edited));
    assert_eq!(ids(&restored), now);
    // Rejected after all: the model hears of a rewritten hunk, not of its own lines.
    restored
        .decide(Select::Hunk(now[0]), Decision::Reject)
        .unwrap();
    let note = restored.rejected_summary().unwrap();
    assert!(note.contains("rewrote 1 of your hunks"), "{note}");
    assert!(!note.contains("yours 12"), "{note}");
}

#[test]
fn invalid_edits_are_refused_and_the_proposal_is_unchanged() {
    let (_dir, mut p) = two_changes_one_hunk();
    let id = ids(&p)[0];
    let before = decisions(&p);
    let text = p.hunk_text(id).unwrap();
    assert_eq!(p.edit(id, "LINE\u{0} 10\n"), Err(RefineError::Nul));
    assert_eq!(
        p.edit(id, "line 10\nline 11\nline 12\n"),
        Err(RefineError::NoChange),
        "the original's own lines: nothing would change"
    );
    let unknown: HunkId = "0000000".parse().unwrap();
    assert_eq!(p.edit(unknown, "x\n"), Err(RefineError::Unknown(unknown)));
    assert_eq!(decisions(&p), before);
    assert_eq!(p.hunk_text(id).unwrap(), text);

    // The proposed lines saved as they were: accepted as proposed, not the user's.
    assert_eq!(p.edit(id, &text).unwrap(), [id]);
    assert_eq!(decisions(&p), [(id, Decision::Accept, false)]);
}

#[test]
fn a_line_that_is_not_utf8_can_be_kept_but_not_edited() {
    let mut text = numbered(20).into_bytes();
    // Line 11 (1-based) holds a byte that is not UTF-8.
    let at = text.windows(7).position(|w| w == b"line 10").unwrap();
    text.insert(at + 4, 0xff);
    let dir = dir_with(&[("f.txt", &text)]);
    let reply = block("f.txt", "line 9\n", "LINE 9\n") + &block("f.txt", "line 11\n", "LINE 11\n");
    let mut p = proposal(dir.path(), &reply, EditFormat::Editblock);
    assert_eq!(p.hunk_count(), 1);
    let id = ids(&p)[0];
    let proposed = p.hunk_text(id).unwrap();
    // Changing that line is refused; keeping it is fine.
    let touched = proposed.replace("\u{fffd} 10", " ten");
    assert_eq!(
        p.edit(id, &touched),
        Err(RefineError::TouchesInvalid { line: 11 })
    );
    p.edit(id, &proposed.replace("LINE 9", "mine 9")).unwrap();
    assert!(matches!(p.apply(), ApplyOutcome::Applied(_)));
    let written = std::fs::read(dir.path().join("f.txt")).unwrap();
    let invalid_line = &text[at..at + 9]; // `line\xff 10\n`
    assert!(
        written
            .windows(invalid_line.len())
            .any(|w| w == invalid_line)
    );
    assert!(String::from_utf8_lossy(&written).contains("mine 9\n"));
}

/// Splits every hunk of `p` until none can be split.
fn split_all(p: &mut Proposal) {
    while ids(p).into_iter().any(|id| p.split(id).is_ok()) {}
}

/// A file of `n` unique lines and changes at increasing positions, each separated from
/// the next by at least one unchanged line: (first line, lines removed, lines added).
fn changes_strategy() -> impl Strategy<Value = (usize, Vec<(usize, usize, usize)>)> {
    (
        12usize..40,
        proptest::collection::vec((1usize..4, 0usize..3, 0usize..3), 1..7),
    )
        .prop_map(|(n, raw)| {
            let mut changes = Vec::new();
            let mut at = 0;
            for (gap, del, add) in raw {
                let start = at + gap;
                let (del, add) = if del + add == 0 { (1, 0) } else { (del, add) };
                if start + del >= n {
                    break;
                }
                changes.push((start, del, add));
                at = start + del;
            }
            (n, changes)
        })
}

/// The file's lines with `changes` applied where `take` says.
fn with_changes(n: usize, changes: &[(usize, usize, usize)], take: &[bool]) -> String {
    let mut out = String::new();
    let mut at = 0;
    for (k, &(start, del, add)) in changes.iter().enumerate() {
        (at..start).for_each(|i| out.push_str(&format!("line {i}\n")));
        if take[k] {
            (0..add).for_each(|j| out.push_str(&format!("new {k}.{j}\n")));
        } else {
            (start..start + del).for_each(|i| out.push_str(&format!("line {i}\n")));
        }
        at = start + del;
    }
    (at..n).for_each(|i| out.push_str(&format!("line {i}\n")));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Split as far as it goes, every part accepted writes what the unsplit hunks
    /// accepted write; any subset of parts writes exactly those changes; and a saved
    /// session brings back the same parts with the same decisions.
    #[test]
    fn split_parts_write_exactly_the_accepted_changes(
        (n, changes) in changes_strategy(),
        picks in proptest::collection::vec(any::<bool>(), 7),
    ) {
        prop_assume!(!changes.is_empty());
        let original = numbered(n);
        let all = vec![true; changes.len()];
        let dir = dir_with(&[("f.txt", original.as_bytes())]);
        // A whole-file reply: the diff finds each change (every line is unique).
        let reply = format!("f.txt\n```\n{}```\n", with_changes(n, &changes, &all));
        let mut unsplit = proposal(dir.path(), &reply, EditFormat::Whole);
        let mut split = unsplit.clone();
        let path = Path::new("f.txt");
        unsplit.decide(Select::File(path), Decision::Accept).unwrap();
        split_all(&mut split);
        prop_assert_eq!(split.hunk_count(), changes.len(), "one part per change");
        split.decide(Select::File(path), Decision::Accept).unwrap();
        prop_assert_eq!(accepted_bytes(&split, "f.txt"), accepted_bytes(&unsplit, "f.txt"));
        prop_assert_eq!(
            String::from_utf8(accepted_bytes(&split, "f.txt")).unwrap(),
            with_changes(n, &changes, &all)
        );

        let take = &picks[..changes.len()];
        for (id, &keep) in ids(&split).into_iter().zip(take) {
            let decision = if keep { Decision::Accept } else { Decision::Reject };
            split.decide(Select::Hunk(id), decision).unwrap();
        }
        prop_assert_eq!(
            String::from_utf8(accepted_bytes(&split, "f.txt")).unwrap(),
            with_changes(n, &changes, take)
        );

        let ws = Workspace::discover(dir.path()).unwrap();
        let (restored, errors) = Proposal::restore(&ws, &split.snapshot());
        prop_assert!(errors.is_empty(), "{:?}", errors);
        prop_assert_eq!(decisions(&restored), decisions(&split));
        prop_assert_eq!(
            accepted_bytes(&restored, "f.txt"),
            accepted_bytes(&split, "f.txt")
        );
    }
}

#[test]
fn an_emptied_hunk_removes_its_lines_once_confirmed() {
    let dir = dir_with(&[("f.txt", numbered(30).as_bytes())]);
    let reply = block("f.txt", "line 10\n", "LINE 10\nline 10b\n");
    let mut p = proposal(dir.path(), &reply, EditFormat::Editblock);
    let id = ids(&p)[0];
    p.edit(id, "").unwrap();
    assert_eq!(
        String::from_utf8(accepted_bytes(&p, "f.txt")).unwrap(),
        numbered(30).replace("line 10\n", "")
    );
}
