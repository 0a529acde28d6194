//! Advice when a request does not fit: what is big in it, largest first, each with its
//! tokens and what makes it smaller. One function for tern's own refusal before a
//! request is sent and for a server that refused one as too long.

use super::budget::BudgetReport;
use super::chunks::Section;
use crate::tokens::thousands;

/// How many of the largest parts the advice names.
const NAMED: usize = 4;

/// One part of a request that takes room, and what would make it smaller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Big {
    pub what: String,
    pub tokens: usize,
    pub remedy: String,
}

/// The parts of the request in `report`, largest first: each file, the history, the
/// repo map, the message itself, a review diff, and tern's own instructions (which
/// only a bigger window makes room for).
pub(crate) fn what_is_big(report: &BudgetReport) -> Vec<Big> {
    let mut parts: Vec<Big> = report
        .files
        .iter()
        .map(|f| Big {
            what: f.path.clone(),
            tokens: f.tokens,
            remedy: match f.section {
                Section::CommandOutput => "/drop-output".to_string(),
                _ => format!("/drop {}", f.path),
            },
        })
        .collect();
    let section = |section, what: &str, remedy: &str| Big {
        what: what.to_string(),
        tokens: report.section(section),
        remedy: remedy.to_string(),
    };
    parts.extend([
        section(Section::Done, "the history", "/compact, /forget or /clear"),
        section(Section::Repo, "the repo map", "--map-tokens"),
        section(Section::Cur, "the message", "shorten it"),
        section(Section::ReviewDiff, "the review diff", "--budget"),
        Big {
            what: "tern's instructions".into(),
            tokens: [Section::System, Section::Examples, Section::Reminder]
                .into_iter()
                .map(|s| report.section(s))
                .sum(),
            remedy: "a bigger window: the server's (e.g. llama.cpp's -c) and --context-window"
                .into(),
        },
    ]);
    parts.retain(|p| p.tokens > 0);
    parts.sort_by_key(|p| std::cmp::Reverse(p.tokens));
    parts
}

/// The advice for a request of `needed` tokens where at most `limit` fit: by how much
/// it is over, then the largest parts with their tokens and remedies.
pub fn advice(report: &BudgetReport, needed: usize, limit: usize) -> String {
    let approx = if report.estimate() { "≈" } else { "" };
    let largest: Vec<String> = what_is_big(report)
        .into_iter()
        .take(NAMED)
        .map(|p| format!("{} {approx}{} ({})", p.what, thousands(p.tokens), p.remedy))
        .collect();
    format!(
        "the request needs {approx}{} tokens but at most {} fit ({approx}{} over); largest first: {}",
        thousands(needed),
        thousands(limit),
        thousands(needed.saturating_sub(limit)),
        largest.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{ChunkInputs, PromptFile, Window, assemble};
    use crate::llm::{Message, ModelInfo};
    use crate::tokens::{Counting, Encoding, TokenCounter};

    #[test]
    fn the_largest_parts_come_first_with_their_remedies() {
        let counter = TokenCounter::new(Encoding::O200kBase, false);
        let inputs = ChunkInputs {
            system: "You are tern.".into(),
            done: vec![Message::user("earlier"), Message::assistant("reply")],
            chat_files: vec![
                PromptFile {
                    path: "src/big.rs".into(),
                    text: "fn helper(x: u32) -> u32 { x + 1 }\n".repeat(50),
                },
                PromptFile {
                    path: "src/small.rs".into(),
                    text: "fn a() {}\n".into(),
                },
            ],
            cur: vec![Message::user("explain the helpers")],
            ..ChunkInputs::default()
        };
        let model = ModelInfo::lookup("gpt-4o");
        let report = BudgetReport::new(
            &assemble(&inputs, &counter),
            &model,
            Window::for_model(&model, Some(1000), None),
            Counting::Exact,
        );
        let parts = what_is_big(&report);
        assert_eq!(parts[0].what, "src/big.rs");
        assert_eq!(parts[0].remedy, "/drop src/big.rs");
        assert!(parts.windows(2).all(|w| w[0].tokens >= w[1].tokens));
        assert!(parts.iter().any(|p| p.what == "the history"));
        let text = advice(&report, 1100, 750);
        assert!(
            text.starts_with("the request needs 1,100 tokens but at most 750 fit (350 over)"),
            "{text}"
        );
        assert!(
            text.contains(&format!("src/big.rs {}", parts[0].tokens)),
            "{text}"
        );
    }
}
