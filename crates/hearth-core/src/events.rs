//! Events the engine emits to whoever drives it (desktop shell, CLI).

use serde::Serialize;

/// Something the user may want to see reflected right away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The database changed, by this process or another one (e.g. the CLI while the app runs).
    StoreChanged,
    /// Memory was learned from an exchange of `conversation` (the "Memory updated" chip).
    MemoryUpdated {
        conversation: String,
        /// The answer of the exchange.
        message: i64,
        changes: Vec<crate::memory::Change>,
    },
    /// Re-embedding memories with `model`: `done` of `total` have its vectors.
    EmbeddingProgress {
        model: String,
        done: usize,
        total: usize,
    },
    /// Indexing watched folders: `done` files of `total` handled in this run.
    IndexProgress { done: u64, total: u64 },
}
