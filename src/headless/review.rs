//! `tern review`: builds the review requests for the branch (or the work tree) and
//! prints them (`--print-diff`, `--json`), or sends them to the model.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::ReviewArgs;
use crate::config::Settings;
use crate::llm::ModelInfo;
use crate::review::{
    ContextOptions, DiffSource, MAX_CONTEXT, ReviewError, ReviewOptions, ReviewPlan, default_budget,
};

/// Runs `tern review`; stdout gets the requests (or the plan as JSON), stderr the
/// summary and any error.
pub fn run(args: &ReviewArgs, json: bool, settings: &Settings, cwd: &Path) -> ExitCode {
    let started = Instant::now();
    let plan = match prepare(args, settings, cwd) {
        Ok(plan) => plan,
        Err(ReviewError::Empty(why)) => {
            eprintln!("tern review: nothing to review: {why}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("tern review: {e}");
            if let Some(hint) = hint(&e) {
                eprintln!("hint: {hint}");
            }
            return ExitCode::FAILURE;
        }
    };
    if !args.print_diff {
        eprintln!(
            "tern review: sending the review to the model needs tern's streaming LLM client, \
             which is not in this build yet.\nhint: `tern review --print-diff` shows exactly \
             what would be sent."
        );
        return ExitCode::FAILURE;
    }
    let written = if json {
        print_json(&plan)
    } else {
        print_requests(&plan)
    };
    if let Err(e) = written {
        // A closed pipe (`| head`) is not worth a message.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("tern review: cannot write the output: {e}");
            return ExitCode::FAILURE;
        }
    }
    eprint!("{}", plan.summary());
    eprintln!("built in {} ms", started.elapsed().as_millis());
    ExitCode::SUCCESS
}

/// Reads the changes and plans the requests.
fn prepare(args: &ReviewArgs, settings: &Settings, cwd: &Path) -> Result<ReviewPlan, ReviewError> {
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
    let counter = ModelInfo::lookup(&settings.model).token_counter();
    // The tokenizer's tables take about 100 ms to load: load them while git works.
    let warm_up = {
        let counter = counter.clone();
        std::thread::spawn(move || counter.count("tern"))
    };
    let changes = crate::review::collect(&repo, &source)?;
    let _ = warm_up.join();
    let before = u32::try_from(args.context).unwrap_or(u32::MAX);
    if before > MAX_CONTEXT {
        eprintln!("tern review: --context {before} is capped at {MAX_CONTEXT} lines");
    }
    let opts = ReviewOptions {
        budget: args.budget.unwrap_or_else(|| default_budget(settings)),
        context: ContextOptions {
            before: before.min(MAX_CONTEXT),
            ..ContextOptions::default()
        },
        line_numbers: args.line_numbers,
        max_calls: args.max_calls,
    };
    crate::review::plan(&changes, &counter, &opts)
}

fn hint(e: &ReviewError) -> Option<&'static str> {
    match e {
        ReviewError::NoBase | ReviewError::NoMergeBase { .. } | ReviewError::NoCommits => {
            Some("pass --base REF to choose the base, or --worktree to review uncommitted changes")
        }
        ReviewError::BadBase { .. } => {
            Some("--base takes a branch, tag or commit, as `git rev-parse` does")
        }
        ReviewError::BudgetTooSmall { .. } => Some("raise --budget (or --context-window)"),
        ReviewError::NoCalls => Some("--max-calls must be at least 1"),
        _ => None,
    }
}

/// Every message of every call, each under a marker line naming the call and role.
fn print_requests(plan: &ReviewPlan) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let n = plan.calls.len();
    for (i, call) in plan.calls.iter().enumerate() {
        for m in &call.messages {
            writeln!(out, "==> call {} of {n}: {} <==", i + 1, m.role.as_str())?;
            writeln!(out, "{}", m.content)?;
        }
    }
    out.flush()
}

fn print_json(plan: &ReviewPlan) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, plan)?;
    writeln!(out)?;
    out.flush()
}
