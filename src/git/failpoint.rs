//! Failures injected at each step of making commits, so that tests can check that a
//! failure anywhere leaves the repository exactly as it was. Only debug builds honour
//! them (the config reads `TERN_FAIL_AT=STEP[:N]`, the Nth time that step is reached in
//! one landing), and `TERN_DIE_AT=STEP` kills the process there; a release build never
//! fails on purpose.

use std::str::FromStr;

use super::GitError;

/// A step of a landing (or of any commit) that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::Display, strum::EnumIter)]
#[strum(serialize_all = "kebab-case")]
pub enum Step {
    /// Taking git's `index.lock` (fails as if another git process held it).
    IndexLock,
    /// Checking who commits.
    Identity,
    /// The signing probe, before anything is written.
    Signing,
    /// A landing's files are written (after its journal), nothing of tern's commit made
    /// (without commits: the landing's end).
    Written,
    /// Making the blobs of a commit's files.
    Blobs,
    /// Making a commit's tree.
    Tree,
    /// Making a commit object (signed when configured).
    CommitObject,
    /// Writing the new index into git's lock file.
    Index,
    /// Writing tern's note.
    Notes,
    /// Moving the branch (compare and swap).
    Ref,
    /// Renaming the lock file over the index, after the branch moved.
    IndexCommit,
    /// A move of HEAD done, its journal kept until the session records it (a rewind
    /// or its redo; no landing reaches it).
    Moved,
}

/// `STEP` or `STEP:N`: fail the Nth time `STEP` is reached (the first by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailAt {
    pub step: Step,
    pub nth: u32,
}

/// Why a `TERN_FAIL_AT` value names no failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadFailAt {
    #[error("no such step: {0}")]
    NoSuchStep(String),
    #[error("not a count: {0}")]
    NotACount(String),
}

impl FromStr for FailAt {
    type Err = BadFailAt;

    fn from_str(s: &str) -> Result<FailAt, BadFailAt> {
        let (step, nth) = s.split_once(':').unwrap_or((s, "1"));
        let step = step
            .trim()
            .parse()
            .map_err(|_| BadFailAt::NoSuchStep(step.to_string()))?;
        let nth = nth
            .trim()
            .parse()
            .map_err(|_| BadFailAt::NotACount(nth.to_string()))?;
        Ok(FailAt { step, nth })
    }
}

/// Counts the steps reached and fails the one asked for.
#[derive(Debug, Default)]
pub(crate) struct Failpoints {
    at: Option<FailAt>,
    reached: u32,
}

impl Failpoints {
    pub(crate) fn new(at: Option<FailAt>) -> Failpoints {
        Failpoints { at, reached: 0 }
    }

    /// Fails when `step` is the one asked for (debug builds only).
    pub(crate) fn check(&mut self, step: Step) -> Result<(), GitError> {
        die_at(step);
        let Some(at) = self
            .at
            .filter(|at| cfg!(debug_assertions) && at.step == step)
        else {
            return Ok(());
        };
        self.reached += 1;
        match self.reached == at.nth {
            true => Err(GitError::Injected(step)),
            false => Ok(()),
        }
    }
}

/// `TERN_DIE_AT=STEP`: the process is killed (SIGKILL: no unwinding, no cleanup)
/// when a commit or a move of HEAD reaches `STEP`, for tests of what the next tern
/// finds (debug builds only).
pub(super) fn die_at(step: Step) {
    if cfg!(debug_assertions)
        && std::env::var("TERN_DIE_AT")
            .ok()
            .and_then(|s| s.trim().parse::<Step>().ok())
            == Some(step)
    {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fail_at_names_a_step_and_a_count() {
        assert_eq!(
            "ref:2".parse(),
            Ok(FailAt {
                step: Step::Ref,
                nth: 2
            })
        );
        assert_eq!(" index-lock ".parse::<FailAt>().map(|f| f.nth), Ok(1));
        let bad = "reff".parse::<FailAt>();
        assert_eq!(bad, Err(BadFailAt::NoSuchStep("reff".into())));
        assert_eq!(bad.unwrap_err().to_string(), "no such step: reff");
        assert_eq!(
            "ref:x".parse::<FailAt>(),
            Err(BadFailAt::NotACount("x".into()))
        );
    }
}
