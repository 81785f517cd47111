//! The Tools screen's MCP servers: what a server and its tools look like to the UI, and
//! the arguments of the commands over them. Secret values go in (`AddMcpServerArgs`) and
//! never come out: a server lists the names of its env variables and headers only.

use hearth_core::McpServer as ServerRow;
use hearth_core::McpTransport as Transport;
use hearth_core::{ImportReport, McpToolInfo, ToolReview};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One MCP server as last known, with its recent stderr lines (this process's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct McpServerDto {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command and its arguments, or the URL.
    pub target: String,
    /// The env variables and headers it is given (names only; values are secrets).
    pub env: Vec<String>,
    pub headers: Vec<String>,
    /// Where their values are kept: `none`, `keyring` or `database` (the encrypted store,
    /// under the file and passphrase key backends).
    pub secrets_location: String,
    pub enabled: bool,
    pub approved: bool,
    /// `new`, `ready` or `error`.
    pub state: String,
    pub last_error: Option<String>,
    /// Its last stderr lines (kept in memory only).
    pub log: Vec<String>,
}

impl McpServerDto {
    pub fn new(row: ServerRow, log: Vec<String>) -> Self {
        let (transport, target) = match &row.transport {
            Transport::Stdio { command, args } => (
                "stdio",
                format!("{} {}", command.display(), args.join(" "))
                    .trim_end()
                    .to_owned(),
            ),
            Transport::Http { url } => ("http", url.clone()),
        };
        Self {
            name: row.name,
            transport: transport.into(),
            target,
            env: row.env,
            headers: row.headers,
            secrets_location: row.secrets_location,
            enabled: row.enabled,
            approved: row.approved,
            state: row.state,
            last_error: row.last_error,
            log,
        }
    }
}

/// One tool of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct McpToolDto {
    /// The name the model calls it by (`server__tool`).
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    pub server: String,
    pub description: String,
    /// The tier the gate applies: `read`, `write` or `destructive`.
    pub risk: String,
    /// Why: `unconfirmed` (the server's labels not accepted: destructive), `labels_accepted`
    /// or `user`.
    pub risk_source: String,
    pub open_world: bool,
    /// What the server's annotations claim (`read`, `write` or `destructive`): a claim,
    /// never a permission.
    pub claim: String,
    pub claim_open_world: bool,
    /// The user accepted the server's labels for this definition.
    pub labels_accepted: bool,
    /// `enabled`, `disabled_changed`, `disabled_new` or `needs_approval`.
    pub state: String,
}

impl From<McpToolInfo> for McpToolDto {
    fn from(t: McpToolInfo) -> Self {
        Self {
            name: t.name,
            tool: t.tool,
            server: t.server,
            description: t.description,
            risk: t.risk.as_str().into(),
            risk_source: t.risk_source.into(),
            open_world: t.open_world,
            claim: t.claim.as_str().into(),
            claim_open_world: t.claim_open_world,
            labels_accepted: t.labels_accepted,
            state: t.state.as_str().into(),
        }
    }
}

/// What changed in a tool since the user approved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct McpReviewDto {
    pub name: String,
    pub tool: String,
    pub state: String,
    /// A unified diff of the definition, approved → now.
    pub diff: String,
    /// Its annotations now ask for less care than the approved ones did.
    pub risk_lowered: bool,
}

impl From<ToolReview> for McpReviewDto {
    fn from(r: ToolReview) -> Self {
        Self {
            name: r.name,
            tool: r.tool,
            state: r.state.as_str().into(),
            diff: r.diff,
            risk_lowered: r.risk_lowered,
        }
    }
}

/// A server an import skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct McpSkippedDto {
    pub name: String,
    pub reason: String,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct McpImportDto {
    /// The servers added (not started, nothing approved).
    pub imported: Vec<String>,
    /// What the user should know ("ignored autoApprove …"), prefixed by the server's name.
    pub notes: Vec<String>,
    pub skipped: Vec<McpSkippedDto>,
}

impl From<ImportReport> for McpImportDto {
    fn from(r: ImportReport) -> Self {
        Self {
            notes: r
                .imported
                .iter()
                .flat_map(|s| s.notes.iter().map(|n| format!("{}: {n}", s.server.name)))
                .collect(),
            imported: r.imported.into_iter().map(|s| s.server.name).collect(),
            skipped: r
                .skipped
                .into_iter()
                .map(|s| McpSkippedDto {
                    name: s.name,
                    reason: s.reason,
                })
                .collect(),
        }
    }
}

/// A name and a secret value (an env variable or a header of a server being added).
#[derive(Deserialize, TS)]
#[ts(export)]
pub struct SecretPairDto {
    pub name: String,
    pub value: String,
}

/// The name only: the value is a secret and never reaches a log, even a debug one.
impl std::fmt::Debug for SecretPairDto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretPairDto")
            .field("name", &self.name)
            .field("value", &"<redacted>")
            .finish()
    }
}

/// The arguments of `add_mcp_server`: a command (and its arguments) or a URL.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AddMcpServerArgs {
    pub name: String,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    pub url: Option<String>,
    #[serde(default)]
    pub env: Vec<SecretPairDto>,
    #[serde(default)]
    pub headers: Vec<SecretPairDto>,
}

/// The arguments of the commands over one server.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpNameArgs {
    pub name: String,
}

/// The arguments of `approve_mcp_tools`: every tool of the server, or one.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ApproveMcpArgs {
    pub name: String,
    pub tool: Option<String>,
}

/// The arguments of `set_mcp_enabled`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetMcpEnabledArgs {
    pub name: String,
    pub enabled: bool,
}

/// The arguments of `import_mcp_servers`: a config file, or Claude Desktop's.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ImportMcpArgs {
    pub path: Option<String>,
    #[serde(default)]
    pub claude_desktop: bool,
    #[serde(default)]
    pub replace: bool,
}

/// The arguments of `set_tool_risk`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetToolRiskArgs {
    pub tool: String,
    /// `read`, `write` or `destructive`.
    pub risk: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(transport: Transport) -> ServerRow {
        ServerRow {
            name: "fs".into(),
            transport,
            env: vec!["API_TOKEN".into()],
            headers: vec![],
            secrets_location: "keyring".into(),
            enabled: true,
            approved: false,
            state: "new".into(),
            last_error: None,
        }
    }

    #[test]
    fn a_server_shows_its_target_and_the_names_of_its_secrets_only() {
        let stdio = McpServerDto::new(
            row(Transport::Stdio {
                command: "/usr/bin/node".into(),
                args: vec!["index.js".into(), "/tmp/shared".into()],
            }),
            vec!["listening".into()],
        );
        assert_eq!(stdio.transport, "stdio");
        assert_eq!(stdio.target, "/usr/bin/node index.js /tmp/shared");
        assert_eq!(stdio.env, ["API_TOKEN"]);
        assert_eq!(stdio.secrets_location, "keyring");
        assert_eq!(stdio.log, ["listening"]);
        let bare = McpServerDto::new(
            row(Transport::Stdio {
                command: "/usr/bin/srv".into(),
                args: vec![],
            }),
            vec![],
        );
        assert_eq!(bare.target, "/usr/bin/srv");
        let http = McpServerDto::new(
            row(Transport::Http {
                url: "https://example.test/mcp".into(),
            }),
            vec![],
        );
        assert_eq!(
            (http.transport.as_str(), http.target.as_str()),
            ("http", "https://example.test/mcp")
        );
    }

    #[test]
    fn secret_values_go_in_and_never_reach_a_debug_log() {
        let args: AddMcpServerArgs = serde_json::from_value(serde_json::json!({
            "name": "fs",
            "command": "node",
            "args": ["index.js"],
            "url": null,
            "env": [{ "name": "API_TOKEN", "value": "tok-secret-1" }],
            "headers": [],
        }))
        .expect("the UI's payload");
        assert_eq!(args.env[0].value, "tok-secret-1");
        let logged = format!("{args:?}");
        assert!(logged.contains("API_TOKEN"), "{logged}");
        assert!(!logged.contains("tok-secret-1"), "{logged}");
    }

    #[test]
    fn an_import_report_names_the_server_of_each_note() {
        let report: McpImportDto = ImportReport {
            imported: vec![hearth_core::ImportedServer {
                server: row(Transport::Http {
                    url: "https://example.test/mcp".into(),
                }),
                notes: vec!["ignored \"autoApprove\"".into()],
            }],
            skipped: vec![],
        }
        .into();
        assert_eq!(report.imported, ["fs"]);
        assert_eq!(report.notes, ["fs: ignored \"autoApprove\""]);
        assert!(report.skipped.is_empty());
    }
}
