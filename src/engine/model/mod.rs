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
mod learned;

use counts::CountSlot;

pub(crate) struct Model {
    settings: Settings,
    info: ModelInfo,
    window: Window,
    counter: TokenCounter,
    client: LlmClient,
    counts: CountSlot,
    /// A window a server proved by refusing a request, as a resumed session saved it.
    proven_window: Option<usize>,
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
            proven_window: None,
        }
    }

    /// Uses the model called `name` from now on: its window and tokenizer come with it.
    pub(super) fn switch(&mut self, name: &str) {
        self.settings.model = name.to_string();
        self.info = ModelInfo::lookup(name);
        self.proven_window = None;
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

    /// A resumed session's server proved `n_ctx` (it is used when the run starts).
    pub(super) fn remember_proven_window(&mut self, n_ctx: usize) {
        self.proven_window = Some(n_ctx);
    }

    /// Keeps `n_ctx`, which the server just proved, for this server and model, so
    /// that the next run starts with it.
    pub(super) fn keep_proven_window(&self, n_ctx: usize, jobs: &crate::engine::run_loop::Loop) {
        let base = self.client.api_base().to_string();
        let model = self.info.name.clone();
        crate::engine::run_loop::spawn_blocking(jobs.done(), move || {
            if let Err(e) = learned::save(&learned::file(), &base, &model, n_ctx) {
                tracing::warn!("cannot keep the window the server proved: {e}");
            }
        });
    }

    /// Starts with the window a server proved for this model (in an earlier run, kept
    /// in the state directory, or in the resumed session): it wins over a larger
    /// `--context-window`, said with both.
    fn start_window(&mut self, events: &crate::engine::EventSink) {
        let kept = learned::load(&learned::file(), self.client.api_base(), &self.info.name);
        let proven = match (kept, self.proven_window) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(n_ctx) = proven else {
            return;
        };
        match self.settings.context_window {
            Some(flag) if flag <= n_ctx => return,
            Some(flag) => events.warning(format!(
                "--context-window {flag} is larger than the {n_ctx} tokens the server at {} proved for {} by refusing a longer request: using {n_ctx}",
                self.client.api_base(),
                self.info.name
            )),
            None => {}
        }
        self.adopt_server_window(n_ctx);
    }

    /// The server said what window it allocated before any request: it is the window,
    /// unless the user set a smaller one (a larger one is said, with both).
    fn reported_window(
        &mut self,
        reported: crate::llm::ReportedWindow,
        events: &crate::engine::EventSink,
    ) {
        let n = reported.tokens;
        match self.settings.context_window {
            Some(flag) if flag <= n => return,
            Some(flag) => events.warning(format!(
                "--context-window {flag} is larger than the {n} tokens the server allocated for {} ({}): using {n}",
                self.info.name, reported.said_by
            )),
            None => {}
        }
        let source = match reported.server_default {
            true => crate::context::WindowSource::ServerDefault,
            false => crate::context::WindowSource::Reported,
        };
        tracing::debug!("window {n} from {}", reported.said_by);
        self.window = Window::for_model(&self.info, Some(n), self.settings.reserve_output)
            .with_source(source);
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
