//! Requests that must not overlap at one server. Summaries go to any server one at a
//! time (a local server often has one slot: a second request would only wait there
//! holding a connection). To a server whose parallel requests share one context
//! (llama.cpp: its slots share `-c`, so a background summary beside a turn can fill it
//! and fail both), every request goes one at a time.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Each server's gate, by base URL.
static GATES: LazyLock<Mutex<HashMap<String, Arc<Semaphore>>>> = LazyLock::new(Default::default);

/// Waits until the server at `api_base` takes the request; the permit lets the next one
/// go when dropped. (None only if the gate were closed, which it never is: the request
/// then goes ungated rather than never.)
pub(crate) async fn enter(api_base: &str) -> Option<OwnedSemaphorePermit> {
    let gate = {
        let mut gates = GATES.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            gates
                .entry(api_base.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(1))),
        )
    };
    gate.acquire_owned().await.ok()
}
