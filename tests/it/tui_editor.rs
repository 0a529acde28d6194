//! The user's own editor: Ctrl-G and `/editor` on the draft, `e` on a hunk, and `s`
//! splitting a hunk, as key scripts on the app (what it asks for and sends), and the
//! editor itself run as a real process (a shell script standing in for `vi`).

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::tui_support::*;
use crossterm::event::KeyCode;
use tern::engine::protocol::{HunkView, ProposalView, ReviewOp};
use tern::engine::{Event, Op};
use tern::tui::editor::{self, EditorError};
use tern::tui::{App, EditRequest, EditTarget, Kind, PaneId};

fn started() -> App {
    let mut app = app();
    feed(&mut app, session_start());
    app.take_ops();
    app
}

/// The demo proposal with ids unique across its files (as the engine's are).
fn demo_proposal() -> ProposalView {
    let mut view = proposal();
    for (f, file) in view.files.iter_mut().enumerate() {
        for (h, hunk) in file.hunks.iter_mut().enumerate() {
            hunk.id = format!("{f}00000{h}");
        }
    }
    view
}

/// The demo proposal, opened in the Review pane.
fn reviewing() -> App {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(demo_proposal()))]);
    assert_eq!(app.focus(), PaneId::Review);
    app
}

fn press(app: &mut App, c: char) {
    app.handle_terminal(key(KeyCode::Char(c)));
}

fn first_hunk_id() -> String {
    demo_proposal().files[0].hunks[0].id.clone()
}

fn chat_texts(app: &App, kind: Kind) -> Vec<String> {
    app.panes()
        .chat
        .messages()
        .iter()
        .filter(|m| m.kind == kind)
        .map(|m| m.text.clone())
        .collect()
}

#[test]
fn ctrl_g_asks_for_the_editor_on_the_draft_and_its_text_replaces_the_draft() {
    let mut app = started();
    type_text(&mut app, "explain remove");
    app.take_ops();
    assert!(app.take_editor_request().is_none());
    app.handle_terminal(ctrl('g'));
    let request = app
        .take_editor_request()
        .expect("ctrl-g asks for the editor");
    assert_eq!(
        request,
        EditRequest {
            target: EditTarget::Draft,
            text: "explain remove".into(),
            suffix: ".md".into(),
        }
    );
    assert!(app.take_ops().is_empty(), "nothing is sent");
    assert!(app.take_editor_request().is_none(), "asked once");

    // The editor's text (with the newline editors add) becomes the draft.
    app.editor_done(request, Ok("explain remove\nand add a test\n".into()));
    assert_eq!(app.panes().input.text(), "explain remove\nand add a test");
    app.tick(std::time::Instant::now() + std::time::Duration::from_millis(60));
    assert_eq!(
        app.take_ops(),
        [Op::Draft {
            text: "explain remove\nand add a test".into(),
            mode: None,
        }],
        "the gauge counts the new draft"
    );
    type_text(&mut app, "\n");
    assert_eq!(
        app.take_ops(),
        [Op::Submit {
            text: "explain remove\nand add a test".into()
        }]
    );
}

#[test]
fn an_editor_that_fails_leaves_the_draft_as_it_was_and_says_why() {
    let mut app = started();
    type_text(&mut app, "keep me");
    app.handle_terminal(ctrl('g'));
    let request = app.take_editor_request().unwrap();
    app.editor_done(
        request,
        Err(EditorError::Failed {
            program: "vi".into(),
            status: "exit status: 1".into(),
        }),
    );
    assert_eq!(app.panes().input.text(), "keep me");
    let warnings = chat_texts(&app, Kind::Warning);
    assert!(
        warnings
            .last()
            .is_some_and(|w| w.contains("exited with exit status: 1")
                && w.contains("the message is unchanged")),
        "{warnings:?}"
    );
}

#[test]
fn slash_editor_opens_the_editor_instead_of_sending() {
    let mut app = started();
    type_text(&mut app, "/editor start here\n");
    let ops = app.take_ops();
    assert!(
        !ops.iter().any(|op| matches!(op, Op::Submit { .. })),
        "{ops:?}"
    );
    let request = app.take_editor_request().unwrap();
    assert_eq!(request.target, EditTarget::Draft);
    assert_eq!(request.text, "start here");
    app.editor_done(request, Ok("written in vi\n".into()));
    assert_eq!(app.panes().input.text(), "written in vi");
}

/// The demo proposal with its first hunk split in two (new ids, as the engine makes).
fn split_view() -> ProposalView {
    let mut view = demo_proposal();
    let hunk = view.files[0].hunks.remove(0);
    let part = |id: &str| HunkView {
        id: id.into(),
        ..hunk.clone()
    };
    view.files[0].hunks.insert(0, part("b2b2b2b"));
    view.files[0].hunks.insert(0, part("a1a1a1a"));
    view
}

#[test]
fn s_splits_the_selected_hunk_and_the_review_stays_on_its_first_part() {
    let mut app = reviewing();
    // On the second hunk: the split keeps the place, it does not reopen the review.
    press(&mut app, 'j');
    app.take_ops();
    let second = demo_proposal().files[0].hunks[1].id.clone();
    press(&mut app, 's');
    assert_eq!(app.take_ops(), [Op::Review(ReviewOp::Split { id: second })]);
    let mut view = demo_proposal();
    let hunk = view.files[0].hunks.remove(1);
    view.files[0].hunks.insert(
        1,
        HunkView {
            id: "c3c3c3c".into(),
            ..hunk.clone()
        },
    );
    view.files[0].hunks.insert(
        2,
        HunkView {
            id: "d4d4d4d".into(),
            ..hunk
        },
    );
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    press(&mut app, 'y');
    assert_eq!(
        app.take_ops(),
        [Op::Review(ReviewOp::Hunk {
            id: "c3c3c3c".into(),
            decision: tern::engine::protocol::Decision::Accept
        })],
        "the selection is on the first part"
    );

    // Splitting the only hunks there are: every id is new, and it is still the same
    // review (no second "the reply proposes" notice, the place kept).
    let mut app = reviewing();
    press(&mut app, 's');
    assert_eq!(
        app.take_ops(),
        [Op::Review(ReviewOp::Split {
            id: first_hunk_id()
        })]
    );
    feed(&mut app, [Event::Proposal(Box::new(split_view()))]);
    let proposes = chat_texts(&app, Kind::Notice)
        .iter()
        .filter(|t| t.contains("the reply proposes"))
        .count();
    assert_eq!(proposes, 1);
    press(&mut app, 'n');
    assert!(
        matches!(&app.take_ops()[..], [Op::Review(ReviewOp::Hunk { id, .. })] if id == "a1a1a1a")
    );

    // A genuinely new proposal still opens on its first hunk.
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    assert_eq!(
        chat_texts(&app, Kind::Notice)
            .iter()
            .filter(|t| t.contains("the reply proposes"))
            .count(),
        2
    );
}

#[test]
fn e_edits_the_hunks_exact_lines_and_a_refused_edit_comes_back_to_the_editor() {
    let mut app = reviewing();
    let id = first_hunk_id();
    press(&mut app, 'e');
    assert_eq!(app.take_ops(), [Op::HunkText { id: id.clone() }]);
    assert!(
        app.take_editor_request().is_none(),
        "the view's text is not the file's: the engine's is used"
    );
    // Exact text (a control character included) from the engine.
    let exact = "        \"\"\"Never more than there is.\x1b\"\"\"\n";
    feed(
        &mut app,
        [Event::HunkText {
            id: id.clone(),
            path: "shop/inventory.py".into(),
            text: exact.into(),
        }],
    );
    let request = app.take_editor_request().unwrap();
    assert_eq!(
        request,
        EditRequest {
            target: EditTarget::Hunk { id: id.clone() },
            text: exact.into(),
            suffix: ".py".into(),
        }
    );

    // Saved unchanged: nothing is sent.
    app.editor_done(request.clone(), Ok(exact.into()));
    assert!(app.take_ops().is_empty());

    // The user's lines go to the engine as the hunk's new lines.
    let mine = "        \"\"\"Takes what there is.\"\"\"\n";
    app.editor_done(request.clone(), Ok(mine.into()));
    assert_eq!(
        app.take_ops(),
        [Op::Review(ReviewOp::Edit {
            id: id.clone(),
            new_lines: mine.into()
        })]
    );

    // Refused: said in the chat, and `e` opens the user's text again, not the model's.
    feed(
        &mut app,
        [
            Event::EditRefused {
                id: id.clone(),
                new_lines: mine.into(),
                reason: "the edited text has a NUL character".into(),
            },
            Event::Proposal(Box::new(demo_proposal())),
        ],
    );
    let errors = chat_texts(&app, Kind::Error);
    assert!(
        errors.last().is_some_and(|e| e.contains("was not used")
            && e.contains("NUL")
            && e.contains("e opens your text again")),
        "{errors:?}"
    );
    assert_eq!(app.focus(), PaneId::Review);
    press(&mut app, 'e');
    assert!(app.take_ops().is_empty(), "no need to ask the engine");
    let again = app.take_editor_request().unwrap();
    assert_eq!(again.text, mine);
    assert_eq!(again.target, EditTarget::Hunk { id: id.clone() });

    // An editor that fails leaves the hunk as it was.
    app.editor_done(
        again,
        Err(EditorError::Failed {
            program: "vi".into(),
            status: "signal 9".into(),
        }),
    );
    assert!(app.take_ops().is_empty());
    assert!(
        chat_texts(&app, Kind::Warning)
            .last()
            .is_some_and(|w| w.contains(&format!("hunk {id} is unchanged")))
    );
}

#[test]
fn the_new_keys_are_in_each_panes_help() {
    let mut app = reviewing();
    press(&mut app, '?');
    let shown = screen(&mut app, 160, 48);
    assert!(
        shown.contains("split the hunk at unchanged lines"),
        "{shown}"
    );
    assert!(
        shown.contains("edit the hunk in $VISUAL / $EDITOR"),
        "{shown}"
    );
    app.handle_terminal(key(KeyCode::Esc));
    app.handle_terminal(key(KeyCode::Esc));
    assert_eq!(app.focus(), PaneId::Input);
    app.handle_terminal(key(KeyCode::F(1)));
    let shown = screen(&mut app, 160, 48);
    assert!(
        shown.contains("ctrl-g") && shown.contains("write the message in $VISUAL"),
        "{shown}"
    );
}

// ------------------------------------------------------------- the editor, for real

#[test]
fn the_editor_is_visual_then_editor_then_vi_split_like_a_shell() {
    assert_eq!(
        editor::command(Some("code --wait"), Some("nano")).unwrap(),
        ["code", "--wait"]
    );
    assert_eq!(
        editor::command(Some("  "), Some("'my editor' -f \"a b\"")).unwrap(),
        ["my editor", "-f", "a b"]
    );
    assert_eq!(editor::command(None, None).unwrap(), ["vi"]);
    assert!(matches!(
        editor::command(Some("vim 'unclosed"), None),
        Err(EditorError::BadCommand { .. })
    ));
}

/// A shell script at `dir/name` with `body`, executable.
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn a_script_as_the_editor_rewrites_the_text_with_its_arguments_and_the_file_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // Like `code --wait FILE`: an argument, then the file, whose name keeps the suffix.
    let editor = script(
        dir.path(),
        "edit.sh",
        &format!(
            "echo \"$1 $2\" > '{}'\nsed 's/draft/edited draft/' \"$2\" > \"$2.new\" && mv \"$2.new\" \"$2\"",
            log.display()
        ),
    );
    let command = editor::command(Some(&format!("{editor} --wait")), None).unwrap();
    let text = editor::edit(&command, "the draft\nsecond line\n", ".py").unwrap();
    assert_eq!(text, "the edited draft\nsecond line\n");
    let logged = std::fs::read_to_string(&log).unwrap();
    let (flag, file) = logged.trim().split_once(' ').unwrap();
    assert_eq!(flag, "--wait");
    assert!(file.ends_with(".py") && file.contains("tern-"), "{file}");
    assert!(!Path::new(file).exists(), "the temporary file is gone");
}

#[test]
fn an_editor_that_exits_non_zero_or_cannot_start_gives_no_text() {
    let dir = tempfile::tempdir().unwrap();
    let failing = script(dir.path(), "fail.sh", "echo changed > \"$1\"\nexit 3");
    let err = editor::edit(&[failing], "draft", ".md").unwrap_err();
    assert!(
        matches!(&err, EditorError::Failed { status, .. } if status.contains('3')),
        "{err}"
    );
    let missing = dir.path().join("no-such-editor").display().to_string();
    let err = editor::edit(&[missing], "draft", ".md").unwrap_err();
    assert!(matches!(err, EditorError::Start { .. }), "{err}");
}

#[test]
fn text_that_is_not_utf8_is_refused_and_kept_in_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let garbling = script(dir.path(), "garble.sh", "printf 'caf\\351\\n' > \"$1\"");
    let err = editor::edit(&[garbling], "café\n", ".md").unwrap_err();
    let EditorError::NotUtf8(kept) = &err else {
        panic!("{err}")
    };
    assert_eq!(std::fs::read(kept).unwrap(), b"caf\xe9\n");
    assert!(err.to_string().contains("kept in"));
    std::fs::remove_file(kept).unwrap();
}

/// A hunk keeps its id when a neighbour is split off or applied, while its context lines
/// change: it is drawn from its new lines (an old highlighting of fewer lines panicked).
#[test]
fn a_hunk_whose_lines_changed_under_the_same_id_is_drawn_anew() {
    let mut app = reviewing();
    screen(&mut app, 160, 48);
    let mut view = demo_proposal();
    for hunk in &mut view.files[0].hunks {
        hunk.lines.truncate(2);
    }
    feed(&mut app, [Event::Proposal(Box::new(view.clone()))]);
    screen(&mut app, 160, 48);
    view.files[0].hunks[0].lines = demo_proposal().files[0].hunks[0].lines.clone();
    view.files[0].hunks[0].lines[0].text = "a context line drawn anew".into();
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    let shown = screen(&mut app, 160, 48);
    assert!(shown.contains("a context line drawn anew"), "{shown}");
}

#[test]
fn an_editor_that_empties_a_hunk_asks_before_deleting_its_lines() {
    let mut app = reviewing();
    let id = first_hunk_id();
    let request = EditRequest {
        target: EditTarget::Hunk { id: id.clone() },
        text: "        \"\"\"Never more than there is.\"\"\"\n".into(),
        suffix: ".py".into(),
    };
    for (emptied, answer) in [("", 'n'), ("\n", 'q'), ("", 'y')] {
        app.editor_done(request.clone(), Ok(emptied.into()));
        assert!(
            app.take_ops().is_empty(),
            "nothing is sent before the answer"
        );
        let status = screen(&mut app, 120, 30);
        assert!(
            status.contains(&format!(
                "your editor left hunk {id} empty: delete its lines? [y/N]"
            )),
            "{status}"
        );
        press(&mut app, answer);
        let sent = app.take_ops();
        if answer == 'y' {
            assert_eq!(
                sent,
                [Op::Review(ReviewOp::Edit {
                    id: id.clone(),
                    new_lines: emptied.into()
                })]
            );
        } else {
            assert!(sent.is_empty(), "{answer}: {sent:?}");
            let status = screen(&mut app, 120, 30);
            assert!(
                status.contains(&format!("hunk {id} kept as it was")),
                "{status}"
            );
        }
    }
}

/// Once the user's lines for a hunk are in (the edited hunk, accepted, may come back
/// under a new id), the review has the focus on the next hunk, as after `y`.
#[test]
fn after_an_edit_the_review_moves_on_to_the_next_hunk() {
    use tern::engine::protocol::Decision;
    let mut app = reviewing();
    let id = first_hunk_id();
    let request = EditRequest {
        target: EditTarget::Hunk { id: id.clone() },
        text: "old\n".into(),
        suffix: ".py".into(),
    };
    app.editor_done(request, Ok("new\n".into()));
    assert_eq!(app.focus(), PaneId::Review);
    assert!(matches!(
        app.take_ops().as_slice(),
        [Op::Review(ReviewOp::Edit { .. })]
    ));
    let mut view = demo_proposal();
    view.files[0].hunks[0].id = "e00000".into();
    view.files[0].hunks[0].decision = Decision::Accept;
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    press(&mut app, 'y');
    let next = demo_proposal().files[0].hunks[1].id.clone();
    assert_eq!(
        app.take_ops().last(),
        Some(&Op::Review(ReviewOp::Hunk {
            id: next,
            decision: Decision::Accept
        }))
    );
}
