//! The request log: every request in arrival order, with the time its reply finished,
//! and a way to wait until a number of requests has arrived.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::request::RecordedRequest;

pub(super) struct Log {
    entries: Mutex<Vec<RecordedRequest>>,
    /// The number of entries, for waiters.
    count: watch::Sender<usize>,
}

impl Default for Log {
    fn default() -> Self {
        Log {
            entries: Mutex::default(),
            count: watch::Sender::new(0),
        }
    }
}

impl Log {
    /// Appends `request`; returns its index.
    pub fn record(&self, request: RecordedRequest) -> usize {
        let mut entries = self.lock();
        entries.push(request);
        let len = entries.len();
        drop(entries);
        self.count.send_replace(len);
        len - 1
    }

    /// Marks the reply to request `index` finished now, unless it already was.
    pub fn finish(&self, index: usize) {
        self.finish_at(index, Instant::now());
    }

    /// Marks the reply to request `index` finished `at`, unless it already was.
    pub fn finish_at(&self, index: usize, at: Instant) {
        let mut entries = self.lock();
        entries[index].finished_at.get_or_insert(at);
    }

    /// Whether the reply to request `index` has finished.
    pub fn finished(&self, index: usize) -> bool {
        self.lock()[index].finished_at.is_some()
    }

    pub fn snapshot(&self) -> Vec<RecordedRequest> {
        self.lock().clone()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Waits until at least `n` requests arrived; `false` on timeout.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let mut count = self.count.subscribe();
        let arrived = tokio::time::timeout(timeout, count.wait_for(|&len| len >= n)).await;
        matches!(arrived, Ok(Ok(_)))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<RecordedRequest>> {
        // Poisoning needs a panic while the lock is held; none of the code above can.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
