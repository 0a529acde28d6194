//! Starting the command in its own process group with no API key in its environment, reading
//! its output, and stopping the whole group: on cancel or timeout (SIGTERM, then
//! SIGKILL after the grace), and always once it is over, so that nothing it started in
//! the background outlives it, not even when tern drops the future on quitting.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe::Receiver;
use tokio_util::sync::CancellationToken;

use super::capture::{Capture, Recent};
use super::{Outcome, Output, Progress, RunOptions};

/// The most often progress is reported.
const REPORT_EVERY: Duration = Duration::from_millis(100);
/// How long output is still read once the command has exited (or was killed) when
/// something it left behind holds the pipe open.
const DRAIN: Duration = Duration::from_millis(200);
/// How often a stopping group is checked for members left.
const POLL: Duration = Duration::from_millis(20);
const READ_BYTES: usize = 64 * 1024;

/// Set for every command: no colors, no prompts, no terminal to drive.
const FIXED_ENV: [(&str, &str); 4] = [
    ("NO_COLOR", "1"),
    ("CARGO_TERM_COLOR", "never"),
    ("TERM", "dumb"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// Runs `command` with `sh -c` in `cwd`, in its own process group, stdin null, stdout
/// and stderr one pipe (so they interleave as printed). `progress` hears what was
/// printed at most ten times a second, and once at the end.
pub async fn run(
    command: &str,
    cwd: &Path,
    options: &RunOptions,
    cancel: CancellationToken,
    mut progress: impl FnMut(Progress) + Send,
) -> Output {
    let started = Instant::now();
    let failed = |why: String| Output {
        outcome: Outcome::FailedToStart(why),
        text: String::new(),
        lines: 0,
        elapsed: started.elapsed(),
    };
    if !cwd.is_dir() {
        return failed(format!("{} is not a directory", cwd.display()));
    }
    let (child, pipe) = match spawn(command, cwd) {
        Ok(started) => started,
        Err(e) => return failed(format!("sh: {e}")),
    };
    let mut running = Running {
        child,
        pipe,
        pipe_open: true,
        capture: Capture::new(options.max_bytes),
        recent: Recent::new(),
        buf: vec![0; READ_BYTES],
        started,
    };
    let (ended, elapsed) = running.watch(options, &cancel, &mut progress).await;
    let outcome = match ended {
        Ended::Exited(status) => {
            // Over: what it left running in the background goes with it.
            running.child.signal(Signal::SIGKILL);
            outcome(status)
        }
        Ended::Stopped(outcome) => {
            running.stop(options.kill_grace).await;
            outcome
        }
    };
    running.drain().await;
    running.report(&mut progress, true);
    Output {
        outcome,
        lines: running.capture.lines(),
        text: running.capture.finish(),
        elapsed,
    }
}

/// Starts `sh -c command` (through `spawn`: no form of the API key in its
/// environment); its group is killed when the child is dropped.
fn spawn(command: &str, cwd: &Path) -> std::io::Result<(Child, Receiver)> {
    let (reader, writer) = std::io::pipe()?;
    let pipe = Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let mut cmd = tokio::process::Command::from(crate::spawn::command("/bin/sh"));
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .kill_on_drop(true);
    // Its own session, so its own process group (killed as one) and no controlling
    // terminal: a command that opens /dev/tty (to draw, or to `stty` it) gets an error
    // instead of the workspace's screen and keyboard.
    // SAFETY: the closure runs in the forked child before exec and calls only
    // setsid(2), which is async-signal-safe; it touches no memory of the parent's.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
    cmd.envs(FIXED_ENV);
    // The command keeps the pipe's write ends until it is dropped; the reader sees the
    // end of the output only once every copy is closed.
    let child = cmd.spawn()?;
    drop(cmd);
    let group = child.id().map(|id| Pid::from_raw(id as i32));
    Ok((Child { child, group }, pipe))
}

/// The direct child and its process group (the child's pid: it leads the group).
struct Child {
    child: tokio::process::Child,
    group: Option<Pid>,
}

impl Child {
    fn signal(&self, signal: Signal) {
        if let Some(group) = self.group {
            // ESRCH (nobody left) is the usual answer once it is over.
            let _ = killpg(group, signal);
        }
    }

    /// Whether anyone is left in the group: the child once reaped is not, and a
    /// process group's id is not given to a new process while the group has members.
    fn group_alive(&self) -> bool {
        self.group.is_some_and(|group| killpg(group, None).is_ok())
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// A started command being watched.
struct Running {
    child: Child,
    pipe: Receiver,
    pipe_open: bool,
    capture: Capture,
    recent: Recent,
    buf: Vec<u8>,
    started: Instant,
}

/// How the watch ended, before the group is stopped.
enum Ended {
    Exited(std::io::Result<ExitStatus>),
    Stopped(Outcome),
}

impl Running {
    /// Reads and reports output until the command exits (and its output ends, or a
    /// short drain passes), is cancelled, or times out.
    async fn watch(
        &mut self,
        options: &RunOptions,
        cancel: &CancellationToken,
        progress: &mut (impl FnMut(Progress) + Send),
    ) -> (Ended, Duration) {
        let deadline = tokio::time::sleep(options.timeout);
        tokio::pin!(deadline);
        let mut tick = tokio::time::interval(REPORT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut exited: Option<(std::io::Result<ExitStatus>, Duration)> = None;
        let drain = tokio::time::sleep(Duration::MAX);
        tokio::pin!(drain);
        loop {
            if !self.pipe_open
                && let Some((status, at)) = exited.take()
            {
                return (Ended::Exited(status), at);
            }
            // In this order, so that a flood of output starves neither the clock nor
            // the exit (a cancel once exited would only lose the exit status).
            tokio::select! {
                biased;
                () = cancel.cancelled(), if exited.is_none() => {
                    return (Ended::Stopped(Outcome::Cancelled), self.started.elapsed());
                }
                () = &mut deadline, if exited.is_none() => {
                    return (Ended::Stopped(Outcome::TimedOut), self.started.elapsed());
                }
                status = self.child.child.wait(), if exited.is_none() => {
                    exited = Some((status, self.started.elapsed()));
                    drain.as_mut().reset(tokio::time::Instant::now() + DRAIN);
                }
                () = &mut drain => {
                    if let Some((status, at)) = exited.take() {
                        return (Ended::Exited(status), at);
                    }
                }
                _ = tick.tick() => self.report(progress, false),
                read = self.pipe.read(&mut self.buf), if self.pipe_open => self.take(read),
            }
        }
    }

    fn take(&mut self, read: std::io::Result<usize>) {
        match read {
            Ok(0) | Err(_) => self.pipe_open = false,
            Ok(n) => {
                let bytes = self.buf.get(..n).unwrap_or_default();
                self.capture.push(bytes);
                self.recent.push(bytes);
            }
        }
    }

    fn report(&mut self, progress: &mut impl FnMut(Progress), at_end: bool) {
        if !at_end && !self.recent.has_news() {
            return;
        }
        progress(Progress {
            new_text: self.recent.take_text(at_end),
            lines: self.capture.lines(),
            last_line: self.recent.last_line(),
            elapsed: self.started.elapsed(),
        });
    }

    /// Stops the group gently, as a cancel or a timeout asks: SIGTERM, then SIGKILL
    /// to whoever is left after `grace`, reading output meanwhile so that nobody
    /// blocks on a full pipe while cleaning up.
    async fn stop(&mut self, grace: Duration) {
        self.child.signal(Signal::SIGTERM);
        let until = tokio::time::Instant::now() + grace;
        let mut reaped = false;
        while tokio::time::Instant::now() < until {
            reaped = reaped || matches!(self.child.child.try_wait(), Ok(Some(_)));
            if reaped && !self.child.group_alive() {
                return;
            }
            tokio::select! {
                read = self.pipe.read(&mut self.buf), if self.pipe_open => self.take(read),
                () = tokio::time::sleep(POLL) => {}
            }
        }
        self.child.signal(Signal::SIGKILL);
    }

    /// Reads what is still in the pipe, for as long as `DRAIN` at most: a process
    /// outside the group (one that left it) may hold the pipe open for ever.
    async fn drain(&mut self) {
        let until = tokio::time::sleep(DRAIN);
        tokio::pin!(until);
        while self.pipe_open {
            tokio::select! {
                read = self.pipe.read(&mut self.buf) => self.take(read),
                () = &mut until => return,
            }
        }
    }
}

fn outcome(status: std::io::Result<ExitStatus>) -> Outcome {
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => Outcome::Exited(code),
            (None, Some(signal)) => Outcome::Signalled(signal),
            (None, None) => Outcome::FailedToStart(format!("ended without a status: {status}")),
        },
        Err(e) => Outcome::FailedToStart(format!("lost track of the command: {e}")),
    }
}
