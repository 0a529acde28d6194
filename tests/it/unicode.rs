//! Arbitrary Unicode from a model (prose, file names, code, commit messages) goes
//! through parse → propose → apply → commit without a panic or a hang, in every edit
//! format; what lands is exactly what was proposed.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tern::edit::{ApplyOutcome, Decision, EditFormat, FileSet, Select, Workspace, propose};
use tern::git::{self, CommitOptions};

const OPTIONS: CommitOptions<'static> = CommitOptions {
    verify_hooks: false,
    model: None,
    co_author_trailer: false,
    fail_at: None,
};

fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, git2::Repository) {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init(dir.path()).unwrap();
    let mut cfg = repo.config().unwrap();
    cfg.set_str("user.name", "Test").unwrap();
    cfg.set_str("user.email", "t@example.com").unwrap();
    let mut index = repo.index().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
        index.add_path(Path::new(path)).unwrap();
    }
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = repo.signature().unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
        .unwrap();
    drop(tree);
    (dir, repo)
}

/// Any text, weighted towards what breaks byte-index code: CJK, emoji with ZWJ and
/// modifiers, combining marks, RTL, control characters, CR and CRLF.
pub(crate) fn wild_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("日本語".to_string()),
            Just("👩‍💻🏳️‍🌈".to_string()),
            Just("e\u{301}".to_string()),
            Just("שלום".to_string()),
            Just("\r\n".to_string()),
            Just("\x1b[2J".to_string()),
            Just("file: ".to_string()),
            Just("<<<<<<< SEARCH".to_string()),
            Just("=======".to_string()),
            Just(">>>>>>> REPLACE".to_string()),
            Just("```".to_string()),
            Just("\n".to_string()),
            any::<String>(),
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

/// A name for a file: non-ASCII and the brackets of web frameworks included.
fn wild_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("src/日本語.rs".to_string()),
        Just("docs/café.md".to_string()),
        Just("pages/[id].tsx".to_string()),
        Just("app/(auth)/page.tsx".to_string()),
        Just("emoji_🎉.txt".to_string()),
        "[a-zé日]{1,8}\\.txt",
    ]
}

/// A reply's lines drawn from the structure of all three formats (markers, fences,
/// diff headers, hunk lines, file names) and from anything, in any order: broken,
/// nested, truncated and interleaved blocks.
fn structural_reply() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("<<<<<<< SEARCH".to_string()),
        Just("=======".to_string()),
        Just(">>>>>>> REPLACE".to_string()),
        Just("```".to_string()),
        Just("````".to_string()),
        Just("```python".to_string()),
        Just("```bash".to_string()),
        Just("--- a/a.txt".to_string()),
        Just("+++ b/a.txt".to_string()),
        Just("--- /dev/null".to_string()),
        Just("+++ \"b/caf\\303\\251.md\"".to_string()),
        Just("@@ -1 +1 @@".to_string()),
        Just("-alpha".to_string()),
        Just("+beta 🎉".to_string()),
        Just(" alpha".to_string()),
        Just("\\ No newline at end of file".to_string()),
        Just("a.txt".to_string()),
        Just("pages/[id].tsx".to_string()),
        Just("`a.txt`:".to_string()),
        Just("alpha".to_string()),
        Just("// ... existing code ...".to_string()),
        Just(String::new()),
        wild_text(),
    ];
    prop::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Replies made of anything, in each format, never panic, and whatever they
    /// propose applies and commits.
    #[test]
    fn any_reply_parses_proposes_applies_and_commits(
        prose in wild_text(),
        name in wild_name(),
        body in wild_text(),
        format in prop_oneof![Just(EditFormat::Editblock), Just(EditFormat::Udiff), Just(EditFormat::Whole)],
    ) {
        let (dir, repo) = repo_with(&[("a.txt", "alpha\nβeta\n")]);
        let body = body.replace('\0', "");
        let reply = match format {
            EditFormat::Editblock => format!(
                "{prose}\n{name}\n```\n<<<<<<< SEARCH\n=======\n{body}\n>>>>>>> REPLACE\n```\n{prose}"
            ),
            EditFormat::Udiff => format!(
                "{prose}\n```diff\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{body}\n```\n"
            ),
            EditFormat::Whole => format!("{prose}\n{name}\n```\n{body}\n```\n"),
        };
        let ws = Workspace::discover(dir.path()).unwrap();
        let files = FileSet::new(vec![PathBuf::from("a.txt")], ws.files());
        let mut proposed = propose(&ws, &reply, format, &files);
        for e in &proposed.errors {
            let _ = e.to_string();
            let _ = e.for_model(format);
        }
        proposed.proposal.decide(Select::All, Decision::Accept).ok();
        for f in proposed.proposal.files() {
            let _ = f.all_hunk_lines(3);
        }
        let paths: Vec<PathBuf> = proposed.proposal.paths_to_write();
        if let ApplyOutcome::Applied(applied) = proposed.proposal.apply() {
            prop_assert_eq!(applied.written.len(), paths.len());
            let written: Vec<PathBuf> = applied.written.iter().map(|w| w.real.clone()).collect();
            if !written.is_empty() {
                let message = git::message::clean(&prose).unwrap_or_else(|| git::message::fallback(&applied.diff));
                let commit = git::commit_edits(&repo, &written, &message, &OPTIONS);
                prop_assert!(commit.is_ok(), "{:?}", commit.err());
            }
        }
    }

    /// Replies built from the formats' own pieces in any order never panic; whatever
    /// they propose applies, and every failed block has a message for the model.
    #[test]
    fn any_arrangement_of_markers_fences_and_headers_is_safe(
        reply in structural_reply(),
        format in prop_oneof![Just(EditFormat::Editblock), Just(EditFormat::Udiff), Just(EditFormat::Whole)],
    ) {
        let (dir, _repo) = repo_with(&[("a.txt", "alpha\nβeta\n")]);
        let ws = Workspace::discover(dir.path()).unwrap();
        let files = FileSet::new(vec![PathBuf::from("a.txt")], ws.files());
        let mut proposed = propose(&ws, &reply, format, &files);
        for e in &proposed.errors {
            prop_assert!(!e.for_model(format).is_empty());
        }
        proposed.proposal.decide(Select::All, Decision::Accept).ok();
        let paths = proposed.proposal.paths_to_write();
        if let ApplyOutcome::Applied(applied) = proposed.proposal.apply() {
            prop_assert_eq!(applied.written.len(), paths.len());
        }
    }

    /// Commit messages from the weak model can be anything.
    #[test]
    fn commit_message_cleaning_never_panics(answer in wild_text(), diff in wild_text()) {
        if let Some(subject) = git::message::clean(&answer) {
            prop_assert!(subject.chars().count() <= git::message::MAX_SUBJECT);
        }
        let _ = git::message::fallback(&diff);
        let _ = tern::edit::prompts::commit_message_request(&diff);
    }
}

#[test]
fn non_ascii_prose_before_a_block_and_a_non_ascii_commit_message() {
    // Both panicked: a label check sliced the first bytes of a line ("日本" is six).
    let (dir, repo) = repo_with(&[("a.txt", "alpha\n")]);
    let reply =
        "日本語の説明です。\na.txt\n<<<<<<< SEARCH\nalpha\n=======\nalpha 🎉\n>>>>>>> REPLACE\n";
    let ws = Workspace::discover(dir.path()).unwrap();
    let files = FileSet::new(vec![PathBuf::from("a.txt")], ws.files());
    let mut proposed = propose(&ws, reply, EditFormat::Editblock, &files);
    assert!(proposed.errors.is_empty(), "{:?}", proposed.errors);
    proposed
        .proposal
        .decide(Select::All, Decision::Accept)
        .unwrap();
    let ApplyOutcome::Applied(applied) = proposed.proposal.apply() else {
        panic!("not applied")
    };
    let message = git::message::clean("修正: 絵文字を追加しました 🎉").unwrap();
    let written: Vec<PathBuf> = applied.written.iter().map(|w| w.real.clone()).collect();
    let commit = git::commit_edits(&repo, &written, &message, &OPTIONS)
        .unwrap()
        .unwrap();
    assert_eq!(commit.summary, "修正: 絵文字を追加しました 🎉");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "alpha 🎉\n"
    );
}

#[test]
fn file_names_with_brackets_parens_and_non_ascii_apply_in_every_format() {
    let names = [
        "pages/posts/[id].tsx",
        "app/(auth)/login/page.tsx",
        "docs/café.md",
        "src/日本語.rs",
    ];
    for format in [EditFormat::Editblock, EditFormat::Udiff, EditFormat::Whole] {
        for name in names {
            let (dir, _repo) = repo_with(&[("a.txt", "x\n")]);
            std::fs::create_dir_all(dir.path().join(name).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(name), "old line\n").unwrap();
            let reply = match format {
                EditFormat::Editblock => format!(
                    "Here:\n\n{name}\n```\n<<<<<<< SEARCH\nold line\n=======\nnew line\n>>>>>>> REPLACE\n```\n"
                ),
                EditFormat::Udiff => format!(
                    "```diff\n--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-old line\n+new line\n```\n"
                ),
                EditFormat::Whole => format!("{name}\n```\nnew line\n```\n"),
            };
            let ws = Workspace::discover(dir.path()).unwrap();
            let files = FileSet::new(vec![PathBuf::from(name)], ws.files());
            let mut proposed = propose(&ws, &reply, format, &files);
            assert!(
                proposed.errors.is_empty(),
                "{format} {name}: {:?}",
                proposed.errors
            );
            assert_eq!(
                proposed
                    .proposal
                    .files()
                    .first()
                    .map(|f| f.path().to_path_buf()),
                Some(PathBuf::from(name)),
                "{format} {name}"
            );
            proposed
                .proposal
                .decide(Select::All, Decision::Accept)
                .unwrap();
            assert!(matches!(
                proposed.proposal.apply(),
                ApplyOutcome::Applied(_)
            ));
            assert_eq!(
                std::fs::read_to_string(dir.path().join(name)).unwrap(),
                "new line\n",
                "{format} {name}"
            );
        }
    }
}

#[test]
fn control_characters_never_reach_a_commit_subject_or_a_file_name() {
    let subject =
        git::message::clean("fix: tidy\x1b]52;c;cHduZWQ=\x07 the \u{9b}31mparser").unwrap();
    assert!(
        !subject.chars().any(tern::terminal_text::is_unsafe),
        "{subject:?}"
    );
    assert!(subject.starts_with("fix: tidy"));

    let (dir, _repo) = repo_with(&[("a.txt", "x\n")]);
    let ws = Workspace::discover(dir.path()).unwrap();
    let reply = "evil\x1b[2J.txt\n<<<<<<< SEARCH\n=======\nboo\n>>>>>>> REPLACE\n";
    let out = propose(&ws, reply, EditFormat::Editblock, &FileSet::default());
    assert!(out.proposal.is_empty());
    assert!(
        matches!(
            out.errors[0].problem,
            tern::edit::Problem::Refused(tern::edit::Refusal::ControlCharacters(_))
        ),
        "{:?}",
        out.errors
    );
    let tern::edit::Problem::Refused(refusal) = &out.errors[0].problem else {
        unreachable!()
    };
    assert!(!refusal.to_string().contains('\x1b'), "{refusal}");
}

#[test]
fn a_file_name_with_a_hidden_character_is_refused_and_shown_with_its_marker() {
    // `exe.txt` reversed by an override reads as a text file; U+3164 reads as nothing.
    let (dir, _repo) = repo_with(&[("a.txt", "x\n")]);
    let ws = Workspace::discover(dir.path()).unwrap();
    for name in ["evil\u{202e}txt.exe", "src/\u{3164}.js", "a\u{200b}.txt"] {
        let reply = format!("{name}\n<<<<<<< SEARCH\n=======\nboo\n>>>>>>> REPLACE\n");
        let out = propose(&ws, &reply, EditFormat::Editblock, &FileSet::default());
        assert!(out.proposal.is_empty(), "{name:?}");
        let tern::edit::Problem::Refused(refusal @ tern::edit::Refusal::ControlCharacters(_)) =
            &out.errors[0].problem
        else {
            panic!("{name:?}: {:?}", out.errors)
        };
        let said = refusal.to_string();
        assert!(said.contains("⟨U+"), "{said}");
        assert!(!tern::terminal_text::has_hidden(&said), "{said:?}");
    }
    let subject = git::message::clean("fix: \u{202e}gnp.exe the parser\u{2028}").unwrap();
    assert!(!tern::terminal_text::has_hidden(&subject), "{subject:?}");
}

/// Text rich in the characters a terminal draws as nothing or that turn text around,
/// among everything else `wild_text` holds.
fn hidden_text() -> impl Strategy<Value = String> {
    let hidden = prop_oneof![
        Just('\u{2028}'),
        Just('\u{2029}'),
        Just('\u{202e}'),
        Just('\u{2066}'),
        Just('\u{2069}'),
        Just('\u{200b}'),
        Just('\u{200d}'),
        Just('\u{200f}'),
        Just('\u{61c}'),
        Just('\u{ad}'),
        Just('\u{180e}'),
        Just('\u{2060}'),
        Just('\u{feff}'),
        Just('\u{3164}'),
        Just('\u{fe0f}'),
        Just('\u{e0041}'),
        Just('\u{e0100}'),
    ];
    prop::collection::vec(
        prop_oneof![
            wild_text(),
            hidden.prop_map(String::from),
            Just("⚠".to_string()),
            Just("\r\n".to_string()),
            Just("\n".to_string()),
            Just("x".to_string()),
        ],
        0..16,
    )
    .prop_map(|parts| parts.concat().replace('\0', ""))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// A reply with hidden characters, in any format, over a file that has some:
    /// parse → propose → render never panics; every hidden character in a hunk's lines
    /// is drawn as its marker and never as itself (in the diff for a terminal and in
    /// the review's view), and a hunk is cautioned exactly when its new lines add one.
    #[test]
    fn hidden_characters_are_marked_wherever_a_hunk_is_drawn(
        original in hidden_text(),
        search in hidden_text(),
        replace in hidden_text(),
        prose in hidden_text(),
        format in prop_oneof![Just(EditFormat::Editblock), Just(EditFormat::Udiff), Just(EditFormat::Whole)],
    ) {
        let original = format!("{original}\nkeep\r\n{search}\n");
        let (dir, _repo) = repo_with(&[("a.txt", &original)]);
        let reply = match format {
            EditFormat::Editblock => format!(
                "{prose}\na.txt\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
            ),
            EditFormat::Udiff => {
                let minus: String = search.split('\n').map(|l| format!("-{l}\n")).collect();
                let plus: String = replace.split('\n').map(|l| format!("+{l}\n")).collect();
                format!("{prose}\n```diff\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n{minus}{plus}```\n")
            }
            EditFormat::Whole => format!("{prose}\n\na.txt\n````\n{replace}\n````\n"),
        };
        let ws = Workspace::discover(dir.path()).unwrap();
        let files = FileSet::new(vec![PathBuf::from("a.txt")], ws.files());
        let proposed = propose(&ws, &reply, format, &files);
        for e in &proposed.errors {
            let _ = e.to_string();
        }
        for file in proposed.proposal.files() {
            let colored = tern::edit::unified_diff(file, |_| true, true);
            prop_assert!(!tern::terminal_text::has_hidden(&colored), "{colored:?}");
            let cautions = file.hunk_cautions();
            for (index, lines) in file.all_hunk_lines(tern::edit::CONTEXT).iter().enumerate() {
                let mut added_hidden = false;
                for line in lines {
                    let hidden: Vec<char> = tern::terminal_text::hidden(line.text).collect();
                    let shown = tern::terminal_text::visible(line.text);
                    prop_assert!(!tern::terminal_text::has_hidden(&shown));
                    prop_assert_eq!(tern::terminal_text::markers(&shown).count(), hidden.len());
                    for c in &hidden {
                        let marker = tern::terminal_text::marker(*c);
                        prop_assert!(colored.contains(&marker), "{marker} not in {colored:?}");
                    }
                    added_hidden |= line.kind == tern::diff::LineKind::Added && !hidden.is_empty();
                }
                prop_assert_eq!(!cautions[index].is_empty(), added_hidden, "{:?}", lines);
            }
        }
    }
}
