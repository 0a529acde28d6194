//! The handle a test holds: start the server, script it, read its log. Dropping the
//! handle stops the server and ends any reply still hanging.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};

use super::dialect::Dialect;
use super::handler::{self, Shared};
use super::reply::Reply;
use super::request::RecordedRequest;

/// A loopback OpenAI-compatible server on 127.0.0.1 with a random port.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The runtime serving the requests.
    runtime: Handle,
    /// Set by `start_in_thread`: the server's own runtime, shut down on drop.
    own_runtime: Option<Runtime>,
}

impl MockServer {
    /// Starts the server on the calling test's tokio runtime (`#[tokio::test]`, either
    /// flavour). It serves while the test awaits its client.
    pub async fn start() -> MockServer {
        MockServer::launch(Handle::current(), None, Dialect::OpenAi)
    }

    /// `start`, playing a local server (its tokenizer, template, endpoints, limits).
    pub async fn start_as(dialect: Dialect) -> MockServer {
        MockServer::launch(Handle::current(), None, dialect)
    }

    /// Starts the server on its own runtime and threads, for sync tests that run the
    /// `tern` binary; it serves until the returned handle is dropped. Callable anywhere,
    /// including inside an async test.
    pub fn start_in_thread() -> MockServer {
        MockServer::start_in_thread_as(Dialect::OpenAi)
    }

    /// `start_in_thread`, playing a local server.
    pub fn start_in_thread_as(dialect: Dialect) -> MockServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mock-openai")
            .enable_all()
            .build()
            .expect("mock server: cannot build its tokio runtime");
        MockServer::launch(runtime.handle().clone(), Some(runtime), dialect)
    }

    fn launch(runtime: Handle, own_runtime: Option<Runtime>, dialect: Dialect) -> MockServer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .expect("mock server: cannot bind 127.0.0.1");
        let addr = listener
            .local_addr()
            .expect("a bound socket has an address");
        let shared = Arc::new(Shared {
            dialect,
            ..Shared::default()
        });
        let app = handler::router(Arc::clone(&shared));
        let stop = shared.shutdown.clone().cancelled_owned();
        let _context = runtime.enter();
        let listener = tokio::net::TcpListener::from_std(listener)
            .expect("mock server: cannot register its socket with tokio");
        runtime.spawn(async move {
            // Replies are many small writes: without TCP_NODELAY each waits ~40 ms for
            // the client's delayed ACK, which no real server makes a client wait.
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
            {
                eprintln!("mock server stopped: {e}");
            }
        });
        MockServer {
            addr,
            shared,
            runtime: runtime.clone(),
            own_runtime,
        }
    }

    /// The base URL a client is configured with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        self.url("/v1")
    }

    /// `http://127.0.0.1:PORT` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Queues `reply` for the next request no per-model queue answers.
    pub fn push(&self, reply: Reply) {
        self.shared.script.push(reply);
    }

    /// Queues `reply` for the next request for exactly `model`; checked before the
    /// general queue (e.g. the weak model's summarizer requests).
    pub fn push_for_model(&self, model: &str, reply: Reply) {
        self.shared.script.push_for_model(model.to_owned(), reply);
    }

    /// Answers requests the queues leave unanswered with `responder(request)`. A panic
    /// in the responder (a failed assertion) becomes a 500 naming it.
    pub fn set_responder(
        &self,
        responder: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) {
        self.shared.script.set_responder(Arc::new(responder));
    }

    /// The next `n` requests (chat or tokenize) get llama.cpp's answer while it loads
    /// its model: 503 `Loading model`.
    pub fn answer_loading(&self, n: usize) {
        let loading = &self.shared.loading;
        loading.store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// Changes how the tokenize endpoints answer from now on (`Tokenizing`).
    pub fn tokenizing(&self, tokenizing: super::handler::Tokenizing) {
        *self
            .shared
            .tokenizing
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = tokenizing;
    }

    /// Changes what the endpoints that say the server's window answer (`WindowApi`).
    pub fn window_api(&self, change: impl FnOnce(&mut super::window::WindowApi)) {
        let mut api = self.shared.window.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut api);
    }

    /// The server says its window where its kind can (`/props`, model lists, Ollama's
    /// API).
    pub fn say_window(&self) {
        self.window_api(|api| api.enabled = true);
    }

    /// Queued replies not yet used, over all queues: assert it is 0 at the end of a test
    /// to check the client made every request the script expected.
    pub fn pending_replies(&self) -> usize {
        self.shared.script.pending()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.log.snapshot()
    }

    pub fn request_count(&self) -> usize {
        self.shared.log.len()
    }

    /// How many streaming replies a later request interrupted (llama-cpp-python).
    pub fn interrupted(&self) -> usize {
        self.shared
            .interrupted
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many framing probes (`tern::llm::FRAMING_PROBE`) the server answered.
    pub fn framing_probes(&self) -> usize {
        self.shared
            .framing_probes
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The texts sent to the tokenize endpoint so far, in order.
    pub fn tokenized(&self) -> Vec<String> {
        let tokenized = self.shared.tokenized.lock();
        tokenized.unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until at least `n` requests have arrived and returns the log. Panics after
    /// `timeout`, listing what did arrive.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        if !self.shared.log.wait_for(n, timeout).await {
            let got = self.requests();
            panic!(
                "mock server: expected {n} requests within {timeout:?}, got {}: {got:#?}",
                got.len()
            );
        }
        self.requests()
    }

    /// `wait_for_requests` for sync tests. Must not be called from inside the runtime
    /// serving this server (tokio panics if it is); fine with `start_in_thread`.
    pub fn wait_for_requests_blocking(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        self.runtime.block_on(self.wait_for_requests(n, timeout))
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        if let Some(runtime) = self.own_runtime.take() {
            // Unlike dropping it, allowed inside an async context too.
            runtime.shutdown_background();
        }
    }
}
