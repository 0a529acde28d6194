//! The API key, shared by the chat client and the server's tokenizer.

use serde::Deserialize;

/// An API key. Its `Debug` never shows the key, so it cannot leak into logs.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the Authorization header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}
