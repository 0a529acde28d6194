//! `tern review`: the branch (or the work tree) reviewed by the model within a token
//! budget. `--print-diff` prints exactly what would be sent instead; `--json` prints
//! the plan (with `--print-diff`) or the review and its usage as one JSON object.
//!
//! stdout carries only the requests or the review; the summary, progress and token
//! usage go to stderr.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::cli::{GlobalArgs, ReviewArgs};
use crate::config::Settings;
use crate::llm::{ChatRequest, Finish, LlmClient, LlmError, ModelInfo, StreamEvent, Usage};
use crate::review::{
    ChangeSet, ContextOptions, DiffSource, MAX_CONTEXT, ReviewError, ReviewOptions, ReviewPlan,
    merge_replies,
};
use crate::tokens::TokenCounter;

/// How often a request the server finds too long is planned again, each time with a
/// quarter less budget (token counts are estimates for models whose tokenizer tern
/// does not have).
const CONTEXT_RETRIES: usize = 3;

pub async fn run(
    args: &ReviewArgs,
    global: &GlobalArgs,
    settings: Settings,
    cwd: &Path,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let model = ModelInfo::lookup(&settings.model);
    let counter = model.token_counter();
    let mut opts = options(args, &settings);
    let prepared = changes(args, cwd, &counter).and_then(|changes| {
        let plan = crate::review::plan(&changes, &counter, &opts)?;
        Ok((changes, plan))
    });
    let (changes, mut plan) = match prepared {
        Ok(prepared) => prepared,
        Err(ReviewError::Empty(why)) => {
            eprintln!("tern review: nothing to review: {why}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Ok(failed(&e)),
    };
    eprint!("{}", plan.summary());
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
    let mut retries = 0;
    let outcome = loop {
        match send(&client, &model, &plan, &cancel, global.json).await {
            Err(LlmError::ContextLengthExceeded { message }) if retries < CONTEXT_RETRIES => {
                retries += 1;
                opts.budget = opts.budget * 3 / 4;
                eprintln!(
                    "tern review: the server says the request is too long ({message}); \
                     planning again within {} tokens",
                    opts.budget
                );
                plan = match crate::review::plan(&changes, &counter, &opts) {
                    Ok(plan) => plan,
                    Err(e) => break Err(failed(&e)),
                };
            }
            Err(e) => {
                eprintln!("tern review: {e}");
                break Err(ExitCode::FAILURE);
            }
            Ok(replies) => break Ok(replies),
        }
    };
    ctrl_c.abort();
    let replies = match outcome {
        Ok(replies) => replies,
        Err(code) => return Ok(code),
    };
    Ok(report(&model, &plan, &replies, global.json)?)
}

/// The options the flags and settings ask for; `--context` above the cap is capped.
fn options(args: &ReviewArgs, settings: &Settings) -> ReviewOptions {
    let before = u32::try_from(args.context).unwrap_or(u32::MAX);
    if before > MAX_CONTEXT {
        eprintln!("tern review: --context {before} is capped at {MAX_CONTEXT} lines");
    }
    let defaults = ReviewOptions::defaults(settings);
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
    let changes = crate::review::collect(&repo, &source);
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

/// One model reply of a review.
#[derive(serde::Serialize)]
struct Reply {
    files: Vec<String>,
    text: String,
    finish: Finish,
    usage: Option<Usage>,
}

/// Sends the calls in turn. A single call streams to stdout (unless `json`); the parts
/// of a multi-call review are collected and merged at the end, with progress on
/// stderr.
async fn send(
    client: &LlmClient,
    model: &ModelInfo,
    plan: &ReviewPlan,
    cancel: &CancellationToken,
    json: bool,
) -> Result<Vec<Reply>, LlmError> {
    let n = plan.calls.len();
    let stream = n == 1 && !json;
    let mut replies = Vec::with_capacity(n);
    for (i, call) in plan.calls.iter().enumerate() {
        if n > 1 {
            eprintln!(
                "tern review: part {} of {n} ({} files, {} tokens)...",
                i + 1,
                call.files.len(),
                call.tokens
            );
        }
        let request = ChatRequest {
            model: model.clone(),
            messages: call.messages.clone(),
            cache_control: false,
            max_tokens: None,
        };
        let mut on_event = |event: StreamEvent| match event {
            StreamEvent::Delta(text) if stream => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            }
            StreamEvent::Retrying {
                attempt,
                delay,
                reason,
            } => eprintln!(
                "tern review: {reason}; retry {attempt} in {:.2} s",
                delay.as_secs_f64()
            ),
            _ => {}
        };
        let reply = client.chat(&request, cancel, &mut on_event).await?;
        if stream && !reply.text.ends_with('\n') {
            println!();
        }
        let cancelled = reply.finish == Finish::Cancelled;
        replies.push(Reply {
            files: call.files.clone(),
            text: reply.text,
            finish: reply.finish,
            usage: reply.usage_reported.then_some(reply.usage),
        });
        if cancelled {
            break;
        }
    }
    Ok(replies)
}

/// Prints the review (unless a single call streamed it), how each reply ended and the
/// tokens and cost; fails when a reply is incomplete.
fn report(
    model: &ModelInfo,
    plan: &ReviewPlan,
    replies: &[Reply],
    json: bool,
) -> std::io::Result<ExitCode> {
    let texts: Vec<String> = replies.iter().map(|r| r.text.clone()).collect();
    let review = merge_replies(&texts);
    let usage = replies
        .iter()
        .filter_map(|r| r.usage)
        .fold(Usage::default(), |a, u| Usage {
            prompt_tokens: a.prompt_tokens + u.prompt_tokens,
            completion_tokens: a.completion_tokens + u.completion_tokens,
            cached_tokens: a.cached_tokens + u.cached_tokens,
            cache_write_tokens: a.cache_write_tokens + u.cache_write_tokens,
        });
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
            Finish::Length => {
                ok = false;
                eprintln!("tern review: {part}the reply hit the model's output limit");
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
