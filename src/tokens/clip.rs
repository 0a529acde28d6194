//! Text clipped to a token budget by real token count, in whole lines: a head and a
//! tail around a note of what was left out (a command's output), or a head and a marker
//! (a branch review's lists).

use super::TokenCounter;

/// Text fitted to a token budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clipped {
    pub text: String,
    /// `text`'s tokens by the counter clip was given.
    pub tokens: usize,
    /// Lines left out whole (a last line kept only in part is not one of them).
    pub omitted_lines: usize,
}

/// What starts a last line kept only in part.
const CUT: &str = "…";

/// `text` clipped by real token count (the given counter) to `budget` tokens, keeping
/// the head and the tail (the tail first: it has a command's failures and summary), with
/// `note(lines left out)` between them. Lines are kept whole, unless the last line alone
/// does not fit: then its end is kept, cut at a character. Only a budget smaller than
/// the note itself gets more than it asked for.
pub(crate) fn clip_ends(
    text: &str,
    counter: &TokenCounter,
    budget: usize,
    note: impl Fn(usize) -> String,
) -> Clipped {
    // Drafts and whole outputs are not worth a server's count.
    let counter = &counter.quiet();
    if let Some(whole) = whole(text, counter, budget) {
        return whole;
    }
    let lines = Lines::new(text, counter, &note);
    // Lines are weighed one by one, and a text's count is not quite the sum of its
    // lines'; a pick that turns out too big is made again for a smaller target.
    let mut target = budget;
    for attempt in 0.. {
        let Some(clipped) = lines.pick(target, budget) else {
            break;
        };
        let over = clipped.tokens.saturating_sub(budget);
        if over == 0 {
            return clipped;
        }
        let step = if attempt == 0 {
            over
        } else {
            over.max(target / 16)
        };
        target = target.saturating_sub(step);
    }
    lines.join(0, 0, None)
}

/// `text` if it fits in `budget`; otherwise its longest head of whole lines that still
/// fits with `marker` after it; `None` when not even one line does.
pub(crate) fn clip_head(
    text: &str,
    counter: &TokenCounter,
    budget: usize,
    marker: &str,
) -> Option<Clipped> {
    let counter = &counter.quiet();
    if let Some(whole) = whole(text, counter, budget) {
        return Some(whole);
    }
    let note = |_| marker.to_string();
    let lines = Lines::new(text, counter, &note);
    // Token counts grow with the head, so the longest that fits is found by bisection
    // over the number of lines kept.
    let (mut lo, mut hi) = (0usize, text.matches('\n').count());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if lines.join(mid, 0, None).tokens <= budget {
            lo = mid
        } else {
            hi = mid - 1
        }
    }
    (lo > 0).then(|| lines.join(lo, 0, None))
}

/// The whole text, when it fits.
fn whole(text: &str, counter: &TokenCounter, budget: usize) -> Option<Clipped> {
    let tokens = counter.count(text);
    (tokens <= budget).then(|| Clipped {
        text: text.to_string(),
        tokens,
        omitted_lines: 0,
    })
}

/// A text's lines (with their breaks), each weighed when first needed.
struct Lines<'a> {
    all: Vec<&'a str>,
    costs: Vec<std::cell::Cell<Option<usize>>>,
    counter: &'a TokenCounter,
    /// What stands for the lines left out, given how many.
    note: &'a dyn Fn(usize) -> String,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, counter: &'a TokenCounter, note: &'a dyn Fn(usize) -> String) -> Self {
        let all: Vec<&str> = text.split_inclusive('\n').collect();
        let costs = vec![std::cell::Cell::new(None); all.len()];
        Lines {
            all,
            costs,
            counter,
            note,
        }
    }

    /// Line `i`'s tokens, uncached in the counter: a long output's lines would crowd
    /// out what the counter keeps for the gauge.
    fn cost(&self, i: usize) -> usize {
        let cell = &self.costs[i];
        cell.get().unwrap_or_else(|| {
            let n = self.counter.encoding().count(self.all[i]);
            cell.set(Some(n));
            n
        })
    }

    /// How many lines fit in `room`, taking them in `order`, and their tokens.
    fn fill(&self, order: impl Iterator<Item = usize>, room: usize) -> (usize, usize) {
        let (mut taken, mut used) = (0, 0);
        for i in order {
            let cost = self.cost(i);
            if used + cost > room {
                break;
            }
            taken += 1;
            used += cost;
        }
        (taken, used)
    }

    /// The head and tail that fit `target` by the lines' weights, or `None` when not
    /// even the note does.
    fn pick(&self, target: usize, budget: usize) -> Option<Clipped> {
        let n = self.all.len();
        let note = self.counter.encoding().count(&(self.note)(n));
        let room = target.checked_sub(note)?;
        let last = n.checked_sub(1)?;
        if self.cost(last) > room {
            return Some(self.cut_last_line(room, budget));
        }
        // The tail first, two thirds of the room or at least the last line; then the
        // head; then the tail again with whatever the head left.
        let (tail, tail_used) = self.fill((0..n).rev(), (room - room / 3).max(self.cost(last)));
        let (head, head_used) = self.fill(0..n - tail, room - tail_used);
        let (more, _) = self.fill((head..n - tail).rev(), room - head_used - tail_used);
        Some(self.join(head, tail + more, None))
    }

    /// The note and the last line, or as much of its end as fits `room` when its real
    /// count does not fit the budget.
    fn cut_last_line(&self, room: usize, budget: usize) -> Clipped {
        let whole = self.join(0, 1, None);
        if whole.tokens <= budget {
            return whole;
        }
        let line = self.all[self.all.len() - 1];
        let room = room.saturating_sub(self.counter.encoding().count(CUT));
        let starts: Vec<usize> = line.char_indices().map(|(i, _)| i).collect();
        let end = |k: usize| starts.get(k).and_then(|&at| line.get(at..)).unwrap_or("");
        // The shorter the end, the fewer its tokens: bisect for the longest that fits.
        let (mut lo, mut hi) = (0, starts.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.counter.encoding().count(end(mid)) <= room {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        match end(lo) {
            // Nothing of it fits: the note alone says what there was.
            "" => self.join(0, 0, None),
            kept => self.join(0, 0, Some(kept)),
        }
    }

    /// The first `head` lines, the note, the last `tail` lines, and the `cut` end of
    /// the last line when it is kept only in part.
    fn join(&self, head: usize, tail: usize, cut: Option<&str>) -> Clipped {
        let n = self.all.len();
        let omitted = n - head - tail - usize::from(cut.is_some());
        let mut text: String = self.all[..head].concat();
        text.push_str(&(self.note)(omitted));
        text.push_str(&self.all[n - tail..].concat());
        if let Some(end) = cut {
            text.push_str(CUT);
            text.push_str(end);
        }
        Clipped {
            tokens: self.counter.count(&text),
            text,
            omitted_lines: omitted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    const TRUNCATED: &str = crate::prompts::REVIEW_TRUNCATED;

    fn clip_to_tokens(text: &str, max: usize, counter: &TokenCounter) -> Option<String> {
        clip_head(text, counter, max, TRUNCATED).map(|c| c.text)
    }

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
