//! Cutting text to a token budget by real token count, at a line end.

use crate::tokens::TokenCounter;

/// What a clipped text ends with.
pub const TRUNCATED: &str = crate::prompts::REVIEW_TRUNCATED;

/// `text` if it fits in `max_tokens`; otherwise its longest prefix of whole lines that
/// still fits with `...(truncated)` appended; `None` when not even one line does.
pub fn clip_to_tokens(text: &str, max_tokens: usize, counter: &TokenCounter) -> Option<String> {
    if counter.count(text) <= max_tokens {
        return Some(text.to_string());
    }
    let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
    let clipped = |n: usize| format!("{}{TRUNCATED}", text.get(..ends[n - 1]).unwrap_or(text));
    let fits = |n: usize| counter.count(&clipped(n)) <= max_tokens;
    // Token counts grow with the prefix, so the longest fitting prefix is found by
    // bisection over the number of lines kept.
    let (mut lo, mut hi) = (0usize, ends.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    (lo > 0).then(|| clipped(lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    #[test]
    fn clips_at_a_line_end_within_the_budget() {
        let counter = TokenCounter::new(Encoding::O200kBase, false);
        let text: String = (0..200)
            .map(|i| format!("- src/module_{i}/file.rs\n"))
            .collect();
        let total = counter.count(&text);
        assert_eq!(
            clip_to_tokens(&text, total, &counter).as_deref(),
            Some(&*text)
        );
        for max in [20, 57, 300, total - 1] {
            let clipped = clip_to_tokens(&text, max, &counter).unwrap();
            assert!(counter.count(&clipped) <= max, "{max}");
            let kept = clipped.strip_suffix(TRUNCATED).unwrap();
            assert!(kept.ends_with('\n') && text.starts_with(kept));
            // One more line would not have fitted.
            let (_, after) = text.split_at_checked(kept.len()).unwrap();
            let next = format!("{kept}{}", after.split_inclusive('\n').next().unwrap());
            assert!(counter.count(&format!("{next}{TRUNCATED}")) > max);
        }
        assert_eq!(clip_to_tokens(&text, 3, &counter), None);
    }
}
