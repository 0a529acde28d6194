//! The spending caps (`max_cost`, `max_loop_cost`) against the loopback server, whose
//! reported usage is priced at the model table's gpt-4o rates: unattended work stops at
//! a cap with one clear warning, the user's own messages never do.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::engine_edits::{BAD_EDIT, engine_tuned, idle, repo, submit};
use crate::history_engine::{BUDGET, RECAP, script, settings, summaries, turn_reaching, user_text};
use crate::history_support::{Chat, notices};
use crate::support::{MockServer, Reply};
use tern::engine::Event;

/// Far below what one priced request costs: reached after the first reply.
const TINY: f64 = 0.000_001;

fn warnings(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn main_requests(server: &MockServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.model == "gpt-4o")
        .count()
}

#[tokio::test]
async fn a_reflection_is_not_sent_once_max_cost_is_reached() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(BAD_EDIT));
    let repo = repo();
    let mut engine = engine_tuned(&repo, &server, false, |s| s.max_cost = Some(TINY));
    submit(&engine, "greet people warmly");
    let events = idle(&mut engine).await;
    assert_eq!(main_requests(&server), 1, "no reflection was sent");
    assert!(
        !events.iter().any(|e| matches!(e, Event::Reflection { .. })),
        "{events:#?}"
    );
    let said = warnings(&events);
    let capped: Vec<&String> = said.iter().filter(|w| w.contains("max_cost")).collect();
    assert_eq!(capped.len(), 1, "{said:#?}");
    assert!(
        capped[0].starts_with(&format!("max_cost ${TINY} reached ($0.0")),
        "{}",
        capped[0]
    );
    assert!(
        capped[0].contains("the failed edit blocks were not sent back to the model"),
        "{}",
        capped[0]
    );
    let cost = events.iter().find_map(|e| match e {
        Event::Budget(report) => Some(report.session_spending()),
        _ => None,
    });
    assert!(
        cost.unwrap().ends_with(&format!(" of ${TINY}")),
        "the gauge shows the cap"
    );
}

/// The loop cap counts from the user's message: a new message starts a new loop, and
/// a model whose prices tern does not know never reaches a cap.
#[tokio::test]
async fn max_loop_cost_stops_the_loop_and_unknown_prices_never_reach_it() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(BAD_EDIT));
    let repo = repo();
    let mut engine = engine_tuned(&repo, &server, false, |s| s.max_loop_cost = Some(TINY));
    submit(&engine, "greet people warmly");
    let events = idle(&mut engine).await;
    assert_eq!(main_requests(&server), 1);
    let said = warnings(&events).join("\n");
    assert!(said.contains("max_loop_cost $0.000001 reached"), "{said}");
    assert!(said.contains("since your last message"), "{said}");

    let server = MockServer::start().await;
    server.push_for_model("local-llm", Reply::text(BAD_EDIT));
    server.push_for_model("local-llm", Reply::text("Sorry, I cannot find it."));
    let repo = crate::engine_edits::repo();
    let mut engine = engine_tuned(&repo, &server, false, |s| {
        s.model = "local-llm".into();
        s.max_cost = Some(0.0);
        s.max_loop_cost = Some(0.0);
    });
    submit(&engine, "greet people warmly");
    let events = idle(&mut engine).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Reflection { .. })),
        "cost 0 never reaches a cap: {events:#?}"
    );
    assert!(!warnings(&events).iter().any(|w| w.contains("max_")));
}

/// Past the session cap the user's own messages still go, with one warning; a summary
/// the history needs is not made by itself, but `/compact` (asked for) is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_is_not_made_by_itself_past_max_cost_but_compact_is() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let swap = turn_reaching(BUDGET * 85 / 100);
    let mut s = settings(&server);
    s.max_cost = Some(TINY);
    let mut chat = Chat::start(s, &[], &[]);
    for t in 1..=swap + 1 {
        let events = chat.say(user_text(t)).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t} is the user's: never refused: {events:#?}"
        );
    }
    assert!(summaries(&server).is_empty(), "no summary was asked for");
    let said = notices(&chat.events);
    let past: Vec<&&str> = said
        .iter()
        .filter(|n| n.contains("your messages still go"))
        .collect();
    assert_eq!(past.len(), 1, "warned once: {said:#?}");
    assert!(
        said.iter()
            .any(|n| n.contains("max_cost") && n.contains("the history was not summarized")),
        "{said:#?}"
    );
    let (out, _) = chat.command("/compact", "compact").await;
    assert!(out.starts_with("replaced "), "{out}");
    assert_eq!(summaries(&server).len(), 1);
}

/// Headless, a run the cap stopped while work remained (failed blocks no reflection
/// could fix) exits non-zero, saying why, whether the cap comes from the user's config
/// (which a repository's `.tern.toml` cannot raise) or from `--max-cost`.
#[test]
fn headless_stopped_by_the_cap_with_work_left_exits_non_zero() {
    let repo = repo();
    repo.write(".tern.toml", "max_cost = 100.0\n");
    let user_config = repo
        .path()
        .join(".git/tern-test-home/config/tern/config.toml");
    std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
    std::fs::write(&user_config, "max_cost = 0.000001\n").unwrap();
    for flag in [None, Some(["--max-cost", "0.000001"])] {
        let server = MockServer::start_in_thread();
        server.push_for_model("gpt-4o", Reply::text(BAD_EDIT));
        if flag.is_some() {
            std::fs::remove_file(&user_config).unwrap();
        }
        let out = repo
            .tern(&server.base_url())
            .args(flag.iter().flatten())
            .args(["--yes", "-m", "greet warmly", "src/greet.py"])
            .output()
            .unwrap();
        let (_, stderr) = crate::support::texts(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("max_cost $0.000001 reached"), "{stderr}");
        // Where it failed said once, then why.
        assert!(
            stderr.contains(
                "tern: edit block 1 failed (src/greet.py): the SEARCH text does not match"
            ),
            "{stderr}"
        );
        assert_eq!(main_requests(&server), 1, "{stderr}");
    }
}

/// A usage report of more cached tokens than prompt tokens, which no server sends, is
/// not believed: none is counted as cached, so the cost is the prompt's at the full
/// price (the cached rate made it half), and it is said once (regression finding 16).
#[tokio::test]
async fn more_cached_tokens_than_prompt_tokens_are_not_believed() {
    let server = MockServer::start().await;
    for _ in 0..2 {
        server.push_for_model("gpt-4o", Reply::text("fine").with_cached_tokens(1_000_000));
    }
    let repo = repo();
    let mut engine = engine_tuned(&repo, &server, false, |_| {});
    let mut events = Vec::new();
    for text in ["first", "second"] {
        submit(&engine, text);
        events.extend(idle(&mut engine).await);
    }
    let finished: Vec<(tern::llm::Usage, f64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::TurnFinished {
                usage: Some(u),
                cost,
                usage_estimated: false,
                ..
            } => Some((*u, *cost)),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 2, "{events:#?}");
    let model = tern::llm::ModelInfo::lookup("gpt-4o");
    for (usage, cost) in finished {
        assert_eq!(usage.cached_tokens, 0, "{usage:?}");
        assert!(usage.prompt_tokens > 0);
        let full = tern::llm::Usage {
            cached_tokens: 0,
            ..usage
        };
        assert_eq!(cost, model.cost(&full));
    }
    let said: Vec<String> = warnings(&events)
        .into_iter()
        .filter(|w| w.contains("cached"))
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0].starts_with("the server reported 1000000 cached tokens of "),
        "{}",
        said[0]
    );
}
