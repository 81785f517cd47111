//! The MCP service of the façade: every use case of `hearth mcp` and the Tools screen's
//! servers, so the app and the CLI behave the same.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::Hearth;
use crate::tools::gate::{Act, Consent, confirm};
use crate::tools::mcp::config::{Secrets, Transport, resolve_command};
use crate::tools::mcp::desktop::{self, DesktopServer, REDACTED, Skipped};
use crate::tools::mcp::registry::{Registry, ServerRow, ToolRow, definition_diff};
use crate::tools::mcp::{Definition, ToolState};
use crate::tools::{Origin, Risk, ToolInfo};
use crate::{Error, Result};

mod transfer;

/// A server to add.
#[derive(Debug, Clone, Default)]
pub struct NewServer {
    pub name: String,
    /// A command (bare, resolved on the user's PATH, or a path) and its arguments…
    pub command: Option<String>,
    pub args: Vec<String>,
    /// …or a Streamable HTTP URL.
    pub url: Option<String>,
    /// Env values and header values: secrets.
    pub env: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
}

/// One tool of a server as `hearth mcp tools` and the Tools screen show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpToolInfo {
    /// The name the model calls it by (`server__tool`).
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    pub server: String,
    pub description: String,
    /// Its effective tier: what the gate applies.
    pub risk: Risk,
    /// Why: `user` (a tier the user set), `labels_accepted` (the user took the server's
    /// claim) or `unconfirmed` (neither: destructive, whatever the server claims).
    pub risk_source: &'static str,
    /// Whether the gate treats it as reaching beyond the computer.
    pub open_world: bool,
    /// What the server claims (its annotations): a claim, never a permission.
    pub claim: Risk,
    pub claim_open_world: bool,
    /// The user accepted the server's labels for this definition.
    pub labels_accepted: bool,
    pub state: ToolState,
}

/// What changed in a tool since the user approved it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolReview {
    pub name: String,
    pub tool: String,
    pub state: ToolState,
    /// A unified diff of the definition (approved → now); for a new tool, its whole
    /// definition as added lines.
    pub diff: String,
    /// Its annotations now ask for less care than the approved ones did.
    pub risk_lowered: bool,
}

/// A server with what was learned starting it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerReport {
    #[serde(flatten)]
    pub server: ServerRow,
    pub tools: Vec<McpToolInfo>,
}

/// A server an import added, with what the user should know about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedServer {
    #[serde(flatten)]
    pub server: ServerRow,
    /// Keys of its entry Hearth ignored, redacted values it could not keep, …
    pub notes: Vec<String>,
}

/// What an import did: the servers added (not started, nothing approved) and those it
/// skipped, with why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportReport {
    pub imported: Vec<ImportedServer>,
    pub skipped: Vec<Skipped>,
}

/// `hearth mcp …` and the Tools screen's servers.
pub struct McpService {
    hearth: Hearth,
}

/// A server row as it may be shown: its URL without credentials or query values.
fn shown(mut row: ServerRow) -> ServerRow {
    if let Transport::Http { url } = &mut row.transport {
        *url = crate::tools::mcp::config::redact_url(url);
    }
    row
}

fn info_of(row: &ToolRow, server_approved: bool) -> McpToolInfo {
    let (risk, risk_source) = row.risk();
    let (claim, claim_open_world) = row.claim();
    McpToolInfo {
        name: row.exposed.clone(),
        tool: row.definition.name.clone(),
        server: row.server.clone(),
        description: row.definition.description.clone(),
        risk,
        risk_source,
        open_world: row.open_world(),
        claim,
        claim_open_world,
        labels_accepted: row.labels_accepted,
        state: row.state(server_approved),
    }
}

impl McpService {
    pub(super) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    fn registry(&self) -> Registry {
        Registry::new(self.hearth.inner.store.clone())
    }

    fn builtins() -> Vec<String> {
        crate::tools::run::catalog(true)
            .into_iter()
            .map(|t| t.name)
            .collect()
    }

    fn transport_of(
        command: Option<&str>,
        args: &[String],
        url: Option<&str>,
    ) -> Result<Transport> {
        match (command, url) {
            (Some(cmd), None) => {
                let cwd = std::env::current_dir().unwrap_or_else(|_| Path::new("/").into());
                Ok(Transport::Stdio {
                    command: resolve_command(cmd, std::env::var_os("PATH"), &cwd)?,
                    args: args.to_vec(),
                })
            }
            (None, Some(url)) => {
                let ok = reqwest::Url::parse(url)
                    .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
                if !ok {
                    return Err(Error::InvalidInput(format!(
                        "{} is not an http(s) URL",
                        crate::tools::mcp::config::redact_url(url)
                    )));
                }
                Ok(Transport::Http {
                    url: url.to_owned(),
                })
            }
            _ => Err(Error::InvalidInput(
                "a server needs a command or a URL, not both".into(),
            )),
        }
    }

    /// Adds a server: stores its config (a bare command resolved on PATH to an absolute
    /// path; env and header values in the keyring), starts it once to list its tools and
    /// approves nothing. If it does not start, nothing is kept (`mcp_start_failed`). It
    /// starts a program of the user's choosing, so the user confirms it first on
    /// `surface` (the consent window, the terminal, or `--yes`): `confirmation_required`.
    pub async fn add(
        &self,
        new: NewServer,
        replace: bool,
        surface: &dyn Consent,
    ) -> Result<ServerReport> {
        let transport = Self::transport_of(new.command.as_deref(), &new.args, new.url.as_deref())?;
        if let Transport::Http { url } = &transport {
            crate::tools::mcp::config::check_secrets_travel(url, !new.headers.is_empty())
                .map_err(Error::InvalidInput)?;
        }
        crate::tools::mcp::config::check_name(&new.name)?;
        confirm(surface, &Self::add_act(&new.name, &transport, &new)).await?;
        let secrets = Secrets {
            env: new.env,
            headers: new.headers,
        };
        let registry = self.registry();
        let server = registry.add(&new.name, &transport, &secrets, replace)?;
        let manager = &self.hearth.inner.mcp;
        if let Err(e) = manager.refresh(&registry, &server, &Self::builtins()).await {
            manager.stop(Some(&server.name)).await;
            let _ = registry.remove(&server.name);
            return Err(Error::McpStart {
                server: server.name,
                detail: e.detail,
                stderr: e.stderr,
            });
        }
        self.report(&server.name)
    }

    /// The question adding a server asks.
    fn add_act(name: &str, transport: &Transport, new: &NewServer) -> Act {
        let (program, reason) = match transport {
            Transport::Stdio { command, args } => (
                serde_json::json!({"command": command.to_string_lossy(), "args": args,
                                   "env": new.env.keys().collect::<Vec<_>>()}),
                "it starts this program on this computer, as you, whenever its tools are \
                 listed or used",
            ),
            Transport::Http { url } => (
                serde_json::json!({"url": crate::tools::mcp::config::redact_url(url),
                                   "headers": new.headers.keys().collect::<Vec<_>>()}),
                "Hearth will connect to this service and send it what its tools are given",
            ),
        };
        Act {
            what: format!("add the MCP server {name}"),
            origin: Origin::Mcp(name.to_owned()),
            reason: reason.into(),
            details: serde_json::to_string_pretty(&program).unwrap_or_default(),
        }
    }

    fn report(&self, name: &str) -> Result<ServerReport> {
        let registry = self.registry();
        let server = registry.require(name)?;
        let tools = registry
            .tools(name)?
            .iter()
            .map(|t| info_of(t, server.approved))
            .collect();
        Ok(ServerReport {
            server: shown(server),
            tools,
        })
    }

    /// Every server as last known (starts nothing), as it may be shown: a URL without its
    /// credentials or query values (tokens ride there).
    pub fn list(&self) -> Result<Vec<ServerRow>> {
        Ok(self.registry().list()?.into_iter().map(shown).collect())
    }

    /// Starts the server (if it is not running) and lists its tools now.
    pub async fn tools(&self, name: &str) -> Result<Vec<McpToolInfo>> {
        let registry = self.registry();
        let server = registry.require(name)?;
        self.hearth
            .inner
            .mcp
            .refresh(&registry, &server, &Self::builtins())
            .await
            .map_err(|e| Error::McpStart {
                server: name.to_owned(),
                detail: e.detail,
                stderr: e.stderr,
            })?;
        Ok(self.report(name)?.tools)
    }

    /// The tools as last listed (starts nothing).
    pub fn known_tools(&self, name: &str) -> Result<Vec<McpToolInfo>> {
        Ok(self.report(name)?.tools)
    }

    /// Approves the server's tools as listed now (or those `tools` name), pinning their
    /// definitions. With `accept_labels` the user takes the server's annotations as those
    /// tools' tiers; without, each is `destructive` (asks every time, never granted)
    /// until the user accepts its labels or sets its tier. The user confirms it on
    /// `surface` first, shown each tool with its claim (`confirmation_required`). Returns
    /// how many were approved.
    pub async fn approve(
        &self,
        name: &str,
        tools: &[String],
        accept_labels: bool,
        surface: &dyn Consent,
    ) -> Result<usize> {
        let registry = self.registry();
        registry.require(name)?;
        let present = registry.tools(name)?;
        for t in tools {
            if !present
                .iter()
                .any(|r| r.definition.name == *t || r.exposed == *t)
            {
                return Err(Error::NotFound(format!(
                    "{name:?} lists no tool named {t:?}"
                )));
            }
        }
        let rows: Vec<ToolRow> = present
            .into_iter()
            .filter(|r| {
                tools.is_empty()
                    || tools
                        .iter()
                        .any(|t| r.definition.name == *t || r.exposed == *t)
            })
            .collect();
        // Each tool with its claim and the start of the hash of the definition shown: what
        // the user approves is pinned, nothing listed after the question.
        let listed: Vec<String> = rows
            .iter()
            .map(|r| {
                let (claim, open) = r.claim();
                format!(
                    "{}: claims {}{} (definition {})",
                    r.exposed,
                    claim.as_str(),
                    if open { ", reaches outside" } else { "" },
                    r.hash.get(..12).unwrap_or(&r.hash)
                )
            })
            .collect();
        let act = Act {
            what: {
                let n = rows.len();
                let tools = if n == 1 { "tool" } else { "tools" };
                if accept_labels {
                    format!("approve {n} {tools} of {name} and trust its labels")
                } else {
                    format!("approve {n} {tools} of {name}")
                }
            },
            origin: Origin::Mcp(name.to_owned()),
            reason: if accept_labels {
                "the server's own labels become these tools' tiers: one it calls read-only \
                 runs without asking"
                    .into()
            } else {
                "these tools will be offered to the model; each asks before it runs until you \
                 accept the server's labels or set its tier"
                    .into()
            },
            details: listed.join("\n"),
        };
        confirm(surface, &act).await?;
        let shown: Vec<(String, String)> = rows
            .iter()
            .map(|r| (r.definition.name.clone(), r.hash.clone()))
            .collect();
        registry.approve(name, &shown, accept_labels)
    }

    /// What changed since the user approved: every tool that is not enabled, with a diff.
    pub fn review(&self, name: &str) -> Result<Vec<ToolReview>> {
        let registry = self.registry();
        let server = registry.require(name)?;
        let empty = Definition {
            name: String::new(),
            description: String::new(),
            input_schema: serde_json::Value::Null,
            annotations: serde_json::Value::Null,
        };
        Ok(registry
            .tools(name)?
            .iter()
            .filter(|t| t.state(server.approved) != ToolState::Enabled)
            .map(|t| {
                let old = t.approved.as_ref().unwrap_or(&empty);
                let (now, _) = t.definition.annotated_risk();
                let risk_lowered = t
                    .approved
                    .as_ref()
                    .is_some_and(|a| now < a.annotated_risk().0);
                ToolReview {
                    name: t.exposed.clone(),
                    tool: t.definition.name.clone(),
                    state: t.state(server.approved),
                    diff: definition_diff(old, &t.definition),
                    risk_lowered,
                }
            })
            .collect())
    }

    /// Removes a server (stopping it), its tools and its secrets.
    pub async fn remove(&self, name: &str) -> Result<()> {
        self.hearth.inner.mcp.stop(Some(name)).await;
        if !self.registry().remove(name)? {
            return Err(Error::NotFound(format!("no MCP server named {name:?}")));
        }
        Ok(())
    }

    /// Turns a server on or off (off: stopped, none of its tools offered); the server as
    /// it may be shown.
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<ServerRow> {
        let row = self.registry().set_enabled(name, enabled)?;
        if !enabled {
            self.hearth.inner.mcp.stop(Some(name)).await;
        }
        Ok(shown(row))
    }

    /// One server as it may be shown; `not_found` when there is none by that name.
    pub fn server(&self, name: &str) -> Result<ServerRow> {
        self.registry().require(name).map(shown)
    }

    /// A server's recent stderr lines, kept in memory only (this process's); `not_found`
    /// when there is no server by that name.
    pub fn log(&self, name: &str) -> Result<Vec<String>> {
        self.registry().require(name)?;
        Ok(self.logs(name))
    }

    /// As [`Self::log`], for a server just listed (no lookup).
    pub fn logs(&self, name: &str) -> Vec<String> {
        self.hearth.inner.mcp.logs(name)
    }

    /// Stops every server this process started.
    pub async fn shutdown(&self) {
        self.hearth.inner.mcp.stop(None).await;
    }

    /// The MCP tools as the tools list shows them (last known; starts nothing).
    pub fn tool_infos(&self) -> Result<Vec<ToolInfo>> {
        let registry = self.registry();
        let servers = registry.list()?;
        let mut out = Vec::new();
        for t in registry.all_tools()? {
            let Some(server) = servers.iter().find(|s| s.name == t.server) else {
                continue;
            };
            let (risk, risk_source) = t.risk();
            out.push(ToolInfo {
                name: t.exposed.clone(),
                description: t.definition.description.clone(),
                origin: crate::tools::Origin::Mcp(t.server.clone()),
                risk,
                risk_source,
                enabled: server.enabled && t.state(server.approved) == ToolState::Enabled,
            });
        }
        Ok(out)
    }

    /// Sets the risk tier of a tool (an MCP tool by its exposed name; built-ins keep
    /// theirs). A tier lower than the one the gate applies now lowers caution: the user
    /// confirms it on `surface` first (`confirmation_required`).
    pub async fn set_risk(&self, tool: &str, risk: Risk, surface: &dyn Consent) -> Result<()> {
        if Self::builtins().iter().any(|b| b == tool) {
            return Err(Error::InvalidInput(format!(
                "{tool} is built in; its risk tier is fixed"
            )));
        }
        let registry = self.registry();
        let Some(row) = registry
            .all_tools()?
            .into_iter()
            .find(|t| t.exposed == tool)
        else {
            return Err(Error::NotFound(format!("no MCP tool named {tool:?}")));
        };
        let (now, _) = row.risk();
        if risk < now {
            let (claim, _) = row.claim();
            confirm(
                surface,
                &Act {
                    what: format!("make {tool} {}", risk.as_str()),
                    origin: Origin::Mcp(row.server.clone()),
                    reason: format!(
                        "it is {} now; as {} it {}",
                        now.as_str(),
                        risk.as_str(),
                        if risk == Risk::Read {
                            "runs without asking"
                        } else {
                            "can be allowed ahead (a grant or --allow-writes)"
                        }
                    ),
                    details: format!(
                        "{tool}: the server claims {}\n{}",
                        claim.as_str(),
                        row.definition.description
                    ),
                },
            )
            .await?;
        }
        if !registry.set_risk(tool, Some(risk))? {
            return Err(Error::NotFound(format!("no MCP tool named {tool:?}")));
        }
        Ok(())
    }

    /// The tools a chat offers from MCP servers now (starting enabled servers).
    pub(super) async fn offered(
        &self,
    ) -> (
        Vec<std::sync::Arc<dyn crate::tools::external::ExternalTool>>,
        Vec<crate::tools::mcp::manager::Unavailable>,
    ) {
        self.hearth
            .inner
            .mcp
            .offered(&self.registry(), &Self::builtins())
            .await
    }
}
