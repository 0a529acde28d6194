//! The history's per-turn bookkeeping, which runs on the engine loop after every reply:
//! counting the history (cached), deciding the split, and saving the session file.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use tern::context::history::{self, split_point};
use tern::engine::ChatMode;
use tern::engine::persist::{self, SessionFile};
use tern::llm::{Message, ModelInfo};

/// 200 messages of 20 to 400 words, a long session's history before summarizing.
fn long_history() -> Vec<Message> {
    (0..200)
        .map(|i| {
            let text = format!(
                "message {i}: {}",
                "the parser in src/parse.rs now keeps spans ".repeat(3 + (i * 37) % 60)
            );
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let counter = ModelInfo::lookup("gpt-4o").token_counter();
    let messages = long_history();
    history::tokens(&messages, &counter); // warm the cache, as the engine's is
    c.bench_function("history tokens, 200 messages, cached", |b| {
        b.iter(|| history::tokens(&messages, &counter))
    });
    c.bench_function("split point, 200 messages", |b| {
        b.iter(|| split_point(&messages, &counter, 8192))
    });

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sessions/bench.json");
    let session = SessionFile {
        version: 1,
        model: "gpt-4o".into(),
        mode: ChatMode::Code,
        files: vec![],
        history: messages.clone(),
        summary_at_front: false,
        checkpoint: None,
        summaries: 0,
        session_cost: 0.0,
        proposal: None,
        proposal_failures: vec![],
        proposal_shell: vec![],
        notes: vec![],
        transcript: vec![],
        server_window: None,
        learned_limit: None,
        turns: Default::default(),
        outputs: Vec::new(),
    };
    c.bench_function("save session.json, 200 messages", |b| {
        b.iter(|| persist::save(&file, &session, false).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
