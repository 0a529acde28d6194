//! Running a program a commit needs (a hook, the signing program,
//! `gpg.ssh.defaultKeyCommand`) so that it can never hold a landing for ever: in a
//! process group of its own, killed as a whole when the landing is cancelled (a signal,
//! the user quitting) while nothing is written yet, or when it takes longer than
//! allowed (a signing program waiting on a pinentry nobody sees).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How often the child is looked at.
const POLL: Duration = Duration::from_millis(20);

/// Why a child did not run to its end.
#[derive(Debug)]
pub(crate) enum Cut {
    /// `cancel` was set: it was killed.
    Cancelled,
    /// It ran past its time limit: it was killed.
    TimedOut(Duration),
    /// It could not be started or watched.
    Io(std::io::Error),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Cancelled => f.write_str("cancelled, so it was stopped"),
            Cut::TimedOut(limit) => write!(
                f,
                "it did not finish within {} s, so it was stopped",
                limit.as_secs()
            ),
            Cut::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Runs `cmd` with `input` on its stdin (None: no stdin) and collects what it prints.
/// Its whole process group is killed when `cancel` is set or `limit` passes, and once
/// it has exited (what it left behind goes with it).
pub(crate) fn run(
    mut cmd: Command,
    input: Option<Vec<u8>>,
    cancel: Option<&AtomicBool>,
    limit: Option<Duration>,
) -> Result<Output, Cut> {
    cmd.process_group(0)
        .stdin(match input {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(Cut::Io)?;
    let group = Pid::from_raw(child.id() as i32);
    // Written and read from threads, so a program that talks before it has read
    // everything cannot leave both sides waiting.
    let writer = child.stdin.take().zip(input).map(|(mut stdin, bytes)| {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        })
    });
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => break Err(Cut::Io(e)),
        }
        if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
            break Err(Cut::Cancelled);
        }
        if let Some(limit) = limit.filter(|l| started.elapsed() >= *l) {
            break Err(Cut::TimedOut(limit));
        }
        std::thread::sleep(POLL);
    };
    // ESRCH (nobody left) is the usual answer once it is over.
    let _ = killpg(group, Signal::SIGKILL);
    let _ = child.wait();
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    ended.map(|status| Output {
        status,
        stdout,
        stderr,
    })
}
