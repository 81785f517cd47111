//! Memories, proposals, memory settings, the embedding model and transfer.

use serde::Serialize;
use ts_rs::TS;

/// Where a memory came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MemorySourceDto {
    /// `conversation`, `file`, `manual` or `import`.
    pub kind: String,
    pub conversation_id: Option<String>,
    #[ts(type = "number | null")]
    pub message_id: Option<i64>,
    pub path: Option<String>,
}

/// A memory. Times are ms since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct MemoryDto {
    pub id: String,
    pub text: String,
    /// `fact`, `preference`, `episode` or `instruction`.
    pub kind: String,
    pub subject: Option<String>,
    pub importance: f64,
    pub pinned: bool,
    /// Safety-critical (allergies, hard constraints): always in the prompt, first.
    pub critical: bool,
    pub confidence: f64,
    pub source: MemorySourceDto,
    #[ts(type = "number | null")]
    pub event_at: Option<i64>,
    #[ts(type = "number")]
    pub created: i64,
    #[ts(type = "number")]
    pub updated: i64,
    #[ts(type = "number | null")]
    pub last_used: Option<i64>,
    pub use_count: u32,
    /// `active`, `removed` (by the assistant; restorable) or `superseded`.
    pub status: String,
    #[ts(type = "number | null")]
    pub removed_at: Option<i64>,
    /// Removed by the assistant on its own while learning (not by the user): it waits for
    /// the user's consent, and restoring it says no.
    pub removal_awaits_consent: bool,
    /// The words around it where it came from (an imported conversation's neighbouring
    /// turns): search reads them; the prompt's memory block never carries them.
    pub context: Option<String>,
    /// The parts of life it touches: `health`, `family`, `home`, `work`, `money`,
    /// `travel`, `schedule`, `leisure`, `style`.
    pub facets: Vec<String>,
    /// It stopped being true (its words say so, or a newer memory replaced it): listed and
    /// searchable, but the memory block prefers the current one.
    pub no_longer_true: bool,
    /// The memory that replaced it, when the user said their life changed.
    pub superseded_by: Option<String>,
}

/// One change in a memory's history. A user's delete leaves a `delete` entry without text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MemoryHistoryDto {
    /// `add`, `update`, `pin`, `unpin`, `critical`, `uncritical`, `remove`, `restore`,
    /// `merge`, `delete`, `import`, `supersede`, `unsupersede`.
    pub op: String,
    pub old_text: Option<String>,
    pub new_text: Option<String>,
    /// `assistant`, `user` or `import`.
    pub actor: String,
    #[ts(type = "number")]
    pub at: i64,
}

/// A memory with its history, for the detail panel.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct MemoryDetailDto {
    pub memory: MemoryDto,
    pub history: Vec<MemoryHistoryDto>,
    /// Changes Hearth suggests to it (pinned or critical), waiting for the user.
    pub proposals: Vec<MemoryProposalDto>,
}

/// A change Hearth suggests to a pinned or critical memory, waiting for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MemoryProposalDto {
    pub id: String,
    pub memory_id: String,
    /// The protected memory's text now.
    pub memory_text: String,
    /// `update` or `remove`.
    pub action: String,
    /// For `update`: the text Hearth suggests.
    pub proposed_text: Option<String>,
    /// A memory to add if accepted (the candidate that replaces the removed one).
    pub new_memory: Option<String>,
    pub reason: String,
    pub conversation_id: Option<String>,
    #[ts(type = "number | null")]
    pub message_id: Option<i64>,
    #[ts(type = "number")]
    pub created: i64,
}

/// How many active memories of each kind, and how many were recently removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MemoryCountsDto {
    pub fact: u32,
    pub preference: u32,
    pub episode: u32,
    pub instruction: u32,
    pub removed: u32,
    /// Tokens the critical and pinned memories alone take in the prompt, and the budget
    /// (the prompt assembler's own, for the main model's window).
    pub always_tokens: u32,
    pub budget: u32,
    /// Proposals waiting for the user.
    pub proposals: u32,
}

/// The memory controls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MemorySettingsDto {
    /// Memory on: used in answers and learned from conversations.
    pub enabled: bool,
    /// Learning paused: memories are still used, nothing new is learned.
    pub extraction_paused: bool,
}

/// The embedding model behind memory search (Memory → settings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct EmbeddingStatusDto {
    /// "local" | "off" | "provider".
    pub kind: String,
    /// With kind "provider": the provider's name and its model.
    pub provider: Option<String>,
    pub provider_model: Option<String>,
    /// With kind "local": which local model (an id of `local_models`).
    pub local_model: Option<String>,
    /// The local models the user can choose.
    pub local_models: Vec<LocalModelDto>,
    /// The choice as the CLI writes it: `local`, `off`, `PROVIDER:MODEL`.
    pub label: String,
    /// The model whose vectors search uses now; null: keyword-only.
    pub model: Option<String>,
    pub dimensions: Option<u32>,
    /// The chosen local model's files are on this computer.
    pub local_model_on_disk: bool,
    /// Memories that want a vector, and how many have one from `model`.
    pub memories: u32,
    pub embedded: u32,
    /// The local model is being downloaded now.
    pub downloading: bool,
    /// The local model is in the app's memory now (dropped after the idle-unload time).
    pub loaded: bool,
}

/// A local embedding model in the chooser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct LocalModelDto {
    pub id: String,
    pub description: String,
    pub download_mb: u32,
    pub on_disk: bool,
}

impl From<hearth_core::EmbeddingStatus> for EmbeddingStatusDto {
    fn from(s: hearth_core::EmbeddingStatus) -> Self {
        use hearth_core::EmbeddingChoice;
        let (kind, provider, provider_model, local_model) = match s.choice {
            EmbeddingChoice::Local { model } => ("local", None, None, Some(model.id().to_owned())),
            EmbeddingChoice::Off => ("off", None, None, None),
            EmbeddingChoice::Provider {
                provider, model, ..
            } => ("provider", Some(provider), Some(model), None),
        };
        Self {
            kind: kind.into(),
            provider,
            provider_model,
            local_model,
            local_models: s
                .local_models
                .into_iter()
                .map(|m| LocalModelDto {
                    id: m.id,
                    description: m.description,
                    download_mb: m.download_mb,
                    on_disk: m.on_disk,
                })
                .collect(),
            label: s.label,
            model: s.model,
            dimensions: s.dimensions.map(|d| d as u32),
            local_model_on_disk: s.local_model_on_disk,
            memories: s.memories as u32,
            embedded: s.embedded as u32,
            downloading: s.downloading,
            loaded: s.loaded,
        }
    }
}

/// Memories being given vectors by `model`: `done` of `total`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct EmbeddingProgressEvent {
    pub model: String,
    pub done: u32,
    pub total: u32,
}

/// The local embedding model downloading: bytes of `file` so far, of `total` if known.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ModelDownloadEvent {
    pub file: String,
    pub done: f64,
    pub total: Option<f64>,
}

/// A change the assistant made to memory after a turn (the "Memory updated" chip), with
/// what undoing it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[ts(export)]
pub struct MemoryChangeDto {
    pub memory_id: String,
    /// `add`, `update`, `remove` or `proposal` (a pinned or critical memory Hearth wanted
    /// to change: nothing changed, the proposal waits).
    pub op: String,
    /// The memory's text after the change (for `remove`: the removed text; for
    /// `proposal`: what Hearth suggests).
    pub text: String,
    /// For `update`: the text before.
    pub old_text: Option<String>,
    /// For `proposal`: the proposal to accept or reject.
    #[serde(default)]
    pub proposal_id: Option<String>,
}

/// Memory changed after a turn of this conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MemoryUpdatedEvent {
    pub conversation_id: String,
    /// The answer whose exchange taught it.
    #[ts(type = "number | null")]
    pub message_id: Option<i64>,
    pub changes: Vec<MemoryChangeDto>,
}

/// Where an export was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ExportResultDto {
    pub path: String,
    pub count: u32,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ImportResultDto {
    pub added: u32,
    /// Already known (same text), skipped.
    pub skipped: u32,
}
