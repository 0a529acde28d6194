//! Talking to OpenAI-compatible chat APIs.

mod message;
pub mod models;

pub use message::{Message, Role};
pub use models::{ModelInfo, Usage};
