//! Talking to OpenAI-compatible chat APIs.

mod client;
mod error;
mod message;
pub mod models;
mod transport;

pub use client::{
    ApiKey, ChatReply, ChatRequest, ClientOptions, Finish, LlmClient, MAX_CONTINUATIONS,
    OPENAI_API_BASE, StreamEvent,
};
pub use error::{HttpFailure, LlmError};
pub use message::{Message, Role};
pub use models::{ModelInfo, Usage};
pub use transport::{Exchange, TimedEvent};
