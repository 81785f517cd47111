//! hearth-core — Hearth's engine: a chat turn (context, the model and tool loop, consent),
//! tools and MCP, learning from each exchange, providers and models, and the [`Hearth`]
//! façade the desktop shell and the `hearth` CLI call, with its [`Event`]s. It composes the
//! crates below it (`hearth-store`, `hearth-llm`, `hearth-embed`, `hearth-folders`,
//! `hearth-memory`, `hearth-text`, `hearth-base`).
//!
//! **Never depends on** Tauri, a webview, a UI or a terminal (`scripts/test.sh` checks its
//! tree), nor on `hearth-eval`: both front ends run the same engine headless or not, and
//! every product rule lives here once. Its surface is the façade and the data types
//! re-exported below; everything else is `pub` only with the `internals` feature.

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

/// Modules front ends must not reach: `pub` with the `internals` feature (integration
/// tests, benches), `pub(crate)` without it. The front ends are built without it (`make
/// lint` builds them alone), so they compile only against the façade and the data types
/// re-exported below.
macro_rules! engine_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports, unreachable_pub)]
        pub(crate) mod $name;
    )*};
}

engine_modules!(
    builtin,
    chat,
    context,
    conversations,
    learn,
    models,
    pricing,
    providers,
    route,
    tools,
);

/// The crates below the engine, under the module names the engine uses for them: `pub`
/// with the `internals` feature (integration tests, benches), private without it. The
/// front ends do not depend on these crates at all, so they cannot name them.
macro_rules! engine_crates {
    ($($name:ident = $root:ident $(:: $seg:ident)*),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        pub use $root $(:: $seg)* as $name;
        #[cfg(not(feature = "internals"))]
        #[allow(unused_imports)]
        use $root $(:: $seg)* as $name;
    )*};
}

engine_crates!(
    audit = hearth_store::audit,
    embed = hearth_embed,
    error = hearth_base::error,
    failpoint = hearth_base::failpoint,
    folders = hearth_folders,
    fsio = hearth_base::fsio,
    llm = hearth_llm,
    memory = hearth_memory,
    paths = hearth_base::paths,
    rank = hearth_text::rank,
    store = hearth_store,
    time = hearth_base::time,
    tokens = hearth_text::tokens,
    types = hearth_base::types,
);

mod budget;
/// Showing outside text on a terminal (a leaf of pure functions the CLI calls directly).
pub mod display;
mod entry;
mod events;
mod hearth;
mod usage;

pub use builtin::catalog::CatalogEntry;
pub use builtin::{
    CatalogView as CatalogModel, InstalledModel, ModelView as BuiltinModel, WorkerState,
};
pub use entry::process_start;
pub use events::Event;
pub use folders::watch::POLL_EVERY as FOLDER_POLL_EVERY;
pub use hearth::{
    ActivityService, BuiltinService, BuiltinStatus, ConversationService, DownloadProgress,
    EffectiveSlots, EmbeddingStatus, ExportFormat, FailedJob, FolderService, FolderState,
    FolderSummary, Hearth, INGEST_JOB, ImportReport, ImportedServer, IndexOptions, IndexSummary,
    JobResult, JobRunner, KeyService, LocalModelStatus, McpService, McpToolInfo, MemoryCounts,
    MemoryDetail, MemoryService, ModelChoice, ModelService, NewServer, ProviderService,
    RECENT_AUDIT_ENTRIES, REEMBED_JOB, RunPolicy, RunningJobs, SearchScope, ServerReport, Status,
    ToolReview, Turn, UPDATE_CHECK_EVERY_MS, UpdateService, UpdateSettings, WatchingFolders,
    set_build_commit, set_release_freed_memory,
};
pub use hearth_base::{Error, Result, ServiceError};
pub use paths::DataDir;

// The data the front ends convert to DTOs or text, and the consent interface they
// implement: plain data and enums, nothing that reaches the store or a provider.
pub use audit::{Entry as AuditEntry, Filter as AuditFilter, Verification as AuditVerification};
pub use budget::{
    BudgetSettings, Caps as BudgetCaps, NOTICE_AT as BUDGET_NOTICE_AT, Period as BudgetPeriod,
    Standing as BudgetStanding,
};
pub use chat::cache::CacheSettings;
pub use chat::{ChatOptions, Redo, StopReason, TurnEvent, TurnInfo, TurnOutcome};
pub use context::ZoneTokens;
pub use conversations::{ConversationSummary, MessageState};
pub use embed::{EmbeddingChoice, LocalModel};
pub use folders::cite::{PassageView, Source as CitedSource};
pub use folders::index::Progress as IndexProgress;
pub use folders::search::{Found as SearchFound, Hit as SearchHit, Mode as SearchMode};
pub use folders::{FileStatus, Reason as FileReason, ScanReport};
pub use llm::Protocol;
pub use memory::proposals::{Proposal, ProposalAction};
pub use memory::{
    Change as MemoryChange, Filter as MemoryFilter, Kind as MemoryKind, Memory, MemorySettings,
    NewMemory, Source as MemorySource,
};
pub use models::{ModelEdit, ModelInfo};
pub use paths::{default_data_dir, export_dir, fallback_webview_dir};
pub use providers::{NewProvider, Preset, ProviderConfig, Slot, SlotChoices};
pub use route::{Reason as RouteReason, Route, RoutingSettings, Tier, TierChoice};
pub use store::jobs::{JobCounts, JobId};
pub use store::key::{KeyBackend, RecoveryKey};
pub use store::{OpenOptions, PASSPHRASE_ENV, Passphrase};
pub use time::now_millis;
pub use tools::gate::{
    Answer as ConsentAnswer, ConfirmedAhead, Consent, ConsentQueue, ConsentRequest,
    Pending as PendingConsent, ToolSettings,
};
pub use tools::mcp::config::Transport as McpTransport;
pub use tools::mcp::registry::ServerRow as McpServer;
pub use tools::{CallRecord, Risk, ToolInfo};
pub use usage::{RoutingReport, UsageGroup, UsageReport, UsageRow};
