//! The HTTP layer under async-openai (its tower `middleware` hook): the network, the
//! network while recording each exchange, or a recording played back.
//!
//! Non-success answers become `HttpFailure` here, before async-openai sees them, so the
//! status, the body and `Retry-After` all reach the retry logic in `client.rs`.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use super::error::HttpFailure;

/// One recorded request and the server's answer, a line of a `--record` file, with the
/// API key redacted from all of it (`recorded`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exchange {
    /// The JSON body tern sent. Headers (and so the API key) are never recorded.
    pub request: serde_json::Value,
    pub status: u16,
    /// For a streamed success: each SSE event with its time since the request, in ms.
    #[serde(default)]
    pub events: Vec<TimedEvent>,
    /// For a failure: the error body and `Retry-After`, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimedEvent {
    pub ms: u64,
    pub data: String,
}

/// Longest pause replayed between two events, so a recording of a slow server still
/// plays back briskly.
const MAX_REPLAY_GAP: Duration = Duration::from_millis(150);

#[derive(Clone)]
pub(crate) enum Transport {
    Network {
        http: reqwest::Client,
        /// The most bytes one reply may hold (`max_reply_bytes`).
        limit: usize,
    },
    /// What is recorded is redacted (`recorded`).
    Record {
        http: reqwest::Client,
        sink: Arc<Mutex<File>>,
        limit: usize,
    },
    Replay(Arc<Mutex<VecDeque<Exchange>>>),
}

/// Why a `--replay` recording cannot be played. The cause is part of the message
/// and not a `source`: `main` prints the chain (`{:#}`), which would say it twice.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplayError {
    #[error("cannot open {}: {error}", path.display())]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot read {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A line that is not a recorded exchange (1-based).
    #[error("{} line {line}: {error}", path.display())]
    Exchange {
        path: PathBuf,
        line: usize,
        error: serde_json::Error,
    },
}

impl Transport {
    pub(crate) fn record(
        http: reqwest::Client,
        path: &Path,
        limit: usize,
    ) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Transport::Record {
            http,
            sink: Arc::new(Mutex::new(file)),
            limit,
        })
    }

    pub(crate) fn replay(path: &Path) -> Result<Self, ReplayError> {
        let file = File::open(path).map_err(|error| ReplayError::Open {
            path: path.to_path_buf(),
            error,
        })?;
        let mut exchanges = VecDeque::new();
        for (n, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|error| ReplayError::Read {
                path: path.to_path_buf(),
                error,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange =
                serde_json::from_str(&line).map_err(|error| ReplayError::Exchange {
                    path: path.to_path_buf(),
                    line: n + 1,
                    error,
                })?;
            exchanges.push_back(exchange);
        }
        Ok(Transport::Replay(Arc::new(Mutex::new(exchanges))))
    }

    async fn call(self, factory: HttpRequestFactory) -> Result<reqwest::Response, OpenAIError> {
        let request = factory.build().await?;
        match self {
            Transport::Network { http, limit } => {
                let response = http.execute(request).await?;
                fail_unless_success(response)
                    .await
                    .map(|r| capped(r, limit))
            }
            Transport::Record { http, sink, limit } => {
                let body = request_json(&request);
                let started = Instant::now();
                let response = http.execute(request).await?;
                if response.status().is_success() {
                    Ok(tee(capped(response, limit), body, started, sink))
                } else {
                    let failure = read_failure(response).await;
                    write_line(
                        &sink,
                        &Exchange {
                            request: body,
                            status: failure.status,
                            events: vec![],
                            error_body: Some(super::recorded::error_body(&failure.body)),
                            retry_after_secs: failure.retry_after.map(|d| d.as_secs()),
                        },
                    );
                    Err(OpenAIError::Boxed(Box::new(failure)))
                }
            }
            Transport::Replay(queue) => {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                let exchange = next.ok_or_else(|| {
                    OpenAIError::Boxed(
                        "the replay file has no more recorded exchanges"
                            .to_string()
                            .into(),
                    )
                })?;
                let sent = request_json(&request);
                if sent.get("messages") != exchange.request.get("messages") {
                    tracing::warn!("replay: the request differs from the recorded one");
                }
                replayed(exchange)
            }
        }
    }
}

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future =
        Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        Box::pin(self.clone().call(factory))
    }
}

async fn fail_unless_success(
    response: reqwest::Response,
) -> Result<reqwest::Response, OpenAIError> {
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(OpenAIError::Boxed(Box::new(read_failure(response).await)))
    }
}

async fn read_failure(response: reqwest::Response) -> HttpFailure {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    // An error body is read only so far: it is shown, not kept.
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    HttpFailure {
        status,
        retry_after,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// `Retry-After` is either delta-seconds or an HTTP date. A wait too long for a
/// `Duration` (a server may say anything) is the longest one: it is never waited out.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0 && secs.is_finite())
            .then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The request body, for the record (`recorded`: redacted) or to compare with one.
fn request_json(request: &reqwest::Request) -> serde_json::Value {
    super::recorded::request(request.body().and_then(|b| b.as_bytes()).unwrap_or(&[]))
}

fn write_line(sink: &Mutex<File>, exchange: &Exchange) {
    let Ok(mut line) = serde_json::to_string(exchange) else {
        return;
    };
    line.push('\n');
    let mut file = sink.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = file.write_all(line.as_bytes()) {
        tracing::error!("cannot write the record file: {e}");
    }
}

/// The most of an error response's body that is read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The response with a body that fails when one SSE event grows past `limit` bytes
/// (and a margin for its framing): the event parser holds a whole event, so this is
/// what bounds tern's memory whatever a server sends. How much reply text is kept is
/// bounded by the client (`max_reply_bytes`).
fn capped(response: reqwest::Response, limit: usize) -> reqwest::Response {
    let max_event = limit.saturating_add(EVENT_MARGIN);
    let mut since_event = 0usize;
    let mut last = 0u8;
    rebuilt(
        &response.status(),
        &response.headers().clone(),
        response
            .bytes_stream()
            .map(move |chunk| -> Result<Bytes, BoxError> {
                let bytes = chunk?;
                for &b in bytes.iter() {
                    since_event = if b == b'\n' && last == b'\n' {
                        0
                    } else {
                        since_event + 1
                    };
                    last = b;
                }
                if since_event > max_event {
                    return Err(format!(
                        "the server sent one event of more than {} KiB (max_reply_bytes)",
                        max_event / 1024
                    )
                    .into());
                }
                Ok(bytes)
            }),
    )
}

/// Room for an event's JSON framing around its text.
const EVENT_MARGIN: usize = 64 * 1024;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response with `status`, `headers` and `body`.
fn rebuilt<S, E>(
    status: &reqwest::StatusCode,
    headers: &reqwest::header::HeaderMap,
    body: S,
) -> reqwest::Response
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    let mut builder = http::Response::builder().status(status);
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    let rebuilt = builder
        .body(reqwest::Body::wrap_stream(body))
        .expect("status and headers come from a valid response");
    reqwest::Response::from(rebuilt)
}

/// Passes the response body through unchanged while cutting it into SSE events for the
/// record; the exchange is written when the body ends or the reader drops it.
fn tee(
    response: reqwest::Response,
    request: serde_json::Value,
    started: Instant,
    sink: Arc<Mutex<File>>,
) -> reqwest::Response {
    let status = response.status();
    let headers = response.headers().clone();
    let mut recording = Recording {
        exchange: Exchange {
            request,
            status: status.as_u16(),
            events: vec![],
            error_body: None,
            retry_after_secs: None,
        },
        pending: Vec::new(),
        started,
        sink,
    };
    let body = response.bytes_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            recording.take(bytes);
        }
        chunk
    });
    rebuilt(&status, &headers, body)
}

struct Recording {
    exchange: Exchange,
    pending: Vec<u8>,
    started: Instant,
    sink: Arc<Mutex<File>>,
}

impl Recording {
    /// Splits complete SSE events (ending in a blank line) off the pending bytes. Whole
    /// events are whole UTF-8, unlike arbitrary network chunks.
    fn take(&mut self, bytes: &Bytes) {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = find_event_end(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end).collect();
            self.push(&event);
        }
    }

    fn push(&mut self, event: &[u8]) {
        self.exchange.events.push(TimedEvent {
            ms: self.started.elapsed().as_millis() as u64,
            data: String::from_utf8_lossy(event).into_owned(),
        });
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.push(&rest);
        }
        let mut texts: Vec<String> = self
            .exchange
            .events
            .iter_mut()
            .map(|e| std::mem::take(&mut e.data))
            .collect();
        super::recorded::stream(&mut texts);
        for (event, text) in self.exchange.events.iter_mut().zip(texts) {
            event.data = text;
        }
        write_line(&self.sink, &self.exchange);
    }
}

fn find_event_end(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\n\n").map(|i| i + 2)
}

fn replayed(exchange: Exchange) -> Result<reqwest::Response, OpenAIError> {
    if exchange.status >= 400 || exchange.error_body.is_some() {
        return Err(OpenAIError::Boxed(Box::new(HttpFailure {
            status: exchange.status,
            retry_after: exchange.retry_after_secs.map(Duration::from_secs),
            body: exchange.error_body.unwrap_or_default(),
        })));
    }
    let body = replay_stream(exchange.events);
    let response = http::Response::builder()
        .status(exchange.status)
        .header("content-type", "text/event-stream")
        .body(reqwest::Body::wrap_stream(body))
        .expect("a recorded status is a valid status");
    Ok(reqwest::Response::from(response))
}

/// The recorded events with their recorded pacing (gaps capped at `MAX_REPLAY_GAP`).
fn replay_stream(
    events: Vec<TimedEvent>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let mut previous_ms = 0;
    futures::stream::iter(events).then(move |event| {
        let gap = Duration::from_millis(event.ms.saturating_sub(previous_ms)).min(MAX_REPLAY_GAP);
        previous_ms = event.ms;
        async move {
            tokio::time::sleep(gap).await;
            Ok(Bytes::from(event.data))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_seconds_and_as_a_date() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("1e300"), Some(Duration::MAX));
        assert_eq!(
            parse_retry_after("18446744073709551615"),
            Some(Duration::MAX)
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn sse_events_are_cut_at_blank_lines() {
        assert_eq!(find_event_end(b"data: a\n\ndata: b"), Some(9));
        assert_eq!(find_event_end(b"data: a\n"), None);
    }
}
