//! Running a shell command for the user (`/run`, `/test`, `/lint`, the auto-test loop):
//! in its own session (so its own process group, and no terminal to take over) so that
//! a cancel, a timeout or tern quitting stops everything it started, without the API
//! key in its environment, with its output captured within a byte cap and made safe to
//! show, then clipped by real token count for the model. Unix only, as tern is in practice (process groups and signals).

mod capture;
mod clip;
mod process;
mod suggest;

use std::time::Duration;

pub use crate::tokens::clip::Clipped;
pub use clip::clip;
pub(crate) use clip::default_output_budget;
pub use process::run;
pub use suggest::{CommandKind, Suggestion, suggest};

/// How a command runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub timeout: Duration,
    /// The most bytes of output kept in memory; beyond it, head and tail are kept and the
    /// middle is counted, never stored.
    pub max_bytes: usize,
    /// Time between SIGTERM to the process group and SIGKILL.
    pub kill_grace: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            timeout: Duration::from_secs(600),
            max_bytes: 1 << 20,
            kill_grace: Duration::from_secs(2),
        }
    }
}

/// What the running command has printed since the last report (at most ten reports a
/// second, and one at the end), for the chat block and the status bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Made visible; capped per report, saying how much it skipped.
    pub new_text: String,
    /// Lines printed so far.
    pub lines: usize,
    /// The last non-blank line printed so far (the one being printed if it has begun),
    /// made visible and cut short for a status bar.
    pub last_line: String,
    pub elapsed: Duration,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    Signalled(i32),
    TimedOut,
    Cancelled,
    FailedToStart(String),
}

/// A finished command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub outcome: Outcome,
    /// stdout and stderr interleaved as printed, control characters made visible
    /// (`terminal_text`), capped to `max_bytes` as head + "[… N lines, M bytes left
    /// out …]" + tail.
    pub text: String,
    /// Lines printed in all.
    pub lines: usize,
    /// From the start until the command exited, or until it was told to stop.
    pub elapsed: Duration,
}

impl Output {
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Exited(0)
    }

    /// How it ended, for people: "exit 1 after 3.2 s", "timed out after 600 s".
    pub fn describe(&self) -> String {
        let after = seconds(self.elapsed);
        match &self.outcome {
            Outcome::Exited(code) => format!("exit {code} after {after}"),
            Outcome::Signalled(signal) => format!("killed by signal {signal} after {after}"),
            Outcome::TimedOut => format!("timed out after {after}"),
            Outcome::Cancelled => format!("cancelled after {after}"),
            Outcome::FailedToStart(why) => format!("could not start: {why}"),
        }
    }
}

/// A duration as "0.4 s", "12 s": tenths only while they matter.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}
