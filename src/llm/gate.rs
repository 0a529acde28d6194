//! Requests that must not overlap at one server. Summaries go to any server one at a
//! time (a local server often has one slot: a second request would only wait there
//! holding a connection). To a server whose parallel requests share one context
//! (llama.cpp: its slots share `-c`, so a background summary beside a turn can fill it
//! and fail both), every request goes one at a time.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

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

/// How often llama-server's slots are asked whether a cancelled request still runs.
const SETTLE_POLL: Duration = Duration::from_millis(100);

/// The longest a cancelled request keeps the gate shut.
const SETTLE_LIMIT: Duration = Duration::from_secs(60);

/// Keeps `permit` until the server at `root` has stopped computing the request just
/// cancelled: llama.cpp does not stop processing a prompt when the client leaves, so
/// the next request would run beside it (or, with one slot, wait there). Asks
/// llama-server's `GET /slots` until no slot is processing; a server that cannot say
/// (no such endpoint, an answer without slots) lets the next request go at once.
pub(crate) fn release_when_settled(
    permit: OwnedSemaphorePermit,
    http: reqwest::Client,
    root: String,
    key: Option<super::key::ApiKey>,
) {
    tokio::spawn(async move {
        let busy = async || -> Option<bool> {
            let mut request = http.get(format!("{root}/slots"));
            if let Some(key) = &key {
                request = request.bearer_auth(key.expose());
            }
            let response = request.send().await.ok()?.error_for_status().ok()?;
            let slots: Vec<serde_json::Value> = response.json().await.ok()?;
            Some(slots.iter().any(|slot| slot["is_processing"] == true))
        };
        let _ = tokio::time::timeout(SETTLE_LIMIT, async {
            while busy().await == Some(true) {
                tokio::time::sleep(SETTLE_POLL).await;
            }
        })
        .await;
        drop(permit);
    });
}
