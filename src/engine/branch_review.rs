//! `/review [REF | --worktree]`: the branch diff (or the work tree) fitted to the budget
//! and reviewed by the model, on a task like any turn. The plan (which files were
//! included, compressed or left out) and the review request's own budget are reported
//! before the reply streams.

use tokio_util::sync::CancellationToken;

use super::model::Model;
use super::persist::Saved;
use super::persist::record::Request;
use super::protocol::{ChatMode, Event, RequestKind, ShownKind};
use super::run_loop::Loop;
use super::{EventSink, Internal, Session};
use crate::branch_review::{
    self as review, DiffSource, ReviewOptions, ReviewPlan, Reviewer, SendEvent,
};
use crate::context::{Assembled, BudgetReport, Section, chunks::SectionCount};
use crate::llm::{Finish, LlmClient, Message, ModelInfo, StreamEvent, Usage};
use crate::tokens::TokenCounter;

/// A finished review, handed back to the loop.
pub(crate) struct ReviewOutcome {
    label: String,
    result: Result<Reviewed, ReviewFailure>,
}

/// What a review job did.
enum Reviewed {
    /// Planned only (`Op::ReviewBranch` with `send: false`).
    Planned,
    /// Sent: the plan as it was last made (the server may have asked for a smaller
    /// one) and every reply.
    Sent(ReviewPlan, Vec<review::CallReply>),
}

enum ReviewFailure {
    /// Nothing changed: not a failure, just nothing to do.
    Empty(String),
    Failed(String),
}

impl From<review::ReviewError> for ReviewFailure {
    fn from(e: review::ReviewError) -> Self {
        match e {
            review::ReviewError::Empty(why) => ReviewFailure::Empty(why),
            e => ReviewFailure::Failed(e.with_hint()),
        }
    }
}

/// `/review` arguments: nothing (the default base), a REF, or `--worktree`.
pub(super) fn source(args: &str) -> DiffSource {
    match args.trim() {
        "--worktree" | "worktree" => DiffSource::Worktree,
        "" => DiffSource::Branch { base: None },
        base => DiffSource::Branch {
            base: Some(base.to_string()),
        },
    }
}

/// How a review of `source` is named in the conversation.
pub(super) fn label(source: &DiffSource) -> String {
    match source {
        DiffSource::Worktree => "/review --worktree".to_string(),
        DiffSource::Branch { base: Some(base) } => format!("/review {base}"),
        DiffSource::Branch { base: None } => "/review".to_string(),
    }
}

/// Plans a review of `source` on a task and, when `send` is set, sends it; the outcome
/// comes back to the loop.
pub(super) fn spawn(
    request: (DiffSource, ReviewOptions, bool),
    label: String,
    cancel: CancellationToken,
    parts: (&Model, &Session, &EventSink),
    jobs: &Loop,
) {
    let (source, options, send) = request;
    let (model, session, events) = parts;
    let job = ReviewJob {
        root: session.root().to_path_buf(),
        client: model.client().clone(),
        model: model.info().clone(),
        counter: model.counter().clone(),
        window: model.window(),
        events: events.clone(),
    };
    let done = jobs.done();
    super::run_loop::spawn(done.clone(), async move {
        let result = job.run(source, options, send, &label, &cancel).await;
        let _ = done.send(Internal::Reviewed(ReviewOutcome { label, result }));
    });
}

impl ReviewOutcome {
    /// A review finished: a sent one joins the conversation (so follow-up questions
    /// work; the diff itself does not, it would crowd the history) and its cost the
    /// session's.
    pub(super) fn settle(
        self,
        model: &mut Model,
        session: &mut Session,
        saved: &mut Saved,
        events: &EventSink,
    ) {
        let ReviewOutcome { label, result } = self;
        match result {
            Err(ReviewFailure::Empty(why)) => events.notice(format!("nothing to review: {why}")),
            Err(ReviewFailure::Failed(error)) => events.send(Event::TurnFailed {
                error,
                message: label,
            }),
            Ok(Reviewed::Planned) => {}
            Ok(Reviewed::Sent(plan, mut replies)) => {
                for usage in replies.iter_mut().filter_map(|r| r.usage.as_mut()) {
                    model.believed_cache(usage, events);
                }
                let texts: Vec<String> = replies.iter().map(|r| r.text.clone()).collect();
                let text = review::merge_replies(&texts);
                let reported = replies.iter().any(|r| r.usage.is_some());
                let usage = if reported {
                    review::total_usage(&replies)
                } else {
                    Usage {
                        prompt_tokens: plan.calls.iter().map(|c| c.tokens).sum(),
                        completion_tokens: model.counter().count(&text),
                        ..Usage::default()
                    }
                };
                let finish = replies
                    .iter()
                    .map(|r| r.finish.clone())
                    .find(|f| *f != Finish::Stop)
                    .unwrap_or(Finish::Stop);
                session.record_cost(model.info(), &usage, !reported);
                let owed = session.notes_for_next_turn.clone();
                saved.record_turn(session, &label, ChatMode::Ask, &owed);
                let pair = [
                    Message::user(crate::prompts::review_history(&plan.description)),
                    Message::assistant(text.clone()),
                ];
                saved.record_mut().joined(Request::Review, &pair);
                session.history.extend(pair);
                session.show(ShownKind::User, label);
                session.show(ShownKind::Assistant, text.clone());
                events.send(Event::BranchReviewed {
                    plan: Box::new(plan),
                    replies,
                    usage,
                    cost: session.last_cost,
                });
                events.send(Event::TurnFinished {
                    reply: text,
                    finish,
                    usage: Some(usage),
                    usage_estimated: !reported,
                    cost: session.last_cost,
                    session_cost: session.session_cost,
                });
            }
        }
    }
}

/// What a review needs, moved onto its task.
struct ReviewJob {
    root: std::path::PathBuf,
    client: LlmClient,
    model: ModelInfo,
    counter: TokenCounter,
    window: crate::context::Window,
    events: EventSink,
}

impl ReviewJob {
    async fn run(
        self,
        source: DiffSource,
        options: ReviewOptions,
        send: bool,
        label: &str,
        cancel: &CancellationToken,
    ) -> Result<Reviewed, ReviewFailure> {
        let (root, counter, opts) = (self.root.clone(), self.counter.clone(), options.clone());
        let prepared = tokio::task::spawn_blocking(move || {
            let repo =
                git2::Repository::discover(&root).map_err(|source| review::ReviewError::Git {
                    context: "looking for a git repository here",
                    source,
                })?;
            // The tokenizer's tables take about 100 ms to load: load them while git
            // works.
            let warm_up = {
                let counter = counter.clone();
                std::thread::spawn(move || counter.count("tern"))
            };
            let changes = review::collect(&repo, &source);
            let _ = warm_up.join();
            let changes = changes?;
            let plan = review::plan(&changes, &counter, &opts)?;
            Ok::<_, review::ReviewError>((changes, plan))
        })
        .await
        .map_err(|e| ReviewFailure::Failed(format!("the review could not be prepared: {e}")))??;
        let (changes, plan) = prepared;
        self.events.send(Event::ReviewPlan(Box::new(plan.clone())));
        if !send {
            return Ok(Reviewed::Planned);
        }
        if let Some(call) = plan.calls.first() {
            self.events.send(Event::Budget(Box::new(self.budget(call))));
        }
        self.events.send(Event::TurnStarted {
            text: label.to_string(),
            notes: Vec::new(),
            mode: ChatMode::Ask,
        });
        let reviewer = Reviewer {
            client: &self.client,
            model: &self.model,
            changes: &changes,
            counter: &self.counter,
        };
        let mut stream = self.events.reply_stream();
        let mut on_event = |event: SendEvent| {
            match event {
            SendEvent::Replanned { budget, reason } => stream.send(Event::Warning {
                text: format!("the server says the review is too long ({reason}); planning again within {budget} tokens"),
            }),
            SendEvent::Part { index, of, files, tokens } if of > 1 => stream.send(Event::Notice {
                text: format!("review part {} of {of}: {files} files, {tokens} tokens", index + 1),
            }),
            SendEvent::Stream(StreamEvent::Delta(text)) => stream.send(Event::Delta { text }),
            SendEvent::Stream(StreamEvent::Request { model, predicted_prompt_tokens, max_tokens, counting }) => {
                stream.send(Event::Request {
                    purpose: RequestKind::Review,
                    model,
                    predicted_prompt_tokens,
                    max_tokens,
                    counting: counting.unwrap_or(self.counter.counting()),
                })
            }
            SendEvent::Stream(StreamEvent::UsageIgnored(text)) => stream.send(Event::Warning { text }),
            SendEvent::Stream(StreamEvent::Counted(drift)) => stream.send(Event::Drift {
                purpose: RequestKind::Review,
                drift,
            }),
            SendEvent::Stream(StreamEvent::Retrying { attempt, delay, reason }) => {
                stream.send(Event::Retrying {
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    reason,
                })
            }
            _ => {}
        }
        };
        let sent = review::send(&reviewer, options, plan, cancel, &mut on_event).await;
        stream.finish();
        match sent {
            Ok((plan, replies)) => Ok(Reviewed::Sent(plan, replies)),
            Err(review::SendError::Plan(e)) => Err(e.into()),
            Err(e) => Err(ReviewFailure::Failed(e.to_string())),
        }
    }

    /// The review request's budget: its system prompt and its diff, as the gauge shows
    /// them while the review runs.
    fn budget(&self, call: &review::ReviewCall) -> BudgetReport {
        let sections = crate::context::Section::ALL
            .iter()
            .map(|&section| SectionCount {
                section,
                tokens: match section {
                    Section::System => call.tokens - call.diff_tokens,
                    Section::ReviewDiff => call.diff_tokens,
                    _ => 0,
                },
                messages: match section {
                    Section::System | Section::ReviewDiff => 1,
                    _ => 0,
                },
            })
            .collect();
        let assembled = Assembled {
            messages: call.messages.clone(),
            sections,
            files: Vec::new(),
            total: call.tokens,
        };
        BudgetReport::new(
            &assembled,
            &self.model,
            self.window,
            self.counter.counting(),
        )
    }
}
