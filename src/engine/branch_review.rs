//! `/review [REF | --worktree]`: the branch diff (or the work tree) fitted to the budget
//! and reviewed by the model, on a task like any turn. The plan (which files were
//! included, compressed or left out) and the review request's own budget are reported
//! before the reply streams.

use tokio_util::sync::CancellationToken;

use super::activity::Stream;
use super::persist::record::Request;
use super::protocol::{ChatMode, Event, RequestKind, ShownKind};
use super::{Engine, EventSink, Internal};
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

impl Engine {
    /// Parses `/review` arguments: nothing (the default base), a REF, or `--worktree`.
    pub(super) fn review_command(&mut self, args: &str) {
        let source = match args.trim() {
            "--worktree" | "worktree" => DiffSource::Worktree,
            "" => DiffSource::Branch { base: None },
            base => DiffSource::Branch {
                base: Some(base.to_string()),
            },
        };
        self.start_review(source, ReviewOptions::from(self.model.settings()), true);
    }

    /// Plans a review of `source` and, when `send` is set, sends it.
    pub(super) fn start_review(&mut self, source: DiffSource, options: ReviewOptions, send: bool) {
        let label = match &source {
            DiffSource::Worktree => "/review --worktree".to_string(),
            DiffSource::Branch { base: Some(base) } => format!("/review {base}"),
            DiffSource::Branch { base: None } => "/review".to_string(),
        };
        if let Some(busy) = self.activity.busy_reason() {
            self.events.send(Event::TurnFailed {
                error: busy.into(),
                message: label,
            });
            return;
        }
        let cancel = self.activity.stream(Stream::BranchReview);
        let job = ReviewJob {
            root: self.session.root().to_path_buf(),
            client: self.model.client().clone(),
            model: self.model.info().clone(),
            counter: self.model.counter().clone(),
            window: self.model.window(),
            events: self.events.clone(),
        };
        let done = self.run_loop.done();
        super::run_loop::spawn(done.clone(), async move {
            let result = job.run(source, options, send, &label, &cancel).await;
            let _ = done.send(Internal::Reviewed(ReviewOutcome { label, result }));
        });
    }

    pub(super) fn finish_review(&mut self, outcome: ReviewOutcome) {
        self.activity.end_stream();
        match outcome.result {
            Err(ReviewFailure::Empty(why)) => {
                self.events.notice(format!("nothing to review: {why}"))
            }
            Err(ReviewFailure::Failed(error)) => self.events.send(Event::TurnFailed {
                error,
                message: outcome.label,
            }),
            Ok(Reviewed::Planned) => {}
            Ok(Reviewed::Sent(plan, replies)) => {
                let texts: Vec<String> = replies.iter().map(|r| r.text.clone()).collect();
                let text = review::merge_replies(&texts);
                let reported = replies.iter().any(|r| r.usage.is_some());
                let usage = if reported {
                    review::total_usage(&replies)
                } else {
                    Usage {
                        prompt_tokens: plan.calls.iter().map(|c| c.tokens).sum(),
                        completion_tokens: self.model.counter().count(&text),
                        ..Usage::default()
                    }
                };
                let finish = replies
                    .iter()
                    .map(|r| r.finish.clone())
                    .find(|f| *f != Finish::Stop)
                    .unwrap_or(Finish::Stop);
                self.record_cost(&usage, !reported);
                // The review stays in the conversation, so follow-up questions work;
                // the diff itself does not (it would crowd the history).
                let owed = self.session.notes_for_next_turn.clone();
                self.saved
                    .record_turn(&self.session, &outcome.label, ChatMode::Ask, &owed);
                let pair = [
                    Message::user(crate::prompts::review_history(&plan.description)),
                    Message::assistant(text.clone()),
                ];
                self.saved.record_mut().joined(Request::Review, &pair);
                self.session.history.extend(pair);
                self.session.show(ShownKind::User, outcome.label);
                self.session.show(ShownKind::Assistant, text.clone());
                self.events.send(Event::BranchReviewed {
                    plan: Box::new(plan),
                    replies,
                    usage,
                    cost: self.session.last_cost,
                });
                self.events.send(Event::TurnFinished {
                    reply: text,
                    finish,
                    usage: Some(usage),
                    usage_estimated: !reported,
                    cost: self.session.last_cost,
                    session_cost: self.session.session_cost,
                });
            }
        }
        self.publish_budget();
        self.idle_if_done();
    }

    /// Adds a request's cost to the session; `estimated` when the server reported no
    /// usage and `usage` is tern's count.
    pub(super) fn record_cost(&mut self, usage: &Usage, estimated: bool) {
        let cost = self.model.info().cost(usage);
        self.session.session_cost += cost;
        self.session.last_cost = cost;
        self.session.last_usage = Some(*usage);
        self.session.last_usage_estimated = estimated;
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
            SendEvent::Stream(StreamEvent::Request { model, predicted_prompt_tokens, max_tokens }) => {
                stream.send(Event::Request {
                    purpose: RequestKind::Review,
                    model,
                    predicted_prompt_tokens,
                    max_tokens,
                    counting: self.counter.counting(),
                })
            }
            SendEvent::Stream(StreamEvent::UsageIgnored(text)) => stream.send(Event::Warning { text }),
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
