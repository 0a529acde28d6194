//! The double buffer's decisions (after aider PR #4858, "hopping context windows"):
//! summarize early, while the conversation goes on, and swap the summary in later.
//!
//! At the checkpoint mark (60% of the history budget) the history up to an anchor (all
//! of it, at that moment) is summarized in the background; at the swap mark (85%) the
//! history becomes the summary plus every message after the anchor, verbatim. This
//! module holds only the state and the decisions; the engine runs the summaries.
//!
//! With the double buffer off, the same interface gives the classic behaviour: summarize
//! (the next request waits) once the history is over its budget.

use super::budget::HistoryPhase;

/// What the engine must do after the history changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Nothing,
    /// Summarize `history[..anchor]` in the background; report with `checkpoint_done`
    /// or `checkpoint_failed`.
    Checkpoint {
        anchor: usize,
    },
    /// Replace `history[..anchor]` with `summary`; the phase is now `Swapped`.
    Swap {
        anchor: usize,
        summary: String,
    },
    /// The swap mark is reached but the checkpoint is still running: the next request
    /// waits for it.
    Wait,
    /// Summarize now with the classic summarizer, forced, before the next request: both
    /// marks were crossed at once, the checkpoint failed, or the double buffer is off
    /// and the history is over its budget. Report with `summarized`.
    SummarizeNow,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Idle,
    Checkpointing { anchor: usize },
    Ready { anchor: usize, summary: String },
    Swapped,
}

/// The double buffer's state for one session.
#[derive(Debug, Clone)]
pub struct DoubleBuffer {
    enabled: bool,
    checkpoint_threshold: f64,
    swap_threshold: f64,
    state: State,
    /// The checkpoint of this cycle failed: no new one until a summary lands.
    failed: bool,
}

impl DoubleBuffer {
    /// Thresholds are fractions of the history budget, `0 < checkpoint < swap < 1`
    /// (checked by the config). `enabled: false` is the classic summarizer.
    pub fn new(enabled: bool, checkpoint_threshold: f64, swap_threshold: f64) -> Self {
        DoubleBuffer {
            enabled,
            checkpoint_threshold,
            swap_threshold,
            state: State::Idle,
            failed: false,
        }
    }

    pub fn phase(&self) -> HistoryPhase {
        match self.state {
            State::Idle => HistoryPhase::Idle,
            State::Checkpointing { .. } => HistoryPhase::Checkpointing,
            State::Ready { .. } => HistoryPhase::Ready,
            State::Swapped => HistoryPhase::Swapped,
        }
    }

    /// Token counts of the checkpoint and swap marks for `budget` (zero when off).
    pub fn marks(&self, budget: usize) -> (usize, usize) {
        if !self.enabled {
            return (0, 0);
        }
        let mark = |f: f64| (budget as f64 * f) as usize;
        (mark(self.checkpoint_threshold), mark(self.swap_threshold))
    }

    /// A checkpoint's summary that is ready and not swapped in yet: its anchor and text.
    pub fn ready(&self) -> Option<(usize, &str)> {
        match &self.state {
            State::Ready { anchor, summary } => Some((*anchor, summary)),
            _ => None,
        }
    }

    /// Decides what to do now that the history holds `tokens` tokens in `len` messages.
    pub fn step(&mut self, tokens: usize, budget: usize, len: usize) -> Action {
        if !self.enabled {
            return if tokens > budget {
                Action::SummarizeNow
            } else {
                Action::Nothing
            };
        }
        let (checkpoint, swap) = self.marks(budget);
        match &self.state {
            State::Idle | State::Swapped if tokens >= swap => Action::SummarizeNow,
            State::Idle | State::Swapped if tokens >= checkpoint && !self.failed => {
                self.state = State::Checkpointing { anchor: len };
                Action::Checkpoint { anchor: len }
            }
            State::Checkpointing { .. } if tokens >= swap => Action::Wait,
            State::Ready { .. } if tokens >= swap => {
                let State::Ready { anchor, summary } =
                    std::mem::replace(&mut self.state, State::Swapped)
                else {
                    unreachable!("matched Ready above")
                };
                Action::Swap { anchor, summary }
            }
            _ => Action::Nothing,
        }
    }

    /// The background summary of `history[..anchor]` is ready.
    pub(crate) fn checkpoint_done(&mut self, anchor: usize, summary: String) {
        self.state = State::Ready { anchor, summary };
    }

    /// The background summary failed: the classic summarizer takes over at the swap mark.
    pub(crate) fn checkpoint_failed(&mut self) {
        self.state = State::Idle;
        self.failed = true;
    }

    /// A summary was swapped in by other means (classic, `/compact`, overflow): the cycle
    /// starts again from the new history.
    pub fn summarized(&mut self) {
        self.state = State::Swapped;
        self.failed = false;
    }

    /// The history was cleared or replaced: forget any checkpoint.
    pub fn reset(&mut self) {
        self.state = State::Idle;
        self.failed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer() -> DoubleBuffer {
        DoubleBuffer::new(true, 0.60, 0.85)
    }

    #[test]
    fn a_full_cycle_checkpoints_then_swaps_then_starts_again() {
        let mut b = buffer();
        assert_eq!(b.marks(1000), (600, 850));
        assert_eq!(b.step(500, 1000, 10), Action::Nothing);
        assert_eq!(b.step(620, 1000, 12), Action::Checkpoint { anchor: 12 });
        assert_eq!(b.phase(), HistoryPhase::Checkpointing);
        assert_eq!(b.step(700, 1000, 14), Action::Nothing);
        b.checkpoint_done(12, "recap".into());
        assert_eq!(b.phase(), HistoryPhase::Ready);
        assert_eq!(b.ready(), Some((12, "recap")));
        assert_eq!(b.step(800, 1000, 16), Action::Nothing);
        assert_eq!(
            b.step(900, 1000, 18),
            Action::Swap {
                anchor: 12,
                summary: "recap".into()
            }
        );
        assert_eq!(b.phase(), HistoryPhase::Swapped);
        // The new history (summary + 6 messages) grows again.
        assert_eq!(b.step(400, 1000, 8), Action::Nothing);
        assert_eq!(b.step(610, 1000, 10), Action::Checkpoint { anchor: 10 });
    }

    #[test]
    fn reaching_the_swap_mark_before_the_summary_is_ready_waits() {
        let mut b = buffer();
        b.step(600, 1000, 4);
        assert_eq!(b.step(860, 1000, 6), Action::Wait);
        b.checkpoint_done(4, "recap".into());
        assert!(matches!(
            b.step(860, 1000, 6),
            Action::Swap { anchor: 4, .. }
        ));
    }

    #[test]
    fn both_marks_at_once_summarize_synchronously() {
        let mut b = buffer();
        assert_eq!(b.step(100, 1000, 2), Action::Nothing);
        assert_eq!(b.step(900, 1000, 4), Action::SummarizeNow);
    }

    #[test]
    fn a_failed_checkpoint_falls_back_to_classic_at_the_swap_mark() {
        let mut b = buffer();
        b.step(650, 1000, 8);
        b.checkpoint_failed();
        assert_eq!(b.phase(), HistoryPhase::Idle);
        // No second background attempt in this cycle...
        assert_eq!(b.step(700, 1000, 10), Action::Nothing);
        // ...the classic summarizer runs at the swap mark instead.
        assert_eq!(b.step(870, 1000, 12), Action::SummarizeNow);
        b.summarized();
        assert_eq!(b.step(650, 1000, 8), Action::Checkpoint { anchor: 8 });
    }

    #[test]
    fn classic_mode_summarizes_only_over_the_budget() {
        let mut b = DoubleBuffer::new(false, 0.60, 0.85);
        assert_eq!(b.marks(1000), (0, 0));
        assert_eq!(b.step(900, 1000, 10), Action::Nothing);
        assert_eq!(b.step(1001, 1000, 12), Action::SummarizeNow);
        assert_eq!(b.phase(), HistoryPhase::Idle);
    }
}
