//! A branch review: its plan (the `review_plan` event, `tern review --print-diff
//! --json`), its replies (the `branch_reviewed` event) and `tern review --json`'s
//! report.

use serde::Serialize;

use super::reply::{Finish, Usage};
use crate::branch_review::{self as review, FileStatus, OmitReason};
use crate::engine::protocol as p;

/// What a review sends, and what happened to every changed file.
#[derive(Serialize)]
pub struct Plan<'a> {
    description: &'a str,
    mode: &'static str,
    budget: usize,
    estimated: bool,
    calls: Vec<Call<'a>>,
    files: Vec<FilePlan<'a>>,
}

impl<'a> From<&'a p::ReviewPlan> for Plan<'a> {
    fn from(plan: &'a p::ReviewPlan) -> Self {
        Plan {
            description: &plan.description,
            mode: mode(plan.mode),
            budget: plan.budget,
            estimated: plan.estimated,
            calls: plan.calls.iter().map(Call::from).collect(),
            files: plan.files.iter().map(FilePlan::from).collect(),
        }
    }
}

fn mode(mode: p::PlanMode) -> &'static str {
    match mode {
        p::PlanMode::Extended => "extended",
        p::PlanMode::Compressed => "compressed",
    }
}

/// One request: its messages exactly as sent, and its counts.
#[derive(Serialize)]
struct Call<'a> {
    messages: Vec<Message<'a>>,
    tokens: usize,
    diff_tokens: usize,
    files: &'a [String],
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

impl<'a> From<&'a review::ReviewCall> for Call<'a> {
    fn from(call: &'a review::ReviewCall) -> Self {
        Call {
            messages: call
                .messages
                .iter()
                .map(|m| Message {
                    role: m.role.as_str(),
                    content: &m.content,
                })
                .collect(),
            tokens: call.tokens,
            diff_tokens: call.diff_tokens,
            files: &call.files,
        }
    }
}

#[derive(Serialize)]
struct FilePlan<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_path: Option<&'a str>,
    status: &'static str,
    language: &'static str,
    added: usize,
    removed: usize,
    tokens: usize,
    outcome: Outcome,
}

impl<'a> From<&'a review::FilePlan> for FilePlan<'a> {
    fn from(f: &'a review::FilePlan) -> Self {
        FilePlan {
            path: &f.path,
            old_path: f.old_path.as_deref(),
            status: match f.status {
                FileStatus::Added => "added",
                FileStatus::Modified => "modified",
                FileStatus::Deleted => "deleted",
                FileStatus::Renamed => "renamed",
            },
            language: f.language.name(),
            added: f.added,
            removed: f.removed,
            tokens: f.tokens,
            outcome: Outcome::from(f.outcome),
        }
    }
}

/// `{"kind": "included", "call": N}` (0-based) or `{"kind": "omitted", "reason": ...}`.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Outcome {
    Included { call: usize },
    Omitted { reason: &'static str },
}

impl From<p::Outcome> for Outcome {
    fn from(o: p::Outcome) -> Self {
        match o {
            p::Outcome::Included { call } => Outcome::Included { call },
            p::Outcome::Omitted { reason } => Outcome::Omitted {
                reason: match reason {
                    OmitReason::Budget => "budget",
                    OmitReason::Deleted => "deleted",
                    OmitReason::OnlyRemovals => "only_removals",
                    OmitReason::Unchanged => "unchanged",
                    OmitReason::Binary => "binary",
                    OmitReason::Submodule => "submodule",
                    OmitReason::Lockfile => "lockfile",
                    OmitReason::Minified => "minified",
                    OmitReason::SourceMap => "source_map",
                    OmitReason::BinaryLike => "binary_like",
                },
            },
        }
    }
}

/// One reply of a review, and the files its request showed.
#[derive(Serialize)]
pub struct Reply<'a> {
    files: &'a [String],
    text: &'a str,
    finish: Finish<'a>,
    usage: Option<Usage>,
}

impl<'a> From<&'a p::CallReply> for Reply<'a> {
    fn from(r: &'a p::CallReply) -> Self {
        Reply {
            files: &r.files,
            text: &r.text,
            finish: Finish::from(&r.finish),
            usage: r.usage.as_ref().map(Usage::from),
        }
    }
}

/// `tern review --json`: the merged review, each reply, the total usage and cost, and
/// what the plan did with each file.
#[derive(Serialize)]
pub struct Review<'a> {
    review: &'a str,
    replies: Vec<Reply<'a>>,
    usage: Usage,
    cost: f64,
    mode: &'static str,
    files: Vec<FilePlan<'a>>,
    /// Why a signal cut the review short (`stopped by SIGTERM`); absent when it ran
    /// to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<&'a str>,
}

impl<'a> Review<'a> {
    pub fn new(
        review: &'a str,
        plan: &'a p::ReviewPlan,
        replies: &'a [p::CallReply],
        usage: &p::Usage,
        cost: f64,
        stopped: Option<&'a str>,
    ) -> Self {
        Review {
            review,
            replies: replies.iter().map(Reply::from).collect(),
            usage: Usage::from(usage),
            cost,
            mode: mode(plan.mode),
            files: plan.files.iter().map(FilePlan::from).collect(),
            stopped,
        }
    }
}

/// `tern review --json` stopped by a signal before any reply came: an empty review,
/// and why.
#[derive(Serialize)]
pub struct ReviewStopped<'a> {
    review: &'static str,
    replies: [(); 0],
    stopped: &'a str,
}

impl<'a> ReviewStopped<'a> {
    pub fn new(stopped: &'a str) -> Self {
        ReviewStopped {
            review: "",
            replies: [],
            stopped,
        }
    }
}
