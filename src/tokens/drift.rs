//! How far a request's predicted prompt was from the server's count of it, against the
//! margin its way of counting claims: shown after each reply (the gauge's last-request
//! line, `/tokens`) and sent as a `drift` event for every request kind.

use super::{Counting, thousands};

/// A request's predicted prompt tokens, the server's count, and how they were counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    pub predicted: usize,
    pub reported: usize,
    pub counting: Counting,
}

impl Drift {
    /// `predicted - reported`: positive when tern counted more than the server.
    pub fn difference(self) -> i64 {
        self.predicted as i64 - self.reported as i64
    }

    /// The most the counting claims a prediction may be off (`Counting::margin`).
    pub fn margin(self) -> usize {
        self.counting.margin(self.predicted)
    }

    /// Off by more than the counting claims.
    pub fn beyond_margin(self) -> bool {
        self.predicted.abs_diff(self.reported) > self.margin()
    }

    /// `predicted 1,149, server 1,161 (-12, -1.0%)`, flagged when beyond the margin.
    pub fn describe(self) -> String {
        let percent = 100.0 * self.difference() as f64 / self.reported.max(1) as f64;
        let mut text = format!(
            "predicted {}, server {} ({:+}, {percent:+.1}%)",
            thousands(self.predicted),
            thousands(self.reported),
            self.difference()
        );
        if self.beyond_margin() {
            text.push_str(&format!(
                " ⚠ beyond the ±{} the counts claim ({})",
                thousands(self.margin()),
                self.counting.label()
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drift_beyond_the_claimed_margin_is_flagged() {
        let within = Drift {
            predicted: 1149,
            reported: 1161,
            counting: Counting::Server,
        };
        assert_eq!(within.difference(), -12);
        assert!(!within.beyond_margin());
        assert_eq!(
            within.describe(),
            "predicted 1,149, server 1,161 (-12, -1.0%)"
        );
        let beyond = Drift {
            predicted: 1052,
            reported: 961,
            counting: Counting::Server,
        };
        assert!(beyond.beyond_margin());
        assert!(
            beyond
                .describe()
                .ends_with("⚠ beyond the ±30 the counts claim (exact via server)"),
            "{}",
            beyond.describe()
        );
    }
}
