//! The API key, shared by the chat client and the server's tokenizer.

use serde::Deserialize;

/// An API key. Its `Debug` never shows the key, so it cannot leak into logs, and
/// making one registers it with `egress`, so that no sink writes it out, wherever it
/// came from (the environment, a flag, a config file, `api_key_cmd`).
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(from = "String")]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        crate::egress::register(&key);
        ApiKey(key)
    }

    /// The key itself, for the Authorization header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        ApiKey::new(key)
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}
