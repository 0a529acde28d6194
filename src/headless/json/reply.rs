//! How a reply ended and what it used: shared by turns and reviews.

use serde::Serialize;

use crate::llm;

/// Token usage of a request, as the server reported it (or tern counted it).
#[derive(Serialize)]
pub struct Usage {
    prompt_tokens: usize,
    completion_tokens: usize,
    cached_tokens: usize,
    cache_write_tokens: usize,
}

impl From<&llm::Usage> for Usage {
    fn from(u: &llm::Usage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: u.cached_tokens,
            cache_write_tokens: u.cache_write_tokens,
        }
    }
}

/// Why a reply ended: `{"kind": ..., "detail": ...}`, the detail only for `length`
/// (the limit), `context_full` (the counts) and `cut_off` (why); `empty`: no text,
/// twice.
#[derive(Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Finish<'a> {
    Stop,
    Length(Limit),
    ContextFull {
        prompt: usize,
        reply: usize,
        asked: usize,
    },
    CutOff(&'a str),
    Empty,
    Cancelled,
}

impl<'a> From<&'a llm::Finish> for Finish<'a> {
    fn from(finish: &'a llm::Finish) -> Self {
        match finish {
            llm::Finish::Stop => Finish::Stop,
            llm::Finish::Length(limit) => Finish::Length(Limit::from(*limit)),
            llm::Finish::ContextFull {
                prompt,
                reply,
                asked,
            } => Finish::ContextFull {
                prompt: *prompt,
                reply: *reply,
                asked: *asked,
            },
            llm::Finish::CutOff(why) => Finish::CutOff(why),
            llm::Finish::Empty => Finish::Empty,
            llm::Finish::Cancelled => Finish::Cancelled,
        }
    }
}

/// What capped a reply's tokens.
#[derive(Serialize)]
#[serde(tag = "limit", rename_all = "snake_case")]
pub enum Limit {
    Server,
    Output { max_tokens: usize },
    Window { max_tokens: usize, window: usize },
}

impl From<llm::ReplyLimit> for Limit {
    fn from(limit: llm::ReplyLimit) -> Self {
        match limit {
            llm::ReplyLimit::Server => Limit::Server,
            llm::ReplyLimit::Output { max_tokens } => Limit::Output { max_tokens },
            llm::ReplyLimit::Window { max_tokens, window } => Limit::Window { max_tokens, window },
        }
    }
}
