//! Building requests: the one place where the messages sent and the counts shown come
//! from, for turns, the live gauge and `/tokens` alike.

use super::Engine;
use super::protocol::{ChatMode, FileMode};
use crate::context::{self, Assembled, BudgetReport, ChunkInputs};
use crate::edit::prompts;
use crate::llm::Message;

/// Below this window the few-shot examples (300 tokens or so) are not sent: they would
/// take room a small window needs for the code and the conversation.
pub const EXAMPLES_MIN_WINDOW: usize = 8192;

impl Engine {
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
        let inputs = ChunkInputs {
            system: prompts.system.to_string(),
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
    pub(super) fn report(&mut self, message: &str) -> BudgetReport {
        let cur = if message.trim().is_empty() && self.session.notes_for_next_turn.is_empty() {
            vec![]
        } else {
            vec![Message::user(self.session.user_message_text(message))]
        };
        let mode = self.session.mode;
        let assembled = self.assemble(cur, mode);
        self.decorate(BudgetReport::new(
            &assembled,
            self.model.info(),
            self.model.window(),
            self.model.counter().counting(),
        ))
    }

    pub(super) fn decorate(&self, mut report: BudgetReport) -> BudgetReport {
        report.last_usage = self.session.last_usage;
        report.last_usage_estimated = self.session.last_usage_estimated;
        report.counts_pending = self.model.counts_pending(&self.run_loop);
        report.last_cost = self.session.last_cost;
        report.session_cost = self.session.session_cost;
        report.cost_cap = self.model.settings().max_cost;
        report.map = self.map.status(&self.model);
        report.history = self.history_status();
        self.limit_report(&mut report);
        report
    }
}
