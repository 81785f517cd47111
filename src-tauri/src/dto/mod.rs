//! The IPC contract: what crosses from Rust to the web UI. TypeScript types are generated
//! from these (ts-rs) into `ui/src/lib/bindings/`, so the UI never hand-copies a type.
//! Domain types stay in `hearth-core`; these mirror them in the shape the UI wants.

use serde::Serialize;
use ts_rs::TS;

pub mod args;
mod chat;
mod folders;
mod mcp;
mod memory;
mod models;
mod providers;
mod tools;
mod updates;

pub use args::*;
pub use chat::*;
pub use folders::*;
pub use mcp::*;
pub use memory::*;
pub use models::*;
pub use providers::*;
pub use tools::*;
pub use updates::*;

/// What `hearth doctor` reports, as the Status panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct StatusDto {
    pub version: String,
    pub commit: String,
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
            version: s.version,
            commit: s.commit,
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

mod table {
    include!("../../commands.in.rs");
}
/// Every command (declared once in `commands.in.rs`).
pub use table::COMMANDS;

/// Each command's TypeScript types, from its Rust argument struct and result type.
mod types {
    #[allow(unused_imports)]
    use super::*;
    include!(concat!(env!("OUT_DIR"), "/command_types.rs"));
}

/// Every event: name and TypeScript payload.
pub const EVENTS: &[(&str, &str)] = &[
    ("store_changed", "null"),
    ("shortcut_changed", "ShortcutStatus"),
    ("chat_token", "ChatTokenEvent"),
    ("chat_done", "ChatDoneEvent"),
    ("chat_failed", "ChatFailedEvent"),
    ("chat_tool_started", "ChatToolStartedEvent"),
    ("chat_tool", "ChatToolEvent"),
    ("chat_escalating", "ChatEscalatingEvent"),
    ("chat_waiting", "ChatWaitingEvent"),
    ("open_conversation", "OpenConversationEvent"),
    ("memory_updated", "MemoryUpdatedEvent"),
    ("embedding_progress", "EmbeddingProgressEvent"),
    ("model_download_progress", "ModelDownloadEvent"),
    ("builtin_download_progress", "BuiltinDownloadEvent"),
    ("index_progress", "IndexProgressEvent"),
    ("consent_changed", "number"),
    ("update_available", "UpdateOfferDto"),
];

/// Types `commands.ts` imports, in alphabetical order.
const IMPORTS: &[&str] = &[
    "AddFolderResultDto",
    "AuditEntryDto",
    "AuditVerifyDto",
    "BuiltinCatalogDto",
    "BuiltinDownloadEvent",
    "BuiltinModelDto",
    "BuiltinStatusDto",
    "ChatDoneEvent",
    "ChatEscalatingEvent",
    "ChatFailedEvent",
    "ChatStatusDto",
    "ChatTokenEvent",
    "ChatToolEvent",
    "ChatToolStartedEvent",
    "ChatWaitingEvent",
    "ConsentRequestDto",
    "ConversationDto",
    "DetectedServerDto",
    "EmbeddingProgressEvent",
    "EmbeddingStatusDto",
    "ErrorDto",
    "ExportResultDto",
    "FileDto",
    "FolderDto",
    "GrantDto",
    "ImportResultDto",
    "IndexProgressEvent",
    "McpImportDto",
    "McpReviewDto",
    "McpServerDto",
    "McpToolDto",
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
    "PassageDto",
    "PresetDto",
    "ProviderDto",
    "ProviderTestDto",
    "SearchResultDto",
    "SecretPairDto",
    "SendResultDto",
    "ShortcutStatus",
    "SlotDto",
    "SlotsDto",
    "SpendingDto",
    "StatusDto",
    "TierDto",
    "ToolDto",
    "UpdateOfferDto",
    "UsageDto",
    "UpdatesDto",
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
    for (name, args, result) in types::command_types() {
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

    /// The table's argument struct and result type are the command function's own, so the
    /// TypeScript generated from them is what the command really takes and answers.
    #[test]
    fn every_command_takes_and_answers_the_types_its_bindings_say() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for c in COMMANDS {
            let text = std::fs::read_to_string(src.join(format!("{}.rs", c.module)))
                .expect("the command's module");
            let start = [
                format!("pub fn {}", c.name),
                format!("pub async fn {}", c.name),
            ]
            .iter()
            .find_map(|p| text.find(&format!("{p}(")).or(text.find(&format!("{p}<"))))
            .unwrap_or_else(|| panic!("{} is not in src/{}.rs", c.name, c.module));
            let signature: String = text[start..]
                .split_once(" {\n")
                .map(|(sig, _)| sig)
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            match c.args {
                Some(args) => assert!(
                    signature.contains(&format!("args: Args<{args}>")),
                    "{} takes Args<{args}>: {signature}",
                    c.name
                ),
                None => assert!(
                    !signature.contains("Args<"),
                    "{} takes no arguments: {signature}",
                    c.name
                ),
            }
            assert!(
                signature.ends_with(&format!("-> Result<{}, ErrorDto>", c.result))
                    || signature.ends_with(&format!("-> {}", c.result)),
                "{} answers {}: {signature}",
                c.name,
                c.result
            );
        }
    }

    #[test]
    fn every_command_is_registered_and_allowed_for_its_windows_only() {
        let lib = include_str!("../lib.rs");
        assert!(
            lib.contains("handler.rs"),
            "lib.rs registers build.rs's handler list"
        );
        for (window, file) in [
            ("main", include_str!("../../capabilities/main-window.json")),
            (
                "quick",
                include_str!("../../capabilities/quick-window.json"),
            ),
            (
                "consent",
                include_str!("../../capabilities/consent-window.json"),
            ),
        ] {
            for c in COMMANDS {
                let allowed = file.contains(&format!("\"allow-{}\"", c.name.replace('_', "-")));
                assert_eq!(
                    allowed,
                    c.windows.contains(&window),
                    "{} in the {window} window's capability",
                    c.name
                );
            }
        }
        let mut names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
        names.sort_unstable();
        // The consent surface: only its window may answer, and it may do nothing else
        // that starts a turn or changes files.
        let answer = COMMANDS
            .iter()
            .find(|c| c.name == "answer_consent")
            .expect("answer_consent is declared");
        assert_eq!(answer.windows, &["consent"]);
        for file in [
            include_str!("../../capabilities/main-window.json"),
            include_str!("../../capabilities/quick-window.json"),
        ] {
            assert!(!file.contains("allow-answer-consent"), "{file}");
        }
        let consent = include_str!("../../capabilities/consent-window.json");
        for c in COMMANDS.iter().filter(|c| c.windows.contains(&"consent")) {
            assert!(
                matches!(
                    c.name,
                    "list_consent_requests"
                        | "answer_consent"
                        | "list_memory_proposals"
                        | "accept_memory_proposal"
                        | "reject_memory_proposal"
                ),
                "the consent window may not call {}",
                c.name
            );
        }
        assert!(consent.contains("\"windows\": [\"consent\"]"));
        // A capability file the config does not list grants nothing: every window's is there.
        let conf = include_str!("../../tauri.conf.json");
        for id in ["main-window", "quick-window", "consent-window"] {
            assert!(
                conf.contains(&format!("\"{id}\"")),
                "tauri.conf.json lists {id}"
            );
        }
        names.dedup();
        assert_eq!(names.len(), COMMANDS.len(), "a command is declared twice");
    }
}
