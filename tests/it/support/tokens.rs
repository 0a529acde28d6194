//! Usage numbers computed the way the OpenAI API bills them, independently of tern's own
//! counter (`src/tokens/`, which uses `bpe-openai`): here the reference implementation,
//! `tiktoken-rs`, and OpenAI's published recipe ("How to count tokens with tiktoken",
//! openai-cookbook). If tern's prediction and this count agree, both are right.

use tiktoken_rs::CoreBPE;

use super::request::RecordedMessage;

/// Tokens framing every message: `<|start|>{role/name}\n{content}<|end|>` minus the role.
const TOKENS_PER_MESSAGE: usize = 3;
/// Extra token a message pays when it carries a `name`.
const TOKENS_PER_NAME: usize = 1;
/// Every reply is primed with `<|start|>assistant<|message|>`.
const REPLY_PRIMING: usize = 3;

/// The tokenizer OpenAI uses for `model`: cl100k_base for the gpt-4 (not 4o/4.1/4.5) and
/// gpt-3.5 families, o200k_base for everything else (gpt-4o, gpt-4.1, gpt-5, o-series and
/// every non-OpenAI model, which has no tiktoken encoding of its own). A provider prefix
/// such as `openai/` is ignored.
pub fn encoding_for_model(model: &str) -> &'static CoreBPE {
    let name = model.rsplit('/').next().unwrap_or(model);
    let gpt4_classic =
        name.starts_with("gpt-4") && !name.starts_with("gpt-4o") && !name.starts_with("gpt-4.");
    if gpt4_classic || name.starts_with("gpt-3.5") {
        tiktoken_rs::cl100k_base_singleton()
    } else {
        tiktoken_rs::o200k_base_singleton()
    }
}

/// Tokens of plain text. Special-token text such as `<|endoftext|>` counts as ordinary
/// text, as the API treats it in message content.
pub fn text_tokens(model: &str, text: &str) -> usize {
    encoding_for_model(model).encode_ordinary(text).len()
}

/// `usage.prompt_tokens` for a chat request with these messages, by the cookbook recipe.
pub fn prompt_tokens(model: &str, messages: &[RecordedMessage]) -> usize {
    let bpe = encoding_for_model(model);
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let per_message = messages.iter().map(|m| {
        let name = m
            .name
            .as_deref()
            .map_or(0, |name| count(name) + TOKENS_PER_NAME);
        TOKENS_PER_MESSAGE + count(&m.role) + count(&m.text) + name
    });
    per_message.sum::<usize>() + REPLY_PRIMING
}
