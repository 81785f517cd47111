//! The IPC contract: what crosses from Rust to the web UI. TypeScript types are generated
//! from these (ts-rs) into `ui/src/lib/bindings/`, so the UI never hand-copies a type.
//! Domain types stay in `hearth-core`; these mirror them in the shape the UI wants.

use serde::Serialize;
use ts_rs::TS;

/// What `hearth doctor` reports, as the Status panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct StatusDto {
    pub data_dir: String,
    pub db_path: String,
    pub db_id: String,
    pub schema_version: u32,
    pub sqlite_version: String,
    pub sqlcipher_version: String,
    pub sqlite_vec_version: String,
    pub key_backend: String,
    pub encrypted: bool,
    pub fts5: bool,
    pub vec0: bool,
    pub warnings: Vec<String>,
}

impl From<hearth_core::Status> for StatusDto {
    fn from(s: hearth_core::Status) -> Self {
        Self {
            data_dir: s.data_dir,
            db_path: s.db_path,
            db_id: s.db_id,
            schema_version: s.schema_version,
            sqlite_version: s.sqlite_version,
            sqlcipher_version: s.sqlcipher_version,
            sqlite_vec_version: s.sqlite_vec_version,
            key_backend: s.key_backend,
            encrypted: s.encrypted,
            fts5: s.fts5,
            vec0: s.vec0,
            warnings: s.warnings,
        }
    }
}

/// A failed command: a stable code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ErrorDto {
    pub code: String,
    pub message: String,
}

impl ErrorDto {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl From<hearth_core::Error> for ErrorDto {
    fn from(e: hearth_core::Error) -> Self {
        Self::new(e.code(), e.to_string())
    }
}

impl From<tauri::Error> for ErrorDto {
    fn from(e: tauri::Error) -> Self {
        Self::new("window", e.to_string())
    }
}

/// The quick-prompt global shortcut and whether the OS gave it to us.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ShortcutStatus {
    pub accelerator: String,
    pub registered: bool,
    pub error: Option<String>,
}

/// Whether chat can start, and with what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatStatusDto {
    pub ready: bool,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// What to do when not ready.
    pub hint: Option<String>,
}

/// A conversation in the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ConversationDto {
    pub id: String,
    pub title: String,
    #[ts(type = "number")]
    pub updated_at: i64,
    pub messages: u32,
}

/// A stored message; `role` is user|assistant, `state` complete|streaming|stopped|interrupted|failed.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct MessageDto {
    #[ts(type = "number")]
    pub id: i64,
    pub role: String,
    pub content: String,
    pub state: String,
    /// For an answer: the model, tokens, cost and context of its turn.
    pub turn: Option<TurnInfoDto>,
}

/// Tokens per zone of the prompt a turn sent (the context inspector).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ZonesDto {
    /// Persona, rules and tool catalog (the stable prefix).
    pub system: u32,
    /// What Hearth knows about the user.
    pub memory: u32,
    /// The rolling summary of older turns.
    pub summary: u32,
    /// Earlier turns kept verbatim.
    pub history: u32,
    /// Retrieved passages for this turn.
    pub retrieved: u32,
    /// The message being answered.
    pub current: u32,
    /// Held back for the answer.
    pub output_reserve: u32,
    /// What the prompt may use in all (effective window minus the output reserve).
    pub input_budget: u32,
    /// The model's advertised context window.
    pub window: u32,
    /// Earlier messages left out to fit (covered by the summary when there is one).
    pub dropped: u32,
}

impl From<hearth_core::context::ZoneTokens> for ZonesDto {
    fn from(z: hearth_core::context::ZoneTokens) -> Self {
        Self {
            system: z.system,
            memory: z.memory,
            summary: z.summary,
            history: z.history,
            retrieved: z.retrieved,
            current: z.current,
            output_reserve: z.output_reserve,
            input_budget: z.input_budget,
            window: z.window,
            dropped: z.dropped,
        }
    }
}

impl From<hearth_core::chat::TurnInfo> for TurnInfoDto {
    fn from(t: hearth_core::chat::TurnInfo) -> Self {
        Self {
            provider: t.provider,
            model: t.model,
            input_tokens: t.usage.input_tokens,
            output_tokens: t.usage.output_tokens,
            cached_input_tokens: t.usage.cached_input_tokens,
            cost_usd: t.cost_usd,
            zones: Some(t.zones.into()),
            fallback_from: t.fallback_from,
        }
    }
}

/// What one answer cost and what its prompt held.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct TurnInfoDto {
    pub provider: String,
    pub model: String,
    #[ts(type = "number")]
    pub input_tokens: u64,
    #[ts(type = "number")]
    pub output_tokens: u64,
    #[ts(type = "number")]
    pub cached_input_tokens: u64,
    /// USD; 0 on a local server, `null` when the price is unknown.
    pub cost_usd: Option<f64>,
    pub zones: Option<ZonesDto>,
    /// Set when the main model failed and the enabled fallback answered: the main model's name.
    pub fallback_from: Option<String>,
}

/// A turn that started; its answer arrives as `chat_token` events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SendResultDto {
    #[ts(type = "number")]
    pub turn_id: u64,
}

/// A piece of a streaming answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatTokenEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub text: String,
}

/// A turn that finished (completely or stopped by the user).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ChatDoneEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub conversation_id: Option<String>,
    pub answer: String,
    pub stopped: bool,
    #[ts(type = "number")]
    pub input_tokens: u64,
    #[ts(type = "number")]
    pub output_tokens: u64,
    /// The stored answer (`null` in a temporary chat).
    #[ts(type = "number | null")]
    pub message_id: Option<i64>,
    pub turn: TurnInfoDto,
}

/// A turn that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatFailedEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub code: String,
    pub message: String,
}

/// Asks the main window to show a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct OpenConversationEvent {
    pub conversation_id: String,
}

/// A provider preset offered by "Add provider".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PresetDto {
    /// `openai`, `anthropic`, `openrouter`, `ollama`, `lmstudio`, `llamacpp`, `vllm`, `custom`.
    pub id: String,
    pub label: String,
    /// The default base URL (ends in `/v1` for OpenAI-compatible servers); `null` for custom.
    pub base_url: Option<String>,
    pub needs_key: bool,
    /// `openai` (Chat Completions) or `anthropic` (Messages).
    pub protocol: String,
    /// Runs on this computer (Ollama, LM Studio, llama.cpp).
    pub local: bool,
}

/// A configured provider (never with its key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProviderDto {
    pub name: String,
    pub preset: String,
    pub protocol: String,
    pub base_url: String,
    /// Where its API key is kept: `none`, `keyring` or `database` (encrypted).
    pub key_location: String,
}

/// A model a provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ModelDto {
    pub id: String,
    pub context_window: Option<u32>,
    /// Where the window comes from: `server`, `user` (the editable table), `table` (built in) or `unknown`.
    pub window_source: String,
}

/// The result of "Test connection".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProviderTestDto {
    pub ok: bool,
    pub models: Vec<ModelDto>,
    pub error: Option<ErrorDto>,
}

/// A model server found running on this computer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DetectedServerDto {
    pub preset: String,
    pub label: String,
    pub base_url: String,
    pub models: Vec<String>,
    /// The name of the configured provider already pointing at it, if any.
    pub configured_as: Option<String>,
}

/// A provider and one of its models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[ts(export)]
pub struct SlotDto {
    pub provider: String,
    pub model: String,
}

/// Which models answer (`main`), summarise and extract (`fast`), and stand in when the main
/// one fails (`fallback`, used only when enabled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SlotsDto {
    pub main: Option<SlotDto>,
    pub fast: Option<SlotDto>,
    pub fallback: Option<SlotDto>,
    pub fallback_enabled: bool,
    /// HEARTH_PROVIDER_URL is set: the environment's one-off provider overrides these.
    pub from_env: bool,
}

/// A row of the model table: context window and prices, built in or edited by the user.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ModelInfoDto {
    /// A model name or name prefix (`gpt-4o` covers `gpt-4o-2024-08-06`).
    pub model: String,
    pub context_window: Option<u32>,
    pub input_usd_per_mtok: Option<f64>,
    pub output_usd_per_mtok: Option<f64>,
    pub cached_usd_per_mtok: Option<f64>,
    /// The user changed or added this row.
    pub edited: bool,
}

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
}

/// One change in a memory's history. A user's delete leaves a `delete` entry without text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MemoryHistoryDto {
    /// `add`, `update`, `pin`, `unpin`, `critical`, `uncritical`, `remove`, `restore`,
    /// `merge`, `delete`, `import`.
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
    /// The choice as the CLI writes it: `local`, `off`, `PROVIDER:MODEL`.
    pub label: String,
    /// The model whose vectors search uses now; null: keyword-only.
    pub model: Option<String>,
    pub dimensions: Option<u32>,
    /// The local model's files are on this computer.
    pub local_model_on_disk: bool,
    /// Memories that want a vector, and how many have one from `model`.
    pub memories: u32,
    pub embedded: u32,
    /// The local model is being downloaded now.
    pub downloading: bool,
}

impl EmbeddingStatusDto {
    pub fn new(s: hearth_core::EmbeddingStatus, downloading: bool) -> Self {
        use hearth_core::embed::EmbeddingChoice;
        let (kind, provider, provider_model) = match s.choice {
            EmbeddingChoice::Local => ("local", None, None),
            EmbeddingChoice::Off => ("off", None, None),
            EmbeddingChoice::Provider {
                provider, model, ..
            } => ("provider", Some(provider), Some(model)),
        };
        Self {
            kind: kind.into(),
            provider,
            provider_model,
            label: s.label,
            model: s.model,
            dimensions: s.dimensions.map(|d| d as u32),
            local_model_on_disk: s.local_model_on_disk,
            memories: s.memories as u32,
            embedded: s.embedded as u32,
            downloading,
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

/// Every command: name, TypeScript arguments, TypeScript result. `build.rs` declares the
/// same names for the permission system; a test keeps the two lists equal.
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("get_status", "Record<string, never>", "StatusDto"),
    ("get_shortcut", "Record<string, never>", "ShortcutStatus"),
    ("set_shortcut", "{ accelerator: string }", "ShortcutStatus"),
    ("toggle_quick_prompt", "Record<string, never>", "null"),
    ("hide_quick_prompt", "Record<string, never>", "null"),
    ("show_main_window", "Record<string, never>", "null"),
    ("chat_status", "Record<string, never>", "ChatStatusDto"),
    (
        "list_conversations",
        "Record<string, never>",
        "Array<ConversationDto>",
    ),
    (
        "get_messages",
        "{ conversationId: string }",
        "Array<MessageDto>",
    ),
    (
        "send_message",
        "{ conversationId: string | null; text: string; temporary: boolean }",
        "SendResultDto",
    ),
    ("stop_turn", "{ turnId: number }", "null"),
    (
        "delete_conversation",
        "{ conversationId: string; deleteMemories: boolean }",
        "null",
    ),
    (
        "count_conversation_memories",
        "{ conversationId: string }",
        "number",
    ),
    ("open_in_main", "{ conversationId: string }", "null"),
    ("regenerate", "{ conversationId: string }", "SendResultDto"),
    (
        "edit_last_message",
        "{ conversationId: string; text: string }",
        "SendResultDto",
    ),
    ("list_presets", "Record<string, never>", "Array<PresetDto>"),
    (
        "list_providers",
        "Record<string, never>",
        "Array<ProviderDto>",
    ),
    (
        "add_provider",
        "{ name: string; preset: string; baseUrl: string | null; apiKey: string | null }",
        "ProviderDto",
    ),
    ("remove_provider", "{ name: string }", "null"),
    ("test_provider", "{ name: string }", "ProviderTestDto"),
    (
        "detect_local_servers",
        "Record<string, never>",
        "Array<DetectedServerDto>",
    ),
    ("get_slots", "Record<string, never>", "SlotsDto"),
    (
        "set_slots",
        "{ main: SlotDto; fast: SlotDto | null; fallback: SlotDto | null; fallbackEnabled: boolean }",
        "SlotsDto",
    ),
    (
        "list_model_info",
        "Record<string, never>",
        "Array<ModelInfoDto>",
    ),
    (
        "set_model_info",
        "{ model: string; contextWindow: number | null; inputUsdPerMtok: number | null; outputUsdPerMtok: number | null; cachedUsdPerMtok: number | null }",
        "Array<ModelInfoDto>",
    ),
    (
        "reset_model_info",
        "{ model: string }",
        "Array<ModelInfoDto>",
    ),
    (
        "list_memories",
        "{ kind: string | null; query: string | null; removed: boolean; pinned: boolean | null; critical: boolean | null; source: string | null; from: number | null; to: number | null }",
        "Array<MemoryDto>",
    ),
    ("memory_counts", "Record<string, never>", "MemoryCountsDto"),
    ("get_memory", "{ id: string }", "MemoryDetailDto"),
    (
        "add_memory",
        "{ text: string; kind: string; pinned: boolean; critical: boolean }",
        "MemoryDto",
    ),
    ("edit_memory", "{ id: string; text: string }", "MemoryDto"),
    (
        "set_memory_pinned",
        "{ id: string; pinned: boolean }",
        "MemoryDto",
    ),
    (
        "set_memory_critical",
        "{ id: string; critical: boolean }",
        "MemoryDto",
    ),
    ("delete_memories", "{ ids: Array<string> }", "number"),
    ("restore_memory", "{ id: string }", "MemoryDto"),
    ("empty_removed_memories", "Record<string, never>", "number"),
    (
        "forget_memories",
        "{ all: boolean; from: number | null; to: number | null }",
        "number",
    ),
    ("export_memories", "{ format: string }", "ExportResultDto"),
    ("import_memories", "{ content: string }", "ImportResultDto"),
    (
        "get_memory_settings",
        "Record<string, never>",
        "MemorySettingsDto",
    ),
    (
        "set_memory_settings",
        "{ enabled: boolean; extractionPaused: boolean }",
        "MemorySettingsDto",
    ),
    ("undo_memory_change", "{ change: MemoryChangeDto }", "null"),
    (
        "list_memory_proposals",
        "Record<string, never>",
        "Array<MemoryProposalDto>",
    ),
    ("accept_memory_proposal", "{ id: string }", "null"),
    ("reject_memory_proposal", "{ id: string }", "null"),
    (
        "get_embedding_status",
        "Record<string, never>",
        "EmbeddingStatusDto",
    ),
    (
        "set_embedding",
        "{ kind: string; provider: string | null; model: string | null }",
        "EmbeddingStatusDto",
    ),
    (
        "download_embedding_model",
        "Record<string, never>",
        "EmbeddingStatusDto",
    ),
];

/// Every event: name and TypeScript payload.
pub const EVENTS: &[(&str, &str)] = &[
    ("store_changed", "null"),
    ("shortcut_changed", "ShortcutStatus"),
    ("chat_token", "ChatTokenEvent"),
    ("chat_done", "ChatDoneEvent"),
    ("chat_failed", "ChatFailedEvent"),
    ("open_conversation", "OpenConversationEvent"),
    ("memory_updated", "MemoryUpdatedEvent"),
    ("embedding_progress", "EmbeddingProgressEvent"),
    ("model_download_progress", "ModelDownloadEvent"),
];

/// Types `commands.ts` imports, in alphabetical order.
const IMPORTS: &[&str] = &[
    "ChatDoneEvent",
    "ChatFailedEvent",
    "ChatStatusDto",
    "ChatTokenEvent",
    "ConversationDto",
    "DetectedServerDto",
    "EmbeddingProgressEvent",
    "EmbeddingStatusDto",
    "ErrorDto",
    "ExportResultDto",
    "ImportResultDto",
    "MemoryChangeDto",
    "MemoryCountsDto",
    "MemoryDetailDto",
    "MemoryDto",
    "MemoryProposalDto",
    "MemorySettingsDto",
    "MemoryUpdatedEvent",
    "MessageDto",
    "ModelDownloadEvent",
    "ModelInfoDto",
    "OpenConversationEvent",
    "PresetDto",
    "ProviderDto",
    "ProviderTestDto",
    "SendResultDto",
    "ShortcutStatus",
    "SlotDto",
    "SlotsDto",
    "StatusDto",
];

/// The text of `commands.ts`.
pub fn commands_ts() -> String {
    let mut s = String::from(
        "// Generated by src-tauri (cargo test -p hearth-desktop export_bindings). Do not edit.\n",
    );
    for t in IMPORTS {
        s.push_str(&format!("import type {{ {t} }} from \"./{t}\";\n"));
    }
    s.push_str("\n/** Every IPC command the shell exposes: its arguments and its result. */\nexport type Commands = {\n");
    for (name, args, result) in COMMANDS {
        s.push_str(&format!(
            "  {name}: {{ args: {args}; result: {result} }};\n"
        ));
    }
    s.push_str(
        "};\n\n/** Every event the shell emits and its payload. */\nexport type Events = {\n",
    );
    for (name, payload) in EVENTS {
        s.push_str(&format!("  {name}: {payload};\n"));
    }
    s.push_str(
        "};\n\n/** What a failed command rejects with. */\nexport type CommandError = ErrorDto;\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bindings_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/bindings")
    }

    /// Writes `commands.ts` (ts-rs writes the type files in its own `export_bindings_*` tests).
    #[test]
    fn export_bindings_commands() {
        std::fs::write(bindings_dir().join("commands.ts"), commands_ts())
            .expect("write commands.ts");
    }

    #[test]
    fn command_list_matches_the_permission_manifest() {
        let build_rs = include_str!("../build.rs");
        for (name, _, _) in COMMANDS {
            assert!(
                build_rs.contains(&format!("\"{name}\"")),
                "{name} missing from build.rs"
            );
        }
        assert_eq!(build_rs.matches("\",\n").count(), COMMANDS.len());
    }
}
