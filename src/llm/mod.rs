//! Talking to OpenAI-compatible chat APIs.

mod client;
mod error;
mod gate;
mod key;
mod message;
pub mod models;
mod recorded;
mod tokenize;
mod transport;
mod window;

pub use client::{
    ChatReply, ChatRequest, ClientOptions, Finish, LlmClient, MAX_CONTINUATIONS, OPENAI_API_BASE,
    ReplyLimit, StreamEvent,
};
pub use error::{HttpFailure, LlmError};
pub use key::ApiKey;
pub use message::{Message, Role};
pub use models::{ModelInfo, Usage};
pub use tokenize::{CountError, FRAMING_PROBE, ServerTokenizer};
pub(crate) use tokenize::{ProbedTokenizer, TokenizerSlot};
pub use transport::{Exchange, TimedEvent};
pub use window::{OLLAMA_DEFAULT_CONTEXT, ReportedWindow};
