//! The words around the diff (their texts are in `crate::prompts`): the system prompt,
//! the head of the user message, the titles of the lists of files not shown, and the
//! merge of a multi-call review's replies into one.

use super::mode::PlanMode;
use crate::prompts;

/// Titles of the lists appended after the diff; the system prompt explains them.
pub const ADDED_TITLE: &str = prompts::REVIEW_ADDED_TITLE;
pub const MODIFIED_TITLE: &str = prompts::REVIEW_MODIFIED_TITLE;
pub const DELETED_TITLE: &str = prompts::REVIEW_DELETED_TITLE;

/// The system message. It does not depend on the diff, so every call of a multi-call
/// review shares it and a provider's prefix cache can serve it.
pub(crate) fn system_prompt(line_numbers: bool) -> String {
    let mut s = prompts::REVIEW_SYSTEM.to_string();
    if line_numbers {
        s.push('\n');
        s.push_str(prompts::REVIEW_LINE_NUMBERS);
    }
    s
}

/// The head of the user message: what is compared, whether the diff is complete or
/// compressed, and which part of a split review this is.
pub(crate) fn preamble(description: &str, mode: PlanMode, part: Option<(usize, usize)>) -> String {
    let mut s = prompts::review_preamble(description);
    s.push('\n');
    s.push_str(match mode {
        PlanMode::Extended => prompts::REVIEW_EXTENDED,
        PlanMode::Compressed => prompts::REVIEW_COMPRESSED,
    });
    if let Some((i, n)) = part {
        s.push('\n');
        s.push_str(&prompts::review_part(i, n));
    }
    s
}

/// One finding of a reply: its severity rank (0 = critical) and its text without the
/// number.
struct Finding<'a> {
    rank: usize,
    text: Vec<&'a str>,
}

const SEVERITIES: [&str; 4] = ["critical", "high", "medium", "low"];

/// Merges the replies of a multi-call review: every finding, most severe first (ties
/// keep part order), renumbered, under one `## Findings`; then each part's summary
/// under one `## Summary`. A reply not in the asked-for shape is kept whole at the end.
pub(crate) fn merge_replies(replies: &[String]) -> String {
    if let [only] = replies {
        return only.clone();
    }
    let mut findings = Vec::new();
    let mut summaries = Vec::new();
    let mut unparsed = Vec::new();
    for (i, reply) in replies.iter().enumerate() {
        match parse_reply(reply) {
            Some((mut f, summary)) => {
                findings.append(&mut f);
                if !summary.is_empty() {
                    summaries.push(format!("Part {}: {summary}", i + 1));
                }
            }
            None => unparsed.push((i + 1, reply.trim())),
        }
    }
    findings.sort_by_key(|f| f.rank);
    let mut out = String::from("## Findings\n\n");
    if findings.is_empty() {
        out.push_str("No findings.\n");
    }
    for (n, f) in findings.iter().enumerate() {
        out.push_str(&format!("{}. {}\n", n + 1, f.text[0]));
        for line in &f.text[1..] {
            out.push_str(line);
            out.push('\n');
        }
        if !f.text.last().is_some_and(|l| l.trim().is_empty()) {
            out.push('\n');
        }
    }
    out.push_str("\n## Summary\n\n");
    out.push_str(&summaries.join("\n\n"));
    out.push('\n');
    for (part, text) in unparsed {
        out.push_str(&format!("\n## Reply to part {part}\n\n{text}\n"));
    }
    out
}

/// Splits a reply into findings and summary; `None` without a findings heading.
fn parse_reply(reply: &str) -> Option<(Vec<Finding<'_>>, String)> {
    let heading = |line: &str| {
        let t = line.trim_start();
        t.starts_with('#')
            .then(|| t.trim_start_matches('#').trim().to_ascii_lowercase())
    };
    let mut section = None::<String>;
    let mut findings: Vec<Finding> = Vec::new();
    let mut summary = Vec::new();
    let mut saw_findings = false;
    for line in reply.lines() {
        if let Some(h) = heading(line) {
            saw_findings |= h.starts_with("findings");
            section = Some(h);
            continue;
        }
        match section.as_deref() {
            Some(s) if s.starts_with("findings") => {
                if let Some(item) = numbered_item(line) {
                    findings.push(Finding {
                        rank: severity_rank(item),
                        text: vec![item],
                    });
                } else if let Some(last) = findings.last_mut() {
                    last.text.push(line);
                }
            }
            Some(s) if s.starts_with("summary") => summary.push(line.trim()),
            _ => {}
        }
    }
    for f in &mut findings {
        while f.text.len() > 1 && f.text.last().is_some_and(|l| l.trim().is_empty()) {
            f.text.pop();
        }
    }
    let summary = summary.join(" ").trim().to_string();
    saw_findings.then_some((findings, summary))
}

/// The text after `12. ` when `line` starts a numbered item.
fn numbered_item(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || line.len() - t.len() > 1 {
        return None;
    }
    t.trim_start_matches(|c: char| c.is_ascii_digit())
        .strip_prefix(['.', ')'])
        .map(str::trim_start)
        .filter(|rest| !rest.is_empty())
}

fn severity_rank(item: &str) -> usize {
    let word = item
        .trim_start_matches(['*', '[', '`', ' '])
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    SEVERITIES
        .iter()
        .position(|s| *s == word)
        .unwrap_or(SEVERITIES.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_orders_findings_by_severity_across_parts() {
        let a = "## Findings\n\n1. **low** `a.rs:3` — Name\n   Rename it.\n\n\
                 2. **high** `a.rs:9` — Overflow\n   Use checked_add.\n\n## Summary\n\nAdds a.\n";
        let b = "## Findings\n\n1. **critical** `b.rs:1` — Deletes data\n   Don't.\n\n\
                 ## Summary\n\nAdds b.\n";
        let c = "Sorry, I cannot review this.";
        let merged = merge_replies(&[a.into(), b.into(), c.into()]);
        let crit = merged.find("1. **critical** `b.rs:1`").unwrap();
        let high = merged
            .find("2. **high** `a.rs:9` — Overflow\n   Use checked_add.")
            .unwrap();
        let low = merged.find("3. **low** `a.rs:3`").unwrap();
        assert!(crit < high && high < low, "{merged}");
        assert!(merged.contains("## Summary\n\nPart 1: Adds a.\n\nPart 2: Adds b."));
        assert!(merged.contains("## Reply to part 3\n\nSorry, I cannot review this."));
    }

    #[test]
    fn no_findings_anywhere_says_so() {
        let r = "## Findings\n\nNo findings.\n\n## Summary\n\nFine.";
        let merged = merge_replies(&[r.into(), r.into()]);
        assert!(
            merged.starts_with("## Findings\n\nNo findings.\n"),
            "{merged}"
        );
        assert_eq!(merge_replies(&[r.into()]), r);
    }

    #[test]
    fn line_number_section_only_when_asked() {
        assert!(!system_prompt(false).contains("__new hunk__"));
        assert!(system_prompt(true).contains("__new hunk__"));
    }
}
