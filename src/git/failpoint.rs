//! Failures injected at each step of making commits, so that tests can check that a
//! failure anywhere leaves the repository exactly as it was. Only debug builds honour
//! them (the config reads `TERN_FAIL_AT=STEP[:N]`, the Nth time that step is reached in
//! one landing); a release build never fails on purpose.

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
}

/// `STEP` or `STEP:N`: fail the Nth time `STEP` is reached (the first by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailAt {
    pub step: Step,
    pub nth: u32,
}

impl FromStr for FailAt {
    type Err = String;

    fn from_str(s: &str) -> Result<FailAt, String> {
        let (step, nth) = s.split_once(':').unwrap_or((s, "1"));
        let step = step
            .trim()
            .parse()
            .map_err(|_| format!("no such step: {step}"))?;
        let nth = nth
            .trim()
            .parse()
            .map_err(|_| format!("not a count: {nth}"))?;
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
