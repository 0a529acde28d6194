//! The engine loop's state, and its background jobs (a turn's stream, a summary, a map refresh, a
//! git command, a branch review). Each job reports to the loop with an `Internal`
//! message; a job that panicked would never report, and the loop (and the front end
//! waiting for `Idle`) would wait forever. So a job's panic is caught and handed to the
//! loop as `Internal::Panicked`, which ends the engine the way a panic of the loop's
//! own does: `Event::Crashed`, then `Event::Exited` (see `engine::spawn`).

use std::future::Future;
use std::panic::AssertUnwindSafe;

use super::{Done, EngineRole, Internal, OpId};
use futures::FutureExt;
use tokio::sync::mpsc;

/// The engine loop's own state: what the engine is started for (its role), whether the loop ends
/// (`/quit`), and the channel background jobs report on.
pub(crate) struct Loop {
    role: EngineRole,
    quit: bool,
    done: Done,
    results: mpsc::UnboundedReceiver<(Option<OpId>, Internal)>,
}

impl Loop {
    pub(crate) fn new(role: EngineRole) -> Self {
        let (tx, results) = mpsc::unbounded_channel();
        Loop {
            role,
            quit: false,
            done: Done { tx, op: None },
            results,
        }
    }

    pub(crate) fn role(&self) -> EngineRole {
        self.role
    }

    /// The loop ends after the op it handles now.
    pub(crate) fn quit(&mut self) {
        self.quit = true;
    }

    pub(crate) fn quitting(&self) -> bool {
        self.quit
    }

    /// Where a job started now reports (answering the op being handled).
    pub(crate) fn done(&self) -> Done {
        self.done.clone()
    }

    /// Where work that answers no op reports (file-system events, say).
    pub(crate) fn done_unasked(&self) -> Done {
        Done {
            tx: self.done.tx.clone(),
            op: None,
        }
    }

    /// The op that jobs started from now on answer.
    pub(crate) fn answering(&mut self, op: Option<OpId>) {
        self.done.op = op;
    }

    /// The next result of a background job, with the op it answers.
    pub(crate) async fn next(&mut self) -> Option<(Option<OpId>, Internal)> {
        self.results.recv().await
    }
}

/// Runs `job` on the runtime; a panic in it reaches the loop as `Internal::Panicked`.
pub(crate) fn spawn(done: Done, job: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(async move {
        if let Err(panic) = AssertUnwindSafe(job).catch_unwind().await {
            let _ = done.send(Internal::Panicked(panic));
        }
    });
}

/// Runs `job` on the blocking pool; a panic in it reaches the loop as
/// `Internal::Panicked`.
pub(crate) fn spawn_blocking(done: Done, job: impl FnOnce() + Send + 'static) {
    tokio::task::spawn_blocking(move || {
        if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(job)) {
            let _ = done.send(Internal::Panicked(panic));
        }
    });
}

/// How the tests make a part of the engine fail as a bug would, in debug builds only:
/// with `TERN_TEST_PANIC=<place>` in the environment, the job at `place` (`turn`,
/// `map`) panics. Release builds compile this to nothing.
pub(crate) fn test_panic(place: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("TERN_TEST_PANIC").is_ok_and(|v| v == place) {
        panic!("a panic requested by TERN_TEST_PANIC={place}");
    }
    let _ = place;
}

/// What a caught panic said.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}
