//! The chat format's fixed token overhead, from OpenAI's published counting recipe
//! ("How to count tokens with tiktoken", openai-cookbook): every message is framed as
//! `<|start|>{role}<|message|>{content}<|end|>`, 3 tokens plus the content (the role name
//! is one token for system/user/assistant), and every reply is primed with
//! `<|start|>assistant<|message|>`, 3 more tokens. `tests/tokens.rs` checks the cookbook's
//! worked example against these numbers.

/// Tokens added per message beyond its content (includes the role).
pub const MESSAGE_OVERHEAD: usize = 4;

/// Tokens added once per request for the primed assistant reply.
pub const REPLY_PRIMING: usize = 3;
