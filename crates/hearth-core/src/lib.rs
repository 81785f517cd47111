//! Hearth's engine: the encrypted store, its key, durable jobs, and the [`Hearth`] façade.
//!
//! Nothing in this crate knows about Tauri, a UI or a terminal: the desktop shell and the
//! `hearth` CLI both call [`Hearth`] and listen to its [`Event`]s.

/// A function front ends must not reach: `pub` with the `internals` feature (tests,
/// benches), `pub(crate)` without it, so the CLI and the app stop compiling if they call
/// it (they go through the `Hearth` façade's use cases).
#[macro_export]
#[doc(hidden)]
macro_rules! internal {
    ($(#[$m:meta])* fn $name:ident $($rest:tt)*) => {
        #[cfg(feature = "internals")]
        $(#[$m])*
        pub fn $name $($rest)*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code)]
        $(#[$m])*
        pub(crate) fn $name $($rest)*
    };
}

pub mod audit;
pub mod chat;
pub mod context;
pub mod conversations;
pub mod display;
pub mod embed;
mod entry;
mod error;
mod events;
mod failpoint;
pub mod folders;
mod fsio;
mod hearth;
pub mod llm;
pub mod memory;
pub mod models;
pub mod paths;
pub mod pricing;
pub mod providers;
pub mod rank;
pub mod store;
pub mod time;
pub mod tokens;
pub mod tools;
pub mod types;
mod usage;

pub use entry::process_start;
pub use error::{Error, Result, ServiceError};
pub use events::Event;
pub use folders::watch::POLL_EVERY as FOLDER_POLL_EVERY;
pub use hearth::eval;
pub use hearth::{
    ActivityService, ConversationService, EffectiveSlots, EmbeddingStatus, ExportFormat, FailedJob,
    FolderService, FolderState, FolderSummary, Hearth, INGEST_JOB, ImportReport, ImportedServer,
    IndexOptions, IndexSummary, JobResult, JobRunner, KeyService, LocalModelStatus, McpService,
    McpToolInfo, MemoryCounts, MemoryDetail, MemoryService, ModelChoice, ModelService, NewServer,
    ProviderService, RECENT_AUDIT_ENTRIES, REEMBED_JOB, RunPolicy, RunningJobs, SearchScope,
    ServerReport, Status, ToolReview, Turn, WatchingFolders,
};
pub use paths::DataDir;
pub use store::key::{KeyBackend, RecoveryKey};
pub use store::{OpenOptions, PASSPHRASE_ENV, Passphrase};
