//! Text from a model, a repository or a server never drives the terminal: control
//! characters (C0 but newline and tab, DEL, C1) in every field of every event that
//! reaches the workspace are drawn as visible escapes, in every pane, and hidden
//! characters (bidi overrides, U+2028, zero-width and tag characters) as markers in a
//! warning colour.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::tui_support::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tern::engine::Event;
use tern::engine::protocol::{EditFailureView, FileEntry, FileMode, MapEdge, MapView};
use tern::llm::{Finish, Message};
use tern::terminal_text::{has_hidden, is_unsafe};
use tern::tui::{App, PaneId};

/// OSC 52 (write the clipboard), a screen clear, a C1 CSI, BEL, DEL, a NUL and a
/// backspace: each alone would act on a terminal. Then a right-to-left override, an
/// isolate, a line separator, a zero-width space, a Hangul filler and a tag character:
/// each alone draws as nothing or turns the text around it.
const HOSTILE: &str = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\u{9b}31m\x7f\x00\x08\u{202e}\u{2066}\u{2028}\u{200b}\u{3164}\u{e0041}";

fn evil(label: &str) -> String {
    format!("{label}{HOSTILE}end")
}

fn hostile_events() -> Vec<Event> {
    let mut proposal = proposal();
    for file in &mut proposal.files {
        file.path = evil(&file.path);
        for hunk in &mut file.hunks {
            for line in &mut hunk.lines {
                line.text = evil(&line.text);
            }
        }
    }
    proposal.failures.push(EditFailureView {
        path: Some(evil("bad.py")),
        block: 2,
        message: evil("no match"),
        near: None,
        hunk: None,
    });
    proposal.failures.push(EditFailureView {
        path: Some(evil("stale.py")),
        block: 0,
        message: evil("a proposed hunk no longer applies"),
        near: None,
        hunk: Some(evil("-old\n+new\n")),
    });
    proposal.shell_commands.push(evil("rm"));
    let mut budget = budget("", &[Message::user(evil("q"))]);
    budget.model = evil("model");
    let mut files = files();
    files.push(FileEntry {
        path: evil("src/x.py"),
        mode: FileMode::Editable,
        tokens: 3,
        exists: true,
    });
    vec![
        Event::Ready {
            root: evil("/repo"),
            model: evil("gpt-4o"),
            mode: tern::engine::protocol::ChatMode::Code,
            session: None,
        },
        Event::TurnStarted {
            text: evil("question"),
            notes: vec![],
            mode: tern::engine::protocol::ChatMode::Code,
        },
        Event::Reasoning {
            text: evil("thinking"),
        },
        Event::Delta {
            text: evil("reply"),
        },
        Event::Retrying {
            attempt: 1,
            delay_ms: 10,
            reason: evil("503"),
        },
        Event::TurnFinished {
            reply: evil("reply"),
            finish: Finish::CutOff(evil("broke")),
            usage: None,
            usage_estimated: false,
            cost: 0.0,
            session_cost: 0.0,
        },
        Event::TurnFailed {
            error: evil("failed"),
            message: evil("question"),
        },
        Event::Budget(Box::new(budget)),
        Event::Files { files },
        Event::Model {
            model: evil("other-model"),
        },
        Event::Output {
            title: evil("title"),
            text: evil("output"),
        },
        Event::Notice {
            text: evil("notice"),
        },
        Event::Warning {
            text: evil("warning"),
        },
        Event::Error {
            text: evil("error"),
        },
        Event::Reflection {
            attempt: 1,
            max: 3,
            message: evil("reflection"),
        },
        Event::Applied {
            files: vec![evil("a.py")],
            accepted: 1,
            rejected: 0,
            commit: Some(evil("abc1234")),
            message: evil("feat: x"),
            failed: vec![],
            held: 0,
            lost: 0,
        },
        Event::Map(Box::new(MapView {
            tokens: 10,
            budget: 100,
            ranked: vec![(evil("src/m.py"), 1.0)],
            text: evil("src/m.py:\n  def f():"),
        })),
        Event::MapWhy {
            path: evil("src/m.py"),
            edges: vec![MapEdge {
                ident: evil("f"),
                from: evil("src/n.py"),
                weight: 1.0,
            }],
        },
        Event::RepoFiles {
            files: vec![evil("src/y.py")],
        },
        Event::Proposal(Box::new(proposal)),
    ]
}

fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.chars().any(is_unsafe),
        "{what} drew a control character:\n{text:?}"
    );
    assert!(
        !has_hidden(text),
        "{what} drew a hidden character:\n{text:?}"
    );
}

fn pane(app: &mut App, id: PaneId) -> String {
    let area = Rect::new(0, 0, 120, 40);
    let mut buf = Buffer::empty(area);
    app.draw_pane(id, area, &mut buf);
    (0..40)
        .flat_map(|y| (0..120).map(move |x| (x, y)))
        .map(|(x, y)| buf[(x, y)].symbol().to_string())
        .collect()
}

#[test]
fn control_characters_in_any_event_are_drawn_visibly_in_every_pane() {
    let mut app = app();
    feed(&mut app, hostile_events());
    for (w, h) in [(80, 24), (160, 48)] {
        let text = screen(&mut app, w, h);
        assert_clean(&format!("the screen at {w}x{h}"), &text);
    }
    for id in PaneId::ALL {
        let text = pane(&mut app, id);
        assert_clean(&format!("{id:?}"), &text);
    }
    let chat = pane(&mut app, PaneId::Chat);
    assert!(
        chat.contains("\\u{1b}]52"),
        "the escape is shown, not dropped"
    );
    assert!(chat.contains("⟨U+202E⟩⟨U+2066⟩⟨U+2028⟩"), "{chat}");
}

/// The cells of `id` drawn at 120x40 holding `needle`'s first character, with their style.
fn styled_at(app: &mut App, id: PaneId, needle: &str) -> Vec<ratatui::style::Style> {
    let area = Rect::new(0, 0, 120, 40);
    let mut buf = Buffer::empty(area);
    app.draw_pane(id, area, &mut buf);
    let mut found = Vec::new();
    for y in 0..40 {
        let row: Vec<String> = (0..120).map(|x| buf[(x, y)].symbol().to_string()).collect();
        let line: String = row.concat();
        if let Some(at) = line.find(needle) {
            // Cells are one symbol each here (the needle is ASCII and one-column).
            let x = line.get(..at).unwrap().chars().count() as u16;
            found.push(buf[(x, y)].style());
        }
    }
    found
}

#[test]
fn hidden_characters_are_markers_in_a_warning_style_in_the_review_and_the_chat() {
    use ratatui::style::Modifier;
    let mut app = app();
    let mut view = proposal();
    view.files[0].hunks[0].lines[0].text = "// ok\u{2028}execSync(cmd) \u{202e}x".into();
    feed(
        &mut app,
        [
            Event::TurnStarted {
                text: "question".into(),
                notes: vec![],
                mode: tern::engine::protocol::ChatMode::Code,
            },
            Event::Delta {
                text: "see \u{202e}here and `\u{2066}code`\n".into(),
            },
            Event::Proposal(Box::new(view)),
        ],
    );
    for id in [PaneId::Review, PaneId::Chat] {
        let text = pane(&mut app, id);
        assert_clean(&format!("{id:?}"), &text);
        let marks = styled_at(&mut app, id, "⟨U+202E⟩");
        assert!(!marks.is_empty(), "{id:?}: no marker drawn:\n{text}");
        for style in marks {
            assert!(
                style.add_modifier.contains(Modifier::REVERSED),
                "{id:?}: the marker is drawn like text: {style:?}"
            );
        }
    }
    let review = pane(&mut app, PaneId::Review);
    assert!(review.contains("// ok⟨U+2028⟩execSync(cmd)"), "{review}");
}

#[test]
fn every_string_of_every_event_is_made_visible() {
    for event in hostile_events() {
        // Debug shows a raw control character as `\u{1b}`; a made-visible one is the
        // text `\u{1b}`, which Debug shows with its backslash escaped: `\\u{1b}`.
        let shown = format!("{:?}", event.visible());
        for raw in ["\\u{1b}", "\\u{9b}", "\\u{7f}", "\\u{7}", "\\0", "\\u{8}"] {
            assert!(
                shown
                    .match_indices(raw)
                    .all(|(i, _)| i > 0 && shown.as_bytes()[i - 1] == b'\\'),
                "{raw} raw in {shown}"
            );
        }
    }
}
