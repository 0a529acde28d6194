//! What the engine is doing for the front end, as one state. Only one such thing runs
//! at a time: a reply streaming and a landing at once could race for the same proposal
//! (a reflection adding hunks while they are written), so each refuses to start while
//! another is under way. Background work the user does not wait for (map refreshes,
//! the double buffer's checkpoint, session saves) is not an activity.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use super::protocol::{ChatMode, CommandPurpose};

#[derive(Debug, Default)]
pub(crate) enum Activity {
    #[default]
    Idle,
    /// A user message waits for the repo map (its first build, a refresh under way, or
    /// `always`'s rescan); it is sent as soon as the map is built, or given back on
    /// cancel.
    WaitingForMap {
        text: String,
        mode: ChatMode,
        /// The op that sent it, which its turn answers.
        op: Option<super::OpId>,
    },
    /// A reply streams: a turn (with its reflections and continuations) or a branch
    /// review.
    Streaming {
        cancel: CancellationToken,
        what: Stream,
    },
    /// Accepted hunks are written and committed, or a git command runs, on a blocking
    /// thread. The flag cancels a landing that has not written anything yet.
    Git { cancel: Arc<AtomicBool> },
    /// A command waits for the user's yes or no; nothing else starts meanwhile, so the
    /// answer cannot find the engine busy with something the user started after.
    Confirming {
        command: String,
        purpose: CommandPurpose,
    },
    /// A command runs (`/run`, `/test`, `/lint`, the auto-test loop); cancel kills it.
    Running { cancel: CancellationToken },
}

/// What a streaming reply is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Turn,
    /// A `/review`: the gauge shows the review's own request meanwhile.
    BranchReview,
}

impl Activity {
    pub(crate) fn is_idle(&self) -> bool {
        matches!(self, Activity::Idle)
    }

    pub(crate) fn is_streaming(&self) -> bool {
        matches!(self, Activity::Streaming { .. })
    }

    pub(crate) fn is_branch_review(&self) -> bool {
        matches!(
            self,
            Activity::Streaming {
                what: Stream::BranchReview,
                ..
            }
        )
    }

    /// Starts a stream; returns its cancel switch.
    pub(crate) fn stream(&mut self, what: Stream) -> CancellationToken {
        let cancel = CancellationToken::new();
        *self = Activity::Streaming {
            cancel: cancel.clone(),
            what,
        };
        cancel
    }

    /// Starts git work; returns the flag that cancels it while it waits for the lock.
    pub(crate) fn git(&mut self) -> Arc<AtomicBool> {
        let cancel = Arc::new(AtomicBool::new(false));
        *self = Activity::Git {
            cancel: cancel.clone(),
        };
        cancel
    }

    /// Ends a stream; true when it was cancelled (Esc may be handled after the stream
    /// ended but before its outcome reached the loop: the switch, not only how the
    /// stream ended, says it was pressed).
    pub(crate) fn end_stream(&mut self) -> bool {
        match std::mem::take(self) {
            Activity::Streaming { cancel, .. } => cancel.is_cancelled(),
            other => {
                *self = other;
                false
            }
        }
    }

    /// Starts a command; returns its cancel switch.
    pub(crate) fn run(&mut self) -> CancellationToken {
        let cancel = CancellationToken::new();
        *self = Activity::Running {
            cancel: cancel.clone(),
        };
        cancel
    }

    /// Ends a command; true when it was cancelled.
    pub(crate) fn end_run(&mut self) -> bool {
        match std::mem::take(self) {
            Activity::Running { cancel } => cancel.is_cancelled(),
            other => {
                *self = other;
                false
            }
        }
    }

    /// Takes the command waiting for confirmation, if one is.
    pub(crate) fn take_confirming(&mut self) -> Option<(String, CommandPurpose)> {
        match std::mem::take(self) {
            Activity::Confirming { command, purpose } => Some((command, purpose)),
            other => {
                *self = other;
                None
            }
        }
    }

    /// Ends git work.
    pub(crate) fn end_git(&mut self) {
        if matches!(self, Activity::Git { .. }) {
            *self = Activity::Idle;
        }
    }

    /// Takes the message waiting for the map, if one is.
    pub(crate) fn take_waiting(&mut self) -> Option<(String, ChatMode, Option<super::OpId>)> {
        match std::mem::take(self) {
            Activity::WaitingForMap { text, mode, op } => Some((text, mode, op)),
            other => {
                *self = other;
                None
            }
        }
    }

    /// `Op::Cancel` (and quitting): stops a stream, and a landing that has not written
    /// anything yet (waiting for the lock, or for its commit message); one that is
    /// writing finishes: edits land whole or not at all.
    pub(crate) fn cancel(&self) {
        match self {
            Activity::Streaming { cancel, .. } | Activity::Running { cancel } => cancel.cancel(),
            Activity::Git { cancel } => cancel.store(true, Ordering::SeqCst),
            Activity::Idle | Activity::WaitingForMap { .. } | Activity::Confirming { .. } => {}
        }
    }

    /// Why something else cannot start now, or None when the engine is idle.
    pub(crate) fn busy_reason(&self) -> Option<&'static str> {
        match self {
            Activity::Idle => None,
            Activity::WaitingForMap { .. } => Some(
                "a message is waiting for the repo map: wait for it to be sent or cancel it first",
            ),
            Activity::Streaming { .. } => {
                Some("a reply is still streaming: wait for it or interrupt it first")
            }
            Activity::Git { .. } => Some("still applying the previous edits"),
            Activity::Confirming { .. } => {
                Some("a command waits for your yes or no: answer it first")
            }
            Activity::Running { .. } => {
                Some("a command is still running: wait for it or press Esc to stop it")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_stream_says_so_when_it_ends_and_leaves_the_engine_idle() {
        let mut activity = Activity::default();
        activity.stream(Stream::Turn);
        activity.cancel();
        assert!(activity.end_stream());
        assert!(activity.is_idle());
        // Ending a stream that is not running changes nothing.
        let flag = activity.git();
        assert!(!activity.end_stream());
        activity.cancel();
        assert!(flag.load(Ordering::SeqCst), "cancel reaches a landing");
        activity.end_git();
        assert!(activity.is_idle());
    }

    #[test]
    fn only_a_waiting_message_is_taken() {
        let mut activity = Activity::default();
        activity.stream(Stream::BranchReview);
        assert!(activity.take_waiting().is_none());
        assert!(activity.is_branch_review());
        activity = Activity::WaitingForMap {
            text: "hi".into(),
            mode: ChatMode::Ask,
            op: None,
        };
        assert_eq!(
            activity.take_waiting(),
            Some(("hi".into(), ChatMode::Ask, None))
        );
        assert!(activity.busy_reason().is_none());
    }
}
