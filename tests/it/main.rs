//! Every integration test, in one binary so that the test suite links once (as
//! ripgrep's tests do). Each module is one area; `support` is the loopback OpenAI
//! server and temporary repositories, `tui_support` and `history_support` build
//! workspaces and sessions.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]
// Tests and benchmarks print what they measure or skip, with no key to redact.
#![allow(clippy::disallowed_macros)]

mod history_support;
mod support;
mod tui_support;

mod acp;
mod acp_acpx;
mod acp_editor;
mod coding_loop;
mod config;
mod edit_apply;
mod edit_cli;
mod edit_parse;
mod edit_prompts;
mod edit_refine;
mod edit_spans;
mod egress;
mod engine_edits;
mod engine_map;
mod engine_review;
mod engine_undo;
mod git;
mod headless;
mod history_engine;
mod history_session;
mod history_summarizer;
mod json_lines;
mod landing;
mod landing_atomic;
mod landing_killed;
mod layering;
mod llm_client;
mod local_models;
mod mock_server;
mod needed;
mod nothing_hangs;
mod proposal_across_time;
mod repomap;
mod repomap_fitted;
mod repomap_monorepo;
mod repomap_watch;
mod request_counts;
mod review;
mod review_cli;
mod rewind;
mod run;
mod server_window;
mod session_switch;
mod sessions;
mod signing;
mod spending;
mod tokens;
mod trust;
mod tui_chat;
mod tui_demo;
mod tui_editor;
mod tui_hostile_text;
mod tui_keys;
mod tui_snapshots;
mod tui_tmux;
mod tui_wide_text;
mod unicode;
