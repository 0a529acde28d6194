//! A loopback OpenAI-compatible server for tern's tests: real HTTP on 127.0.0.1, real
//! SSE in OpenAI's chunk format, usage counted with the reference tokenizer, scripted
//! replies and scripted faults, and a log of every request.
//!
//! ```ignore
//! mod support;
//! use support::{MockServer, Reply};
//!
//! let server = MockServer::start().await;          // or start_in_thread() in sync tests
//! server.push(Reply::rate_limited(1));
//! server.push(Reply::text("Hello there"));
//! // ... point the client at server.base_url() ...
//! assert_eq!(server.requests()[1].messages[0].role, "system");
//! ```
//!
//! Replies are taken from the model's own queue (`push_for_model`), else the general
//! queue (`push`), else the responder (`set_responder`). With none of these, the server
//! answers 500 "no reply was scripted", so a test cannot pass by accident.

// `benches/tui.rs` includes this module too and uses only part of it.
#![allow(dead_code, unused_imports)]

mod dialect;
mod errors;
mod handler;
mod log;
mod render;
mod reply;
mod repo;
mod request;
mod script;
mod server;
mod tokens;
mod window;

pub use dialect::Dialect;
pub use handler::Tokenizing;
pub use reply::Reply;
pub use repo::{TempRepo, executable, output_within, plant_session, texts};
pub use request::{RecordedMessage, RecordedRequest};
pub use server::MockServer;
pub use tokens::{encoding_for_model, prompt_tokens, text_tokens};

/// Settings as `tern ARGV` loads them from `sources` (the flags as the top layer, as
/// `main` does).
pub fn load_settings(
    argv: &[&str],
    sources: &tern::config::ConfigSources,
    env: impl Fn(&str) -> Option<String>,
) -> Result<tern::config::Loaded, tern::config::ConfigError> {
    use clap::Parser;
    let mut full = vec!["tern"];
    full.extend_from_slice(argv);
    let global = tern::cli::Cli::try_parse_from(full).unwrap().global;
    tern::config::load(
        &global.settings_layer(),
        &global.config_sources(sources.clone()),
        env,
    )
}

/// Collects an engine's events until one matches `stop` (included), failing after 20 s.
pub async fn until(
    engine: &mut tern::engine::EngineHandle,
    stop: impl Fn(&tern::engine::Event) -> bool,
) -> Vec<tern::engine::Event> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), engine.events.recv())
            .await
            .unwrap_or_else(|_| panic!("no matching event; saw {seen:#?}"))
            .expect("the engine stopped");
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// What a user typed, as a front end sends it: a message, or a command parsed at the
/// edge (`engine::input::parse`).
pub fn typed(text: &str) -> tern::engine::Op {
    tern::engine::input::parse(text).expect("a known command")
}

/// An engine on `repo` talking to `server` (gpt-4o, weak model gpt-4o-mini, a short
/// retry budget, no tag cache) with `editable` in the chat; `tune` adjusts the settings.
pub fn spawn_engine(
    repo: &TempRepo,
    server: &MockServer,
    editable: &str,
    resume: bool,
    tune: impl FnOnce(&mut tern::config::Settings),
) -> tern::engine::EngineHandle {
    let mut settings = tern::config::Settings {
        api_base: server.base_url(),
        api_key: Some(tern::config::ApiKey::new("sk-test")),
        model: "gpt-4o".into(),
        weak_model: "gpt-4o-mini".into(),
        retry_budget_secs: 2,
        ..tern::config::Settings::default()
    };
    tune(&mut settings);
    let root = repo.path().canonicalize().unwrap();
    tern::engine::spawn(tern::engine::EngineConfig {
        settings,
        cwd: root.clone(),
        root,
        record: None,
        replay: None,
        editable: vec![editable.into()],
        read_only: vec![],
        map_cache: tern::repomap::CacheLocation::Disabled,
        resume: resume.then_some(tern::engine::persist::Resume::Newest),
        role: Default::default(),
        model_chosen: false,
    })
    .unwrap()
}

/// A process a test starts (tern itself, git, tmux, kill), with the environment the
/// test chooses; tern's own children start through `tern::spawn::command`.
#[allow(clippy::disallowed_methods)]
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    std::process::Command::new(program)
}
