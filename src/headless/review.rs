//! `tern review`: the branch (or the work tree) reviewed by the model within a token
//! budget, by the engine exactly as `/review` does it (`Op::ReviewBranch`).
//! `--print-diff` prints exactly what would be sent instead; `--json` prints the plan
//! (with `--print-diff`) or the review and its usage as one JSON object.
//!
//! stdout carries only the requests or the review; the summary, progress and token
//! usage go to stderr. Both go through `egress`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::branch_review::{ContextOptions, MAX_CONTEXT};
use crate::cli::{GlobalArgs, ReviewArgs};
use crate::config::Settings;
use crate::egress::{err, errln};
use crate::engine::protocol::{CallReply, DiffSource, ReviewOptions, ReviewPlan, Usage};
use crate::engine::{EngineConfig, EngineRole, Event, Op};

pub async fn run(
    args: &ReviewArgs,
    global: &GlobalArgs,
    settings: Settings,
    root: PathBuf,
    cwd: PathBuf,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let options = options(args, &settings);
    // A review the model must read needs a key; without one the diff is only planned, to
    // tell "nothing to review" (not a failure) from a review that cannot be sent.
    let keyless = match args.print_diff {
        true => None,
        false => crate::llm::ClientOptions::from(&settings).unusable(global.replay.as_deref()),
    };
    let mut unsendable = false;
    let mut engine = crate::engine::spawn(EngineConfig {
        settings,
        root,
        cwd,
        record: global.record.clone(),
        replay: global.replay.clone(),
        editable: Vec::new(),
        read_only: Vec::new(),
        map_cache: crate::repomap::CacheLocation::Disabled,
        resume: None,
        model_chosen: false,
        role: EngineRole::ReviewBranch,
    })?;
    let source = if args.worktree {
        DiffSource::Worktree
    } else {
        DiffSource::Branch {
            base: args.base.clone(),
        }
    };
    engine.ops.send(Op::ReviewBranch {
        source,
        options,
        send: !args.print_diff && keyless.is_none(),
    })?;
    // A signal stops the review: the replies so far are reported as they ended, then
    // the engine's Idle ends the run (the process exits within `signals::GRACE` anyway).
    let signals = crate::signals::watch(crate::signals::Exit::default());
    let on_signal = signals.clone().map(|mut stop| {
        let ops = engine.ops.clone();
        tokio::spawn(async move {
            stop.arrived().await;
            let _ = ops.send(Op::Cancel);
        })
    });
    let stopped_by = || {
        let signal = signals.as_ref().and_then(crate::signals::Stop::signal)?;
        Some(crate::signals::stopped_by(signal))
    };
    let mut ok = true;
    // Whether any review text was written, and whether `--json`'s document (or
    // `--print-diff --json`'s plan) was.
    let mut reviewed = false;
    let mut documented = false;
    // A single call streams to stdout; several are merged and printed at the end.
    let mut stream = false;
    let mut at_line_start = true;
    let mut stdout = crate::egress::stdout();
    while let Some(event) = engine.events.recv().await {
        match event {
            Event::ReviewPlan(_) if keyless.is_some() => unsendable = true,
            Event::ReviewPlan(plan) => {
                err!("{}", plan.summary());
                errln!("built in {} ms", started.elapsed().as_millis());
                if args.print_diff {
                    print_plan(&plan, global.json)?;
                    documented = global.json;
                }
                stream = plan.calls.len() == 1 && !global.json;
            }
            Event::Delta { text } if stream => {
                let _ = stdout
                    .write_all(text.as_bytes())
                    .and_then(|()| stdout.flush());
                at_line_start = text.ends_with('\n');
                reviewed = true;
            }
            Event::BranchReviewed {
                plan,
                replies,
                usage,
                cost,
            } => {
                if stream && !at_line_start {
                    let _ = writeln!(stdout);
                    at_line_start = true;
                }
                let _ = stdout.end_text();
                let stopped = stopped_by();
                ok &= report(
                    &plan,
                    &replies,
                    usage,
                    cost,
                    global.json,
                    stopped.as_deref(),
                )?;
                reviewed |= replies.iter().any(|r| !r.text.is_empty());
                documented = global.json;
            }
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
            } => errln!(
                "tern review: {reason}; retry {attempt} in {:.2} s",
                delay_ms as f64 / 1000.0
            ),
            Event::Notice { text } | Event::Warning { text } => {
                errln!("tern review: {text}");
            }
            Event::TurnFailed { error, .. } | Event::Error { text: error } => {
                ok = false;
                errln!("tern review: {error}");
            }
            Event::Crashed { text } => {
                ok = false;
                errln!("tern: {text}");
            }
            // A signal's Shutdown may have stopped the engine already.
            Event::Idle => {
                let _ = engine.ops.send(Op::Shutdown);
            }
            Event::Exited => break,
            _ => {}
        }
    }
    if let Some(task) = on_signal {
        task.abort();
    }
    if let Some(signal) = signals.as_ref().and_then(crate::signals::Stop::signal) {
        let why = crate::signals::stopped_by(signal);
        if stream && !at_line_start {
            let _ = writeln!(stdout);
            let _ = stdout.end_text();
        }
        if global.json && !documented {
            let _ = super::json::print_pretty(
                &mut crate::egress::stdout(),
                super::json::ReviewStopped::new(&why),
            );
        }
        match (reviewed, args.print_diff) {
            (true, _) => errln!("tern review: {why}; the review above is partial"),
            (false, false) => errln!("tern review: {why} before any reply came"),
            (false, true) => errln!("tern review: {why}"),
        }
        let _ = engine.task.await;
        return Ok(ExitCode::from(crate::signals::exit_code(signal)));
    }
    if let Some(e) = keyless.filter(|_| unsendable) {
        let _ = engine.task.await;
        return Err(e.into());
    }
    Ok(super::exit_code(engine.task, ok).await)
}

/// The options the flags and settings ask for; `--context` above the cap is capped.
fn options(args: &ReviewArgs, settings: &Settings) -> ReviewOptions {
    let before = u32::try_from(args.context).unwrap_or(u32::MAX);
    if before > MAX_CONTEXT {
        errln!("tern review: --context {before} is capped at {MAX_CONTEXT} lines");
    }
    let defaults = ReviewOptions::from(settings);
    ReviewOptions {
        budget: args.budget.unwrap_or(defaults.budget),
        context: ContextOptions {
            before: before.min(MAX_CONTEXT),
            ..defaults.context
        },
        line_numbers: args.line_numbers,
        max_calls: args.max_calls,
    }
}

/// `--print-diff`: the plan as JSON, or every message of every call, each under a
/// marker line naming the call and role. A closed pipe (`| head`) is not worth a
/// message.
fn print_plan(plan: &ReviewPlan, json: bool) -> std::io::Result<()> {
    let mut out = crate::egress::stdout();
    let written = if json {
        super::json::print_pretty(&mut out, super::json::Plan::from(plan))
    } else {
        let n = plan.calls.len();
        plan.calls.iter().enumerate().try_for_each(|(i, call)| {
            call.messages.iter().try_for_each(|m| {
                writeln!(out, "==> call {} of {n}: {} <==", i + 1, m.role.as_str())?;
                writeln!(out, "{}", m.content)
            })
        })
    }
    .and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

/// Prints the review (unless a single call streamed it), how each reply ended and the
/// tokens and cost; false when a reply is incomplete. `stopped`: why a signal cut the
/// review short, for `--json`.
fn report(
    plan: &ReviewPlan,
    replies: &[CallReply],
    usage: Usage,
    cost: f64,
    json: bool,
    stopped: Option<&str>,
) -> std::io::Result<bool> {
    let texts: Vec<String> = replies.iter().map(|r| r.text.clone()).collect();
    let review = crate::branch_review::merge_replies(&texts);
    let mut out = crate::egress::stdout();
    if json {
        let json = super::json::Review::new(&review, plan, replies, &usage, cost, stopped);
        super::json::print_pretty(&mut out, json)?;
    } else if plan.calls.len() > 1 {
        out.write_all(review.as_bytes())?;
        if !review.ends_with('\n') {
            writeln!(out)?;
        }
    }
    out.flush()?;
    let mut ok = replies.len() == plan.calls.len();
    for (i, r) in replies.iter().enumerate() {
        let part = if plan.calls.len() > 1 {
            format!("part {}: ", i + 1)
        } else {
            String::new()
        };
        if let Some(why) = r.finish.incomplete() {
            ok = false;
            errln!("tern review: {part}{why}");
        }
    }
    errln!(
        "Tokens: {} sent ({} cached), {} received. Cost: ${cost:.4}.",
        usage.prompt_tokens,
        usage.cached_tokens,
        usage.completion_tokens
    );
    Ok(ok)
}
