//! The history's per-turn bookkeeping, which runs on the engine loop after every reply:
//! counting the history (cached), deciding the split, and saving the session file.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]
// Tests and benchmarks print what they measure or skip, with no key to redact.
#![allow(clippy::disallowed_macros)]

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
    let store = persist::Store::in_state_dir(dir.path(), dir.path());
    let (mut disk, _) = persist::SessionDisk::open(store.create().unwrap()).unwrap();
    let session = SessionFile {
        model: "gpt-4o".into(),
        mode: ChatMode::Code,
        history: messages.clone(),
        ..SessionFile::default()
    };
    c.bench_function("save state.json, 200 messages", |b| {
        b.iter(|| disk.save(&mut session.clone(), Vec::new()).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
