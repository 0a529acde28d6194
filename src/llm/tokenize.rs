//! Counting with the server's own tokenizer, where it offers one: llama.cpp's and
//! vLLM's `POST /tokenize`, llama-cpp-python's `POST /extras/tokenize/count` (both at
//! the server's root, beside `/v1`). Which one a server has is probed once per base URL
//! and remembered for the process; Ollama and hosted APIs have none. The probe also
//! tells whether the server takes one request at a time (`one_at_a_time`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{OnceCell, watch};

use super::key::ApiKey;

/// A probe that takes longer than this means no usable endpoint.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The endpoints tern knows, in the order the probe tries them.
const APIS: [Api; 2] = [Api::Tokenize, Api::Extras];

/// The longest a probe can take: each endpoint in turn.
const PROBE_BOUND: Duration = Duration::from_secs(PROBE_TIMEOUT.as_secs() * APIS.len() as u64);

/// Counted by the probe: any real tokenizer makes a few tokens of it.
const PROBE_TEXT: &str = "Hello, world! 12345";

/// Every message of the framing probe (`ServerTokenizer::framing`): a short text, so
/// that the probe costs the server next to nothing.
pub const FRAMING_PROBE: &str = "Say OK.";

/// The requests of the framing probe: this many messages each (a system message
/// first, as tern's requests have: a template may add a default one without).
const FRAMING_MESSAGES: [usize; 2] = [2, 4];

/// The endpoints tern knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// `POST /tokenize` `{"content"}` → `{"tokens": [...]}` (llama.cpp), or
    /// `{"prompt"}` → `{"count": n}` (vLLM): one body serves both.
    Tokenize,
    /// `POST /extras/tokenize/count` `{"input"}` → `{"count": n}` (llama-cpp-python).
    Extras,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Tokenize => "/tokenize",
            Api::Extras => "/extras/tokenize/count",
        }
    }

    fn body(self, model: &str, text: &str) -> serde_json::Value {
        match self {
            Api::Tokenize => serde_json::json!({
                "model": model,
                "content": text,
                "prompt": text,
                "add_special": false,
                "add_special_tokens": false,
            }),
            Api::Extras => serde_json::json!({ "model": model, "input": text }),
        }
    }
}

/// What the endpoints answer: a count, or the tokens themselves.
#[derive(Deserialize)]
struct Counted {
    #[serde(default)]
    count: Option<usize>,
    #[serde(default)]
    tokens: Option<Vec<serde_json::Value>>,
}

/// What an unstreamed chat completion reports of its prompt.
#[derive(Deserialize)]
struct Answered {
    usage: AnsweredUsage,
}

#[derive(Deserialize)]
struct AnsweredUsage {
    prompt_tokens: usize,
}

/// A server's tokenizer, for one model.
#[derive(Debug, Clone)]
pub struct ServerTokenizer {
    http: reqwest::Client,
    root: String,
    key: Option<ApiKey>,
    api: Api,
    model: String,
}

/// Why the server did not count a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    /// It could not answer now (down, restarting, still loading its model, busy):
    /// ask again later.
    #[error("{0}")]
    Unavailable(String),
    /// It answered, but not with a count: it has no such endpoint.
    #[error("{0}")]
    NoCount(String),
}

impl ServerTokenizer {
    /// Tokens in `text` by the server's count (no BOS or other special tokens).
    pub async fn count(&self, text: &str) -> Result<usize, CountError> {
        self.counted(text).await.map(|(n, _)| n)
    }

    /// The count, and whether the answer was the tokens alone (llama.cpp's; vLLM's
    /// `/tokenize` answers a count too).
    async fn counted(&self, text: &str) -> Result<(usize, bool), CountError> {
        let response = self
            .post(self.api.path(), &self.api.body(&self.model, text))
            .await?;
        let status = response.status();
        if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            // llama.cpp answers 503 while it loads its model.
            return Err(CountError::Unavailable(format!(
                "the tokenize endpoint answered HTTP {status}"
            )));
        }
        if !status.is_success() {
            return Err(CountError::NoCount(format!(
                "the tokenize endpoint answered HTTP {status}"
            )));
        }
        let counted: Counted = response
            .json()
            .await
            .map_err(|e| CountError::NoCount(e.to_string()))?;
        match (counted.count, counted.tokens) {
            (Some(n), _) => Ok((n, false)),
            (None, Some(tokens)) => Ok((tokens.len(), true)),
            (None, None) => Err(CountError::NoCount(
                "the tokenize endpoint's answer has no count".to_string(),
            )),
        }
    }

    /// True when the server streams no usage (llama-cpp-python): its chat template's
    /// tokens cannot be learned from turns, only from the framing probe.
    pub fn needs_framing_probe(&self) -> bool {
        self.api == Api::Extras
    }

    /// The chat template's tokens in requests of 2 and 4 messages, as (messages,
    /// tokens): two tiny unstreamed requests of `FRAMING_PROBE` messages (a one-token
    /// reply each), whose reported prompt tokens less the server's count of the
    /// contents is the framing. Sent once, before any turn, so nothing is streaming.
    pub async fn framing(&self) -> Result<Vec<(usize, usize)>, CountError> {
        let content = self.count(FRAMING_PROBE).await?;
        let mut framing = Vec::new();
        for n in FRAMING_MESSAGES {
            let messages: Vec<serde_json::Value> = (0..n)
                .map(|i| {
                    let role = match i {
                        0 => "system",
                        i if i % 2 == 1 => "user",
                        _ => "assistant",
                    };
                    serde_json::json!({ "role": role, "content": FRAMING_PROBE })
                })
                .collect();
            let body = serde_json::json!({
                "model": self.model,
                "messages": messages,
                "max_tokens": 1,
                "stream": false,
            });
            let response = self.post("/v1/chat/completions", &body).await?;
            if !response.status().is_success() {
                return Err(CountError::NoCount(format!(
                    "the framing probe was answered HTTP {}",
                    response.status()
                )));
            }
            let answer: Answered = response
                .json()
                .await
                .map_err(|e| CountError::NoCount(e.to_string()))?;
            let prompt = answer.usage.prompt_tokens;
            if prompt < n * content {
                return Err(CountError::NoCount(format!(
                    "the framing probe's {prompt} prompt tokens are fewer than its contents' {}",
                    n * content
                )));
            }
            framing.push((n, prompt - n * content));
        }
        Ok(framing)
    }

    /// POSTs `body` to `path` at the server's root, with the key if there is one; a
    /// server that does not answer is `Unavailable`.
    async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<reqwest::Response, CountError> {
        // llama-cpp-python stops the reply it streams for any other request: a count
        // (or a probe) waits until no reply streams.
        let _quiet = match self.api {
            Api::Extras => super::gate::enter(&self.root).await,
            Api::Tokenize => None,
        };
        let mut request = self.http.post(format!("{}{path}", self.root)).json(body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
        }
        request
            .send()
            .await
            .map_err(|e| CountError::Unavailable(e.to_string()))
    }

    /// Which endpoint, for the log and the user (never with credentials).
    pub fn describe(&self) -> String {
        format!(
            "{}{}",
            super::error::redact_url(&self.root),
            self.api.path()
        )
    }

    /// Probes `root` once per process: the first endpoint that counts the probe text,
    /// or None when it has none. A server that could not answer (down, loading) is not
    /// an answer: `Unavailable`, and the next call probes again.
    pub(crate) async fn probe(
        http: reqwest::Client,
        root: String,
        key: Option<ApiKey>,
        model: &str,
    ) -> Result<Option<ServerTokenizer>, CountError> {
        let cell = {
            let mut probed = PROBED.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(probed.entry(root.clone()).or_default())
        };
        let found = *cell
            .get_or_try_init(|| async {
                let mut unavailable = None;
                for api in APIS {
                    let candidate = ServerTokenizer {
                        http: http.clone(),
                        root: root.clone(),
                        key: key.clone(),
                        api,
                        model: model.to_string(),
                    };
                    let counted =
                        tokio::time::timeout(PROBE_TIMEOUT, candidate.counted(PROBE_TEXT))
                            .await
                            .unwrap_or_else(|_| {
                                Err(CountError::Unavailable(format!(
                                    "no answer within {} s",
                                    PROBE_TIMEOUT.as_secs()
                                )))
                            });
                    match counted {
                        Ok((n, tokens_only)) if n > 0 => {
                            tracing::debug!("the server counts tokens: {}", candidate.describe());
                            // llama.cpp answers with the tokens alone; llama-cpp-python
                            // serves one request at a time anyway.
                            let one_at_a_time = tokens_only || api == Api::Extras;
                            return Ok(Some(Found { api, one_at_a_time }));
                        }
                        Err(CountError::Unavailable(why)) => {
                            tracing::debug!("{} could not answer: {why}", candidate.describe());
                            unavailable = Some(CountError::Unavailable(why));
                        }
                        other => {
                            tracing::debug!("no tokenizer at {}: {other:?}", candidate.describe())
                        }
                    }
                }
                unavailable.map_or(Ok(None), Err)
            })
            .await?;
        Ok(found.map(|found| ServerTokenizer {
            http,
            root,
            key,
            api: found.api,
            model: model.to_string(),
        }))
    }
}

/// Where the probe stands, as `TokenizerSlot` holds it.
#[derive(Debug, Clone)]
enum Probed {
    /// A probe is under way.
    Asking,
    /// No probe is under way: the tokenizer it found, if any (None also while the
    /// server could not answer, and where no probe is made).
    Answered(Option<ServerTokenizer>),
}

/// The engine's server tokenizer, shared with work that may start before the probe
/// answers (a resumed session's first summary): `later` hands out a view that waits
/// for the answer.
#[derive(Debug, Clone)]
pub struct TokenizerSlot(watch::Sender<Probed>);

impl Default for TokenizerSlot {
    fn default() -> Self {
        TokenizerSlot(watch::Sender::new(Probed::Answered(None)))
    }
}

impl TokenizerSlot {
    /// The tokenizer now: None while a probe is under way.
    pub fn get(&self) -> Option<ServerTokenizer> {
        match &*self.0.borrow() {
            Probed::Answered(tokenizer) => tokenizer.clone(),
            Probed::Asking => None,
        }
    }

    /// A probe starts: `later` views wait for its answer.
    pub fn asking(&self) {
        self.0.send_replace(Probed::Asking);
    }

    /// The probe answered, or the tokenizer changed.
    pub fn set(&self, tokenizer: Option<ServerTokenizer>) {
        self.0.send_replace(Probed::Answered(tokenizer));
    }

    /// A view that gives the tokenizer once no probe is under way.
    pub fn later(&self) -> ProbedTokenizer {
        ProbedTokenizer(self.0.subscribe())
    }
}

/// The server's tokenizer once the probe under way answers (`TokenizerSlot::later`).
#[derive(Debug, Clone)]
pub struct ProbedTokenizer(watch::Receiver<Probed>);

impl ProbedTokenizer {
    /// The tokenizer, at once when no probe is under way, else when it answers (its
    /// own timeouts bound that, and so does `PROBE_BOUND`); None when the server has
    /// none, could not answer, or the slot is gone (the model changed).
    pub async fn answered(&self) -> Option<ServerTokenizer> {
        let mut view = self.0.clone();
        let answer = tokio::time::timeout(
            PROBE_BOUND,
            view.wait_for(|p| matches!(p, Probed::Answered(_))),
        )
        .await;
        match answer.ok()?.ok()?.clone() {
            Probed::Answered(tokenizer) => tokenizer,
            Probed::Asking => None,
        }
    }
}

/// What the probe found at a server.
#[derive(Debug, Clone, Copy)]
struct Found {
    api: Api,
    /// Parallel requests would share one context (llama.cpp: its slots share `-c`,
    /// so a summary beside a turn can overflow both) or wait anyway
    /// (llama-cpp-python).
    one_at_a_time: bool,
}

/// A server's probe: what it found (None: no endpoint), once it could answer.
type Probe = Arc<OnceCell<Option<Found>>>;

/// Each server root's probe.
static PROBED: LazyLock<Mutex<HashMap<String, Probe>>> = LazyLock::new(Default::default);

/// True when the probe found that the server at `root` must get one request at a
/// time; false when it found otherwise or has not answered yet.
pub(crate) fn one_at_a_time(root: &str) -> bool {
    found(root).is_some_and(|found| found.one_at_a_time)
}

/// What the probe found at `root`, once it answered.
fn found(root: &str) -> Option<Found> {
    let probed = PROBED.lock().unwrap_or_else(|e| e.into_inner());
    probed
        .get(root)
        .and_then(|cell| cell.get().copied().flatten())
}

/// True when the probe found llama-cpp-python at `root` (its `/extras` endpoint): it
/// interrupts the reply it streams when another request arrives
/// (`--interrupt_requests`, on by default).
pub(crate) fn interrupts(root: &str) -> bool {
    found(root).is_some_and(|found| found.api == Api::Extras)
}

/// The server's root for an OpenAI-style base URL: without a final `/v1`.
pub(crate) fn server_root(api_base: &str) -> String {
    let base = api_base.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_beside_v1() {
        assert_eq!(
            server_root("http://localhost:8080/v1"),
            "http://localhost:8080"
        );
        assert_eq!(
            server_root("http://localhost:8080/v1/"),
            "http://localhost:8080"
        );
        assert_eq!(server_root("http://h:1/api"), "http://h:1/api");
    }
}
