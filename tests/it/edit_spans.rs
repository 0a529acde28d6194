//! Hunks come from the lines the edits replaced: everything else keeps its bytes
//! exactly (line endings, BOM, trailing whitespace, a missing final newline), context
//! lines matched with tolerance keep the file's spelling, and edits far apart in a huge
//! file are small separate hunks.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use proptest::prelude::*;
use tern::edit::{
    Applied, ApplyOutcome, Decision, EditFormat, FileSet, Proposed, Select, Workspace, propose,
};

fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        std::fs::write(dir.path().join(path), content).unwrap();
    }
    dir
}

fn proposed(dir: &Path, reply: &str, format: EditFormat) -> Proposed {
    let ws = Workspace::discover(dir).unwrap();
    let files = FileSet::new(ws.files(), vec![]);
    propose(&ws, reply, format, &files)
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n\n")
}

/// Accepts everything and applies it; returns the file's new bytes.
fn apply_all(dir: &Path, out: Proposed, path: &str) -> Vec<u8> {
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let mut p = out.proposal;
    p.decide(Select::All, Decision::Accept).unwrap();
    match p.apply() {
        ApplyOutcome::Applied(Applied { written, .. }) => assert_eq!(written.len(), 1),
        other => panic!("{other:?}"),
    }
    std::fs::read(dir.join(path)).unwrap()
}

#[test]
fn two_edits_far_apart_in_a_million_line_file_are_two_one_line_hunks() {
    let text: String = (0..1_000_000).map(|i| format!("line {i}\n")).collect();
    let dir = dir_with(&[("big.txt", text.as_bytes())]);
    let reply = block("big.txt", "line 10\n", "LINE 10\n")
        + &block("big.txt", "line 999990\n", "LINE 999990\n");
    let out = proposed(dir.path(), &reply, EditFormat::Editblock);
    let hunks = out.proposal.files()[0].hunks().to_vec();
    let shapes: Vec<_> = hunks
        .iter()
        .map(|h| (h.old.clone(), h.new.clone()))
        .collect();
    assert_eq!(
        shapes,
        vec![(10..11, 10..11), (999_990..999_991, 999_990..999_991)]
    );
    let written = apply_all(dir.path(), out, "big.txt");
    assert_eq!(
        written,
        text.replace("line 10\n", "LINE 10\n")
            .replace("line 999990\n", "LINE 999990\n")
            .into_bytes()
    );
}

#[test]
fn udiff_context_matched_with_tolerance_keeps_the_files_spelling() {
    // The file has an empty line and a line with trailing spaces; the model's diff
    // spells the empty line as four spaces and drops the trailing spaces.
    let file = "def f():\n    x = 1   \n\n    return x\n";
    let dir = dir_with(&[("f.py", file.as_bytes())]);
    let reply = "```diff\n--- a/f.py\n+++ b/f.py\n@@ -1,4 +1,4 @@\n def f():\n     x = 1\n     \n-    return x\n+    return x + 1\n```\n";
    let out = proposed(dir.path(), reply, EditFormat::Udiff);
    let hunks = out.proposal.files()[0].hunks().to_vec();
    assert_eq!(hunks.len(), 1);
    assert_eq!((hunks[0].old.clone(), hunks[0].new.clone()), (3..4, 3..4));
    assert_eq!(
        apply_all(dir.path(), out, "f.py"),
        b"def f():\n    x = 1   \n\n    return x + 1\n"
    );
}

#[test]
fn reindented_search_replace_changes_only_the_replaced_lines() {
    // The SEARCH is indented by 4 where the file has 8; the kept lines have a tab and
    // trailing spaces the model did not copy.
    let file = "class A:\n    def f(self):\n        a = 1\t\n        b = 2\n        c = 3  \n";
    let dir = dir_with(&[("a.py", file.as_bytes())]);
    let reply = block(
        "a.py",
        "    a = 1\n    b = 2\n    c = 3\n",
        "    a = 1\n    b = 20\n    c = 3\n",
    );
    let out = proposed(dir.path(), &reply, EditFormat::Editblock);
    assert_eq!(
        apply_all(dir.path(), out, "a.py"),
        b"class A:\n    def f(self):\n        a = 1\t\n        b = 20\n        c = 3  \n"
    );
}

#[test]
fn lf_lines_of_a_mostly_crlf_file_stay_lf() {
    let mut file = String::new();
    for i in 0..200 {
        let ending = if i % 10 == 3 { "\n" } else { "\r\n" };
        file.push_str(&format!("row {i}{ending}"));
    }
    let dir = dir_with(&[("w.txt", file.as_bytes())]);
    let reply = block("w.txt", "row 5\n", "ROW 5\n") + &block("w.txt", "row 150\n", "ROW 150\n");
    let out = proposed(dir.path(), &reply, EditFormat::Editblock);
    assert_eq!(
        apply_all(dir.path(), out, "w.txt"),
        file.replace("row 5\r\n", "ROW 5\r\n")
            .replace("row 150\r\n", "ROW 150\r\n")
            .into_bytes()
    );
}

/// One generated line: its text and its ending.
fn raw_line(i: usize, suffix: &str, crlf: bool) -> (String, &'static str) {
    (
        format!("line {i}{suffix}"),
        if crlf { "\r\n" } else { "\n" },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Whatever the endings (mixed CRLF and LF), a BOM and a missing final newline,
    /// applying blocks changes the bytes of the lines they replace and nothing else.
    #[test]
    fn bytes_outside_the_edited_lines_stay_identical(
        endings in proptest::collection::vec((any::<bool>(), prop_oneof![Just(""), Just("  "), Just("\t"), Just(" é")]), 4..60),
        bom in any::<bool>(),
        final_newline in any::<bool>(),
        edits in proptest::collection::vec((0usize..60, 1usize..4, 0usize..4, any::<bool>()), 1..4),
    ) {
        let n = endings.len();
        let lines: Vec<(String, &str)> = endings
            .iter()
            .enumerate()
            .map(|(i, (crlf, suffix))| raw_line(i, suffix, *crlf))
            .collect();
        let raw = |range: std::ops::Range<usize>| -> Vec<u8> {
            let mut out = Vec::new();
            for i in range {
                out.extend_from_slice(lines[i].0.as_bytes());
                if i + 1 < n || final_newline {
                    out.extend_from_slice(lines[i].1.as_bytes());
                }
            }
            out
        };
        let mut file = if bom { b"\xEF\xBB\xBF".to_vec() } else { Vec::new() };
        file.extend(raw(0..n));
        let crlf_lines = (0..n).filter(|&i| endings[i].0 && (i + 1 < n || final_newline)).count();
        let all_endings = if final_newline { n } else { n - 1 };
        let dominant = if crlf_lines > all_endings - crlf_lines { "\r\n" } else { "\n" };

        // Non-overlapping spans, never the last line, with a gap between them.
        let mut spans = Vec::new();
        let mut free = 0;
        for (at, len, new, keep_first) in edits {
            let start = free.max(at % n);
            let end = (start + len).min(n - 1);
            if start >= end {
                continue;
            }
            spans.push((start, end, new, keep_first));
            free = end + 1;
        }
        prop_assume!(!spans.is_empty());

        let mut reply = String::new();
        let mut want = if bom { b"\xEF\xBB\xBF".to_vec() } else { Vec::new() };
        let mut at = 0;
        for (k, &(start, end, new, keep_first)) in spans.iter().enumerate() {
            let search: String = (start..end).map(|i| format!("{}\n", lines[i].0)).collect();
            let mut replace = String::new();
            want.extend(raw(at..start));
            if keep_first {
                replace.push_str(&format!("{}\n", lines[start].0));
                want.extend(raw(start..start + 1));
            }
            for j in 0..new {
                replace.push_str(&format!("new {k}.{j}\n"));
                want.extend_from_slice(format!("new {k}.{j}{dominant}").as_bytes());
            }
            reply.push_str(&block("f.txt", &search, &replace));
            at = end;
        }
        want.extend(raw(at..n));

        let dir = dir_with(&[("f.txt", &file)]);
        let out = proposed(dir.path(), &reply, EditFormat::Editblock);
        prop_assert!(out.errors.is_empty(), "{:?}", out.errors);
        if out.proposal.is_empty() {
            prop_assert_eq!(want, file);
            return Ok(());
        }
        let mut p = out.proposal;
        // By file: accepting all would (rightly) skip a proposal that deletes most of it.
        p.decide(Select::File(Path::new("f.txt")), Decision::Accept).unwrap();
        prop_assert!(matches!(p.apply(), ApplyOutcome::Applied(_)));
        prop_assert_eq!(std::fs::read(dir.path().join("f.txt")).unwrap(), want);
    }
}
