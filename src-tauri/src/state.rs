//! What the shell keeps between commands.

use std::sync::Mutex;

use hearth_core::Hearth;

use crate::dto::{ErrorDto, ShortcutStatus};

/// Shared state of the running app.
pub struct AppState {
    /// The engine, or why it could not open (shown by the UI instead of crashing).
    pub hearth: Result<Hearth, ErrorDto>,
    /// The quick-prompt shortcut as last registered (or not).
    pub shortcut: Mutex<ShortcutStatus>,
}

impl AppState {
    pub fn hearth(&self) -> Result<&Hearth, ErrorDto> {
        self.hearth.as_ref().map_err(Clone::clone)
    }
}
