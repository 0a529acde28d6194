//! The engine's side of the history: when to summarize, the summary tasks and their
//! results, the turn plans held until the summary they need has landed (the checks
//! themselves are the turn's, in `turn.rs`), `/forget`, `/clear` and `/compact`. Its
//! methods are lent the other parts they need (`Parts`) and return what the engine
//! does next (`Then`).
//!
//! Summaries run on tokio tasks and report back to the loop as `Internal::Summary`, so
//! the loop never blocks: a background checkpoint lets turns go on; a foreground
//! summary (classic, synchronous checkpoint, overflow, `/compact`) holds the next turn,
//! visibly and cancellably, until it lands, and the engine is not `Idle` meanwhile.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::model::Model;
use super::persist::Saved;
use super::persist::{HistoryMarks, SavedCheckpoint};
use super::protocol::{RequestKind, ShownKind};
use super::run_loop::Loop;
use super::spending::Spending;
use super::spending::Unattended;
use super::turn::{MAX_OVERFLOW_RETRIES, TurnPlan};
use super::{Event, EventSink, Internal, Session};
use crate::context::double_buffer::{Action, DoubleBuffer};
use crate::context::history::{self, Replaced, Summarizer, Summary, SummaryError, SummaryModel};
use crate::context::{BudgetReport, HistoryStatus};
use crate::llm::{ModelInfo, StreamEvent};

/// The history's share of the engine state.
pub(crate) struct HistoryBudget {
    buffer: DoubleBuffer,
    /// True when `history[..2]` is a summary and its acknowledgement.
    summary_at_front: bool,
    /// Summaries swapped in this session.
    summaries: usize,
    job: Option<Job>,
    next_job: u64,
    /// Bumped whenever the history's head changes, so a summary of an older head is
    /// never applied.
    generation: u64,
    /// The turn being started or in flight.
    current: Option<TurnPlan>,
    /// A turn waiting for a foreground summary.
    held: Option<TurnPlan>,
    /// A held or retried turn being started again.
    resume: Option<TurnPlan>,
    /// The swap mark was reached while the checkpoint was still running.
    swap_due: bool,
    /// A prompt limit below the window's, learned from a server that refused a request
    /// as too long.
    learned_limit: Option<usize>,
    /// No message follows: no summary starts after a turn (the next start makes it).
    deferred: bool,
}

/// A running summary task.
struct Job {
    id: u64,
    kind: JobKind,
    cancel: CancellationToken,
    generation: u64,
    started: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobKind {
    /// The double buffer's background summary: turns go on while it runs.
    Checkpoint,
    /// Classic summarizing (also the synchronous checkpoint): the next turn waits.
    Fit,
    /// Summarizing to make one request fit the window.
    Overflow,
    /// `/compact`.
    Compact,
}

/// What `/forget` drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Forget {
    /// The oldest turns, as many as bring the history within its target.
    ToFit,
    /// The oldest N turns.
    Oldest(usize),
    /// Every turn, the latest too.
    All,
}

/// A summary task's result, handed back to the engine loop.
pub(crate) struct JobDone {
    id: u64,
    result: Result<Option<Summary>, SummaryError>,
}

impl HistoryBudget {
    pub(crate) fn new(settings: &crate::config::Settings) -> Self {
        HistoryBudget {
            buffer: DoubleBuffer::new(
                settings.double_buffer,
                settings.checkpoint_threshold,
                settings.swap_threshold,
            ),
            summary_at_front: false,
            summaries: 0,
            job: None,
            next_job: 0,
            generation: 0,
            current: None,
            held: None,
            resume: None,
            swap_due: false,
            learned_limit: None,
            deferred: false,
        }
    }

    /// `Op::NoMoreMessages`: summaries wait for the next start.
    pub(crate) fn defer_summaries(&mut self) {
        self.deferred = true;
    }

    /// Whether the turn being started leaves out the few-shot examples.
    pub(crate) fn examples_dropped(&self) -> bool {
        self.current.as_ref().is_some_and(|p| p.drop_examples)
    }

    /// Whether the turn being started sends code mode's short system prompt.
    pub(crate) fn short_system(&self) -> bool {
        self.current.as_ref().is_some_and(|p| p.short_system)
    }

    /// The turn being started waits for the server to count its messages, unless it
    /// waited enough already (then it goes with estimates). True when it waits.
    pub(crate) fn wait_for_counts(&mut self) -> bool {
        match self.current.take() {
            Some(mut plan) if plan.count_rounds < super::model::counts::MAX_COUNT_ROUNDS => {
                plan.count_rounds += 1;
                self.held = Some(plan);
                true
            }
            plan => {
                self.current = plan;
                false
            }
        }
    }

    /// For the turn about to be sent (`sending` tokens) after the server refused a
    /// bigger one: the warning that says so, with the refused size and the retry's number.
    pub(crate) fn retry_warning(&self, sending: usize) -> Option<String> {
        let plan = self.current.as_ref()?;
        let (refused, _) = plan.refused.as_ref()?;
        let retry = plan.overflow_retries;
        Some(format!(
            "the server refused the request ({refused} tokens) as too long; retrying with {sending} tokens ({retry} of {MAX_OVERFLOW_RETRIES})"
        ))
    }

    /// A checkpoint summary ready to be swapped in: its anchor and text.
    pub(crate) fn ready_checkpoint(&self) -> Option<(usize, &str)> {
        self.buffer.ready()
    }

    /// What the session file keeps: the summary state, a checkpoint summary ready to
    /// be swapped in, and the limit learned from the server.
    pub(crate) fn marks(&self) -> HistoryMarks {
        HistoryMarks {
            summary_at_front: self.summary_at_front,
            checkpoint: self
                .buffer
                .ready()
                .map(|(anchor, summary)| SavedCheckpoint {
                    anchor,
                    summary: summary.to_string(),
                }),
            summaries: self.summaries,
            learned_limit: self.learned_limit,
        }
    }

    /// Restores what a saved session knew about its history.
    pub(crate) fn restore(
        &mut self,
        summary_at_front: bool,
        summaries: usize,
        checkpoint: Option<(usize, String)>,
        learned_limit: Option<usize>,
    ) {
        self.summary_at_front = summary_at_front;
        self.summaries = summaries;
        self.learned_limit = learned_limit;
        self.generation += 1;
        if let Some((anchor, summary)) = checkpoint {
            self.buffer.checkpoint_done(anchor, summary);
        }
    }

    /// A turn started again after a hold or a refusal: its plan.
    pub(super) fn take_resume(&mut self) -> Option<TurnPlan> {
        self.resume.take()
    }

    /// The next start is `plan` started again.
    pub(super) fn set_resume(&mut self, plan: TurnPlan) {
        self.resume = Some(plan);
    }

    /// True while a turn waits for a summary.
    pub(super) fn has_held(&self) -> bool {
        self.held.is_some()
    }

    /// When the summary the next turn must wait for started, if there is one.
    pub(super) fn blocking_since(&self) -> Option<Instant> {
        self.job
            .as_ref()
            .filter(|_| self.blocks_turns())
            .map(|job| job.started)
    }

    /// `plan` waits for the summary under way.
    pub(super) fn hold(&mut self, plan: TurnPlan) {
        self.held = Some(plan);
    }

    /// The held turn, once no summary blocks it any more.
    pub(super) fn release_held(&mut self) -> Option<TurnPlan> {
        if self.blocks_turns() {
            return None;
        }
        self.held.take()
    }

    /// `plan` is the turn being started or in flight.
    pub(super) fn set_current(&mut self, plan: TurnPlan) {
        self.current = Some(plan);
    }

    pub(super) fn current_mut(&mut self) -> Option<&mut TurnPlan> {
        self.current.as_mut()
    }

    pub(super) fn take_current(&mut self) -> Option<TurnPlan> {
        self.current.take()
    }

    /// The server refused a request as too long: later requests stay within `limit`
    /// (the lowest such limit holds).
    pub(super) fn learn_limit(&mut self, limit: usize) {
        if self.learned_limit.is_none_or(|l| l > limit) {
            self.learned_limit = Some(limit);
        }
    }

    /// The server's own window replaces what refusals taught.
    pub(super) fn forget_learned_limit(&mut self) {
        self.learned_limit = None;
    }

    /// `plan` does not fit: it waits while the history is summarized into `target`
    /// tokens.
    pub(super) fn summarize_for_overflow(
        &mut self,
        plan: TurnPlan,
        target: usize,
        (model, session, events): (&Model, &Session, &EventSink),
        jobs: &Loop,
    ) {
        self.held = Some(plan);
        self.spawn_summary((JobKind::Overflow, target), (model, session, events), jobs);
    }

    /// `plan` does not fit while the background summary runs: it waits for that
    /// summary (which may make room) rather than cancel it for another, so a server
    /// never computes two summaries at once (llama.cpp goes on computing a cancelled
    /// request). Gives `plan` back when no background summary runs.
    pub(super) fn wait_for_checkpoint(&mut self, plan: TurnPlan) -> Option<TurnPlan> {
        if !self
            .job
            .as_ref()
            .is_some_and(|job| job.kind == JobKind::Checkpoint)
        {
            return Some(plan);
        }
        self.swap_due = true;
        self.held = Some(plan);
        None
    }

    /// True while the next turn must wait for a summary.
    fn blocks_turns(&self) -> bool {
        self.job
            .as_ref()
            .is_some_and(|job| job.kind != JobKind::Checkpoint || self.swap_due)
    }

    /// True while a summary the front end waits for is under way (the engine is not
    /// idle): a turn is held, or the next one would be.
    pub(crate) fn holds_turns(&self) -> bool {
        self.held.is_some() || self.blocks_turns()
    }

    /// The history budget: configured, or a sixteenth of the window within 1024..8192.
    pub(super) fn budget(model: &Model) -> usize {
        model
            .settings()
            .max_chat_history_tokens
            .unwrap_or_else(|| history::default_budget(model.window().window))
    }

    pub(super) fn tokens(session: &Session, model: &Model) -> usize {
        history::tokens(&session.history, model.counter())
    }

    /// The history part of the budget report.
    pub(super) fn status(&self, model: &Model, session: &Session) -> HistoryStatus {
        let budget = Self::budget(model);
        let (checkpoint_mark, swap_mark) = self.buffer.marks(budget);
        let summary_tokens = if self.summary_at_front {
            history::tokens(&session.history[..2], model.counter())
        } else {
            0
        };
        HistoryStatus {
            budget,
            tokens: Self::tokens(session, model),
            checkpoint_mark,
            swap_mark,
            phase: self.buffer.phase(),
            summary_tokens,
            summaries: self.summaries,
        }
    }

    /// The most prompt tokens the next request may carry: the window's limit, or less
    /// after a server refused a request as too long.
    pub(super) fn prompt_limit(&self, model: &Model) -> usize {
        let plan_limit = self.current.as_ref().and_then(|p| p.limit);
        [self.learned_limit, plan_limit]
            .into_iter()
            .flatten()
            .fold(model.window().prompt_limit, usize::min)
    }

    /// Applies a limit learned from the server to a report, so the gauge and the table
    /// show the limit requests are really held to.
    pub(super) fn limit_report(&self, report: &mut BudgetReport) {
        if let Some(limit) = self.learned_limit
            && limit < report.prompt_limit
        {
            report.prompt_limit = limit;
            report.remaining = limit as i64 - report.total as i64;
        }
    }

    /// The summarizer: the weak model, then the main one, neither sent more than the
    /// main model's window (they share the server, whose context that is; a summary
    /// the server still refuses is made again in smaller chunks).
    fn summarizer(model: &Model, events: &EventSink) -> Summarizer {
        let cap = model.window().window;
        let weak = SummaryModel::new(
            ModelInfo::lookup(&model.settings().weak_model),
            None,
            Some(cap),
        );
        let main = SummaryModel::new(model.info().clone(), Some(model.window().window), Some(cap));
        let models = if weak.info.name == main.info.name {
            vec![main]
        } else {
            vec![weak, main]
        };
        let events = events.clone();
        let counting = model.counter().counting();
        let observer = Arc::new(move |event: StreamEvent| match event {
            StreamEvent::Request {
                model,
                predicted_prompt_tokens,
                max_tokens,
                counting: said,
            } => events.send(Event::Request {
                purpose: RequestKind::Summary,
                model,
                predicted_prompt_tokens,
                max_tokens,
                counting: said.unwrap_or(counting),
            }),
            StreamEvent::Counted(drift) => events.send(Event::Drift {
                purpose: RequestKind::Summary,
                drift,
            }),
            // Said as a turn's retries are, not silent.
            StreamEvent::Retrying {
                attempt,
                delay,
                reason,
            } => events.notice(format!(
                "summarizing: {reason}; retry {attempt} in {:.1} s",
                delay.as_secs_f64()
            )),
            _ => {}
        });
        let summarizer = Summarizer::new(model.client().clone(), models, model.counter().clone())
            .observed(observer)
            .counted_by(model.server_tokenizer());
        match model.window().known() {
            Some(window) => summarizer.window_known(window),
            None => summarizer,
        }
    }

    /// Sends the history's status line.
    pub(super) fn publish(&self, model: &Model, session: &Session, events: &EventSink) {
        events.send(Event::History(self.status(model, session)));
    }

    /// Starts a summary task of `kind` over the whole current history (a checkpoint's
    /// anchor is the history's length), replacing any other task.
    fn spawn_summary(
        &mut self,
        (kind, budget): (JobKind, usize),
        (model, session, events): (&Model, &Session, &EventSink),
        jobs: &Loop,
    ) {
        if let Some(old) = self.job.take() {
            old.cancel.cancel();
            if old.kind == JobKind::Checkpoint && kind != JobKind::Checkpoint {
                // This summary supersedes the checkpoint's; whether it lands or not,
                // the cycle starts again after it.
                self.buffer.reset();
                self.swap_due = false;
            }
        }
        self.next_job += 1;
        let id = self.next_job;
        let cancel = CancellationToken::new();
        let summarizer = HistoryBudget::summarizer(model, events);
        let messages = session.history.clone();
        let done = jobs.done();
        let token = cancel.clone();
        super::run_loop::spawn(done.clone(), async move {
            let result = match kind {
                JobKind::Checkpoint | JobKind::Compact => summarizer
                    .summarize(&messages, budget, &token)
                    .await
                    .map(Some),
                JobKind::Fit | JobKind::Overflow => {
                    summarizer.fit(&messages, budget, true, &token).await
                }
            };
            let _ = done.send(Internal::Summary(JobDone { id, result }));
        });
        self.job = Some(Job {
            id,
            kind,
            cancel,
            generation: self.generation,
            started: Instant::now(),
        });
        self.publish(model, session, events);
    }

    /// Replaces `history[..anchor]` with `summary` (in the session and its record) and
    /// says so.
    fn apply_summary(&mut self, (anchor, summary): (usize, &str), p: &mut Parts<'_>) -> Replaced {
        let replaced =
            history::replace_head(&mut p.session.history, anchor, summary, p.model.counter());
        p.saved
            .record_mut()
            .replaced_front(replaced.replaced_messages, 2);
        p.session.show(ShownKind::Summary, summary);
        self.summary_at_front = true;
        self.summaries += 1;
        self.generation += 1;
        self.swap_due = false;
        p.events.send(Event::Summarized {
            replaced_messages: replaced.replaced_messages,
            replaced_tokens: replaced.replaced_tokens,
            summary_tokens: replaced.summary_tokens,
        });
        replaced
    }
}

/// What the history's methods read and change outside the budget: the engine lends them.
pub(super) struct Parts<'a> {
    pub(super) model: &'a Model,
    pub(super) session: &'a mut Session,
    pub(super) saved: &'a mut Saved,
    pub(super) spending: &'a mut Spending,
    pub(super) events: &'a EventSink,
    pub(super) jobs: &'a Loop,
}

impl Parts<'_> {
    fn may_spend(&mut self, what: Unattended) -> bool {
        self.spending.allows(
            what,
            self.session.session_cost,
            self.model.settings(),
            self.events,
        )
    }
}

/// What the engine does after the history changed, in this order.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Then {
    Save,
    PublishHistory,
    PublishBudget,
    /// A held turn goes, unless something still blocks it.
    ResumeHeld,
    /// Say `Idle` if nothing is under way.
    Idle,
    /// `/compact`'s output, after the budget it changed.
    Compacted(String),
}

impl HistoryBudget {
    /// Called once a turn's reply is in the history: checkpoint, swap or summarize as
    /// the thresholds say; then the session is saved.
    pub(super) fn after_turn(&mut self, may_summarize: bool, p: &mut Parts<'_>) -> Vec<Then> {
        self.current = None;
        // After Esc no summary starts by itself; the next turn's step catches up. With
        // no message to follow, the next start makes it.
        if may_summarize && !self.deferred {
            self.step(p);
        }
        vec![Then::Save, Then::PublishHistory]
    }

    /// A resumed history is held to its budget like any other: one already over it is
    /// summarized (or checkpointed) now, so the next request waits for that rather
    /// than carrying all of it.
    pub(super) fn resumed(&mut self, p: &mut Parts<'_>) -> Vec<Then> {
        self.step(p);
        vec![Then::PublishHistory]
    }

    fn step(&mut self, p: &mut Parts<'_>) {
        let budget = Self::budget(p.model);
        let tokens = Self::tokens(p.session, p.model);
        match self.buffer.step(tokens, budget, p.session.history.len()) {
            Action::Nothing => {}
            Action::Checkpoint { .. } => {
                if p.may_spend(Unattended::Summary) {
                    self.spawn_summary(
                        (JobKind::Checkpoint, budget),
                        (p.model, p.session, p.events),
                        p.jobs,
                    );
                } else {
                    self.buffer.checkpoint_failed();
                }
            }
            Action::Wait => self.swap_due = true,
            Action::Swap { anchor, summary } => {
                self.apply_summary((anchor, &summary), p);
            }
            Action::SummarizeNow => {
                if p.may_spend(Unattended::Summary) {
                    self.spawn_summary(
                        (JobKind::Fit, budget),
                        (p.model, p.session, p.events),
                        p.jobs,
                    );
                }
            }
        }
    }

    /// A summary task finished: apply or record its result, then let a held turn go.
    pub(super) fn summary_done(&mut self, done: JobDone, p: &mut Parts<'_>) -> Vec<Then> {
        // Spent whether or not the summary is used: it counts toward the caps.
        if let Ok(Some(summary)) = &done.result {
            p.session.session_cost += summary.cost;
            if !summary.fell_back.is_empty() {
                p.events.warning(format!(
                    "summarizing: {}; the next model wrote the summary",
                    summary.fell_back.join("; ")
                ));
            }
        }
        let waited_for = self.holds_turns();
        let Some(job) = self.job.take_if(|job| job.id == done.id) else {
            return vec![]; // replaced or cancelled meanwhile
        };
        let fresh = job.generation == self.generation;
        let compact_report = match (job.kind, done.result) {
            (_, Err(SummaryError::Cancelled)) => Some("cancelled".to_string()),
            (kind, Ok(_)) if !fresh => {
                if kind == JobKind::Checkpoint {
                    self.buffer.reset();
                }
                Some("the history changed meanwhile; nothing was replaced".into())
            }
            (JobKind::Checkpoint, Ok(Some(summary))) => {
                self.buffer.checkpoint_done(summary.anchor, summary.text);
                if std::mem::take(&mut self.swap_due) {
                    self.step(p);
                }
                None
            }
            (JobKind::Checkpoint, Err(e)) => {
                self.buffer.checkpoint_failed();
                p.events.warning(format!(
                    "the background history summary failed ({e}); the history will be summarized when it reaches the swap mark"
                ));
                if std::mem::take(&mut self.swap_due) {
                    self.step(p);
                }
                None
            }
            (JobKind::Compact, Ok(Some(summary)))
                if let Some(kept) = grows(p, summary.anchor, &summary.text) =>
            {
                Some(kept)
            }
            (_, Ok(Some(summary))) => {
                let replaced = self.apply_summary((summary.anchor, &summary.text), p);
                self.buffer.summarized();
                Some(format!("replaced {}", replaced_said(&replaced)))
            }
            (_, Ok(None)) => Some("nothing to summarize".into()),
            (kind, Err(e)) => {
                if let Some(plan) = &mut self.held {
                    plan.summary_failed = true;
                }
                let fallback = if kind == JobKind::Compact {
                    ""
                } else {
                    "; /forget drops the oldest turns instead (the model is told), /clear all of them"
                };
                p.events
                    .warning(format!("could not summarize the history: {e}{fallback}"));
                Some(format!(
                    "failed: {e}; /forget drops the oldest turns instead"
                ))
            }
        };
        if job.kind == JobKind::Compact {
            compact_output(p.events, compact_report.unwrap_or_default());
        }
        let mut then = vec![
            Then::Save,
            Then::PublishHistory,
            Then::PublishBudget,
            Then::ResumeHeld,
        ];
        // Only a summary someone waited for ends a busy spell; a background one landing
        // while the engine is idle must not announce a second `Idle`.
        if waited_for {
            then.push(Then::Idle);
        }
        then
    }

    /// `/forget [TURNS | all]`'s arguments: how many turns, or why not now. A summary
    /// under way does not stop it: `forget` cancels it.
    pub(super) fn forget_turns(args: &str, streaming: bool) -> Result<Forget, String> {
        let turns = match args.trim() {
            "" => Forget::ToFit,
            "all" => Forget::All,
            n => match n.parse::<usize>() {
                Ok(n) if n > 0 => Forget::Oldest(n),
                _ => {
                    return Err(format!(
                        "/forget takes a number of turns or `all`, not {n:?}"
                    ));
                }
            },
        };
        if streaming {
            return Err("/forget: not while a reply is under way".into());
        }
        Ok(turns)
    }

    /// Stops the summary under way for a command that changes the history under it
    /// (`what`), and says so: its result would be of a history that is gone.
    fn cancel_for(&mut self, what: &str, events: &EventSink) {
        let Some(job) = self.job.take() else {
            return;
        };
        job.cancel.cancel();
        if job.kind == JobKind::Compact {
            compact_output(events, format!("cancelled by {what}"));
        }
        events.notice(format!(
            "{what}: cancelled the history summary under way ({:.1} s in); nothing it would have replaced is kept",
            job.started.elapsed().as_secs_f64()
        ));
    }

    /// `/forget [TURNS]`: the user's consent to drop the oldest turns without a summary
    /// (TURNS of them, or as many as bring the history to half its budget and to half
    /// the room the rest of a request, `others` tokens, leaves it), with a note to the
    /// model at the history's front.
    pub(super) fn forget(&mut self, turns: Forget, others: usize, p: &mut Parts<'_>) -> Vec<Then> {
        let waited_for = self.holds_turns();
        self.cancel_for("/forget", p.events);
        let room = self.prompt_limit(p.model).saturating_sub(others);
        let target = Self::budget(p.model).min(room) / 2;
        let (turns, keep_latest) = match turns {
            Forget::ToFit => (None, true),
            Forget::Oldest(n) => (Some(n), true),
            Forget::All => (Some(usize::MAX), false),
        };
        let forgotten = history::forget_head(
            &mut p.session.history,
            turns,
            target,
            keep_latest,
            p.model.counter(),
        );
        let left = Self::tokens(p.session, p.model);
        let mut then = vec![];
        match forgotten {
            None => p.events.notice(format!(
                "nothing to forget: the history is {left} tokens, within {target} (the latest turn stays unless you say /forget all)"
            )),
            Some(forgotten) => {
                p.saved.record_mut().replaced_front(2 * forgotten.turns, 2);
                self.summary_at_front = false;
                self.generation += 1;
                self.buffer.reset();
                self.swap_due = false;
                p.events.notice(format!(
                    "forgot the oldest {} ({} tokens) without a summary; the model is told that earlier turns are gone",
                    crate::plural::count(forgotten.turns, "turn"),
                    forgotten.tokens
                ));
                then = vec![Then::Save, Then::PublishHistory, Then::PublishBudget];
            }
        }
        if keep_latest && left > room {
            p.events.warning(format!(
                "the latest turn stays, and the history ({left} tokens) still does not fit in the {room} tokens the rest of the request leaves it: /forget all drops the latest turn too"
            ));
        }
        then.push(Then::ResumeHeld);
        if waited_for {
            then.push(Then::Idle);
        }
        then
    }

    /// `Op::Cancel`: stops a turn waiting for a summary (its text comes back) and a
    /// running `/compact`. A background checkpoint goes on.
    pub(super) fn cancel_wait(&mut self, events: &EventSink) -> Vec<Then> {
        let foreground = self
            .job
            .as_ref()
            .is_some_and(|job| job.kind != JobKind::Checkpoint);
        let held = self.held.take();
        if !foreground && held.is_none() {
            return vec![];
        }
        if foreground && let Some(job) = self.job.take() {
            job.cancel.cancel();
            if job.kind == JobKind::Compact {
                compact_output(events, "cancelled".into());
            }
        }
        if let Some(plan) = held {
            events.send(Event::TurnFailed {
                error: "cancelled before it was sent; nothing was sent".into(),
                message: plan.text,
            });
        }
        vec![Then::PublishHistory, Then::Idle]
    }

    /// `/clear`: forget any summary in progress along with the history.
    pub(super) fn cleared(&mut self, saved: &mut Saved, events: &EventSink) -> Vec<Then> {
        self.cancel_for("/clear", events);
        self.buffer.reset();
        self.summary_at_front = false;
        self.swap_due = false;
        self.generation += 1;
        saved.record_mut().cleared();
        vec![Then::Save, Then::PublishHistory, Then::ResumeHeld]
    }

    /// `/compact` (`idle`: no turn under way): swap in a ready checkpoint, or summarize
    /// the whole history now. Always ends with an `Output` titled "compact".
    pub(super) fn compact(&mut self, idle: bool, p: &mut Parts<'_>) -> Vec<Then> {
        if !idle || self.held.is_some() {
            compact_output(
                p.events,
                "not now: a reply is under way; /compact when it is done".into(),
            );
            return vec![];
        }
        if p.session.history.is_empty() {
            compact_output(p.events, "nothing to compact: the history is empty".into());
            return vec![];
        }
        if let Some((anchor, summary)) = self.ready_checkpoint().map(|(a, s)| (a, s.to_string())) {
            if let Some(kept) = grows(p, anchor, &summary) {
                compact_output(p.events, kept);
                return vec![];
            }
            let replaced = self.apply_summary((anchor, &summary), p);
            self.buffer.summarized();
            return vec![
                Then::Save,
                Then::PublishHistory,
                Then::PublishBudget,
                Then::Compacted(format!(
                    "swapped in the checkpoint summary: replaced {}",
                    replaced_said(&replaced)
                )),
            ];
        }
        p.events.send(Event::Notice {
            text: format!(
                "summarizing {} messages ({} tokens)…",
                p.session.history.len(),
                Self::tokens(p.session, p.model)
            ),
        });
        let budget = Self::budget(p.model);
        self.spawn_summary(
            (JobKind::Compact, budget),
            (p.model, p.session, p.events),
            p.jobs,
        );
        vec![]
    }
}

/// Why `/compact` keeps the history rather than put `summary` in the place of
/// `history[..anchor]`: the summary is no smaller than what it would replace.
fn grows(p: &Parts<'_>, anchor: usize, summary: &str) -> Option<String> {
    let (replaced, summary) =
        history::head_and_summary(&p.session.history, anchor, summary, p.model.counter());
    (summary >= replaced).then(|| {
        format!(
            "kept the history: the summary ({summary} tokens) is no smaller than the {anchor} messages ({replaced} tokens) it would replace"
        )
    })
}

/// What a summary put in the place of the history's head, and the tokens that freed
/// (`6 messages (1,234 tokens) with a summary of 200 tokens: 1,034 tokens freed`).
fn replaced_said(r: &Replaced) -> String {
    use crate::tokens::thousands;
    format!(
        "{} ({} tokens) with a summary of {} tokens: {} tokens freed",
        crate::plural::count(r.replaced_messages, "message"),
        thousands(r.replaced_tokens),
        thousands(r.summary_tokens),
        thousands(r.replaced_tokens.saturating_sub(r.summary_tokens))
    )
}

/// `/compact`'s answer.
pub(super) fn compact_output(events: &EventSink, text: String) {
    events.send(Event::Output {
        title: "compact".into(),
        text: format!("{text}\n"),
    });
}
