//! What the model sees: the request's sections, their token budget, and the history
//! that must never overflow it.

pub mod budget;
pub mod chunks;

pub use budget::{BudgetReport, HistoryPhase, HistoryStatus, MapStatus, Window};
pub use chunks::{Assembled, ChunkInputs, FileText, Section, assemble};
