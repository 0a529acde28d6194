//! Every child process tern starts — git hooks, the editor, `/run`, `/test` and
//! `/lint`, a signing program — is made by [`command`], so that none sees the API
//! key: its environment loses `OPENAI_API_KEY` whatever its value, and every variable
//! whose name or value holds a registered secret in any form `egress` matches (the key
//! itself, `Bearer <key>`, the key with control or invisible characters inside).
//! `api_key_cmd` is the one exception: it runs before there is a key, to print it.
//! (tern is also not dumpable, so a child cannot read the key from
//! `/proc/<tern>/environ` or its command line unless it runs as root.)
//!
//! What a child prints goes through the same redaction as everything else: its
//! output reaches the user and the model only through `egress`.

use std::ffi::OsStr;

/// Variables that name the API key, whatever their value.
const KEY_VARIABLES: &[&str] = &["OPENAI_API_KEY"];

/// A command for `program` with no form of the API key in its environment. For a
/// `tokio::process::Command`, convert it: `tokio::process::Command::from(command(..))`.
pub fn command(program: impl AsRef<OsStr>) -> std::process::Command {
    // The one place commands are made (clippy.toml sends every other here).
    #[allow(clippy::disallowed_methods)]
    let mut cmd = std::process::Command::new(program);
    for (name, value) in std::env::vars_os() {
        if KEY_VARIABLES.iter().any(|k| name == *k)
            || crate::egress::holds_secret(&name.to_string_lossy())
            || crate::egress::holds_secret(&value.to_string_lossy())
        {
            cmd.env_remove(name);
        }
    }
    cmd
}
