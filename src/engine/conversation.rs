//! The conversation part of the engine, beside the session it talks about: the
//! history's budget and summaries, what the user is typing and where their paths start,
//! the last question (asked again when the files it needed are added), and the
//! spending limits of the turns that follow.

use std::path::PathBuf;

use super::{history_budget::HistoryBudget, needed::Question, spending::Spending};
use crate::config::Settings;

pub(super) struct Conversation {
    pub(super) history: HistoryBudget,
    /// The message being typed, counted in the budget before it is sent.
    pub(super) draft: String,
    /// Where relative paths typed by the user start from.
    pub(super) cwd: PathBuf,
    /// The user's last message, asked again when the files it needed are added.
    pub(super) last_question: Option<Question>,
    pub(super) spending: Spending,
}

impl Conversation {
    pub(super) fn new(settings: &Settings, cwd: PathBuf) -> Self {
        Conversation {
            history: HistoryBudget::new(settings),
            draft: String::new(),
            cwd,
            last_question: None,
            spending: Spending::default(),
        }
    }
}
