//! `tern review`: the branch (or the work tree) reviewed by the model within a token
//! budget. `--print-diff` prints exactly what would be sent instead; `--json` prints
//! the plan (with `--print-diff`) or the review and its usage as one JSON object.
//!
//! stdout carries only the requests or the review; the summary, progress and token
//! usage go to stderr.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::branch_review::{
    self as review, CallReply, ChangeSet, ContextOptions, DiffSource, MAX_CONTEXT, ReviewError,
    ReviewOptions, ReviewPlan, SendError, SendEvent, merge_replies,
};
use crate::cli::{GlobalArgs, ReviewArgs};
use crate::config::Settings;
use crate::llm::{Finish, LlmClient, ModelInfo, StreamEvent};
use crate::tokens::TokenCounter;

pub async fn run(
    args: &ReviewArgs,
    global: &GlobalArgs,
    settings: Settings,
    cwd: &Path,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let model = ModelInfo::lookup(&settings.model);
    let counter = model.token_counter();
    let opts = options(args, &settings);
    let prepared = changes(args, cwd, &counter).and_then(|changes| {
        let plan = crate::branch_review::plan(&changes, &counter, &opts)?;
        Ok((changes, plan))
    });
    let (changes, plan) = match prepared {
        Ok(prepared) => prepared,
        Err(ReviewError::Empty(why)) => {
            eprintln!("tern review: nothing to review: {why}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Ok(failed(&e)),
    };
    let summary = plan.summary();
    eprint!(
        "{}",
        crate::terminal_text::for_terminal(&summary, std::io::stderr().is_terminal())
    );
    eprintln!("built in {} ms", started.elapsed().as_millis());
    if args.print_diff {
        let mut out = std::io::stdout().lock();
        let written = if global.json {
            serde_json::to_writer_pretty(&mut out, &plan)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
        } else {
            print_requests(&plan, &mut out)
        };
        return match written {
            // A closed pipe (`| head`) is not worth a message.
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
            _ => Ok(ExitCode::SUCCESS),
        };
    }

    let client = LlmClient::new(
        &settings,
        global.record.as_deref(),
        global.replay.as_deref(),
    )?;
    let cancel = CancellationToken::new();
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let stream = plan.calls.len() == 1 && !global.json;
    let mut on_event = |event: SendEvent| match event {
        SendEvent::Replanned { budget, reason } => eprintln!(
            "tern review: the server says the request is too long ({reason}); planning again within {budget} tokens"
        ),
        SendEvent::Part {
            index,
            of,
            files,
            tokens,
        } if of > 1 => eprintln!(
            "tern review: part {} of {of} ({files} files, {tokens} tokens)...",
            index + 1
        ),
        SendEvent::Stream(StreamEvent::Delta(text)) if stream => {
            let mut out = std::io::stdout().lock();
            let tty = out.is_terminal();
            let text = crate::terminal_text::for_terminal(&text, tty);
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
        SendEvent::Stream(StreamEvent::Retrying {
            attempt,
            delay,
            reason,
        }) => eprintln!(
            "tern review: {reason}; retry {attempt} in {:.2} s",
            delay.as_secs_f64()
        ),
        _ => {}
    };
    let reviewer = review::Reviewer {
        client: &client,
        model: &model,
        changes: &changes,
        counter: &counter,
    };
    let sent = review::send(&reviewer, opts, plan, &cancel, &mut on_event).await;
    ctrl_c.abort();
    let (plan, replies) = match sent {
        Ok(sent) => sent,
        Err(SendError::Plan(e)) => return Ok(failed(&e)),
        Err(SendError::Llm(e)) => {
            eprintln!("tern review: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if stream && replies.first().is_some_and(|r| !r.text.ends_with('\n')) {
        println!();
    }
    Ok(report(&model, &plan, &replies, global.json)?)
}

/// The options the flags and settings ask for; `--context` above the cap is capped.
fn options(args: &ReviewArgs, settings: &Settings) -> ReviewOptions {
    let before = u32::try_from(args.context).unwrap_or(u32::MAX);
    if before > MAX_CONTEXT {
        eprintln!("tern review: --context {before} is capped at {MAX_CONTEXT} lines");
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

/// Reads the changes to review.
fn changes(
    args: &ReviewArgs,
    cwd: &Path,
    counter: &TokenCounter,
) -> Result<ChangeSet, ReviewError> {
    let repo = git2::Repository::discover(cwd).map_err(|source| ReviewError::Git {
        context: "looking for a git repository here",
        source,
    })?;
    let source = if args.worktree {
        DiffSource::Worktree
    } else {
        DiffSource::Branch {
            base: args.base.clone(),
        }
    };
    // The tokenizer's tables take about 100 ms to load: load them while git works.
    let warm_up = {
        let counter = counter.clone();
        std::thread::spawn(move || counter.count("tern"))
    };
    let changes = crate::branch_review::collect(&repo, &source);
    let _ = warm_up.join();
    changes
}

fn failed(e: &ReviewError) -> ExitCode {
    eprintln!("tern review: {e}");
    let hint = match e {
        ReviewError::NoBase | ReviewError::NoMergeBase { .. } | ReviewError::NoCommits => {
            Some("pass --base REF to choose the base, or --worktree to review uncommitted changes")
        }
        ReviewError::BadBase { .. } => {
            Some("--base takes a branch, tag or commit, as `git rev-parse` does")
        }
        ReviewError::BudgetTooSmall { .. } => Some("raise --budget (or --context-window)"),
        ReviewError::NoCalls => Some("--max-calls must be at least 1"),
        _ => None,
    };
    if let Some(hint) = hint {
        eprintln!("hint: {hint}");
    }
    ExitCode::FAILURE
}

/// Every message of every call, each under a marker line naming the call and role.
fn print_requests(plan: &ReviewPlan, out: &mut impl Write) -> std::io::Result<()> {
    let n = plan.calls.len();
    for (i, call) in plan.calls.iter().enumerate() {
        for m in &call.messages {
            writeln!(out, "==> call {} of {n}: {} <==", i + 1, m.role.as_str())?;
            writeln!(out, "{}", m.content)?;
        }
    }
    out.flush()
}

/// Prints the review (unless a single call streamed it), how each reply ended and the
/// tokens and cost; fails when a reply is incomplete.
fn report(
    model: &ModelInfo,
    plan: &ReviewPlan,
    replies: &[CallReply],
    json: bool,
) -> std::io::Result<ExitCode> {
    let texts: Vec<String> = replies.iter().map(|r| r.text.clone()).collect();
    let review = merge_replies(&texts);
    let usage = review::total_usage(replies);
    let cost = model.cost(&usage);
    let mut out = std::io::stdout().lock();
    if json {
        let value = serde_json::json!({
            "review": review,
            "replies": replies,
            "usage": usage,
            "cost": cost,
            "mode": plan.mode,
            "files": plan.files,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
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
        match &r.finish {
            Finish::Stop => {}
            Finish::Length(limit) => {
                ok = false;
                eprintln!("tern review: {part}{}", limit.describe());
            }
            Finish::CutOff(why) => {
                ok = false;
                eprintln!("tern review: {part}the reply was cut off: {why}");
            }
            Finish::Cancelled => {
                ok = false;
                eprintln!("tern review: {part}interrupted; the partial review is above");
            }
        }
    }
    eprintln!(
        "Tokens: {} sent ({} cached), {} received. Cost: ${cost:.4}.",
        usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens
    );
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
