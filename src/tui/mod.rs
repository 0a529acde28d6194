//! The full-screen workspace: chat, live budget gauge, files, repo map and hunk-by-hunk
//! review, as one more consumer of the engine's `Event` stream (DESIGN.md §9).

pub mod highlight;
pub mod keymap;
pub mod markdown;
pub mod text;
pub mod theme;
