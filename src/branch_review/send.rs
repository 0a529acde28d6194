//! Sending a review: each call of the plan in turn, and when the server says a request
//! is too long (token counts are estimates for tokenizers tern does not have), the
//! review planned again with a quarter less budget, at most `CONTEXT_RETRIES` times.
//! `tern review` and the engine's `/review` both send through here.

use derive_visitor::DriveMut;
use tokio_util::sync::CancellationToken;

use super::{ChangeSet, ReviewError, ReviewOptions, ReviewPlan};
use crate::llm::{
    ChatRequest, Finish, LlmClient, LlmError, ModelInfo, ReplyLimit, StreamEvent, Usage,
};
use crate::tokens::TokenCounter;

/// How often a request the server finds too long is planned again.
pub const CONTEXT_RETRIES: usize = 3;

/// What happens while a review is sent.
#[derive(Debug)]
pub enum SendEvent {
    /// The server found a request too long; the review was planned again.
    Replanned { budget: usize, reason: String },
    /// Call `index` (0-based) of `of` is being sent.
    Part {
        index: usize,
        of: usize,
        files: usize,
        tokens: usize,
    },
    /// The model's reply streaming (and retries of the client).
    Stream(StreamEvent),
}

/// One model reply of a review.
#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct CallReply {
    pub files: Vec<String>,
    pub text: String,
    pub finish: Finish,
    pub usage: Option<Usage>,
}

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Plan(#[from] ReviewError),
}

/// Who reviews what: the model and its client, and the changes with the counter their
/// plans are made with (to plan again when a request is too long).
pub struct Reviewer<'a> {
    pub client: &'a LlmClient,
    pub model: &'a ModelInfo,
    pub changes: &'a ChangeSet,
    pub counter: &'a TokenCounter,
}

/// Sends `plan` (made from the reviewer's changes with `options`) and returns the plan
/// finally sent with the replies, in call order. A cancelled call ends the review with
/// what came.
pub async fn send(
    reviewer: &Reviewer<'_>,
    mut options: ReviewOptions,
    mut plan: ReviewPlan,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(SendEvent) + Send),
) -> Result<(ReviewPlan, Vec<CallReply>), SendError> {
    let Reviewer {
        client,
        model,
        changes,
        counter,
    } = reviewer;
    let mut retries = 0;
    loop {
        match send_calls((client, model, counter), &plan, cancel, on_event).await {
            Err(LlmError::ContextLengthExceeded { message, .. }) if retries < CONTEXT_RETRIES => {
                retries += 1;
                options.budget = options.budget * 3 / 4;
                on_event(SendEvent::Replanned {
                    budget: options.budget,
                    reason: message,
                });
                plan = super::plan(changes, counter, &options)?;
            }
            Err(e) => return Err(e.into()),
            Ok(replies) => return Ok((plan, replies)),
        }
    }
}

async fn send_calls(
    (client, model, counter): (&LlmClient, &ModelInfo, &TokenCounter),
    plan: &ReviewPlan,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(SendEvent) + Send),
) -> Result<Vec<CallReply>, LlmError> {
    let n = plan.calls.len();
    let mut replies = Vec::with_capacity(n);
    for (index, call) in plan.calls.iter().enumerate() {
        on_event(SendEvent::Part {
            index,
            of: n,
            files: call.files.len(),
            tokens: call.tokens,
        });
        // Predicted, said and learned from as a turn is.
        let prediction = counter.predict(call.messages.iter().map(|m| m.content.as_str()));
        let request = ChatRequest {
            model: model.clone(),
            messages: call.messages.clone(),
            cache_control: false,
            reply_limit: ReplyLimit::Server,
            predicted_prompt: Some(prediction.total),
            counting: Some(counter.provenance(&prediction)),
            one_at_a_time: false,
            known_window: None,
        };
        let reply = client
            .chat(&request, cancel, &mut |e| on_event(SendEvent::Stream(e)))
            .await?;
        if reply.usage_reported && reply.continuations == 0 {
            let reported = reply.usage.prompt_tokens;
            if let Err(implausible) = counter.observe(&prediction, reported) {
                tracing::warn!("review: {implausible}");
            }
            if let Some(counting) = request.counting {
                on_event(SendEvent::Stream(StreamEvent::Counted(
                    crate::tokens::Drift {
                        predicted: prediction.total,
                        reported,
                        counting,
                    },
                )));
            }
        }
        let cancelled = reply.finish == Finish::Cancelled;
        replies.push(CallReply {
            files: call.files.clone(),
            text: reply.text,
            finish: reply.finish,
            usage: reply.usage_reported.then_some(reply.usage),
        });
        if cancelled {
            break;
        }
    }
    Ok(replies)
}

/// The replies' usage, summed.
pub(crate) fn total_usage(replies: &[CallReply]) -> Usage {
    replies
        .iter()
        .filter_map(|r| r.usage)
        .fold(Usage::default(), |a, u| Usage {
            prompt_tokens: a.prompt_tokens + u.prompt_tokens,
            completion_tokens: a.completion_tokens + u.completion_tokens,
            cached_tokens: a.cached_tokens + u.cached_tokens,
            cache_write_tokens: a.cache_write_tokens + u.cache_write_tokens,
        })
}
