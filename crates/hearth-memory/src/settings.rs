//! The user's memory settings (learning on/off, …).

use serde::{Deserialize, Serialize};

use crate::Result;
use crate::store::Store;

/// The user's memory controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySettings {
    /// Memory on: read into prompts and learned from conversations.
    pub enabled: bool,
    /// Learning paused: memories are still used, nothing new is extracted.
    pub extraction_paused: bool,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            enabled: true,
            extraction_paused: false,
        }
    }
}

const SETTINGS_KEY: &str = "memory";

/// The memory controls.
pub fn settings(store: &Store) -> Result<MemorySettings> {
    Ok(store.setting(SETTINGS_KEY)?.unwrap_or_default())
}

/// Changes the memory controls.
pub fn set_settings(store: &Store, s: MemorySettings) -> Result<()> {
    store.set_setting(SETTINGS_KEY, &s)
}
