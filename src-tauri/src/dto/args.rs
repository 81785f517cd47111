//! Each IPC command's arguments, as one struct: the command takes `args: Args<ItsArgs>`
//! and Tauri's payload (the object the UI passes to `invoke`, camelCase keys) is
//! deserialized into it whole. The UI's argument types are generated from these structs by
//! ts-rs (`commands.ts`), so the UI and the command cannot disagree on a name or a type.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use tauri::Runtime;
use tauri::ipc::{CommandArg, CommandItem, InvokeBody, InvokeError};
use ts_rs::TS;

use super::{MemoryChangeDto, SlotDto};

/// A command's arguments: the whole invoke payload, deserialized as `T`. An argument the
/// UI got wrong is refused with `invalid_input`, naming the command.
pub struct Args<T>(pub T);

impl<'de, T: DeserializeOwned, R: Runtime> CommandArg<'de, R> for Args<T> {
    fn from_command(command: CommandItem<'de, R>) -> Result<Self, InvokeError> {
        let parsed = match command.message.payload() {
            InvokeBody::Json(value) => T::deserialize(value),
            InvokeBody::Raw(_) => {
                return Err(InvokeError::from(super::ErrorDto::new(
                    "invalid_input",
                    format!("{}: expected JSON arguments", command.name),
                )));
            }
        };
        parsed.map(Args).map_err(|e| {
            InvokeError::from(super::ErrorDto::new(
                "invalid_input",
                format!("{}: {e}", command.name),
            ))
        })
    }
}

/// The arguments of `set_shortcut`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetShortcutArgs {
    pub accelerator: String,
}

/// The arguments of a command about one conversation.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ConversationArgs {
    pub conversation_id: String,
}

/// The arguments of `send_message`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageArgs {
    pub conversation_id: Option<String>,
    pub text: String,
    pub temporary: bool,
    /// Send it even over a spending cap (the user chose "Send this message anyway").
    #[serde(default)]
    #[ts(optional)]
    pub over_budget: Option<bool>,
    /// The model the user chose for this message in the composer (default: the router's).
    #[serde(default)]
    #[ts(optional)]
    pub tier: Option<TierDto>,
}

/// The composer's choice of model for one message.
#[derive(Debug, Clone, Copy, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum TierDto {
    /// The router decides.
    Auto,
    /// The fast model.
    Fast,
    /// The main (strong) model.
    Strong,
}

impl From<TierDto> for hearth_core::TierChoice {
    fn from(t: TierDto) -> Self {
        match t {
            TierDto::Auto => Self::Auto,
            TierDto::Fast => Self::Fast,
            TierDto::Strong => Self::Strong,
        }
    }
}

/// The arguments of `stop_turn`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct StopTurnArgs {
    #[ts(type = "number")]
    pub turn_id: u64,
}

/// The arguments of `delete_conversation`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct DeleteConversationArgs {
    pub conversation_id: String,
    pub delete_memories: bool,
}

/// The arguments of `edit_last_message`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct EditLastMessageArgs {
    pub conversation_id: String,
    pub text: String,
}

/// The arguments of `add_provider`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AddProviderArgs {
    pub name: String,
    pub preset: String,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
}

/// The arguments of a command about one provider, by name.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ProviderNameArgs {
    pub name: String,
}

/// The arguments of `set_slots`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetSlotsArgs {
    pub main: SlotDto,
    pub fast: Option<SlotDto>,
    pub fallback: Option<SlotDto>,
    pub fallback_enabled: bool,
}

/// The arguments of `set_budget`: the caps to keep (`null` removes one), overall or for
/// one provider.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetBudgetArgs {
    pub provider: Option<String>,
    pub daily_usd: Option<f64>,
    pub monthly_usd: Option<f64>,
}

/// The arguments of `get_usage`: count from local midnight of this day (`YYYY-MM-DD`).
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct GetUsageArgs {
    pub since: String,
}

/// The arguments of `set_routing`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetRoutingArgs {
    pub enabled: bool,
    pub cascade: bool,
}

/// The arguments of `set_model_info`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetModelInfoArgs {
    pub model: String,
    pub context_window: Option<u32>,
    pub input_usd_per_mtok: Option<f64>,
    pub output_usd_per_mtok: Option<f64>,
    pub cached_usd_per_mtok: Option<f64>,
}

/// The arguments of `reset_model_info`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ResetModelInfoArgs {
    pub model: String,
}

/// The arguments of `list_memories`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ListMemoriesArgs {
    pub kind: Option<String>,
    pub query: Option<String>,
    pub removed: bool,
    pub pinned: Option<bool>,
    pub critical: Option<bool>,
    pub source: Option<String>,
    #[ts(type = "number | null")]
    pub from: Option<i64>,
    #[ts(type = "number | null")]
    pub to: Option<i64>,
}

/// The arguments of a command about one memory or proposal, by id.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct IdArgs {
    pub id: String,
}

/// The arguments of `add_memory`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AddMemoryArgs {
    pub text: String,
    pub kind: String,
    pub pinned: bool,
    pub critical: bool,
}

/// The arguments of `edit_memory`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct EditMemoryArgs {
    pub id: String,
    pub text: String,
}

/// The arguments of `set_memory_pinned`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetMemoryPinnedArgs {
    pub id: String,
    pub pinned: bool,
}

/// The arguments of `set_memory_critical`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetMemoryCriticalArgs {
    pub id: String,
    pub critical: bool,
}

/// The arguments of `delete_memories`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct DeleteMemoriesArgs {
    pub ids: Vec<String>,
}

/// The arguments of `forget_memories`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ForgetMemoriesArgs {
    pub all: bool,
    #[ts(type = "number | null")]
    pub from: Option<i64>,
    #[ts(type = "number | null")]
    pub to: Option<i64>,
}

/// The arguments of `export_memories`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ExportMemoriesArgs {
    pub format: String,
}

/// The arguments of `import_memories`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ImportMemoriesArgs {
    pub content: String,
}

/// The arguments of `set_memory_settings`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetMemorySettingsArgs {
    pub enabled: bool,
    pub extraction_paused: bool,
}

/// The arguments of `undo_memory_change`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct UndoMemoryChangeArgs {
    pub change: MemoryChangeDto,
}

/// The arguments of `set_embedding`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetEmbeddingArgs {
    pub kind: String,
    pub provider: Option<String>,
    pub model: Option<String>,
}

/// The arguments of a command about one watched folder (`add_folder`, `remove_folder`).
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct FolderPathArgs {
    pub path: String,
}

/// The arguments of `set_folder_paused`: one folder, or every folder when `path` is null.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetFolderPausedArgs {
    pub path: Option<String>,
    pub paused: bool,
}

/// The arguments of `set_folder_writable`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetFolderWritableArgs {
    pub path: String,
    pub writable: bool,
}

/// The arguments of `list_folder_files`: a folder's entries, or only those of one status
/// (indexed, pending, skipped, failed).
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct FolderFilesArgs {
    pub path: String,
    pub status: Option<String>,
}

/// The arguments of `search_documents`: what to look for, in one folder or all.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SearchDocumentsArgs {
    pub query: String,
    pub folder: Option<String>,
    /// hybrid (the default), bm25 or vector.
    pub mode: Option<String>,
    pub limit: Option<u32>,
}

/// The arguments of a command about one indexed passage (`get_passage`, `open_source_file`).
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ChunkArgs {
    #[ts(type = "number")]
    pub chunk_id: i64,
}

/// The arguments of `open_source_file`: open the file, or show it in its folder.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct OpenSourceArgs {
    #[ts(type = "number")]
    pub chunk_id: i64,
    pub reveal: bool,
}

/// The arguments of a command about one built-in model, by name.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct BuiltinNameArgs {
    pub name: String,
}

/// The arguments of `use_builtin_model`: the chat's model, or (`fast`) background work's.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct UseBuiltinArgs {
    pub name: String,
    pub fast: bool,
}

/// The arguments of `add_builtin_model`: a GGUF on disk, added in place.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AddBuiltinArgs {
    pub path: String,
    pub name: Option<String>,
}

/// The arguments of `set_idle_unload`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct IdleUnloadArgs {
    pub seconds: u32,
}

/// The arguments of `set_update_check`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetUpdateCheckArgs {
    pub on: bool,
}

/// The arguments of `set_open_at_login`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetOpenAtLoginArgs {
    pub on: bool,
}
