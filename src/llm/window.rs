//! The window a local server allocated, asked before the first request where the
//! server can say it: llama-server's `GET /props` (`n_ctx` of its default generation
//! settings), vLLM's `GET /v1/models` (`max_model_len`), LM Studio's
//! `GET /api/v0/models` (`loaded_context_length`), Ollama's `GET /api/ps` (a loaded
//! model's `context_length`), else the `num_ctx` of its Modelfile (`POST /api/show`),
//! else Ollama's default. Never a model's nominal maximum (`n_ctx_train`,
//! `max_context_length`, Ollama's `model_info`): servers allocate less, and Ollama
//! truncates a longer prompt silently. The endpoints are asked at once, within a short
//! timeout; an answer that is not a plausible window is garbage, said, and ignored.

use std::time::Duration;

use serde_json::Value;

use super::key::ApiKey;

/// The whole probe gives up after this: the first request waits for it.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Ollama's context when neither the loaded model nor its Modelfile says (its FAQ:
/// "By default, Ollama uses a context window size of 4096 tokens").
pub const OLLAMA_DEFAULT_CONTEXT: usize = 4096;

/// Windows outside this are not windows a server allocated (zero, a few tokens, or
/// more than any model takes).
const PLAUSIBLE: std::ops::RangeInclusive<u64> = 256..=16_777_216;

/// A window the server reported, and where it said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedWindow {
    pub tokens: usize,
    /// Where it comes from, for the notice: "llama-server's /props", "Ollama's default".
    pub said_by: &'static str,
    /// It is the server's default, not what it says it allocated for this model.
    pub server_default: bool,
}

/// What one endpoint answered.
#[derive(Debug)]
enum Answer {
    /// No such endpoint, or nothing about this model's window: not this server kind.
    Silent,
    /// The server is Ollama (its API answered) but this endpoint has no window.
    Ollama,
    Window(ReportedWindow),
    /// It answered with something that is not a window.
    Garbage(String),
}

/// Asks the server at `root` (without `/v1`) what window it allocated for `model`.
/// `Ok(None)`: it cannot say (no such endpoints); `Err`: it answered garbage, or not
/// within the timeout (why, for a warning).
pub(crate) async fn probe(
    http: &reqwest::Client,
    root: &str,
    key: Option<&ApiKey>,
    model: &str,
) -> Result<Option<ReportedWindow>, String> {
    let ask = Asker { http, root, key };
    let answers = tokio::time::timeout(PROBE_TIMEOUT, async {
        let (props, models, lm_studio, ps, show) = futures::join!(
            ask.get("/props"),
            ask.get("/v1/models"),
            ask.get("/api/v0/models"),
            ask.get("/api/ps"),
            ask.post("/api/show", serde_json::json!({ "model": model })),
        );
        [
            props.map_or(Answer::Silent, |v| llama_server(&v)),
            models.map_or(Answer::Silent, |v| vllm(&v, model)),
            lm_studio.map_or(Answer::Silent, |v| lm_studio_loaded(&v, model)),
            ps.map_or(Answer::Silent, |v| ollama_loaded(&v, model)),
            show.map_or(Answer::Silent, |v| ollama_modelfile(&v)),
        ]
    })
    .await;
    let Ok(answers) = answers else {
        return Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs()));
    };
    let mut ollama = false;
    for answer in answers {
        match answer {
            Answer::Window(window) => return Ok(Some(window)),
            Answer::Garbage(why) => return Err(why),
            Answer::Ollama => ollama = true,
            Answer::Silent => {}
        }
    }
    Ok(ollama.then_some(ReportedWindow {
        tokens: OLLAMA_DEFAULT_CONTEXT,
        said_by: "Ollama's default",
        server_default: true,
    }))
}

struct Asker<'a> {
    http: &'a reqwest::Client,
    root: &'a str,
    key: Option<&'a ApiKey>,
}

impl Asker<'_> {
    async fn get(&self, path: &str) -> Option<Result<Value, String>> {
        self.send(self.http.get(format!("{}{path}", self.root)), path)
            .await
    }

    async fn post(&self, path: &str, body: Value) -> Option<Result<Value, String>> {
        let request = self
            .http
            .post(format!("{}{path}", self.root))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        self.send(request, path).await
    }

    /// None when the endpoint is not there (or the server is not); the JSON, or
    /// garbage, when it answered.
    async fn send(
        &self,
        mut request: reqwest::RequestBuilder,
        path: &str,
    ) -> Option<Result<Value, String>> {
        if let Some(key) = self.key {
            request = request.bearer_auth(key.expose());
        }
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = response.bytes().await.ok()?;
        Some(
            serde_json::from_slice(&body)
                .map_err(|_| format!("{path} answered something that is not JSON")),
        )
    }
}

/// A window field's value: plausible, else garbage naming the endpoint.
fn window(value: &Value, path: &str, field: &str, said_by: &'static str) -> Answer {
    match value.as_u64() {
        Some(n) if PLAUSIBLE.contains(&n) => Answer::Window(ReportedWindow {
            tokens: n as usize,
            said_by,
            server_default: false,
        }),
        _ => Answer::Garbage(format!("{path} said {field} {value}, which is no window")),
    }
}

fn llama_server(props: &Result<Value, String>) -> Answer {
    match props {
        Err(why) => Answer::Garbage(why.clone()),
        Ok(props) => match props.pointer("/default_generation_settings/n_ctx") {
            Some(n_ctx) => window(n_ctx, "/props", "n_ctx", "llama-server's /props"),
            None => Answer::Silent,
        },
    }
}

/// Whether `entry` names `model` in one of `fields` (Ollama adds `:latest`).
fn names(entry: &Value, fields: &[&str], model: &str) -> bool {
    fields.iter().any(|f| {
        entry
            .get(f)
            .and_then(Value::as_str)
            .is_some_and(|id| id == model || id.strip_suffix(":latest") == Some(model))
    })
}

/// The listed model called `model`, or the only one listed (vLLM serves one model,
/// under whatever name it was started with).
fn listed<'a>(list: Option<&'a Vec<Value>>, model: &str) -> Option<&'a Value> {
    match list?.as_slice() {
        [only] => Some(only),
        list => list.iter().find(|m| names(m, &["id"], model)),
    }
}

fn vllm(models: &Result<Value, String>, model: &str) -> Answer {
    // Any OpenAI-style server answers /v1/models; only vLLM's entries carry
    // `max_model_len`, so anything else here is not vLLM, not garbage.
    let Ok(models) = models else {
        return Answer::Silent;
    };
    let data = models.get("data").and_then(Value::as_array);
    match listed(data, model).and_then(|m| m.get("max_model_len")) {
        Some(len) => window(len, "/v1/models", "max_model_len", "vLLM's /v1/models"),
        None => Answer::Silent,
    }
}

fn lm_studio_loaded(models: &Result<Value, String>, model: &str) -> Answer {
    let Ok(models) = models else {
        return Answer::Silent;
    };
    let data = models.get("data").and_then(Value::as_array);
    match listed(data, model).and_then(|m| m.get("loaded_context_length")) {
        Some(len) => window(
            len,
            "/api/v0/models",
            "loaded_context_length",
            "LM Studio's /api/v0/models",
        ),
        None => Answer::Silent,
    }
}

fn ollama_loaded(ps: &Result<Value, String>, model: &str) -> Answer {
    let Ok(ps) = ps else {
        return Answer::Silent;
    };
    let Some(loaded) = ps.get("models").and_then(Value::as_array) else {
        return Answer::Silent;
    };
    let this = loaded.iter().find(|m| names(m, &["name", "model"], model));
    match this.and_then(|m| m.get("context_length")) {
        Some(len) => window(len, "/api/ps", "context_length", "Ollama's /api/ps"),
        None => Answer::Ollama,
    }
}

fn ollama_modelfile(show: &Result<Value, String>) -> Answer {
    let Ok(show) = show else {
        return Answer::Silent;
    };
    let Some(parameters) = show.get("parameters").and_then(Value::as_str) else {
        // Ollama's /api/show always has `details`; `parameters` only when the
        // Modelfile sets some.
        return match show.get("details") {
            Some(_) => Answer::Ollama,
            None => Answer::Silent,
        };
    };
    let num_ctx = parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx")).then(|| words.next().unwrap_or_default())
    });
    match num_ctx {
        None => Answer::Ollama,
        Some(n) => {
            let value = n
                .parse::<u64>()
                .map_or_else(|_| Value::String(n.to_string()), Value::from);
            window(
                &value,
                "/api/show",
                "num_ctx",
                "the num_ctx of Ollama's Modelfile",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_modelfile_s_num_ctx_is_read_and_the_nominal_maximum_is_not() {
        let show = Ok(json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx                        8192",
            "details": {},
            "model_info": { "llama.context_length": 131072 },
        }));
        let Answer::Window(w) = ollama_modelfile(&show) else {
            panic!("no window");
        };
        assert_eq!(w.tokens, 8192);
        let nominal_only =
            Ok(json!({ "details": {}, "model_info": { "llama.context_length": 131072 } }));
        assert!(matches!(ollama_modelfile(&nominal_only), Answer::Ollama));
    }

    #[test]
    fn implausible_windows_are_garbage() {
        for bad in [
            json!(0),
            json!(-2048),
            json!(1u64 << 40),
            json!("4096"),
            json!(2.5),
        ] {
            let props = Ok(json!({ "default_generation_settings": { "n_ctx": bad } }));
            assert!(matches!(llama_server(&props), Answer::Garbage(_)), "{bad}");
        }
    }
}
