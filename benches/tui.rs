//! What the TUI costs where it matters (targets from issue 5):
//!
//! - `frame/*`: drawing one 200x60 frame with 2,000 messages of history (with code
//!   blocks) and a 5,000-line diff open in the review. Target: median ≤ 2 ms.
//! - `keypress_to_frame`: the real event loop and the real engine, a reply streaming
//!   from the loopback server at 200 tokens/s; the time from a key entering the loop to
//!   the frame that shows it. Target: ≤ 16 ms.
//!
//! `cargo bench --bench tui`

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]
// Tests and benchmarks print what they measure or skip, with no key to redact.
#![allow(clippy::disallowed_macros)]

#[path = "../tests/it/support/mod.rs"]
mod support;
#[path = "../tests/it/tui_support/mod.rs"]
mod tui_support;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use tern::engine::{EngineConfig, Event};
use tern::tui::{App, PaneId};
use tui_support::*;

const WIDTH: u16 = 200;
const HEIGHT: u16 = 60;

/// 2,000 messages, the demo proposal's big sibling open, focus on the review.
fn loaded_app() -> App {
    let mut app = app();
    feed(&mut app, session_start());
    feed(&mut app, long_history(2_000));
    let big = big_proposal(2_500);
    let diff_lines: usize = big.files[0].hunks.iter().map(|h| h.lines.len()).sum();
    assert_eq!(diff_lines, 5_000);
    feed(&mut app, [Event::Proposal(Box::new(big))]);
    assert_eq!(app.focus(), PaneId::Review);
    app
}

fn frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();

    let mut app = loaded_app();
    terminal.draw(|f| app.draw(f)).unwrap();
    group.bench_function("review_open_unchanged", |b| {
        b.iter(|| terminal.draw(|f| app.draw(f)).unwrap().area)
    });

    // Every frame moves to the next hunk: new rows, highlighted as they appear.
    let mut app = loaded_app();
    group.bench_function("review_next_hunk", |b| {
        b.iter(|| {
            app.handle_terminal(key(KeyCode::Char('j')));
            terminal.draw(|f| app.draw(f)).unwrap().area
        })
    });

    // The chat in the middle with 2,000 messages, a reply growing by a delta per frame.
    let mut app = loaded_app();
    app.handle_terminal(key(KeyCode::Esc));
    feed(&mut app, turn("and the tests?", "", 1).into_iter().take(1));
    let words = "Here is how the test covers it: `remove` with more than the stock ";
    let mut n = 0;
    group.bench_function("chat_streaming_delta", |b| {
        b.iter(|| {
            n += 1;
            let text = if n % 40 == 0 {
                "\n\n".to_string()
            } else {
                words
                    .get(n % 7 * 8..n % 7 * 8 + 8)
                    .unwrap_or_default()
                    .to_string()
            };
            app.handle_engine(Event::Delta { text });
            terminal.draw(|f| app.draw(f)).unwrap().area
        })
    });

    // The first frame after the history arrives: nothing laid out yet.
    group.sample_size(20);
    group.bench_function("cold_first_frame", |b| {
        b.iter_batched(
            loaded_app,
            |mut app| {
                terminal.draw(|f| app.draw(f)).unwrap();
                // Returned, so dropping 2,000 messages is not timed.
                app
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// Watches the frames the loop draws: when the character a key typed first appears,
/// the time since the key was sent is one latency sample.
#[derive(Default)]
struct Probe {
    expected: Mutex<Option<(String, Instant)>>,
    latencies: Mutex<Vec<Duration>>,
    streaming: AtomicBool,
    frames: AtomicUsize,
}

struct ProbeBackend {
    inner: TestBackend,
    probe: Arc<Probe>,
}

impl Backend for ProbeBackend {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let cells: Vec<(u16, u16, &Cell)> = content.collect();
        {
            let mut expected = self.probe.expected.lock().unwrap();
            if let Some((symbol, sent)) = expected.as_ref()
                && cells.iter().any(|(_, _, c)| c.symbol() == symbol)
            {
                self.probe.latencies.lock().unwrap().push(sent.elapsed());
                *expected = None;
            }
        }
        let _ = self.inner.draw(cells.into_iter());
        self.probe.frames.fetch_add(1, Ordering::Relaxed);
        let status: String = (0..WIDTH)
            .map(|x| self.inner.buffer()[(x, HEIGHT - 1)].symbol().to_string())
            .collect();
        self.probe
            .streaming
            .store(status.contains("streaming"), Ordering::Relaxed);
        Ok(())
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(Position::ORIGIN)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, _position: P) -> io::Result<()> {
        Ok(())
    }

    fn clear(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn clear_region(&mut self, _clear_type: ClearType) -> io::Result<()> {
        Ok(())
    }

    fn size(&self) -> io::Result<Size> {
        Ok(Size::new(WIDTH, HEIGHT))
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        Ok(WindowSize {
            columns_rows: Size::new(WIDTH, HEIGHT),
            pixels: Size::new(0, 0),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A long reply, so the stream lasts through the measurement (it is restarted if not).
fn long_reply() -> String {
    let mut reply = String::new();
    for i in 0..60 {
        reply.push_str(&format!(
            "Step {i}. The change keeps the function's signature, so no caller needs an \
             update, and covers the empty case the old code missed.\n\n```python\n\
             def step_{i}(items):\n    if not items:\n        return []\n    return [x * {i} for x in items]\n```\n\n"
        ));
    }
    reply
}

fn keypress_to_frame(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = support::MockServer::start_in_thread();
    for _ in 0..20 {
        server.push(support::Reply::text(long_reply()).at_tokens_per_second(200.0));
    }
    let repo = support::TempRepo::with_files(tern::tui::demo::PROJECT);
    let settings = tern::config::Settings {
        api_base: server.base_url(),
        model: "gpt-4o".into(),
        ..Default::default()
    };
    let config = EngineConfig {
        settings,
        root: repo.path().to_path_buf(),
        cwd: repo.path().to_path_buf(),
        record: None,
        replay: None,
        editable: tern::tui::demo::EDITABLE
            .iter()
            .map(|s| s.to_string())
            .collect(),
        read_only: vec![],
        map_cache: tern::repomap::CacheLocation::Disabled,
        resume: None,
        role: Default::default(),
        model_chosen: false,
    };
    let probe = Arc::new(Probe::default());
    let (keys, key_rx) = tokio::sync::mpsc::unbounded_channel::<io::Result<TermEvent>>();
    let loop_probe = Arc::clone(&probe);
    runtime.spawn(async move {
        let mut engine = tern::engine::spawn(config).unwrap();
        let mut terminal = Terminal::new(ProbeBackend {
            inner: TestBackend::new(WIDTH, HEIGHT),
            probe: loop_probe,
        })
        .unwrap();
        let mut app = app();
        tern::tui::run_loop(
            &mut terminal,
            &mut app,
            &mut tern::tui::TerminalInput::from_channel(key_rx),
            &mut engine.events,
            &engine.ops,
            std::future::pending(),
        )
        .await
        .unwrap();
    });
    let send = |event: TermEvent| keys.send(Ok(event)).unwrap();
    let start_turn = || {
        send(ctrl('u'));
        for ch in "explain the change\r".chars() {
            let code = if ch == '\r' {
                KeyCode::Enter
            } else {
                KeyCode::Char(ch)
            };
            send(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !probe.streaming.load(Ordering::Relaxed) {
            assert!(
                Instant::now() < deadline,
                "the reply never started streaming"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Let some of the reply arrive first.
        std::thread::sleep(Duration::from_millis(500));
    };
    start_turn();
    // Characters no reply contains, so the first frame showing one is the key's frame.
    let glyphs: Vec<String> = ('①'..='⑳').map(String::from).collect();
    let mut typed = 0usize;
    let mut group = c.benchmark_group("keypress");
    group
        .sample_size(60)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("keypress_to_frame_streaming_200tps", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if !probe.streaming.load(Ordering::Relaxed) {
                    start_turn();
                }
                if typed % 60 == 59 {
                    // Keep the message box short: clear it (not measured).
                    send(ctrl('u'));
                    std::thread::sleep(Duration::from_millis(20));
                }
                let glyph = &glyphs[typed % glyphs.len()];
                typed += 1;
                let before = probe.latencies.lock().unwrap().len();
                let c = glyph.chars().next().unwrap();
                *probe.expected.lock().unwrap() = Some((glyph.clone(), Instant::now()));
                send(TermEvent::Key(KeyEvent::new(
                    KeyCode::Char(c),
                    KeyModifiers::NONE,
                )));
                let deadline = Instant::now() + Duration::from_secs(2);
                loop {
                    if let Some(latency) = probe.latencies.lock().unwrap().get(before) {
                        total += *latency;
                        break;
                    }
                    assert!(Instant::now() < deadline, "the key never reached a frame");
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            total
        })
    });
    group.finish();
    let latencies = probe.latencies.lock().unwrap().clone();
    let mut sorted = latencies.clone();
    sorted.sort();
    let pct = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    eprintln!(
        "keypress_to_frame over {} keys while streaming: median {:?}, p90 {:?}, p99 {:?}, max {:?}; {} frames drawn",
        sorted.len(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        sorted[sorted.len() - 1],
        probe.frames.load(Ordering::Relaxed)
    );
    drop(server);
    runtime.shutdown_background();
}

criterion_group!(benches, frames, keypress_to_frame);
criterion_main!(benches);
