//! The model part of the engine: the settings the engine runs with, the model they
//! name, its context window, the tokenizer that counts for it, the client that talks
//! to it, and what the server said about counting. Switching the model changes all of
//! them together.

use crate::config::{CachePrompts, Settings};
use crate::context::Window;
use crate::edit::EditFormat;
use crate::llm::{LlmClient, ModelInfo};
use crate::tokens::TokenCounter;

pub(in crate::engine) mod counts;

use counts::CountSlot;

pub(crate) struct Model {
    settings: Settings,
    info: ModelInfo,
    window: Window,
    counter: TokenCounter,
    client: LlmClient,
    counts: CountSlot,
}

impl Model {
    pub(super) fn new(settings: Settings, client: LlmClient) -> Self {
        let info = ModelInfo::lookup(&settings.model);
        Model {
            window: Window::for_model(&info, settings.context_window, settings.reserve_output),
            counter: info.token_counter(),
            info,
            client,
            settings,
            counts: CountSlot::default(),
        }
    }

    /// Uses the model called `name` from now on: its window and tokenizer come with it.
    pub(super) fn switch(&mut self, name: &str) {
        self.settings.model = name.to_string();
        self.info = ModelInfo::lookup(name);
        self.window = Window::for_model(
            &self.info,
            self.settings.context_window,
            self.settings.reserve_output,
        );
        self.counter = self.info.token_counter();
    }

    /// The server's context (`n_ctx`) is the window from now on.
    pub(super) fn adopt_server_window(&mut self, n_ctx: usize) {
        self.window = Window::from_server(&self.info, n_ctx, self.settings.reserve_output);
    }

    /// The edit format: the settings' choice, or the model's own.
    pub(super) fn edit_format(&self) -> EditFormat {
        self.settings.edit_format.unwrap_or(self.info.edit_format)
    }

    /// Whether requests mark their stable head for the server's prompt cache.
    pub(super) fn cache_control(&self) -> bool {
        match self.settings.cache_prompts {
            CachePrompts::On => true,
            CachePrompts::Off => false,
            CachePrompts::Auto => {
                self.settings.api_base.contains("openrouter.ai")
                    || self.info.name.starts_with("anthropic/")
            }
        }
    }

    pub(super) fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(super) fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub(super) fn window(&self) -> Window {
        self.window
    }

    pub(super) fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    pub(super) fn client(&self) -> &LlmClient {
        &self.client
    }
}
