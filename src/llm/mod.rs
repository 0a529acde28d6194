//! Talking to OpenAI-compatible chat APIs.

mod client;
mod error;
mod key;
mod message;
pub mod models;
mod tokenize;
mod transport;

pub use client::{
    ChatReply, ChatRequest, ClientOptions, Finish, LlmClient, MAX_CONTINUATIONS, OPENAI_API_BASE,
    ReplyLimit, StreamEvent,
};
pub use error::{HttpFailure, LlmError};
pub use key::ApiKey;
pub use message::{Message, Role};
pub use models::{ModelInfo, Usage};
pub use tokenize::ServerTokenizer;
pub use transport::{Exchange, TimedEvent};
