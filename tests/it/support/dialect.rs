//! Local servers as the mock can play them: each with a tokenizer that is not
//! OpenAI's, a chat template that adds its own tokens per message, its own tokenize
//! endpoint (or none), and its own answer to a prompt too long for its context. So
//! tern's counting, calibration and overflow handling are tested against what llama.cpp,
//! llama-cpp-python, vLLM and Ollama really do, not against OpenAI's arithmetic.

use serde_json::{Value, json};

use super::request::RecordedMessage;

/// Which server the mock plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// OpenAI's API: tiktoken counts by the cookbook recipe, no tokenize endpoint.
    #[default]
    OpenAi,
    /// llama.cpp's `llama-server`: `POST /tokenize` (`{"content"}` → `{"tokens"}`), and a
    /// prompt of `n_ctx` tokens or more refused with 400 `exceed_context_size_error`
    /// carrying `n_prompt_tokens` and `n_ctx`; a reply stops with `length` when the
    /// context is full.
    LlamaCpp { n_ctx: usize },
    /// llama-cpp-python's server: `POST /extras/tokenize/count`; streams no usage; a
    /// prompt over its context gets 200, a role chunk and nothing more; a reply it
    /// streams stops where any other request arrives (`--interrupt_requests`).
    LlamaCppPython { n_ctx: usize },
    /// vLLM: `POST /tokenize` (`{"prompt"}` → `{"count", "max_model_len", "tokens"}`);
    /// prompt + `max_tokens` over `max_model_len` is refused with an OpenAI-style 400.
    Vllm { max_model_len: usize },
    /// Ollama's OpenAI endpoint: its own tokenizer, no tokenize endpoint.
    Ollama,
    /// LM Studio: its own tokenizer, no tokenize endpoint, a model loaded with a
    /// context of `loaded` tokens.
    LmStudio { loaded: usize },
}

/// GPT-2's ids for the digits `0`..`9`.
const DIGIT_IDS: u32 = 15;

impl Dialect {
    fn is_local(self) -> bool {
        self != Dialect::OpenAi
    }

    /// The server's tokens for `text`. Local servers use a "SmolLM-like" tokenizer:
    /// GPT-2's vocabulary (r50k_base) with every digit a token of its own, as Llama 2,
    /// SmolLM and Mistral split numbers. It counts prose some 10-20% higher than
    /// o200k_base and digit-heavy code far higher, as the real ones do.
    pub fn tokens(self, model: &str, text: &str) -> Vec<u32> {
        if !self.is_local() {
            return super::tokens::encoding_for_model(model)
                .encode_ordinary(text)
                .into_iter()
                .collect();
        }
        let bpe = tiktoken_rs::r50k_base_singleton();
        let mut out = Vec::new();
        let mut run = String::new();
        for c in text.chars() {
            if let Some(digit) = c.to_digit(10) {
                out.extend(bpe.encode_ordinary(&std::mem::take(&mut run)));
                out.push(DIGIT_IDS + digit);
            } else {
                run.push(c);
            }
        }
        out.extend(bpe.encode_ordinary(&run));
        out
    }

    pub fn text_tokens(self, model: &str, text: &str) -> usize {
        self.tokens(model, text).len()
    }

    /// `usage.prompt_tokens` for these messages. Local servers render ChatML
    /// (`<|im_start|>{role}\n{content}<|im_end|>\n` per message, then
    /// `<|im_start|>assistant\n`) and tokenize it whole, the markers one token each.
    pub fn prompt_tokens(self, model: &str, messages: &[RecordedMessage]) -> usize {
        if !self.is_local() {
            return super::tokens::prompt_tokens(model, messages);
        }
        let count = |text: &str| self.text_tokens(model, text);
        let framed: usize = messages
            .iter()
            .map(|m| 1 + count(&format!("{}\n{}", m.role, m.text)) + 1 + count("\n"))
            .sum();
        framed + 1 + count("assistant\n")
    }

    /// The most prompt tokens the server takes, if it has a limit.
    pub fn context(self) -> Option<usize> {
        match self {
            Dialect::LlamaCpp { n_ctx } | Dialect::LlamaCppPython { n_ctx } => Some(n_ctx),
            Dialect::Vllm { max_model_len } => Some(max_model_len),
            Dialect::LmStudio { loaded } => Some(loaded),
            Dialect::OpenAi | Dialect::Ollama => None,
        }
    }

    /// Whether streamed replies carry a usage chunk when asked for one.
    pub fn streams_usage(self) -> bool {
        !matches!(self, Dialect::LlamaCppPython { .. })
    }

    /// What a too-long request gets instead of the script's reply, if it is too long.
    pub fn overflow(self, prompt: usize, max_tokens: Option<u64>) -> Option<Overflow> {
        match self {
            Dialect::LlamaCpp { n_ctx } if prompt >= n_ctx => Some(Overflow::Error(json!({
                "error": {
                    "code": 400,
                    "message": format!(
                        "request ({prompt} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"
                    ),
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt,
                    "n_ctx": n_ctx,
                }
            }))),
            Dialect::LlamaCppPython { n_ctx } if prompt > n_ctx => Some(Overflow::SilentStream),
            Dialect::Vllm { max_model_len } => {
                let completion = max_tokens.map_or(0, |m| m as usize);
                (prompt + completion > max_model_len || prompt >= max_model_len).then(|| {
                    Overflow::Error(json!({
                        "object": "error",
                        "message": format!(
                            "This model's maximum context length is {max_model_len} tokens. However, you requested {} tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
                            prompt + completion
                        ),
                        "type": "BadRequestError",
                        "param": null,
                        "code": 400,
                    }))
                })
            }
            _ => None,
        }
    }

    /// The answer of this server's tokenize endpoint at `path` to `body`; None when the
    /// server has no such endpoint.
    pub fn tokenize(self, model: &str, path: &str, body: &Value) -> Option<Value> {
        let text = |field: &str| body.get(field).and_then(Value::as_str).map(str::to_owned);
        match (self, path) {
            (Dialect::LlamaCpp { .. }, "/tokenize") => {
                let tokens = self.tokens(model, &text("content")?);
                Some(json!({ "tokens": tokens }))
            }
            (Dialect::Vllm { max_model_len }, "/tokenize") => {
                let tokens = self.tokens(model, &text("prompt")?);
                Some(json!({
                    "count": tokens.len(),
                    "max_model_len": max_model_len,
                    "tokens": tokens,
                }))
            }
            (Dialect::LlamaCppPython { .. }, "/extras/tokenize/count") => {
                Some(json!({ "count": self.text_tokens(model, &text("input")?) }))
            }
            _ => None,
        }
    }

    /// The most completion tokens the server generates: `max_tokens`, and for a local
    /// server what its context leaves after the prompt.
    pub fn completion_room(self, prompt: usize, max_tokens: Option<u64>) -> Option<usize> {
        let asked = max_tokens.map(|m| m as usize);
        let left = self.context().map(|c| c.saturating_sub(prompt));
        match (self.is_local(), asked, left) {
            (false, _, _) => None,
            (true, Some(a), Some(l)) => Some(a.min(l)),
            (true, a, l) => a.or(l),
        }
    }
}

/// How a server answers a request too long for it.
#[derive(Debug, Clone)]
pub enum Overflow {
    /// HTTP 400 with this body.
    Error(Value),
    /// HTTP 200, a role chunk, and the end of the body (llama-cpp-python).
    SilentStream,
}
