//! The endpoints where local servers say what window they allocated, as the mock plays
//! them: llama-server's `GET /props`, vLLM's and LM Studio's model lists, Ollama's
//! `GET /api/ps` and `POST /api/show`. Off until a test turns them on
//! (`MockServer::say_window`), so that tests of a window learned by overflowing meet a
//! server that does not say (one behind a proxy that forwards only `/v1`).

use std::time::Duration;

use serde_json::{Value, json};

use super::dialect::Dialect;

/// What the window endpoints answer.
#[derive(Debug, Clone, Default)]
pub struct WindowApi {
    /// The endpoints answer at all.
    pub enabled: bool,
    /// Ollama: the context of the loaded model (`/api/ps`); None: not loaded.
    pub ollama_loaded: Option<usize>,
    /// Ollama: the `num_ctx` of the model's Modelfile (`/api/show`).
    pub ollama_num_ctx: Option<usize>,
    /// Every endpoint the server has answers this body instead (garbage).
    pub garbage: Option<String>,
    /// Every answer waits this long first.
    pub delay: Duration,
}

/// A model's nominal maximum, which servers report beside (or instead of) what they
/// allocated: tern must never take it for the window.
const NOMINAL: usize = 131_072;

impl WindowApi {
    /// The body `dialect` answers at `path` (GET, or POST `/api/show`), or None (404).
    pub fn answer(&self, dialect: Dialect, path: &str) -> Option<String> {
        if !self.enabled {
            return None;
        }
        let body = match (dialect, path) {
            (Dialect::LlamaCpp { n_ctx }, "/props") => json!({
                "default_generation_settings": { "n_ctx": n_ctx, "params": { "n_predict": -1 } },
                "total_slots": 1,
            }),
            (Dialect::LlamaCpp { .. }, "/v1/models") => json!({
                "object": "list",
                "data": [{ "id": "smollm2", "object": "model", "meta": { "n_ctx_train": NOMINAL } }],
            }),
            (Dialect::Vllm { max_model_len }, "/v1/models") => json!({
                "object": "list",
                "data": [{ "id": "served-model", "object": "model", "max_model_len": max_model_len }],
            }),
            (Dialect::LmStudio { loaded }, "/api/v0/models") => json!({
                "object": "list",
                "data": [{
                    "id": "served-model",
                    "state": "loaded",
                    "max_context_length": NOMINAL,
                    "loaded_context_length": loaded,
                }],
            }),
            (Dialect::LmStudio { .. } | Dialect::OpenAi, "/v1/models") => json!({
                "object": "list",
                "data": [{ "id": "served-model", "object": "model" }],
            }),
            (Dialect::Ollama, "/api/ps") => json!({
                "models": self.ollama_loaded.map(|n| vec![json!({
                    "name": "served-model:latest",
                    "model": "served-model:latest",
                    "context_length": n,
                })]).unwrap_or_default(),
            }),
            (Dialect::Ollama, "/api/show") => {
                let mut show = json!({
                    "details": { "family": "llama" },
                    "model_info": { "llama.context_length": NOMINAL },
                });
                if let Some(n) = self.ollama_num_ctx {
                    show["parameters"] = Value::from(format!("stop \"<|im_end|>\"\nnum_ctx {n}"));
                }
                show
            }
            _ => return None,
        };
        Some(self.garbage.clone().unwrap_or_else(|| body.to_string()))
    }
}
