//! What the history tests share: telling summary requests from conversation requests,
//! and which scripted turn a conversation request is for.

// Each test binary uses part of it.

use crate::support::RecordedRequest;

/// True for a request made by the history summarizer (its system prompt is tern's
/// summarize prompt).
pub fn is_summary(request: &RecordedRequest) -> bool {
    let prompt = tern::prompts::summarize(0);
    let opening = prompt.lines().next().unwrap();
    request.messages[0].text.contains(opening)
}

/// The number of a scripted turn, from the `turn N:` its last user message starts with.
pub fn turn_of(request: &RecordedRequest) -> usize {
    let text = request.last_user_text().unwrap_or_default();
    let digits: String = text
        .strip_prefix("turn ")
        .expect("a scripted turn")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}
