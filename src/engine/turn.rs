//! One model request on its own task: streams events while it runs and hands the
//! outcome back to the engine loop, which alone mutates the session.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::EventSink;
use super::protocol::Event;
use crate::llm::{ChatReply, ChatRequest, LlmClient, LlmError, StreamEvent};

/// What the engine needs back to record the turn.
#[derive(Debug)]
pub(crate) struct Pending {
    /// What the user typed (returned to them if the turn fails).
    pub user_text: String,
    /// The user message as sent, with any notes the engine added.
    pub sent_text: String,
}

#[derive(Debug)]
pub(crate) struct TurnOutcome {
    pub pending: Pending,
    pub result: Result<ChatReply, LlmError>,
}

pub(crate) fn spawn(
    client: LlmClient,
    request: ChatRequest,
    cancel: CancellationToken,
    events: EventSink,
    done: mpsc::UnboundedSender<TurnOutcome>,
    pending: Pending,
) {
    tokio::spawn(async move {
        let mut forward = |event: StreamEvent| events.send(stream_event(event));
        let result = client.chat(&request, &cancel, &mut forward).await;
        let _ = done.send(TurnOutcome { pending, result });
    });
}

fn stream_event(event: StreamEvent) -> Event {
    match event {
        StreamEvent::Delta(text) => Event::Delta { text },
        StreamEvent::Reasoning(text) => Event::Reasoning { text },
        StreamEvent::Retrying {
            attempt,
            delay,
            reason,
        } => Event::Retrying {
            attempt,
            delay_ms: delay.as_millis() as u64,
            reason,
        },
        StreamEvent::Continuing { continuation } => Event::Continuing { continuation },
    }
}
