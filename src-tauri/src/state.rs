//! What the shell keeps between commands.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use tokio_util::sync::CancellationToken;

use hearth_core::Hearth;

use crate::dto::{ErrorDto, ShortcutStatus};

/// Shared state of the running app.
pub struct AppState {
    /// The engine, or why it could not open (shown by the UI instead of crashing).
    pub hearth: Result<Hearth, ErrorDto>,
    /// The quick-prompt shortcut as last registered (or not).
    pub shortcut: Mutex<ShortcutStatus>,
    /// Turns streaming now, by id, with the label of the window that started each (its
    /// events go there, and only it may stop the turn).
    pub turns: Mutex<HashMap<u64, (String, CancellationToken)>>,
    pub next_turn: AtomicU64,
    /// The engine's background job workers, while the app runs.
    pub jobs: Mutex<Option<hearth_core::RunningJobs>>,
    /// The folder watcher, while the app runs.
    pub watching: Mutex<Option<hearth_core::WatchingFolders>>,
    /// The questions tool calls wait on; the consent window shows and answers them.
    pub consent: std::sync::Arc<hearth_core::ConsentQueue>,
    /// The built-in model's download running now: its name and how to cancel it.
    pub download: Mutex<Option<(String, CancellationToken)>>,
}

impl AppState {
    pub fn hearth(&self) -> Result<&Hearth, ErrorDto> {
        self.hearth.as_ref().map_err(Clone::clone)
    }
}
