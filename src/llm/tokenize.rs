//! Counting with the server's own tokenizer, where it offers one: llama.cpp's and
//! vLLM's `POST /tokenize`, llama-cpp-python's `POST /extras/tokenize/count` (both at
//! the server's root, beside `/v1`). Which one a server has is probed once per base URL
//! and remembered for the process; Ollama and hosted APIs have none.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::OnceCell;

use super::key::ApiKey;

/// A probe that takes longer than this means no usable endpoint.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Counted by the probe: any real tokenizer makes a few tokens of it.
const PROBE_TEXT: &str = "Hello, world! 12345";

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

/// A server's tokenizer, for one model.
#[derive(Debug, Clone)]
pub struct ServerTokenizer {
    http: reqwest::Client,
    root: String,
    key: Option<ApiKey>,
    api: Api,
    model: String,
}

impl ServerTokenizer {
    /// Tokens in `text` by the server's count (no BOS or other special tokens).
    pub async fn count(&self, text: &str) -> Result<usize, String> {
        let url = format!("{}{}", self.root, self.api.path());
        let mut request = self.http.post(&url).json(&self.api.body(&self.model, text));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the tokenize endpoint answered HTTP {status}"));
        }
        let counted: Counted = response.json().await.map_err(|e| e.to_string())?;
        counted
            .count
            .or(counted.tokens.map(|t| t.len()))
            .ok_or_else(|| "the tokenize endpoint's answer has no count".to_string())
    }

    /// Which endpoint, for the log and the user (never with credentials).
    pub fn describe(&self) -> String {
        format!(
            "{}{}",
            super::error::redact_url(&self.root),
            self.api.path()
        )
    }

    /// Probes `root` once per process: the first endpoint that counts the probe text.
    pub(crate) async fn probe(
        http: reqwest::Client,
        root: String,
        key: Option<ApiKey>,
        model: &str,
    ) -> Option<ServerTokenizer> {
        let cell = {
            let mut probed = PROBED.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(probed.entry(root.clone()).or_default())
        };
        let api = *cell
            .get_or_init(|| async {
                for api in [Api::Tokenize, Api::Extras] {
                    let candidate = ServerTokenizer {
                        http: http.clone(),
                        root: root.clone(),
                        key: key.clone(),
                        api,
                        model: model.to_string(),
                    };
                    let counted =
                        tokio::time::timeout(PROBE_TIMEOUT, candidate.count(PROBE_TEXT)).await;
                    match counted {
                        Ok(Ok(n)) if n > 0 => {
                            tracing::debug!("the server counts tokens: {}", candidate.describe());
                            return Some(api);
                        }
                        other => {
                            tracing::debug!("no tokenizer at {}: {other:?}", candidate.describe())
                        }
                    }
                }
                None
            })
            .await;
        api.map(|api| ServerTokenizer {
            http,
            root,
            key,
            api,
            model: model.to_string(),
        })
    }
}

/// A server's probe: which endpoint it has (None: none), answered once.
type Probe = Arc<OnceCell<Option<Api>>>;

/// Each server root's probe.
static PROBED: LazyLock<Mutex<HashMap<String, Probe>>> = LazyLock::new(Default::default);

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
