//! Which reply answers which request: a per-model FIFO first, then the general FIFO, then
//! the responder. Nothing scripted is an answer too (a loud 500, see `errors`).

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard};

use super::reply::Reply;
use super::request::RecordedRequest;

/// Computes a reply from the request when the queues are empty.
pub(super) type Responder = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

#[derive(Default)]
pub(super) struct Script {
    inner: Mutex<Queues>,
}

#[derive(Default)]
struct Queues {
    general: VecDeque<Reply>,
    by_model: HashMap<String, VecDeque<Reply>>,
    responder: Option<Responder>,
}

/// What the script says for one request.
pub(super) enum Next {
    Reply(Reply),
    NothingScripted,
    /// The responder panicked (typically a failed assertion in it); the panic message.
    ResponderPanicked(String),
}

impl Script {
    pub fn push(&self, reply: Reply) {
        self.lock().general.push_back(reply);
    }

    pub fn push_for_model(&self, model: String, reply: Reply) {
        self.lock()
            .by_model
            .entry(model)
            .or_default()
            .push_back(reply);
    }

    pub fn set_responder(&self, responder: Responder) {
        self.lock().responder = Some(responder);
    }

    /// Queued replies not yet used, over all queues.
    pub fn pending(&self) -> usize {
        let queues = self.lock();
        queues.general.len() + queues.by_model.values().map(VecDeque::len).sum::<usize>()
    }

    pub fn next_for(&self, request: &RecordedRequest) -> Next {
        let responder = {
            let mut queues = self.lock();
            let for_model = queues
                .by_model
                .get_mut(&request.model)
                .and_then(VecDeque::pop_front);
            if let Some(reply) = for_model.or_else(|| queues.general.pop_front()) {
                return Next::Reply(reply);
            }
            match &queues.responder {
                Some(responder) => Arc::clone(responder),
                None => return Next::NothingScripted,
            }
        };
        // Called without the lock, so a slow responder does not hold up other requests.
        match catch_unwind(AssertUnwindSafe(|| responder(request))) {
            Ok(reply) => Next::Reply(reply),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "non-string panic".into());
                Next::ResponderPanicked(message)
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queues> {
        // Poisoning needs a panic while the lock is held; none of the code above can.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
