//! Counts said to a person: `1 hunk`, `2 hunks`. Every message that counts things
//! goes through here, so that none says `1 hunks`.

/// `n` and `noun`, the noun with an `s` unless `n` is one: `count(1, "hunk")` is
/// `1 hunk`, `count(3, "file")` is `3 files`.
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {}", noun_for(n, noun))
}

/// `noun` as it goes with `n` things: `hunk` for one, `hunks` for any other number.
pub(crate) fn noun_for(n: usize, noun: &str) -> String {
    match n {
        1 => noun.to_string(),
        _ => format!("{noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_number_plural() {
        assert_eq!(count(1, "hunk"), "1 hunk");
        assert_eq!(count(0, "hunk"), "0 hunks");
        assert_eq!(count(2, "edit block"), "2 edit blocks");
        assert_eq!(noun_for(1, "round"), "round");
        assert_eq!(noun_for(7, "round"), "rounds");
    }
}
