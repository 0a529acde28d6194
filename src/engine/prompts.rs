//! The prompts of each mode: the `system`, `examples` and `reminder` sections.

use super::protocol::ChatMode;
use crate::edit::EditFormat;
use crate::llm::Message;

/// The fixed sections of a request for one mode and edit format.
#[derive(Debug, Clone)]
pub struct Prompts {
    pub system: String,
    pub examples: Vec<Message>,
    pub reminder: Option<String>,
}

pub fn prompts(mode: ChatMode, _format: EditFormat) -> Prompts {
    match mode {
        ChatMode::Ask => Prompts {
            system: "You are an expert software engineer. Answer questions about the code the user shares. Do not propose edits.".into(),
            examples: vec![],
            reminder: None,
        },
        ChatMode::Code => Prompts {
            system: "You are an expert software engineer. Propose changes to the files in the chat as SEARCH/REPLACE blocks.".into(),
            examples: vec![],
            reminder: Some("Write every change as a SEARCH/REPLACE block.".into()),
        },
    }
}
