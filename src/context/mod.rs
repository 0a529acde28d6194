//! What the model sees: the request's sections, their token budget, and the history
//! that must never overflow it.

pub mod advice;
pub mod budget;
pub mod chunks;
pub mod double_buffer;
pub mod history;

pub use budget::{
    BudgetReport, FileRow, HistoryPhase, HistoryStatus, MapStatus, Window, WindowSource,
};
pub(crate) use chunks::outputs_tokens;
pub use chunks::{
    Assembled, ChunkInputs, CommandText, PromptFile, Section, assemble, output_command,
};
