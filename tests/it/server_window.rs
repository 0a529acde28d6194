//! The window known before the first error: tern asks a local server what it allocated
//! (llama-server's `/props`, vLLM's `max_model_len`, LM Studio's loaded context,
//! Ollama's loaded context, Modelfile or default), never takes a model's nominal
//! maximum, ignores garbage (said once), and keeps a window a server proved by
//! refusing a request for the next run, where it wins over a larger `--context-window`.

use std::time::{Duration, Instant};

use crate::history_support::{Chat, as_files, failure, is_summary, mapped_repo, notices};
use crate::local_models::settings;
use crate::support::{Dialect, MockServer, Reply};
use tern::config::Settings;
use tern::engine::Event;
use tern::engine::protocol::WindowSource;

fn serve(server: &MockServer) {
    server.set_responder(|r| match is_summary(r) {
        true => Reply::text("We talked about the code."),
        false => Reply::text("The inventory code is in module_3."),
    });
}

/// The last window the engine published, with its source and how it is said.
fn window(events: &[Event]) -> Option<(usize, WindowSource, String)> {
    events.iter().rev().find_map(|e| match e {
        Event::Budget(r) => Some((r.window, r.window_source, r.window_describe())),
        _ => None,
    })
}

/// One turn with a repository whose map fills far more than `fits` tokens if the
/// window were the assumed 32k: it must go out within the window the server said.
async fn first_turn(server: &MockServer, settings: Settings, fits: usize) -> Chat {
    serve(server);
    let files = mapped_repo(80);
    let mut chat = Chat::start(settings, &as_files(&files), &[]);
    let events = chat.say("where is the inventory code?".into()).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "nothing was refused and retried");
    // With the assumed 32k window this repository's map alone is over 4k.
    let sent = requests[0].prompt_tokens;
    assert!(sent < fits, "sent {sent} for a window of {fits}");
    chat
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_s_props_give_the_window_before_the_first_request() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 2048 }).await;
    server.say_window();
    let chat = first_turn(&server, settings(&server, "smollm2-props"), 2048).await;
    let (n, source, said) = window(&chat.events).unwrap();
    assert_eq!((n, source), (2048, WindowSource::Reported));
    assert_eq!(said, "window 2,048 from the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_s_max_model_len_is_the_window() {
    let server = MockServer::start_as(Dialect::Vllm {
        max_model_len: 4096,
    })
    .await;
    server.say_window();
    let chat = first_turn(&server, settings(&server, "smollm2-vllm"), 4096).await;
    let (n, source, _) = window(&chat.events).unwrap();
    assert_eq!((n, source), (4096, WindowSource::Reported));
}

/// LM Studio lists the model's nominal maximum (131,072) beside what it loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lm_studio_s_loaded_context_is_the_window_not_its_maximum() {
    let server = MockServer::start_as(Dialect::LmStudio { loaded: 4096 }).await;
    server.say_window();
    let chat = first_turn(&server, settings(&server, "smollm2-lmstudio"), 4096).await;
    let (n, source, _) = window(&chat.events).unwrap();
    assert_eq!((n, source), (4096, WindowSource::Reported));
}

/// Ollama: the loaded model's context, else its Modelfile's `num_ctx`, else Ollama's
/// default; never the model's nominal maximum from `/api/show` (131,072).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_s_window_is_the_loaded_one_else_the_modelfile_s_else_its_default() {
    let cases = [
        (Some(8192), Some(6144), 8192, WindowSource::Reported),
        (None, Some(6144), 6144, WindowSource::Reported),
        (None, None, 4096, WindowSource::ServerDefault),
    ];
    for (loaded, num_ctx, expected, source) in cases {
        let server = MockServer::start_as(Dialect::Ollama).await;
        server.window_api(|api| {
            api.enabled = true;
            api.ollama_loaded = loaded;
            api.ollama_num_ctx = num_ctx;
        });
        serve(&server);
        let mut chat = Chat::start(settings(&server, "served-model"), &[("a.txt", "a\n")], &[]);
        chat.say("hello".into()).await;
        let (n, got, said) = window(&chat.events).unwrap();
        assert_eq!((n, got), (expected, source), "{loaded:?} {num_ctx:?}");
        if source == WindowSource::ServerDefault {
            assert_eq!(said, "window 4,096 default for served-model (the server's)");
        }
    }
}

/// An answer that is no window (not JSON, zero, negative, huge) is ignored and said
/// once; an answer that does not come holds the first request for the probe's short
/// timeout at most, and never the first frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_silence_are_ignored_and_said_once() {
    for garbage in [
        "<html>not json</html>",
        r#"{"default_generation_settings":{"n_ctx":0}}"#,
        r#"{"default_generation_settings":{"n_ctx":-2048}}"#,
        r#"{"default_generation_settings":{"n_ctx":99999999999999}}"#,
    ] {
        let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 32_768 }).await;
        server.window_api(|api| {
            api.enabled = true;
            api.garbage = Some(garbage.into());
        });
        serve(&server);
        let mut chat = Chat::start(
            settings(&server, "smollm2-garbage"),
            &[("a.txt", "a\n")],
            &[],
        );
        chat.say("hello".into()).await;
        chat.say("again".into()).await;
        let (n, source, _) = window(&chat.events).unwrap();
        assert_eq!((n, source), (32_768, WindowSource::Assumed), "{garbage}");
        let said: Vec<_> = notices(&chat.events)
            .into_iter()
            .filter(|n| n.contains("its window was ignored"))
            .collect();
        assert_eq!(said.len(), 1, "{garbage}: {said:?}");
    }

    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 32_768 }).await;
    server.window_api(|api| {
        api.enabled = true;
        api.delay = Duration::from_secs(30);
    });
    serve(&server);
    let started = Instant::now();
    let mut chat = Chat::start(
        settings(&server, "smollm2-silent"),
        &[("a.txt", "a\n")],
        &[],
    );
    chat.until(|e| matches!(e, Event::Budget(_))).await;
    let first_budget = started.elapsed();
    assert!(
        first_budget < Duration::from_millis(1500),
        "{first_budget:?}"
    );
    chat.say("hello".into()).await;
    let turn = started.elapsed();
    assert!(turn < Duration::from_secs(6), "{turn:?}");
    let (n, source, _) = window(&chat.events).unwrap();
    assert_eq!((n, source), (32_768, WindowSource::Assumed));
    assert!(
        notices(&chat.events)
            .iter()
            .any(|n| n.contains("its window was ignored") && n.contains("no answer")),
        "{:?}",
        notices(&chat.events)
    );
    eprintln!("first budget after {first_budget:?}, first turn done after {turn:?}");
}

/// A window proved by an overflow is kept per server and model: a new run (not
/// resumed) starts with it instead of overflowing again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proven_window_is_kept_for_the_next_run() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 4096 }).await;
    serve(&server);
    let files = mapped_repo(80);
    let settings = settings(&server, "smollm2-kept");
    let mut chat = Chat::start(settings.clone(), &as_files(&files), &[]);
    chat.say("where is the inventory code?".into()).await;
    assert!(
        server.requests()[0].prompt_tokens >= 4096,
        "the first overflowed"
    );
    assert_eq!(window(&chat.events).unwrap().1, WindowSource::Server);

    let before = server.requests().len();
    let mut next = Chat::start(settings, &as_files(&files), &[]);
    let events = next.say("where is the inventory code?".into()).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1, "the new run did not overflow");
    assert!(requests[before].prompt_tokens < 4096);
    let (n, source, said) = window(&next.events).unwrap();
    assert_eq!((n, source), (4096, WindowSource::Server));
    assert_eq!(said, "window 4,096 learned from an overflow");
}

/// `--context-window 8192` where the server proved 2048, on a resumed run and on a
/// new one: the proven window wins, with a warning naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proven_smaller_window_wins_over_the_flag() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 2048 }).await;
    serve(&server);
    let files = mapped_repo(40);
    let flagged = Settings {
        context_window: Some(8192),
        ..settings(&server, "smollm2-flag")
    };
    let mut chat = Chat::start(flagged.clone(), &as_files(&files), &[]);
    chat.say("where is the inventory code?".into()).await;
    assert_eq!(
        window(&chat.events).unwrap().0,
        2048,
        "learned by overflowing"
    );

    let before = server.requests().len();
    let mut resumed = chat.resume(flagged.clone()).await;
    resumed.say("and the lending code?".into()).await;
    let mut fresh = Chat::start(flagged, &as_files(&files), &[]);
    fresh.say("where is the inventory code?".into()).await;
    for run in [&resumed, &fresh] {
        let (n, source, _) = window(&run.events).unwrap();
        assert_eq!((n, source), (2048, WindowSource::Server));
        assert!(
            notices(&run.events)
                .iter()
                .any(|n| n.contains("--context-window 8192") && n.contains("2048")),
            "{:?}",
            notices(&run.events)
        );
    }
    let after = &server.requests()[before..];
    assert!(
        after.iter().all(|r| r.prompt_tokens < 2048),
        "nothing was refused again"
    );
}
