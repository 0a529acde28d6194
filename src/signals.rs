//! SIGINT, SIGTERM and SIGHUP end tern within a second, with the terminal restored and
//! the conventional exit code (128 + the signal: 130, 143, 129), except while a
//! landing is under way (files being written and committed, or an undo): stopped
//! halfway, it would leave files written but not committed, so it finishes first.
//!
//! A front end hears of the signal ([`Stop`]) and ends by itself: a reply stops, a
//! command's process group is killed, what was done is reported. Whatever it is
//! waiting for (a blocked read, a stuck task), [`GRACE`] after the signal the process
//! exits anyway, once no landing holds it.

use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// How long a front end has to end by itself once a signal arrived.
pub const GRACE: Duration = Duration::from_millis(500);

/// Landings under way, and the change of their number.
static LANDINGS: Mutex<usize> = Mutex::new(0);
static LANDINGS_CHANGED: Condvar = Condvar::new();

/// Held while a landing is under way: a signal's exit waits until it is dropped.
#[derive(Debug)]
#[must_use = "the landing is under way while this is held"]
pub struct Landing(());

/// Marks a landing under way, until the guard is dropped.
pub fn landing() -> Landing {
    *LANDINGS.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    Landing(())
}

impl Drop for Landing {
    fn drop(&mut self) {
        let mut landings = LANDINGS.lock().unwrap_or_else(|e| e.into_inner());
        *landings = landings.saturating_sub(1);
        LANDINGS_CHANGED.notify_all();
    }
}

/// What must not outlive tern but has no destructor run when a signal's exit ends the
/// process (it exits without unwinding): the editor tern waits for, a temporary file
/// or directory. Run, in order, just before that exit.
static AT_EXIT: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());

type Cleanup = Box<dyn FnOnce() + Send>;

/// Registered with [`at_exit`]; dropped (the thing ended by itself), it is forgotten.
#[must_use = "the clean-up is forgotten when this is dropped"]
pub struct AtExit(u64);

/// Runs `cleanup` if a signal's exit comes while the returned guard is held.
pub(crate) fn at_exit(cleanup: impl FnOnce() + Send + 'static) -> AtExit {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    AT_EXIT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, Box::new(cleanup)));
    AtExit(id)
}

impl Drop for AtExit {
    fn drop(&mut self) {
        AT_EXIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, _)| *id != self.0);
    }
}

fn run_at_exit() {
    let cleanups = std::mem::take(&mut *AT_EXIT.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, cleanup) in cleanups {
        cleanup();
    }
}

/// Returns once no landing is under way.
pub fn wait_for_landings() {
    let mut landings = LANDINGS.lock().unwrap_or_else(|e| e.into_inner());
    while *landings > 0 {
        landings = LANDINGS_CHANGED
            .wait(landings)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// `SIGTERM` for 15.
pub fn name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_string())
}

/// `stopped by SIGTERM` for 15: how every front end says why it ended.
pub(crate) fn stopped_by(signal: i32) -> String {
    format!("stopped by {}", name(signal))
}

/// The exit code for a process ended by `signal`.
pub(crate) fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// A signal's arrival, for a front end to end by.
#[derive(Clone)]
pub struct Stop(tokio::sync::watch::Receiver<Option<i32>>);

impl Stop {
    /// Waits for a signal and returns it (at once if one arrived already).
    pub async fn arrived(&mut self) -> i32 {
        let signal = match self.0.wait_for(Option::is_some).await {
            Ok(signal) => *signal,
            Err(_) => None,
        };
        match signal {
            Some(signal) => signal,
            // The watcher is gone: no signal will be heard.
            None => std::future::pending().await,
        }
    }

    /// The signal that arrived, if one did.
    pub fn signal(&self) -> Option<i32> {
        *self.0.borrow()
    }
}

/// How the process exits when its front end does not end by itself.
#[derive(Clone, Copy)]
pub struct Exit {
    /// Gives the terminal back (the workspace's raw mode and alternate screen).
    pub restore: fn(),
    /// The exit code for the signal.
    pub code: fn(i32) -> u8,
}

impl Default for Exit {
    fn default() -> Exit {
        Exit {
            restore: || {},
            code: exit_code,
        }
    }
}

/// Starts watching for SIGINT, SIGTERM and SIGHUP (once per process: later calls get
/// the same `Stop`, and their `exit` is ignored). None when signals cannot be
/// watched; they then end the process as they would without tern's handlers.
pub fn watch(exit: Exit) -> Option<Stop> {
    STOP.get_or_init(|| start(exit).ok()).clone()
}

/// The signal that arrived, if one did since [`watch`] began (None before it): for
/// code far from the front end that waits, such as a wait for the repository lock.
pub(crate) fn arrived() -> Option<i32> {
    STOP.get()?.as_ref()?.signal()
}

/// The watch [`watch`] started, once.
static STOP: OnceLock<Option<Stop>> = OnceLock::new();

fn start(exit: Exit) -> std::io::Result<Stop> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let (tx, rx) = tokio::sync::watch::channel(None);
    std::thread::Builder::new()
        .name("tern-signals".into())
        .spawn(move || {
            let Some(signal) = signals.forever().next() else {
                return;
            };
            tracing::info!("signal {signal}: stopping");
            let _ = tx.send(Some(signal));
            loop {
                std::thread::sleep(GRACE);
                let landings = LANDINGS.lock().unwrap_or_else(|e| e.into_inner());
                if *landings == 0 {
                    // Exits holding the lock: no landing can begin any more.
                    run_at_exit();
                    (exit.restore)();
                    std::process::exit(i32::from((exit.code)(signal)));
                }
                drop(landings);
                wait_for_landings();
                // Landed: the front end gets another GRACE to say so and end.
            }
        })?;
    Ok(Stop(rx))
}
