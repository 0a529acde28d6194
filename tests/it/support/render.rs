//! Turns a scripted `Reply` into what goes on the wire: a `Plan` of status, headers and
//! timed body steps. Streaming completions follow OpenAI's chunk format exactly (role
//! chunk, content deltas, finish chunk, usage chunk only when `include_usage`, `[DONE]`);
//! non-streaming ones are one `chat.completion` object.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::errors;
use super::reply::{Completion, Ending, ErrorBody, Pace, Reply, ReplyKind, UsageOverride};
use super::request::RecordedRequest;

/// `system_fingerprint` of every answer, so clients that read it see a realistic value.
const FINGERPRINT: &str = "fp_mock";

/// Everything the handler needs to answer one request.
pub(super) struct Plan {
    pub status: StatusCode,
    pub content_type: &'static str,
    /// `Retry-After` header, in seconds.
    pub retry_after: Option<u64>,
    /// Wait this long before sending the headers.
    pub start_delay: Duration,
    /// Never send the headers (a non-streaming request whose reply hangs).
    pub hold_headers: bool,
    pub steps: Vec<Step>,
}

/// One step of producing the body.
pub(super) enum Step {
    Wait(Duration),
    Send(Bytes),
    /// Abort the connection mid-body.
    Abort,
    /// Send nothing more until the client leaves or the server shuts down.
    Hang,
}

impl Plan {
    /// A complete JSON answer, sent at once.
    pub fn json(status: StatusCode, body: &Value) -> Plan {
        let steps = vec![Step::Send(Bytes::from(body.to_string()))];
        Plan::new(status, "application/json", steps)
    }

    fn new(status: StatusCode, content_type: &'static str, steps: Vec<Step>) -> Plan {
        Plan {
            status,
            content_type,
            retry_after: None,
            start_delay: Duration::ZERO,
            hold_headers: false,
            steps,
        }
    }
}

/// The plan for answering `request` (the `number`th one, from 1) with `reply`.
pub(super) fn plan(reply: &Reply, request: &RecordedRequest, number: usize) -> Plan {
    let mut plan = match &reply.kind {
        ReplyKind::Error(error) if matches!(error.body, ErrorBody::EchoPage) => Plan {
            retry_after: error.retry_after,
            ..Plan::new(
                error.status,
                "text/html",
                vec![Step::Send(Bytes::from(errors::page(request)))],
            )
        },
        ReplyKind::Error(error) => Plan {
            retry_after: error.retry_after,
            ..Plan::json(error.status, &errors::render(&error.body, request))
        },
        ReplyKind::Completion(completion) => {
            let answer = Answer::new(request, number);
            let completion = answer.within_room(completion);
            if request.stream {
                answer.stream(&completion)
            } else {
                answer.whole(&completion)
            }
        }
    };
    plan.start_delay = reply.start_delay;
    plan
}

/// llama-cpp-python's answer to a prompt over its context: 200, the role chunk, and the
/// end of the body.
pub(super) fn silent(request: &RecordedRequest, number: usize) -> Plan {
    let answer = Answer::new(request, number);
    let role = json!({ "role": "assistant", "content": "", "refusal": null });
    Plan::new(
        StatusCode::OK,
        "text/event-stream",
        vec![answer.chunk(role, Value::Null)],
    )
}

/// The fields shared by every chunk of one answer.
struct Answer<'a> {
    request: &'a RecordedRequest,
    id: String,
    created: u64,
}

impl<'a> Answer<'a> {
    fn new(request: &'a RecordedRequest, number: usize) -> Self {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Answer {
            request,
            id: format!("chatcmpl-mock{number}"),
            created,
        }
    }

    /// The completion a local server really sends: cut where `max_tokens` or its
    /// context runs out, and then finished with `length`.
    fn within_room(&self, completion: &Completion) -> Completion {
        let max_tokens = self
            .request
            .max_tokens
            .or(self.request.max_completion_tokens);
        let Some(room) = self
            .request
            .dialect
            .completion_room(self.request.prompt_tokens, max_tokens)
        else {
            return completion.clone();
        };
        let mut used = 0;
        let mut chunks = Vec::new();
        for chunk in &completion.chunks {
            let tokens = self.tokens(chunk);
            if used + tokens > room {
                return Completion {
                    chunks,
                    ending: Ending::Finish("length".into()),
                    ..completion.clone()
                };
            }
            used += tokens;
            chunks.push(chunk.clone());
        }
        completion.clone()
    }

    fn tokens(&self, text: &str) -> usize {
        self.request.dialect.text_tokens(&self.request.model, text)
    }

    /// Whether this answer carries usage (asked for, and the server sends it).
    fn with_usage(&self) -> bool {
        self.request.include_usage && self.request.dialect.streams_usage()
    }

    /// SSE: role chunk, paced content chunks, then the scripted ending.
    fn stream(&self, completion: &Completion) -> Plan {
        let role = json!({ "role": "assistant", "content": "", "refusal": null });
        let mut steps = vec![self.chunk(role, Value::Null)];
        for text in &completion.chunks {
            let wait = self.pace(completion.pace, text);
            if !wait.is_zero() {
                steps.push(Step::Wait(wait));
            }
            steps.push(self.chunk(json!({ "content": text }), Value::Null));
        }
        match &completion.ending {
            Ending::Finish(reason) => {
                steps.push(self.chunk(json!({}), json!(reason)));
                if self.with_usage() {
                    let mut chunk = self.chunk_base();
                    chunk["choices"] = json!([]);
                    chunk["usage"] = self.usage(&completion.usage, &completion.chunks.concat());
                    steps.push(sse(&chunk));
                }
                steps.push(Step::Send(Bytes::from_static(b"data: [DONE]\n\n")));
            }
            Ending::CutConnection => steps.push(Step::Abort),
            Ending::EndWithoutDone => {}
            Ending::MalformedChunk => {
                steps.push(Step::Send(Bytes::from_static(b"data: {not json\n\n")))
            }
            Ending::Hang => steps.push(Step::Hang),
            Ending::ErrorEvent(error) => steps.push(sse(error)),
        }
        Plan::new(StatusCode::OK, "text/event-stream", steps)
    }

    /// One `chat.completion` object after the whole generation time; faults corrupt it
    /// the way they would corrupt a streamed body.
    fn whole(&self, completion: &Completion) -> Plan {
        let generation: Duration = completion
            .chunks
            .iter()
            .map(|c| self.pace(completion.pace, c))
            .sum();
        let text = completion.chunks.concat();
        let finish_reason = match &completion.ending {
            Ending::Finish(reason) => json!(reason),
            _ => Value::Null,
        };
        let object = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.request.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": text, "refusal": null },
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
            "usage": self.usage(&completion.usage, &text),
            "system_fingerprint": FINGERPRINT,
        });
        let full = Bytes::from(object.to_string());
        let half = full.slice(..full.len() / 2);
        let mut steps = Vec::new();
        if !generation.is_zero() {
            steps.push(Step::Wait(generation));
        }
        match &completion.ending {
            Ending::Finish(_) => steps.push(Step::Send(full)),
            Ending::CutConnection => steps.extend([Step::Send(half), Step::Abort]),
            Ending::EndWithoutDone => steps.push(Step::Send(half)),
            Ending::MalformedChunk => steps.push(Step::Send(Bytes::from_static(b"{not json"))),
            Ending::Hang => {}
            Ending::ErrorEvent(error) => steps.push(Step::Send(Bytes::from(error.to_string()))),
        }
        let hold_headers = matches!(completion.ending, Ending::Hang);
        Plan {
            hold_headers,
            ..Plan::new(StatusCode::OK, "application/json", steps)
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Value) -> Step {
        let mut chunk = self.chunk_base();
        chunk["choices"] = json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }]);
        if self.with_usage() {
            // OpenAI sends `"usage": null` on every chunk but the last when usage is on.
            chunk["usage"] = Value::Null;
        }
        sse(&chunk)
    }

    fn chunk_base(&self) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.request.model,
            "system_fingerprint": FINGERPRINT,
        })
    }

    /// The usage object, computed unless the reply overrides it.
    fn usage(&self, overrides: &UsageOverride, text: &str) -> Value {
        let prompt = overrides
            .prompt_tokens
            .unwrap_or(self.request.prompt_tokens);
        let completion = overrides
            .completion_tokens
            .unwrap_or_else(|| self.tokens(text));
        let prompt_json = overrides
            .prompt_tokens_json
            .as_deref()
            .cloned()
            .unwrap_or(json!(prompt));
        json!({
            "prompt_tokens": prompt_json,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {
                "cached_tokens": overrides.cached_tokens.unwrap_or(0),
                "audio_tokens": 0,
            },
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        })
    }

    fn pace(&self, pace: Pace, text: &str) -> Duration {
        match pace {
            Pace::Immediate => Duration::ZERO,
            Pace::PerChunk(delay) => delay,
            Pace::TokensPerSecond(rate) => Duration::from_secs_f64(self.tokens(text) as f64 / rate),
        }
    }
}

/// One server-sent event carrying `value`.
fn sse(value: &Value) -> Step {
    Step::Send(Bytes::from(format!("data: {value}\n\n")))
}
