//! tern: a terminal workspace for AI pair programming.
//!
//! The engine and the capabilities under it (`context`, `llm`, `tokens`, `repomap`,
//! `edit`, `git`, `branch_review`, ...) never depend on a front end; `headless` and `tui`
//! are two consumers of the same engine events. The map of the code is ARCHITECTURE.md.

pub mod acp;
pub mod branch_review;
pub mod chars;
pub mod cli;
pub mod config;
pub mod context;
pub mod diff;
pub mod digest;
pub mod edit;
pub mod edit_format;
pub mod egress;
pub mod engine;
pub mod git;
pub mod headless;
pub mod languages;
pub mod llm;
pub mod noise;
pub mod plural;
pub mod prompts;
pub mod regular_file;
pub mod repomap;
pub mod run;
pub mod signals;
pub mod spawn;
pub mod terminal_text;
pub mod tokens;
pub mod tui;
