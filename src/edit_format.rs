//! How the model is asked to write its edits: vocabulary shared by the model table
//! (each model's default) and the edit parser, so it sits below both.

use derive_visitor::DriveMut;
use serde::{Deserialize, Serialize};

/// How the model is asked to write its edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, DriveMut)]
#[serde(rename_all = "lowercase")]
pub enum EditFormat {
    /// SEARCH/REPLACE blocks (the default).
    Editblock,
    /// Unified diffs, applied hunk by hunk as search/replace.
    Udiff,
    /// The whole new file content.
    Whole,
}

impl EditFormat {
    /// What the format's blocks are, for people: `SEARCH/REPLACE blocks`.
    pub fn blocks(self) -> &'static str {
        match self {
            EditFormat::Editblock => "SEARCH/REPLACE blocks",
            EditFormat::Udiff => "unified diffs",
            EditFormat::Whole => "whole files",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EditFormat::Editblock => "editblock",
            EditFormat::Udiff => "udiff",
            EditFormat::Whole => "whole",
        }
    }
}

impl std::fmt::Display for EditFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for EditFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [EditFormat::Editblock, EditFormat::Udiff, EditFormat::Whole]
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("{s:?} is not editblock, udiff or whole"))
    }
}
