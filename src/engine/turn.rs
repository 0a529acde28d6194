//! A turn: the request is built and checked on the loop, sent on its own task (which
//! streams events while it runs), and its outcome handed back to the loop, which alone
//! records it in the session and decides what follows (edits, a reflection). Before it
//! is sent a turn passes its checks here: it waits for a summary the history needs, is
//! admitted or made room for (a smaller map, no examples, a summary), and a request the
//! server refused as too long is retried smaller. Requests are built here too: the one
//! place where the messages sent and the counts shown come from, for turns, the live
//! gauge and `/tokens` alike.

use tokio_util::sync::CancellationToken;

use super::activity::Stream;
use super::persist::record::Request;
use super::protocol::{ChatMode, Event, FileMode, RequestKind, ShownKind};
use super::spending::Unattended;
use super::{Engine, EventSink, Internal};
use crate::branch_review::{DiffSource, ReviewOptions};
use crate::context::{self, Assembled, ChunkInputs};
use crate::context::{BudgetReport, Section, advice, history};
use crate::edit::prompts;
use crate::llm::{
    ChatReply, ChatRequest, LlmClient, LlmError, Message, ReplyLimit, StreamEvent, Usage,
};
use crate::tokens::{Counting, Drift, Prediction};

/// Below this window the few-shot examples (300 tokens or so) are not sent: they would
/// take room a small window needs for the code and the conversation.
const EXAMPLES_MIN_WINDOW: usize = 8192;

/// Below this window code mode's system prompt may shrink to its short form to make
/// room (`prompts::short_system`).
const SHORT_SYSTEM_MAX_WINDOW: usize = 4096;

/// How many times a request the server refused as too long is retried, smaller.
pub(super) const MAX_OVERFLOW_RETRIES: usize = 3;

/// Each retry after a context-length refusal sends at most this share of the last try.
const OVERFLOW_SHRINK: (usize, usize) = (3, 4);

/// A history target below this is not worth a summary: the smallest summary and its
/// framing would not fit in it.
const MIN_SUMMARY_ROOM: usize = 64;

/// Why a turn was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnKind {
    /// The user's own message.
    User,
    /// Failed edit blocks sent back to the model (the n-th time this user turn).
    Reflection(usize),
    /// A failed test or lint run sent to the model to fix (`/test`, the auto-test
    /// loop): tern's own message, carrying the notes the user's next one would.
    Fix,
}

/// Who wrote a reply whose edits are proposed, which decides whether its failed blocks
/// go back to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReplyOrigin {
    /// The model, in full: failed blocks are reflected.
    Model,
    /// The model, interrupted by the user: Esc is final, nothing is reflected.
    Interrupted,
    /// Someone else (`Op::ProposeReply`): there is no model to reflect to.
    Given,
}

/// What the loop needs back to record the turn.
#[derive(Debug)]
pub(crate) struct Sent {
    pub kind: TurnKind,
    pub mode: ChatMode,
    /// What the user typed (returned to them if the turn fails).
    pub user_text: String,
    /// The user message as sent, with any notes the engine added.
    pub sent_text: String,
    /// Those notes: given back to the next turn if this one fails.
    pub notes: Vec<String>,
    /// tern's prediction of the request's prompt, to compare with the server's count,
    /// and how it was counted (as the request said).
    pub prediction: Prediction,
    pub counting: Counting,
}

#[derive(Debug)]
pub(crate) struct TurnOutcome {
    pub sent: Sent,
    pub result: Result<ChatReply, LlmError>,
}

/// What the engine remembers about one user turn across holds and retries.
#[derive(Debug, Clone)]
pub(super) struct TurnPlan {
    pub(super) text: String,
    pub(super) mode: ChatMode,
    pub(super) kind: TurnKind,
    /// Prompt tokens of the request last sent for this turn.
    pub(super) sent_tokens: usize,
    /// The notes for the model that request carried, for a retry to carry again.
    pub(super) notes: Vec<String>,
    pub(super) overflow_retries: usize,
    /// A cap below the window's, after the server refused a bigger request.
    pub(super) limit: Option<usize>,
    /// The server's last refusal of this turn as too long: its tokens and words.
    pub(super) refused: Option<(usize, String)>,
    pub(super) map_shrunk: bool,
    /// The few-shot examples are left out to make room.
    pub(super) drop_examples: bool,
    /// Code mode's short system prompt is sent to make room.
    pub(super) short_system: bool,
    pub(super) summarized_for_overflow: bool,
    /// Summarizing the history to make room failed.
    pub(super) summary_failed: bool,
    /// How many times the turn waited for the server to count its messages.
    pub(super) count_rounds: usize,
    /// The op that asked for it: a held turn, started again, still answers it.
    pub(super) op: Option<super::OpId>,
}

impl TurnPlan {
    pub(super) fn new(text: &str, mode: ChatMode, kind: TurnKind, op: Option<super::OpId>) -> Self {
        TurnPlan {
            text: text.to_string(),
            mode,
            kind,
            sent_tokens: 0,
            notes: vec![],
            overflow_retries: 0,
            limit: None,
            refused: None,
            map_shrunk: false,
            drop_examples: false,
            short_system: false,
            summarized_for_overflow: false,
            summary_failed: false,
            count_rounds: 0,
            op,
        }
    }
}

impl Engine {
    /// A test or lint run ended: the runner says whether the model is asked to fix it;
    /// not while proposed hunks wait for a decision, nor past the spending caps.
    pub(super) fn after_check(&mut self, checked: &super::command_runner::Checked) {
        let (runner, parts) = self.commands();
        let Some(fix) = runner.after_check(checked, &parts) else {
            return;
        };
        if let Some(waiting) = self.undecided_hunks() {
            self.events.notice(format!(
                "`{}` failed; its output is in the context, but {} for a decision, so the model is not asked to fix it now",
                checked.command,
                hunks_waiting(waiting)
            ));
            return;
        }
        if let Some(round) = fix.next_round {
            if !self.may_spend(super::spending::Unattended::AutoTest) {
                return;
            }
            self.runner.fix_round(round);
        }
        self.end_proposal();
        self.start_turn(fix.message, ChatMode::Code, TurnKind::Fix);
    }

    /// Builds the request for a turn whose current messages are `cur`.
    pub(super) fn assemble(&mut self, cur: Vec<Message>, mode: ChatMode) -> Assembled {
        let prompts = prompts::prompts(self.model.edit_format(), mode);
        let (readonly_files, mut errors) = self.session.texts(FileMode::ReadOnly);
        let (chat_files, more) = self.session.texts(FileMode::Editable);
        errors.extend(more);
        for e in errors {
            self.events.error(e.to_string());
        }
        let current: String = cur
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let repo_map = self
            .map
            .text(&current, &self.model, &self.session, &self.events);
        // A small window has no room for them; an oversized request leaves them out.
        let examples = if self.model.window().window < EXAMPLES_MIN_WINDOW
            || self.conversation.history().examples_dropped()
        {
            Vec::new()
        } else {
            prompts.examples
        };
        let system = match self.conversation.history().short_system() {
            true if mode == ChatMode::Code => {
                crate::prompts::short_system(self.model.edit_format()).unwrap_or(prompts.system)
            }
            _ => prompts.system,
        };
        let inputs = ChunkInputs {
            system: system.to_string(),
            examples,
            readonly_files,
            repo_map,
            done: self.session.history.clone(),
            chat_files,
            cur,
            reminder: Some(prompts.reminder.to_string()),
            review_diff: None,
            command_outputs: self.session.outputs.clone(),
        };
        context::assemble(&inputs, self.model.counter())
    }

    /// The budget of the request `message` would send: the notes the engine owes the
    /// model go with any message, so they count even before the user types.
    pub(super) fn report(&mut self, message: &str, mode: ChatMode) -> BudgetReport {
        let cur = if message.trim().is_empty() && self.session.notes_for_next_turn.is_empty() {
            vec![]
        } else {
            vec![Message::user(self.session.user_message_text(message))]
        };
        let assembled = self.assemble(cur, mode);
        self.decorate(BudgetReport::new(
            &assembled,
            self.model.info(),
            self.model.window(),
            self.model.counter().counting(),
        ))
    }

    /// What caps the reply to a prompt of `prompt` tokens: the room after it as the
    /// server may count it, at most the model's output limit. The gauge shows it.
    fn reply_limit(&self, prompt: usize) -> ReplyLimit {
        let counted = prompt + self.model.counter().counting().margin(prompt);
        ReplyLimit::for_prompt(self.model.info(), self.model.window().window, counted)
    }

    /// The report for the message being typed, in the mode it would be sent in.
    pub(super) fn draft_report(&mut self) -> BudgetReport {
        let (draft, mode) = self.conversation.draft();
        let (draft, mode) = (draft.to_string(), mode.unwrap_or(self.session.mode));
        self.report(&draft, mode)
    }

    pub(super) fn decorate(&self, mut report: BudgetReport) -> BudgetReport {
        if let Some(sent) = self.reply_limit(report.total).max_tokens() {
            report.reserved_output = sent;
        }
        report.last_usage = self.session.last_usage;
        report.last_usage_estimated = self.session.last_usage_estimated;
        report.last_drift = self.session.last_drift;
        report.counts_pending = self.model.counts_pending(&self.run_loop);
        report.last_cost = self.session.last_cost;
        report.session_cost = self.session.session_cost;
        report.cost_cap = self.model.settings().max_cost;
        report.map = self.map.status(&self.model);
        report.map_pending = self.map.pending();
        report.history = self
            .conversation
            .history()
            .status(&self.model, &self.session);
        self.conversation.history().limit_report(&mut report);
        report
    }

    /// A branch review, a turn of its own: plans a review of `source` and, when `send`
    /// is set, sends it.
    pub(super) fn start_review(&mut self, source: DiffSource, options: ReviewOptions, send: bool) {
        let label = super::branch_review::label(&source);
        if let Some(busy) = self.activity.busy_reason() {
            self.events.send(Event::TurnFailed {
                error: busy.into(),
                message: label,
            });
            return;
        }
        let cancel = self.activity.stream(Stream::BranchReview);
        super::branch_review::spawn(
            (source, options, send),
            label,
            cancel,
            (&self.model, &self.session, &self.events),
            &self.run_loop,
        );
    }

    /// `Op::AddNeeded`: adds the files and asks the last question again, telling the
    /// model which files it now has.
    pub(super) fn add_needed(&mut self, paths: Vec<String>, mode: FileMode) {
        let refused = if let Some(busy) = self.activity.busy_reason() {
            Some(busy.to_string())
        } else if self.pending.is_some() {
            Some("proposed edits wait for review: apply or discard them first".to_string())
        } else if self.conversation.last_question().is_none() {
            Some("there is no question to ask again".to_string())
        } else {
            None
        };
        if let Some(why) = refused {
            self.events
                .error(format!("cannot add the files and ask again: {why}"));
            return;
        }
        let before: Vec<(String, Option<FileMode>)> = paths
            .iter()
            .filter_map(|p| self.session.resolve(p, self.conversation.cwd()).ok())
            .map(|rel| (rel.clone(), self.session.mode_of(&rel)))
            .collect();
        self.add_files(&paths, mode);
        self.files_changed();
        let added: Vec<String> = before
            .into_iter()
            .filter(|(rel, was)| *was != Some(mode) && self.session.mode_of(rel) == Some(mode))
            .map(|(rel, _)| rel)
            .collect();
        let Some((question, asked_in)) = self.conversation.last_question().cloned() else {
            return;
        };
        if added.is_empty() {
            self.events.error(
                "none of those files could be added; the question was not sent again".into(),
            );
            self.idle_if_done();
            return;
        }
        let mode_word = match mode {
            FileMode::Editable => "editable",
            FileMode::ReadOnly => "read-only",
        };
        self.session
            .notes_for_next_turn
            .push(crate::prompts::needed_added(&added.join(", "), mode_word));
        self.start_user_turn(question, asked_in);
    }

    /// A message the user typed. In code mode it is refused while edits still wait for
    /// a decision, so a review is never silently abandoned.
    pub(super) fn start_user_turn(&mut self, text: String, mode: ChatMode) {
        if mode == ChatMode::Code
            && let Some(waiting) = self.undecided_hunks()
        {
            self.events.send(Event::TurnFailed {
                error: format!(
                    "{} for a decision: accept or reject them and apply (Enter in the review, or /apply), or /discard them, first; /ask works meanwhile",
                    hunks_waiting(waiting)
                ),
                message: text,
            });
            self.idle_if_done();
            return;
        }
        if self
            .map
            .defers_turn(&self.model, &self.events, &self.run_loop)
        {
            self.activity = super::activity::Activity::WaitingForMap {
                text,
                mode,
                op: self.events.op,
            };
            return;
        }
        // A message given back on resume is the user's to send again, or not.
        self.saved.clear_unsent();
        if mode == ChatMode::Code {
            self.end_proposal();
            self.session.turns.start();
        }
        if let Some(warning) = self
            .conversation
            .spending_mut()
            .user_spends(self.session.session_cost, self.model.settings())
        {
            self.events.warning(warning);
        }
        let (runner, mut parts) = self.commands();
        runner.end_auto_test(&mut parts);
        self.start_turn(text, mode, TurnKind::User);
    }

    pub(super) fn start_turn(&mut self, text: String, mode: ChatMode, kind: TurnKind) {
        if let Some(busy) = self.activity.busy_reason() {
            self.events.send(Event::TurnFailed {
                error: busy.into(),
                message: text,
            });
            return;
        }
        if self.hold_for_history(&text, mode, kind) {
            return;
        }
        let sent_text = match kind {
            TurnKind::User | TurnKind::Fix => self.session.user_message_text(&text),
            TurnKind::Reflection(_) => text.clone(),
        };
        let assembled = self.assemble(vec![Message::user(sent_text.clone())], mode);
        // Checked against the window with the server's counts, where it counts.
        if self.model.needs_counts(&assembled) && self.conversation.history_mut().wait_for_counts()
        {
            self.model.start_counting(&self.run_loop);
            return;
        }
        let report = self.decorate(BudgetReport::new(
            &assembled,
            self.model.info(),
            self.model.window(),
            self.model.counter().counting(),
        ));
        if !self.admit(&report) {
            self.make_room(text, mode, kind, report);
            return;
        }
        let retry = self.conversation.history().retry_warning(report.total);
        let retrying = retry.is_some();
        if let Some(text) = retry {
            self.events.send(Event::Warning { text });
        }
        let notes = match kind {
            TurnKind::User | TurnKind::Fix => std::mem::take(&mut self.session.notes_for_next_turn),
            TurnKind::Reflection(_) => Vec::new(),
        };
        let prediction = self
            .model
            .counter()
            .predict(assembled.messages.iter().map(|m| m.content.as_str()));
        self.events.send(Event::Budget(Box::new(report)));
        // A retry of a refused request is the same turn: shown once, when it started.
        if !retrying {
            let (own, shown_notes) = match kind {
                TurnKind::User => (text.clone(), notes.clone()),
                TurnKind::Reflection(_) => (String::new(), vec![text.clone()]),
                TurnKind::Fix => (
                    String::new(),
                    notes.iter().cloned().chain([text.clone()]).collect(),
                ),
            };
            if kind == TurnKind::User {
                self.saved.record_turn(&self.session, &text, mode, &notes);
            }
            self.session.show(ShownKind::User, own.clone());
            for note in &shown_notes {
                self.session.show(ShownKind::Note, note.clone());
            }
            self.events.send(Event::TurnStarted {
                text: own,
                notes: shown_notes,
                mode,
            });
        }
        let cancel = self.activity.stream(Stream::Turn);
        let counting = self.model.counter().provenance(&prediction);
        let request = ChatRequest {
            model: self.model.info().clone(),
            messages: assembled.messages,
            cache_control: self.model.cache_control(),
            reply_limit: self.reply_limit(prediction.total),
            predicted_prompt: Some(prediction.total),
            counting: Some(counting),
            one_at_a_time: false,
            known_window: self.model.window().known(),
        };
        spawn(
            self.model.client().clone(),
            request,
            cancel,
            (self.events.clone(), self.model.counter().counting()),
            self.run_loop.done(),
            Sent {
                kind,
                mode,
                user_text: text,
                sent_text,
                notes,
                prediction,
                counting,
            },
        );
    }

    /// Refuses a request that does not fit: the budget table, and the advice (what is
    /// big, largest first) as the reason; the user's text comes back.
    pub(super) fn refuse_oversized(&mut self, report: &BudgetReport, error: String, text: String) {
        self.events.send(Event::Output {
            title: "the request does not fit".into(),
            text: report.render_table(),
        });
        self.events.send(Event::TurnFailed {
            error,
            message: text,
        });
        self.idle_if_done();
    }

    pub(super) fn finish_turn(&mut self, outcome: TurnOutcome) {
        let cancelled = self.activity.end_stream();
        let TurnOutcome { sent, result } = outcome;
        let reply = match result {
            Ok(reply) => {
                self.model.server_answered(&self.run_loop);
                reply
            }
            Err(e) if !cancelled && self.turn_overflowed(&e, &sent.prediction) => return,
            Err(e) => {
                // The model never saw the notes: they go with the user's next message.
                let mut notes = sent.notes;
                notes.append(&mut self.session.notes_for_next_turn);
                self.session.notes_for_next_turn = notes;
                self.events.send(Event::TurnFailed {
                    error: e.to_string(),
                    message: sent.user_text,
                });
                self.publish_budget();
                self.idle_if_done();
                return;
            }
        };
        // What the server counted teaches tern's counts (not after a continuation,
        // whose prompt was the request plus the reply so far); a count no tokenizer
        // gives is not a cost either.
        let believed = !reply.usage_reported
            || reply.continuations > 0
            || self.model.calibrate(
                &sent.prediction,
                reply.usage.prompt_tokens,
                &self.events,
                &self.run_loop,
            );
        let estimated = !(reply.usage_reported && believed);
        self.session.last_drift = (!estimated && reply.continuations == 0).then_some(Drift {
            predicted: sent.prediction.total,
            reported: reply.usage.prompt_tokens,
            counting: sent.counting,
        });
        if let Some(drift) = self.session.last_drift {
            self.events.send(Event::Drift {
                purpose: RequestKind::Turn,
                drift,
            });
        }
        let usage = if !estimated {
            let mut usage = reply.usage;
            self.model.believed_cache(&mut usage, &self.events);
            usage
        } else {
            Usage {
                prompt_tokens: sent.prediction.total,
                completion_tokens: self.model.counter().count(&reply.text),
                ..Usage::default()
            }
        };
        self.session
            .record_cost(self.model.info(), &usage, estimated);
        let cost = self.session.last_cost;
        // An empty reply keeps the question: the history says no reply came.
        let answer = match reply.finish {
            crate::llm::Finish::Empty => Some(crate::prompts::EMPTY_REPLY.to_string()),
            _ => (!reply.text.is_empty()).then(|| reply.text.clone()),
        };
        if let Some(answer) = answer {
            let pair = [Message::user(sent.sent_text), Message::assistant(answer)];
            let request = match sent.kind {
                TurnKind::User => Request::User,
                TurnKind::Reflection(_) => Request::Reflection,
                TurnKind::Fix => Request::Fix,
            };
            self.saved.record_mut().joined(request, &pair);
            self.session.history.extend(pair);
        }
        self.session.show(ShownKind::Assistant, reply.text.clone());
        self.events.send(Event::TurnFinished {
            reply: reply.text.clone(),
            finish: reply.finish.clone(),
            usage: Some(usage),
            usage_estimated: estimated,
            cost,
            session_cost: self.session.session_cost,
        });
        if sent.kind == TurnKind::User {
            self.conversation.asked((sent.user_text.clone(), sent.mode));
        }
        if !reply.text.is_empty()
            && let Some(needed) = super::needed::report(&self.session, &self.model, &reply.text)
        {
            self.events.send(needed);
        }
        // Esc is final: what arrived is shown for review, but no request (reflection,
        // new summary) starts by itself.
        let interrupted = cancelled || reply.finish == crate::llm::Finish::Cancelled;
        self.map.override_budget(None);
        self.change_history(|history, parts| history.after_turn(!interrupted, parts));
        if sent.mode == ChatMode::Code && !reply.text.is_empty() {
            let origin = if interrupted {
                ReplyOrigin::Interrupted
            } else {
                ReplyOrigin::Model
            };
            self.propose_edits(&reply.text, sent.kind, origin);
        }
        // Pick up whatever changed on disk while the model was answering.
        self.map
            .refresh(Vec::new(), &self.model, &self.events, &self.run_loop);
        self.publish_budget();
        self.idle_if_done();
    }

    /// Start-of-turn check: true when the turn must wait for a summary (it is kept and
    /// started again when the summary lands) or was refused.
    pub(super) fn hold_for_history(&mut self, text: &str, mode: ChatMode, kind: TurnKind) -> bool {
        let plan = self
            .conversation
            .history_mut()
            .take_resume()
            .unwrap_or_else(|| {
                // A new turn starts with the map at its full budget again.
                self.map.override_budget(None);
                TurnPlan::new(text, mode, kind, self.events.op)
            });
        if self.conversation.history().has_held() {
            self.events.send(Event::TurnFailed {
                error: "another message is already waiting for the history summary".into(),
                message: text.to_string(),
            });
            return true;
        }
        if let Some(started) = self.conversation.history().blocking_since() {
            self.events.send(Event::Notice {
                text: format!(
                    "waiting for the history summary (running for {:.1} s) before sending; cancel to stop waiting",
                    started.elapsed().as_secs_f64()
                ),
            });
            self.conversation.history_mut().hold(plan);
            self.publish_history();
            return true;
        }
        self.conversation.history_mut().set_current(plan);
        false
    }

    pub(super) fn resume_held_turn(&mut self) {
        if self.model.counting() {
            return;
        }
        if let Some(plan) = self.conversation.history_mut().release_held() {
            self.restart_turn(plan);
        }
    }

    fn restart_turn(&mut self, plan: TurnPlan) {
        let (text, mode, kind) = (plan.text.clone(), plan.mode, plan.kind);
        self.answering(plan.op);
        self.conversation.history_mut().set_resume(plan);
        self.start_turn(text, mode, kind);
    }

    /// Whether an assembled request may be sent; when it may, its size and notes are
    /// remembered in case the server refuses it as too long.
    pub(super) fn admit(&mut self, report: &BudgetReport) -> bool {
        let fits = report.total <= self.conversation.history().prompt_limit(&self.model);
        if fits && let Some(plan) = self.conversation.history_mut().current_mut() {
            plan.sent_tokens = report.total;
            plan.notes = self.session.notes_for_next_turn.clone();
        }
        fits
    }

    /// The request does not fit: the repo map shrinks (to nothing if need be), then
    /// the few-shot examples go, then below 4k code mode's short system prompt stands
    /// in, then the history is summarized now (the turn waits); only then is it
    /// refused, with what is big in it and what of tern's own part was cut. The user's text comes back
    /// with the refusal.
    pub(super) fn make_room(
        &mut self,
        text: String,
        mode: ChatMode,
        kind: TurnKind,
        mut report: BudgetReport,
    ) {
        let limit = self.conversation.history().prompt_limit(&self.model);
        let mut plan = self
            .conversation
            .history_mut()
            .take_current()
            .unwrap_or_else(|| TurnPlan::new(&text, mode, kind, self.events.op));
        // Each way of making room makes a new request, whose new texts are counted.
        plan.count_rounds = 0;
        let over = report.total.saturating_sub(limit);
        if !plan.map_shrunk {
            plan.map_shrunk = true;
            if self.shrink_repo_map(over, limit) {
                return self.restart_turn(plan);
            }
        }
        if !plan.drop_examples && report.section(Section::Examples) > 0 {
            plan.drop_examples = true;
            self.events.notice(format!(
                "the request is {over} tokens over the limit of {limit}: sending it without the example exchanges"
            ));
            return self.restart_turn(plan);
        }
        if !plan.short_system
            && mode == ChatMode::Code
            && self.model.window().window < SHORT_SYSTEM_MAX_WINDOW
            && crate::prompts::short_system(self.model.edit_format()).is_some()
        {
            plan.short_system = true;
            self.events.notice(format!(
                "the request is {over} tokens over the limit of {limit}: sending it with the short system prompt"
            ));
            return self.restart_turn(plan);
        }
        let history_tokens = history::tokens(&self.session.history, self.model.counter());
        let target = history_tokens.saturating_sub(over);
        let Some(mut plan) = self.conversation.history_mut().wait_for_checkpoint(plan) else {
            self.events.notice(format!(
                "the request is {over} tokens over the limit of {limit}: waiting for the history summary under way first"
            ));
            self.publish_history();
            return;
        };
        if !plan.summarized_for_overflow
            && target >= MIN_SUMMARY_ROOM
            && self.may_spend(Unattended::Summary)
        {
            plan.summarized_for_overflow = true;
            self.events.send(Event::Notice {
                text: format!(
                    "the request is {over} tokens over the limit of {limit}: summarizing the history ({history_tokens} tokens) into at most {target} first"
                ),
            });
            self.conversation.history_mut().summarize_for_overflow(
                plan,
                target,
                (&self.model, &self.session, &self.events),
                &self.run_loop,
            );
            return;
        }
        report.prompt_limit = limit;
        report.remaining = limit as i64 - report.total as i64;
        let mut error = advice::advice(&report, report.total, limit);
        if let Some(note) = super::model::counts::calibration_note(report.counting) {
            error = format!("{error}; {note}");
        }
        let cut: Vec<&str> = [
            (
                plan.map_shrunk && report.section(Section::Repo) == 0,
                "the repo map off",
            ),
            (plan.drop_examples, "no example exchanges"),
            (plan.short_system, "the short system prompt"),
        ]
        .into_iter()
        .filter_map(|(done, what)| done.then_some(what))
        .collect();
        if !cut.is_empty() {
            error = format!(
                "{error} (tern's own part was cut first: {})",
                cut.join(", ")
            );
        }
        if let Some((tokens, why)) = &plan.refused {
            error = format!(
                "the server refused the request ({tokens} tokens) as too long ({why}); {error}"
            );
        }
        if plan.summary_failed || (history_tokens > 0 && target < MIN_SUMMARY_ROOM) {
            error.push_str(
                "; the history cannot be summarized small enough: /forget drops its oldest turns (the model is told)",
            );
        }
        self.refuse_oversized(&report, error, plan.text);
    }

    /// Overflow prevention's first step: the repo map shrinks by `over` tokens for this
    /// turn, to nothing if need be. False when there is no map left to shrink.
    fn shrink_repo_map(&mut self, over: usize, limit: usize) -> bool {
        let map_tokens = self.map.status(&self.model).map_or(0, |m| m.tokens);
        if map_tokens == 0 {
            return false;
        }
        let budget = map_tokens.saturating_sub(over);
        self.map.override_budget(Some(budget));
        self.events.notice(if budget == 0 {
            format!(
                "the request is {over} tokens over the limit of {limit}: it goes without the repo map ({map_tokens} tokens)"
            )
        } else {
            format!(
                "the request is {over} tokens over the limit of {limit}: the repo map shrinks from {map_tokens} to at most {budget} tokens"
            )
        });
        true
    }

    /// A turn's request failed. When the server said it was too long, retry it smaller
    /// (at most `MAX_OVERFLOW_RETRIES` times) or stop with a clear message; returns true
    /// when it handled the failure. What the server said is used: its count of the
    /// prompt calibrates tern's, and its window (llama.cpp's `n_ctx`) becomes the
    /// session's.
    pub(super) fn turn_overflowed(&mut self, error: &LlmError, prediction: &Prediction) -> bool {
        let LlmError::ContextLengthExceeded {
            window,
            prompt_tokens,
            ..
        } = error
        else {
            return false;
        };
        let Some(mut plan) = self.conversation.history_mut().take_current() else {
            return false;
        };
        plan.overflow_retries += 1;
        // The notes go with the message again, whether it is retried or handed back.
        self.session.notes_for_next_turn = std::mem::take(&mut plan.notes);
        if let Some(reported) = *prompt_tokens {
            self.model
                .calibrate(prediction, reported, &self.events, &self.run_loop);
        }
        let sent = prompt_tokens.unwrap_or(plan.sent_tokens);
        match window.filter(|&n_ctx| n_ctx < self.model.window().window) {
            Some(n_ctx) => {
                self.adopt_server_window(n_ctx);
                plan.limit = None;
            }
            None => {
                let limit = plan.sent_tokens * OVERFLOW_SHRINK.0 / OVERFLOW_SHRINK.1;
                self.conversation.history_mut().learn_limit(limit);
                plan.limit = Some(limit);
            }
        }
        if plan.overflow_retries > MAX_OVERFLOW_RETRIES {
            let report = self.report(&plan.text, plan.mode);
            self.events.send(Event::TurnFailed {
                error: format!(
                    "the server still refuses the request as too long after {MAX_OVERFLOW_RETRIES} smaller retries (the last had {sent} tokens): {error}. Set --context-window to the server's real window; {}",
                    advice::advice(&report, report.total, self.conversation.history().prompt_limit(&self.model))
                ),
                message: plan.text,
            });
            self.publish_budget();
            self.idle_if_done();
            return true;
        }
        if !self.may_spend(Unattended::Resend) {
            self.events.send(Event::TurnFailed {
                error: format!(
                    "the server refused the request ({sent} tokens) as too long: {error}"
                ),
                message: plan.text,
            });
            self.publish_budget();
            self.idle_if_done();
            return true;
        }
        plan.refused = Some((sent, error.to_string()));
        plan.map_shrunk = false;
        plan.summarized_for_overflow = false;
        // The retry is a new request (a smaller window makes a smaller map, say): its
        // new texts are counted before it goes.
        plan.count_rounds = 0;
        self.restart_turn(plan);
        true
    }

    /// The server's context (`n_ctx`) is smaller than the window tern assumed: it is
    /// the window for the rest of the session, and kept for the server and model.
    pub(super) fn adopt_server_window(&mut self, n_ctx: usize) {
        let before = self.model.window().window;
        self.model.adopt_server_window(n_ctx);
        self.model.keep_proven_window(n_ctx, &self.run_loop);
        self.conversation.history_mut().forget_learned_limit();
        self.events.warning(format!(
            "the server's context is {n_ctx} tokens, not the {before} tern assumed: using {n_ctx} from now on (kept for this server and model, so the next run starts with it)"
        ));
        self.publish_budget();
    }
}

fn spawn(
    client: LlmClient,
    request: ChatRequest,
    cancel: CancellationToken,
    (events, counting): (EventSink, Counting),
    done: super::Done,
    sent: Sent,
) {
    super::run_loop::spawn(done.clone(), async move {
        super::run_loop::test_panic("turn");
        let mut stream = events.reply_stream();
        let mut forward = |event: StreamEvent| stream.send(stream_event(event, counting));
        let result = client.chat(&request, &cancel, &mut forward).await;
        stream.finish();
        let _ = done.send(Internal::Turn(TurnOutcome { sent, result }));
    });
}

/// The engine's event for a client's event during a turn.
pub(super) fn stream_event(event: StreamEvent, counting: Counting) -> Event {
    match event {
        StreamEvent::Delta(text) => Event::Delta { text },
        StreamEvent::Reasoning(text) => Event::Reasoning { text },
        StreamEvent::Retrying {
            attempt,
            delay,
            reason,
        } => Event::Retrying {
            attempt,
            delay_ms: delay.as_millis() as u64,
            reason,
        },
        StreamEvent::Continuing { continuation } => Event::Continuing { continuation },
        StreamEvent::UsageIgnored(text) => Event::Warning { text },
        StreamEvent::Counted(drift) => Event::Drift {
            purpose: RequestKind::Turn,
            drift,
        },
        StreamEvent::Request {
            model,
            predicted_prompt_tokens,
            max_tokens,
            counting: said,
        } => Event::Request {
            purpose: RequestKind::Turn,
            model,
            predicted_prompt_tokens,
            max_tokens,
            counting: said.unwrap_or(counting),
        },
    }
}

/// `1 proposed hunk still waits`, `3 proposed hunks still wait`.
fn hunks_waiting(n: usize) -> String {
    let verb = match n {
        1 => "waits",
        _ => "wait",
    };
    format!("{} still {verb}", crate::plural::count(n, "proposed hunk"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ApiKey, Settings};
    use crate::engine::EngineConfig;
    use crate::llm::Finish;

    /// Esc handled after the stream ended but before its outcome reached the loop (the
    /// loop picks among ready messages in any order): the reply is still interrupted,
    /// so its failed block is shown, never reflected.
    #[tokio::test]
    async fn a_cancel_that_races_the_end_of_the_stream_still_stops_the_reflection() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        let root = dir.path().canonicalize().unwrap();
        // Not the user's state directory: the engine saves the session there.
        crate::config::use_state_dir(
            std::env::temp_dir().join(format!("tern-lib-test-state-{}", std::process::id())),
        );
        let config = EngineConfig {
            settings: Settings {
                // Nothing listens there: a request that starts anyway fails, never hangs.
                api_base: "http://127.0.0.1:9/v1".into(),
                api_key: Some(ApiKey::new("sk-test")),
                ..Settings::default()
            },
            root: root.clone(),
            cwd: root.clone(),
            record: None,
            replay: None,
            editable: vec!["a.py".into()],
            read_only: vec![],
            map_cache: crate::repomap::CacheLocation::Disabled,
            resume: None,
            role: Default::default(),
            model_chosen: false,
        };
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let mut engine = Engine::new(config, EventSink { tx, op: None }).unwrap();
        engine.add_files(&["a.py".into()], crate::engine::FileMode::Editable);
        engine.activity.stream(Stream::Turn);
        engine.activity.cancel();
        let reply =
            "a.py\n```python\n<<<<<<< SEARCH\ny = 2\n=======\ny = 3\n>>>>>>> REPLACE\n```\n";
        engine.finish_turn(TurnOutcome {
            sent: Sent {
                kind: TurnKind::User,
                mode: ChatMode::Code,
                user_text: "edit".into(),
                sent_text: "edit".into(),
                notes: Vec::new(),
                prediction: Prediction::default(),
                counting: Counting::Exact,
            },
            result: Ok(ChatReply {
                text: reply.into(),
                usage: Default::default(),
                usage_reported: false,
                finish: Finish::Stop,
                continuations: 0,
            }),
        });
        let mut seen = Vec::new();
        while let Ok(envelope) = events.try_recv() {
            seen.push(envelope.event);
        }
        assert!(engine.activity.is_idle(), "no request started: {seen:#?}");
        assert!(
            !seen.iter().any(|e| matches!(e, Event::Reflection { .. })),
            "{seen:#?}"
        );
        assert!(
            seen.iter()
                .any(|e| matches!(e, Event::Warning { text } if text.contains("interrupted"))),
            "{seen:#?}"
        );
    }
}
