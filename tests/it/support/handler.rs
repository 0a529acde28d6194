//! The HTTP side: routes, recording each request, and sending a `Plan` with its timing,
//! so that "the reply finished" is observable from the request log.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use tokio_util::sync::CancellationToken;

use super::dialect::{Dialect, Overflow};
use super::errors;
use super::log::Log;
use super::render::{self, Plan, Step};
use super::request::RecordedRequest;
use super::script::{Next, Script};
use super::window::WindowApi;

/// State shared by the server's handlers and the test's `MockServer` handle.
#[derive(Default)]
pub(super) struct Shared {
    pub script: Script,
    pub log: Log,
    /// The server the mock plays.
    pub dialect: Dialect,
    /// The texts sent to a tokenize endpoint, in order (kept apart from `log`, which
    /// holds the chat requests).
    pub tokenized: std::sync::Mutex<Vec<String>>,
    /// Cancelled when the `MockServer` is dropped: ends hanging replies and the server.
    pub shutdown: CancellationToken,
    /// How many more requests (chat or tokenize) get llama.cpp's answer while it loads
    /// its model.
    pub loading: std::sync::atomic::AtomicUsize,
    /// How many framing probes the server answered (`is_framing_probe`).
    pub framing_probes: std::sync::atomic::AtomicUsize,
    /// What the endpoints that say the server's window answer.
    pub window: std::sync::Mutex<WindowApi>,
    /// The replies streaming now, each stopped by its token (llama-cpp-python stops
    /// one when another request arrives).
    pub streaming: std::sync::Mutex<Vec<(usize, CancellationToken)>>,
    /// How many replies another request interrupted.
    pub interrupted: std::sync::atomic::AtomicUsize,
    /// How the tokenize endpoints answer.
    pub tokenizing: std::sync::Mutex<Tokenizing>,
}

/// How the tokenize endpoints answer (`MockServer::tokenizing`).
#[derive(Debug, Clone, Copy, Default)]
pub enum Tokenizing {
    /// As the server played has them, at once.
    #[default]
    AsPlayed,
    /// As played, after this long (a server busy computing a prompt).
    After(std::time::Duration),
    /// Never: the request hangs until the server stops.
    Never,
    /// 404, as a server without them (or a proxy that forwards only `/v1`).
    NotFound,
}

impl Shared {
    /// A request arrived: llama-cpp-python (`--interrupt_requests True`, its default)
    /// stops the reply it streams, which ends there with no finish reason.
    fn arrived(&self) {
        if !matches!(self.dialect, Dialect::LlamaCppPython { .. }) {
            return;
        }
        let mut streaming = self.streaming.lock().unwrap_or_else(|e| e.into_inner());
        for (index, reply) in streaming.drain(..) {
            if !self.log.finished(index) {
                reply.cancel();
                self.interrupted
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }

    /// A token that stops the reply to request `index` when a later request arrives.
    fn interruptible(&self, index: usize) -> CancellationToken {
        let token = CancellationToken::new();
        let mut streaming = self.streaming.lock().unwrap_or_else(|e| e.into_inner());
        streaming.retain(|(index, _)| !self.log.finished(*index));
        streaming.push((index, token.clone()));
        token
    }
}

/// llama.cpp's answer (503) to any request while it loads its model, if it still does
/// (`MockServer::answer_loading`).
fn still_loading(shared: &Shared) -> Option<serde_json::Value> {
    use std::sync::atomic::Ordering;
    shared
        .loading
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .ok()?;
    Some(serde_json::json!({
        "error": { "message": "Loading model", "type": "unavailable_error", "code": 503 }
    }))
}

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/tokenize", post(tokenize))
        .route("/extras/tokenize/count", post(tokenize))
        .route("/slots", get(slots))
        .route("/props", get(window))
        .route("/v1/models", get(window))
        .route("/api/v0/models", get(window))
        .route("/api/ps", get(window))
        .route("/api/show", post(window))
        .fallback(unknown_url)
        .with_state(shared)
}

/// Parses a request, stamped with its arrival time before the body is read. No size
/// limit: long sessions and whole-repo prompts exceed axum's usual 2 MB.
impl<S: Send + Sync> FromRequest<S> for RecordedRequest {
    type Rejection = (StatusCode, String);

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let arrived_at = Instant::now();
        let (parts, body) = request.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX).await.map_err(|e| {
            let message = format!("mock server: cannot read the request body: {e}");
            (StatusCode::BAD_REQUEST, message)
        })?;
        let path = parts.uri.path().to_owned();
        Ok(RecordedRequest::new(
            parts.method,
            path,
            parts.headers,
            &body,
            arrived_at,
        ))
    }
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    mut request: RecordedRequest,
) -> Response {
    shared.arrived();
    let dialect = shared.dialect;
    request.dialect = dialect;
    if request.rejected.is_none() {
        request.prompt_tokens = dialect.prompt_tokens(&request.model, &request.messages);
    }
    if is_framing_probe(&request) {
        return framing_answer(&shared, &request);
    }
    let guard = FinishGuard::new(&shared, request.clone());
    let interrupt = shared.interruptible(guard.index);
    if let Some(loading) = still_loading(&shared) {
        let plan = Plan::json(StatusCode::SERVICE_UNAVAILABLE, &loading);
        return send(plan, guard, &shared.shutdown, interrupt).await;
    }
    let number = guard.index + 1;
    let overflow = request.rejected.is_none().then(|| {
        let max_tokens = request.max_tokens.or(request.max_completion_tokens);
        dialect.overflow(request.prompt_tokens, max_tokens)
    });
    let plan = match (&request.rejected, overflow.flatten()) {
        (Some(reason), _) => Plan::json(StatusCode::BAD_REQUEST, &errors::invalid_request(reason)),
        (None, Some(Overflow::Error(body))) => Plan::json(StatusCode::BAD_REQUEST, &body),
        (None, Some(Overflow::SilentStream)) => render::silent(&request, number),
        (None, None) => match shared.script.next_for(&request) {
            Next::Reply(reply) => render::plan(&reply, &request, number),
            Next::NothingScripted => {
                let body = errors::nothing_scripted(number, &request.model);
                eprintln!("{}", body["error"]["message"]);
                Plan::json(StatusCode::INTERNAL_SERVER_ERROR, &body)
            }
            Next::ResponderPanicked(panic) => {
                let message = format!("mock server: the responder panicked: {panic}");
                let body = errors::openai("mock_server_error", &message, None, None);
                Plan::json(StatusCode::INTERNAL_SERVER_ERROR, &body)
            }
        },
    };
    send(plan, guard, &shared.shutdown, interrupt).await
}

/// tern's framing probe (`tern::llm::FRAMING_PROBE` in every message, unstreamed): a
/// real server answers it as any request; the mock answers it itself, with the usage
/// its dialect counts, and keeps it apart from the chat request log and the script.
fn is_framing_probe(request: &RecordedRequest) -> bool {
    !request.stream
        && !request.messages.is_empty()
        && request
            .messages
            .iter()
            .all(|m| m.text == tern::llm::FRAMING_PROBE)
}

fn framing_answer(shared: &Shared, request: &RecordedRequest) -> Response {
    shared
        .framing_probes
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let body = serde_json::json!({
        "id": "chatcmpl-framing",
        "object": "chat.completion",
        "model": request.model,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": "OK" },
            "finish_reason": "length",
        }],
        "usage": {
            "prompt_tokens": request.prompt_tokens,
            "completion_tokens": 1,
            "total_tokens": request.prompt_tokens + 1,
        },
    });
    axum::Json(body).into_response()
}

/// A tokenize endpoint: answered as the server played has it, else 404 as OpenAI does.
/// The text is kept in `Shared::tokenized`, not in the chat request log.
async fn tokenize(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    shared.arrived();
    let path = request.uri().path().to_owned();
    let body = axum::body::to_bytes(request.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    if let Some(loading) = still_loading(&shared) {
        return json_response(StatusCode::SERVICE_UNAVAILABLE, loading);
    }
    let tokenizing = *shared.tokenizing.lock().unwrap_or_else(|e| e.into_inner());
    let wait = async {
        match tokenizing {
            Tokenizing::After(delay) => tokio::time::sleep(delay).await,
            Tokenizing::Never => std::future::pending().await,
            Tokenizing::AsPlayed | Tokenizing::NotFound => {}
        }
    };
    tokio::select! {
        () = wait => {}
        () = shared.shutdown.cancelled() => {}
    }
    let answer = match tokenizing {
        Tokenizing::NotFound => None,
        _ => shared.dialect.tokenize(&model, &path, &body),
    };
    if answer.is_some() {
        let text = ["content", "prompt", "input"]
            .iter()
            .find_map(|f| body[f].as_str())
            .unwrap_or_default();
        let mut tokenized = shared.tokenized.lock().unwrap_or_else(|e| e.into_inner());
        tokenized.push(text.to_owned());
    }
    match answer {
        Some(answer) => json_response(StatusCode::OK, answer),
        None => json_response(
            StatusCode::NOT_FOUND,
            errors::invalid_request(&format!("Invalid URL (POST {path})")),
        ),
    }
}

/// llama-server's `GET /slots`: one slot, processing while a request is computed
/// (a cancelled one too, until its computing is done); else 404.
async fn slots(State(shared): State<Arc<Shared>>) -> Response {
    if !matches!(shared.dialect, Dialect::LlamaCpp { .. }) {
        let body = errors::invalid_request("Invalid URL (GET /slots)");
        return json_response(StatusCode::NOT_FOUND, body);
    }
    let now = Instant::now();
    let processing = shared
        .log
        .snapshot()
        .iter()
        .any(|r| r.finished_at.is_none_or(|at| at > now));
    json_response(
        StatusCode::OK,
        serde_json::json!([{ "id": 0, "is_processing": processing }]),
    )
}

/// An endpoint that says the server's window: answered as `Shared::window` has it,
/// else 404. Not in the chat request log.
async fn window(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let api = shared
        .window
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    tokio::select! {
        () = tokio::time::sleep(api.delay) => {}
        () = shared.shutdown.cancelled() => {}
    }
    match api.answer(shared.dialect, &path) {
        Some(body) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .expect("static header names and values are valid"),
        None => json_response(
            StatusCode::NOT_FOUND,
            errors::invalid_request(&format!("Invalid URL ({path})")),
        ),
    }
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("static header names and values are valid")
}

/// Any other path or method: recorded, and answered the way OpenAI answers it.
async fn unknown_url(State(shared): State<Arc<Shared>>, mut request: RecordedRequest) -> Response {
    let reason = format!("Invalid URL ({} {})", request.method, request.path);
    request.rejected = Some(reason.clone());
    let guard = FinishGuard::new(&shared, request);
    let plan = Plan::json(StatusCode::NOT_FOUND, &errors::invalid_request(&reason));
    send(plan, guard, &shared.shutdown, CancellationToken::new()).await
}

/// Sends `plan`; its body ends early when `interrupt` is cancelled.
async fn send(
    plan: Plan,
    guard: FinishGuard,
    shutdown: &CancellationToken,
    interrupt: CancellationToken,
) -> Response {
    let computing = plan
        .steps
        .iter()
        .fold(plan.start_delay, |sum, step| match step {
            Step::Wait(delay) => sum + *delay,
            _ => sum,
        });
    let mut guard = guard;
    guard.computes_for(computing);
    tokio::select! {
        () = tokio::time::sleep(plan.start_delay) => {}
        () = shutdown.cancelled() => {}
    }
    if plan.hold_headers {
        shutdown.cancelled().await;
    }
    let mut response = Response::builder()
        .status(plan.status)
        .header(header::CONTENT_TYPE, plan.content_type)
        .header("x-request-id", format!("req_mock{}", guard.index + 1));
    if let Some(seconds) = plan.retry_after {
        response = response.header(header::RETRY_AFTER, seconds);
    }
    let body = Body::from_stream(body_stream(plan.steps, guard, shutdown.clone(), interrupt));
    response
        .body(body)
        .expect("static header names and values are valid")
}

/// Produces the body step by step. The reply counts as finished when its last bytes are
/// handed over (so a client that has read everything always sees `finished_at` set),
/// when the connection is cut, or when the body is dropped because the client left.
fn body_stream(
    steps: Vec<Step>,
    guard: FinishGuard,
    shutdown: CancellationToken,
    interrupt: CancellationToken,
) -> impl Stream<Item = io::Result<Bytes>> + Send {
    let state = (steps.into_iter().peekable(), guard, shutdown);
    futures::stream::unfold(state, move |(mut steps, guard, shutdown)| {
        let interrupt = interrupt.clone();
        async move {
            loop {
                if interrupt.is_cancelled() {
                    return None;
                }
                let item = match steps.next()? {
                    Step::Wait(delay) => {
                        tokio::select! {
                            () = tokio::time::sleep(delay) => continue,
                            () = interrupt.cancelled() => return None,
                            () = shutdown.cancelled() => Err(io::Error::other("mock server shut down")),
                        }
                    }
                    Step::Send(bytes) => {
                        if steps.peek().is_none() {
                            guard.finish();
                        }
                        Ok(bytes)
                    }
                    Step::Abort => {
                        // Return Pending once first: hyper flushes what it has buffered when
                        // the body is pending, so the client gets the partial body before the
                        // abort instead of a connection that fails before its headers.
                        tokio::task::yield_now().await;
                        guard.finish();
                        Err(io::Error::other("mock server: scripted connection cut"))
                    }
                    Step::Hang => {
                        shutdown.cancelled().await;
                        Err(io::Error::other("mock server shut down"))
                    }
                };
                return Some((item, (steps, guard, shutdown)));
            }
        }
    })
}

/// Records a request on creation and its finish time when told or when dropped (the
/// client went away, or the server shut down, mid-reply).
struct FinishGuard {
    shared: Arc<Shared>,
    index: usize,
    /// When llama.cpp would be done computing the reply, had the client stayed.
    computed_at: Option<Instant>,
}

impl FinishGuard {
    fn new(shared: &Arc<Shared>, request: RecordedRequest) -> Self {
        let index = shared.log.record(request);
        FinishGuard {
            shared: Arc::clone(shared),
            index,
            computed_at: None,
        }
    }

    /// The reply takes the server `time` to compute from now.
    fn computes_for(&mut self, time: std::time::Duration) {
        self.computed_at = Some(Instant::now() + time);
    }

    fn finish(&self) {
        self.shared.log.finish(self.index);
    }
}

impl Drop for FinishGuard {
    /// A client that leaves does not stop llama.cpp, which goes on computing the
    /// reply (its prompt at least): the request is under way until then.
    fn drop(&mut self) {
        match (self.shared.dialect, self.computed_at) {
            (Dialect::LlamaCpp { .. }, Some(at)) => self
                .shared
                .log
                .finish_at(self.index, at.max(Instant::now())),
            _ => self.finish(),
        }
    }
}
