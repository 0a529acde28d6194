//! Whether a review's diff goes out complete or compressed: the plan decides, the prompt
//! tells the model.

use derive_visitor::DriveMut;

#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum PlanMode {
    /// Everything, with extra context.
    Extended,
    /// Cut down to fit the budget.
    Compressed,
}
