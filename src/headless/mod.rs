pub mod apply;
pub mod undo;
