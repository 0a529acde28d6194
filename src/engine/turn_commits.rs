//! Which commits each of the user's code-mode turns made, so that `/undo turn` can take
//! a whole turn back. A turn starts with a code-mode message the user wrote; the
//! reflections and auto-test rounds tern sends after it belong to it, and so do the
//! landings of what they proposed. Ask-mode messages propose no edits, so they start no
//! turn (a proposal reviewed across a question still lands in the turn that made it).

use git2::Oid;
use serde::{Deserialize, Serialize};

/// The most turns remembered: only the newest is undone as a whole, and the session
/// file is written on every change.
const MAX_TURNS: usize = 20;

/// Each turn's commits, oldest turn first, each turn's commits in the order made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TurnCommits(Vec<Vec<String>>);

impl TurnCommits {
    /// A new user turn begins (one that made no commit yet is reused).
    pub fn start(&mut self) {
        if self.0.last().is_none_or(|last| !last.is_empty()) {
            self.0.push(Vec::new());
        }
        let over = self.0.len().saturating_sub(MAX_TURNS);
        self.0.drain(..over);
    }

    /// The current turn landed a commit.
    pub fn landed(&mut self, commit: Oid) {
        if self.0.is_empty() {
            self.0.push(Vec::new());
        }
        if let Some(last) = self.0.last_mut() {
            last.push(commit.to_string());
        }
    }

    /// The commits of the newest turn that has any left, oldest first.
    pub fn last(&self) -> Vec<Oid> {
        self.0
            .iter()
            .rev()
            .find(|turn| !turn.is_empty())
            .map(|turn| {
                turn.iter()
                    .filter_map(|id| Oid::from_str(id).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// These commits are undone: no turn holds them any more.
    pub fn undone(&mut self, commits: &[Oid]) {
        let gone: Vec<String> = commits.iter().map(Oid::to_string).collect();
        for turn in &mut self.0 {
            turn.retain(|id| !gone.contains(id));
        }
        let keep_open = self.0.last().is_some_and(Vec::is_empty);
        self.0.retain(|turn| !turn.is_empty());
        if keep_open {
            self.0.push(Vec::new());
        }
    }

    /// Whether a turn holds `commit`.
    pub fn holds(&self, commit: Oid) -> bool {
        let id = commit.to_string();
        self.0.iter().flatten().any(|c| *c == id)
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Vec::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(n: u8) -> Oid {
        Oid::from_bytes(&[n; 20]).unwrap()
    }

    #[test]
    fn commits_belong_to_the_turn_they_landed_in_until_undone() {
        let mut turns = TurnCommits::default();
        turns.start();
        turns.landed(oid(1));
        turns.start();
        turns.landed(oid(2));
        turns.landed(oid(3));
        turns.start();
        assert_eq!(
            turns.last(),
            vec![oid(2), oid(3)],
            "an empty turn is skipped"
        );
        turns.undone(&[oid(3)]);
        assert_eq!(turns.last(), vec![oid(2)]);
        turns.landed(oid(4));
        assert_eq!(
            turns.last(),
            vec![oid(4)],
            "the open turn takes new commits"
        );
        turns.undone(&[oid(4), oid(2)]);
        assert_eq!(turns.last(), vec![oid(1)]);
        for _ in 0..MAX_TURNS * 2 {
            turns.start();
            turns.landed(oid(5));
        }
        assert_eq!(turns.0.len(), MAX_TURNS);
    }
}
