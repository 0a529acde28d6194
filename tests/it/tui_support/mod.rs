//! The TUI's test state: the engine events a real session produces, built from the demo
//! project with the real tokenizer, the real budget report and real diffs, so
//! snapshots, key scripts and benchmarks all draw what a user would see.

// `benches/tui.rs` includes this module too and uses only part of it.
#![allow(dead_code)]

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use similar::{DiffTag, TextDiff};

use tern::context::{
    self, BudgetReport, ChunkInputs, HistoryPhase, HistoryStatus, MapStatus, PromptFile, Window,
};
use tern::engine::protocol::{
    Decision, DiffLine, EditFailureView, FileProposalView, FileStatus, HunkView, LineKind, MapEdge,
    MapView, ProposalView,
};
use tern::engine::{ChatMode, Event, FileEntry, FileMode};
use tern::llm::{Finish, Message, ModelInfo, Usage};
use tern::tui::{App, AppConfig, Keymap, Theme, demo};

pub const ROOT: &str = "/home/dev/shop";
pub const MODEL: &str = "gpt-4o";

/// The demo reply (markdown with four SEARCH/REPLACE blocks).
pub const REPLY: &str = include_str!("../../../assets/demo/reply.md");

pub fn app() -> App {
    App::new(AppConfig {
        theme: Theme::default_theme(),
        keymap: Keymap::default(),
        notices: vec![],
        throwaway: false,
    })
}

fn project_file(path: &str) -> &'static str {
    demo::PROJECT
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, t)| *t)
        .expect("a demo file")
}

/// The budget of the demo session's next request, counted by the real tokenizer.
pub fn budget(draft: &str, history: &[Message]) -> BudgetReport {
    let model = ModelInfo::lookup(MODEL);
    let counter = model.token_counter();
    let file = |p: &str| PromptFile {
        path: p.to_string(),
        text: project_file(p).to_string(),
    };
    let inputs = ChunkInputs {
        system: "You are an expert software engineer. Propose changes to the files in the chat as SEARCH/REPLACE blocks.".into(),
        examples: vec![],
        readonly_files: vec![file("README.md")],
        repo_map: Some(map().text),
        done: history.to_vec(),
        chat_files: demo::EDITABLE.iter().map(|p| file(p)).collect(),
        cur: if draft.is_empty() { vec![] } else { vec![Message::user(draft)] },
        reminder: Some("Write every change as a SEARCH/REPLACE block.".into()),
        review_diff: None,
        command_outputs: Vec::new(),
    };
    let assembled = context::assemble(&inputs, &counter);
    let mut report = BudgetReport::new(
        &assembled,
        &model,
        Window::for_model(&model, None, None),
        counter.counting(),
    );
    let history_tokens = report.section(context::Section::Done);
    report.history = HistoryStatus {
        budget: 8192,
        tokens: history_tokens,
        checkpoint_mark: 4915,
        swap_mark: 6963,
        phase: HistoryPhase::Idle,
        summary_tokens: 0,
        summaries: 0,
    };
    report.last_usage = Some(Usage {
        prompt_tokens: 1_931,
        completion_tokens: 624,
        cached_tokens: 1_024,
        cache_write_tokens: 0,
    });
    report.map = Some(MapStatus {
        tokens: map().tokens,
        budget: map().budget,
        files: 3,
        refresh: tern::repomap::MapRefresh::Auto,
        kept_stale: false,
    });
    report.last_cost = 0.0096;
    report.session_cost = 0.0213;
    report
}

pub fn files() -> Vec<FileEntry> {
    vec![
        FileEntry {
            path: "README.md".into(),
            mode: FileMode::ReadOnly,
            tokens: 63,
            exists: true,
        },
        FileEntry {
            path: "shop/cli.py".into(),
            mode: FileMode::Editable,
            tokens: 302,
            exists: true,
        },
        FileEntry {
            path: "shop/inventory.py".into(),
            mode: FileMode::Editable,
            tokens: 280,
            exists: true,
        },
        FileEntry {
            path: "shop/reports.py".into(),
            mode: FileMode::Editable,
            tokens: 0,
            exists: false,
        },
    ]
}

pub fn map() -> MapView {
    MapView {
        tokens: 214,
        budget: 1024,
        ranked: vec![
            ("shop/inventory.py".into(), 0.3120),
            ("shop/pricing.py".into(), 0.1874),
            ("shop/cli.py".into(), 0.1402),
            ("shop/__init__.py".into(), 0.0611),
            ("tests/test_inventory.py".into(), 0.0433),
        ],
        text: "shop/pricing.py:\n│def format_cents(cents: int) -> str:\n│def apply_discount(cents: int, percent: int) -> int:\n\nshop/__init__.py:\n│from shop.inventory import Inventory, Item\n\ntests/test_inventory.py:\n│def test_add_merges_quantities():\n│def test_total_value():\n".into(),
    }
}

pub fn why_inventory() -> Vec<MapEdge> {
    vec![
        MapEdge {
            ident: "Inventory".into(),
            from: "shop/cli.py".into(),
            weight: 3.0,
        },
        MapEdge {
            ident: "Item".into(),
            from: "shop/__init__.py".into(),
            weight: 1.5,
        },
    ]
}

/// The SEARCH/REPLACE blocks of a reply: (file, search, replace).
pub fn edit_blocks(reply: &str) -> Vec<(String, String, String)> {
    let lines: Vec<&str> = reply.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == "<<<<<<< SEARCH" {
            let file = lines[i - 2].trim().to_string();
            let divider = i + lines[i..].iter().position(|l| *l == "=======").unwrap();
            let end = i + lines[i..]
                .iter()
                .position(|l| *l == ">>>>>>> REPLACE")
                .unwrap();
            let search = lines[i + 1..divider].join("\n") + "\n";
            let replace = lines[divider + 1..end].join("\n") + "\n";
            out.push((file, search, replace));
            i = end;
        }
        i += 1;
    }
    out
}

/// The hunks turning `before` into `after`, as the review pane receives them.
pub fn hunks(path: &str, before: &str, after: &str) -> Vec<HunkView> {
    let diff = TextDiff::from_lines(before, after);
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    diff.grouped_ops(3)
        .iter()
        .enumerate()
        .map(|(n, group)| {
            let first = &group[0];
            let last = &group[group.len() - 1];
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let mut lines = Vec::new();
            for op in group {
                match op.tag() {
                    DiffTag::Equal => {
                        for (o, nn) in op.old_range().zip(op.new_range()) {
                            lines.push(DiffLine {
                                kind: LineKind::Context,
                                old_line: Some(o + 1),
                                new_line: Some(nn + 1),
                                text: old[o].to_string(),
                                no_newline: false,
                            });
                        }
                    }
                    _ => {
                        for o in op.old_range() {
                            lines.push(DiffLine {
                                kind: LineKind::Removed,
                                old_line: Some(o + 1),
                                new_line: None,
                                text: old[o].to_string(),
                                no_newline: false,
                            });
                        }
                        for nn in op.new_range() {
                            lines.push(DiffLine {
                                kind: LineKind::Added,
                                old_line: None,
                                new_line: Some(nn + 1),
                                text: new[nn].to_string(),
                                no_newline: false,
                            });
                        }
                    }
                }
            }
            HunkView {
                id: format!(
                    "{}{:x}",
                    path.replace(['/', '.'], "")
                        .chars()
                        .take(4)
                        .collect::<String>(),
                    0xa0 + n
                ),
                old_start: old_range.start + 1,
                old_len: old_range.len(),
                new_start: new_range.start + 1,
                new_len: new_range.len(),
                lines,
                decision: Decision::Pending,
                edited: false,
                cautions: Vec::new(),
            }
        })
        .collect()
}

/// The demo reply's proposal: two files, two hunks each, plus one block that failed and
/// a suggested command.
pub fn proposal() -> ProposalView {
    let mut edited: Vec<(String, String)> = Vec::new();
    for (file, search, replace) in edit_blocks(REPLY) {
        match edited.iter_mut().find(|(p, _)| *p == file) {
            Some((_, text)) => *text = text.replacen(&search, &replace, 1),
            None => {
                let text = project_file(&file).replacen(&search, &replace, 1);
                edited.push((file, text));
            }
        }
    }
    ProposalView {
        files: edited
            .iter()
            .map(|(path, after)| FileProposalView {
                path: path.clone(),
                change: FileStatus::Modified,
                hunks: hunks(path, project_file(path), after),
                cautions: Vec::new(),
                ignored: None,
            })
            .collect(),
        failures: vec![EditFailureView {
            path: Some("shop/pricing.py".into()),
            block: 5,
            message:
                "the SEARCH text was not found in shop/pricing.py; the closest lines are 12-14"
                    .into(),
            near: None,
            hunk: None,
        }],
        shell_commands: vec!["python -m pytest".into()],
        written_as: vec![],
    }
}

/// A proposal for one generated file of `functions` two-line functions, every fifth
/// one changed: `functions / 5` hunks of 10 lines (for the benchmark, 2,500 functions
/// make a 5,000-line diff).
pub fn big_proposal(functions: usize) -> ProposalView {
    let function = |i: usize, changed: bool| {
        if changed {
            format!("def function_{i}(value: int) -> int:\n    return value * {i} + 1\n")
        } else {
            format!("def function_{i}(value):\n    return value * {i}\n")
        }
    };
    let before: String = (0..functions).map(|i| function(i, false)).collect();
    let after: String = (0..functions).map(|i| function(i, i % 5 == 2)).collect();
    ProposalView {
        files: vec![FileProposalView {
            path: "gen/big.py".into(),
            change: FileStatus::Modified,
            hunks: hunks("gen/big.py", &before, &after),
            cautions: Vec::new(),
            ignored: None,
        }],
        failures: vec![],
        shell_commands: vec![],
        written_as: vec![],
    }
}

/// The events of a session's start: ready, files, budget, repo files, map.
pub fn session_start() -> Vec<Event> {
    vec![
        Event::Ready {
            root: ROOT.into(),
            model: MODEL.into(),
            mode: ChatMode::Code,
            session: None,
        },
        Event::Files { files: files() },
        Event::Budget(Box::new(budget("", &[]))),
        Event::RepoFiles {
            files: demo::PROJECT.iter().map(|(p, _)| p.to_string()).collect(),
        },
        Event::Map(Box::new(map())),
    ]
}

/// One turn's events: the reply streamed in `chunk`-byte deltas, then finished.
pub fn turn(question: &str, reply: &str, chunk: usize) -> Vec<Event> {
    let mut events = vec![Event::TurnStarted {
        text: question.into(),
        notes: vec![],
        mode: ChatMode::Code,
    }];
    let mut rest = reply;
    while !rest.is_empty() {
        let mut cut = chunk.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at_checked(cut).unwrap();
        events.push(Event::Delta {
            text: piece.to_string(),
        });
        rest = tail;
    }
    events.push(Event::TurnFinished {
        reply: reply.into(),
        finish: Finish::Stop,
        usage: Some(Usage {
            prompt_tokens: 1_931,
            completion_tokens: 624,
            cached_tokens: 1_024,
            cache_write_tokens: 0,
        }),
        usage_estimated: false,
        cost: 0.0096,
        session_cost: 0.0213,
    });
    events
}

/// `n` messages (questions and replies with code blocks), as a long session leaves them.
pub fn long_history(n: usize) -> Vec<Event> {
    let mut events = Vec::new();
    for i in 0..n / 2 {
        let reply = format!(
            "Step {i}: here is the change, with the reasoning behind it. The function keeps its \
             signature so callers need no update, and the new branch covers the empty case.\n\n\
             ```python\ndef step_{i}(items):\n    if not items:\n        return []\n    \
             return [x * {i} for x in items if x]\n```\n\nRun the tests with `pytest -k step_{i}`.\n"
        );
        events.extend(turn(
            &format!("make step {i} handle empty input"),
            &reply,
            usize::MAX,
        ));
    }
    events
}

/// What a reply asks for: two files outside the chat (and more) and two commands, one
/// with an escape sequence in it.
pub fn needed_event() -> Event {
    Event::Needed {
        files: vec![
            tern::engine::protocol::NeededFile {
                path: "shop/pricing.py".into(),
                tokens: 1_240,
            },
            tern::engine::protocol::NeededFile {
                path: "tests/test_inventory.py".into(),
                tokens: 310,
            },
        ],
        more_files: 3,
        commands: vec!["pytest -x tests".into(), "echo \u{1b}[2Jdone".into()],
        more_commands: 0,
    }
}

pub fn feed(app: &mut App, events: impl IntoIterator<Item = Event>) {
    for event in events {
        app.handle_engine(event);
    }
}

/// The screen as text, at `width`x`height`.
pub fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    terminal.backend().to_string()
}

/// The screen's cells, for assertions on colour.
pub fn screen_buffer(app: &mut App, width: u16, height: u16) -> ratatui::buffer::Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    terminal.backend().buffer().clone()
}

/// The foreground colour of the first cell of the first line holding `text`.
pub fn color_of(buf: &ratatui::buffer::Buffer, text: &str) -> Option<ratatui::style::Color> {
    let area = buf.area;
    for y in area.top()..area.bottom() {
        let row: String = (area.left()..area.right())
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        if let Some(byte) = row.find(text) {
            let x = row.get(..byte).unwrap_or_default().chars().count() as u16;
            return Some(buf[(area.left() + x, y)].fg);
        }
    }
    None
}

pub fn key(code: KeyCode) -> TermEvent {
    TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> TermEvent {
    TermEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

/// Presses keys as a person pressing them one by one: each a second and a half after
/// the one before (the typing rule takes a letter right after another for typing).
pub struct Slowly(pub std::time::Instant);

impl Slowly {
    pub fn new() -> Slowly {
        Slowly(std::time::Instant::now())
    }

    pub fn press(&mut self, app: &mut App, event: TermEvent) {
        self.0 += std::time::Duration::from_millis(1500);
        app.handle_terminal_at(event, self.0);
    }
}

/// Types `text` key by key (`\n` is Enter).
pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        let code = if c == '\n' {
            KeyCode::Enter
        } else {
            KeyCode::Char(c)
        };
        app.handle_terminal(key(code));
    }
}
