//! Whether a review's diff goes out complete or compressed: the plan decides, the prompt
//! tells the model.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanMode {
    /// Everything, with extra context.
    Extended,
    /// Cut down to fit the budget.
    Compressed,
}
