//! The conversation part of the engine, beside the session it talks about: the
//! history's budget and summaries, what the user is typing and where their paths start,
//! the last question (asked again when the files it needed are added), and the
//! spending limits of the turns that follow.

use std::path::{Path, PathBuf};

use super::protocol::ChatMode;
use super::{history_budget::HistoryBudget, needed::Question, spending::Spending};
use crate::config::Settings;

pub(super) struct Conversation {
    history: HistoryBudget,
    /// The message being typed, counted in the budget before it is sent.
    draft: String,
    draft_mode: Option<ChatMode>,
    /// Where relative paths typed by the user start from.
    cwd: PathBuf,
    /// The user's last message, asked again when the files it needed are added.
    last_question: Option<Question>,
    spending: Spending,
}

impl Conversation {
    pub(super) fn new(settings: &Settings, cwd: PathBuf) -> Self {
        Conversation {
            history: HistoryBudget::new(settings),
            draft: String::new(),
            draft_mode: None,
            cwd,
            last_question: None,
            spending: Spending::default(),
        }
    }

    pub(super) fn history(&self) -> &HistoryBudget {
        &self.history
    }

    pub(super) fn history_mut(&mut self) -> &mut HistoryBudget {
        &mut self.history
    }

    /// The history budget and the spending caps its summaries ask.
    pub(super) fn history_and_spending(&mut self) -> (&mut HistoryBudget, &mut Spending) {
        (&mut self.history, &mut self.spending)
    }

    /// What the user is typing now, and the mode it names (`/ask TEXT`).
    pub(super) fn draft(&self) -> (&str, Option<ChatMode>) {
        (&self.draft, self.draft_mode)
    }

    /// What the user is typing now (counted in the budget, in the mode it names).
    pub(super) fn set_draft(&mut self, text: String, mode: Option<ChatMode>) {
        self.draft = text;
        self.draft_mode = mode;
    }

    pub(super) fn cwd(&self) -> &Path {
        &self.cwd
    }

    pub(super) fn last_question(&self) -> Option<&Question> {
        self.last_question.as_ref()
    }

    /// The user's message `question` was sent (and is asked again when the files it
    /// needed are added).
    pub(super) fn asked(&mut self, question: Question) {
        self.last_question = Some(question);
    }

    pub(super) fn spending_mut(&mut self) -> &mut Spending {
        &mut self.spending
    }
}
