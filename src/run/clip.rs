//! A command's output as the model gets it: clipped by real token count to a budget,
//! keeping the head and, most of all, the tail (where test runners summarise their
//! failures), with a note of how many lines were left out between them.

use crate::prompts::command_lines_omitted;
use crate::tokens::TokenCounter;
use crate::tokens::clip::{Clipped, clip_ends};

/// The tokens a command's output may take when `command_output_tokens` is unset:
/// window/8 within 1024..8192.
pub(crate) fn default_output_budget(window: usize) -> usize {
    (window / 8).clamp(1024, 8192)
}

/// Output as the model gets it: clipped by real token count to `budget` tokens, the
/// tail kept first, with "[… N lines left out …]" between head and tail.
pub fn clip(text: &str, counter: &TokenCounter, budget: usize) -> Clipped {
    clip_ends(text, counter, budget, |n| {
        format!("{}\n", command_lines_omitted(n))
    })
}
