//! `/review` through the engine: the plan and the review's own budget are reported, the
//! review streams, and it stays in the history for follow-up questions.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::support::{MockServer, Reply, TempRepo};
use tern::config::{ApiKey, Settings};
use tern::context::Section;
use tern::engine::{EngineConfig, Event, Op};

#[tokio::test]
async fn review_reports_its_plan_and_budget_then_streams() {
    let server = MockServer::start().await;
    server.push(Reply::text(
        "## Findings\n- src/calc.py:2 [minor] divide by zero\n",
    ));
    server.push(Reply::text("It can raise ZeroDivisionError."));
    let repo = TempRepo::with_files(&[("src/calc.py", "def ratio(a, b):\n    return a\n")]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("src/calc.py", "def ratio(a, b):\n    return a / b\n");
    repo.git(&["commit", "-qam", "divide"]);

    let root = repo.path().canonicalize().unwrap();
    let mut engine = tern::engine::spawn(EngineConfig {
        settings: Settings {
            api_base: server.base_url(),
            api_key: Some(ApiKey::new("sk-test")),
            ..Settings::default()
        },
        cwd: root.clone(),
        root,
        record: None,
        replay: None,
        editable: vec![],
        read_only: vec![],
        map_cache: tern::repomap::CacheLocation::Disabled,
        resume: None,
        role: Default::default(),
        model_chosen: false,
    })
    .unwrap();
    engine
        .ops
        .send(crate::support::typed("/review main"))
        .unwrap();
    // The input box's draft update that follows a send must not replace the review's
    // budget in the gauge.
    engine
        .ops
        .send(Op::Draft {
            text: String::new(),
            mode: None,
        })
        .unwrap();
    let mut events = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), engine.events.recv())
            .await
            .unwrap_or_else(|_| panic!("the review did not finish: {events:#?}"))
            .unwrap();
        // A draft typed while the review runs must not replace its budget in the gauge.
        if matches!(event, Event::ReviewPlan(_)) {
            engine
                .ops
                .send(Op::Draft {
                    text: "typing".into(),
                    mode: None,
                })
                .unwrap();
        }
        let idle = matches!(event, Event::Idle);
        events.push(event);
        if idle
            && events
                .iter()
                .any(|e| matches!(e, Event::TurnFinished { .. }))
        {
            break;
        }
    }
    let plan = events
        .iter()
        .find_map(|e| match e {
            Event::ReviewPlan(plan) => Some(plan.clone()),
            _ => None,
        })
        .expect("the plan is reported");
    assert_eq!(
        plan.included().map(|f| f.path.as_str()).collect::<Vec<_>>(),
        vec!["src/calc.py"]
    );
    let review_budget = events
        .iter()
        .find_map(|e| match e {
            Event::Budget(b) if b.section(Section::ReviewDiff) > 0 => Some(b.clone()),
            _ => None,
        })
        .expect("the review's own budget is reported");
    assert_eq!(review_budget.total, plan.calls[0].tokens);
    let finished = events
        .iter()
        .position(|e| matches!(e, Event::TurnFinished { .. }))
        .unwrap();
    let shown = events[..finished]
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Budget(b) => Some(b),
            _ => None,
        })
        .unwrap();
    assert!(
        shown.section(Section::ReviewDiff) > 0,
        "the gauge shows the review while it runs"
    );
    let sent = &server.requests()[0];
    assert_eq!(
        sent.prompt_tokens, plan.calls[0].tokens,
        "the prediction is what the server counts"
    );
    assert!(
        sent.last_user_text()
            .unwrap()
            .contains("## File: 'src/calc.py'")
    );
    assert!(events.iter().any(
        |e| matches!(e, Event::TurnFinished { reply, .. } if reply.contains("divide by zero"))
    ));

    engine
        .ops
        .send(crate::support::typed("/ask why is that a problem?"))
        .unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), engine.events.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(event, Event::TurnFinished { .. }) {
            break;
        }
    }
    let follow_up = &server.requests()[1];
    assert!(
        follow_up
            .messages
            .iter()
            .any(|m| m.text.contains("divide by zero")),
        "the review is in the history"
    );
}
