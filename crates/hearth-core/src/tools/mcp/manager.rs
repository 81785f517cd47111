//! The servers running in this process, started on first use and restarted (with a
//! backoff) when one died; and the tools a run offers from them.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ToolState;
use super::client::{Connection, Logs, StartError};
use super::registry::{Registry, ServerRow, ToolRow};
use crate::tools::external::{ExternalOutput, ExternalTool};
use crate::tools::{Origin, Risk};

/// The first wait before a dead server is started again; doubled each time, at most
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Slot {
    conn: Option<Arc<Connection>>,
    logs: Logs,
    /// Failed starts in a row, and when the next may be tried.
    failures: u32,
    not_before: Option<Instant>,
}

/// Running servers, by name.
#[derive(Default)]
pub struct Manager {
    slots: tokio::sync::Mutex<HashMap<String, Slot>>,
    logs: Mutex<HashMap<String, Logs>>,
}

impl Manager {
    /// A server's recent stderr lines (memory only).
    pub fn logs(&self, server: &str) -> Vec<String> {
        self.logs
            .lock()
            .ok()
            .and_then(|m| m.get(server).map(|l| l.tail(super::client::LOG_LINES)))
            .unwrap_or_default()
    }

    fn logs_of(&self, server: &str) -> Logs {
        self.logs
            .lock()
            .map(|mut m| m.entry(server.to_owned()).or_default().clone())
            .unwrap_or_default()
    }

    /// The server's live connection, started (or restarted after it died) as needed;
    /// its tool list recorded after a start or a `list_changed`.
    pub async fn connect(
        &self,
        registry: &Registry,
        server: &ServerRow,
        builtins: &[String],
    ) -> Result<Arc<Connection>, StartError> {
        let mut slots = self.slots.lock().await;
        let slot = slots.entry(server.name.clone()).or_default();
        if let Some(c) = &slot.conn {
            if !c.is_closed() {
                let c = c.clone();
                if c.take_list_changed() {
                    self.relist(registry, &server.name, &c, builtins).await;
                }
                return Ok(c);
            }
            tracing::warn!(server = %server.name, "MCP server died; starting it again");
            slot.conn = None;
        }
        if let Some(t) = slot.not_before
            && Instant::now() < t
        {
            return Err(StartError {
                detail: "it failed to start a moment ago; trying again shortly".into(),
                stderr: slot.logs.tail(20),
            });
        }
        slot.logs = self.logs_of(&server.name);
        let secrets = registry.secrets(server).map_err(|e| StartError {
            detail: e.to_string(),
            stderr: vec![],
        })?;
        match Connection::start(&server.transport, &secrets, slot.logs.clone()).await {
            Ok(c) => {
                let c = Arc::new(c);
                slot.failures = 0;
                slot.not_before = None;
                slot.conn = Some(c.clone());
                c.take_list_changed();
                if let Err(e) = self
                    .list_and_record(registry, &server.name, &c, builtins)
                    .await
                {
                    let _ = registry.set_state(&server.name, "error", Some(&e));
                    return Err(StartError {
                        detail: e,
                        stderr: c.logs.tail(20),
                    });
                }
                let _ = registry.set_state(&server.name, "ready", None);
                Ok(c)
            }
            Err(e) => {
                slot.failures += 1;
                let wait = FIRST_BACKOFF
                    .saturating_mul(1 << slot.failures.min(8))
                    .min(MAX_BACKOFF);
                slot.not_before = Some(Instant::now() + wait);
                let _ = registry.set_state(&server.name, "error", Some(&e.detail));
                Err(e)
            }
        }
    }

    async fn list_and_record(
        &self,
        registry: &Registry,
        server: &str,
        conn: &Connection,
        builtins: &[String],
    ) -> Result<(), String> {
        let defs = conn.list_tools().await?;
        registry
            .record_tools(server, &defs, builtins)
            .map_err(|e| e.to_string())
    }

    async fn relist(&self, registry: &Registry, server: &str, c: &Connection, builtins: &[String]) {
        if let Err(e) = self.list_and_record(registry, server, c, builtins).await {
            tracing::warn!(server = %server, error = %e, "could not list an MCP server's tools again");
        }
    }

    /// Starts the server if needed and lists its tools again (a server may add tools
    /// without saying so).
    pub async fn refresh(
        &self,
        registry: &Registry,
        server: &ServerRow,
        builtins: &[String],
    ) -> Result<(), StartError> {
        let c = self.connect(registry, server, builtins).await?;
        self.list_and_record(registry, &server.name, &c, builtins)
            .await
            .map_err(|detail| StartError {
                detail,
                stderr: c.logs.tail(20),
            })
    }

    /// Stops one server (or every one) and forgets its connection.
    pub async fn stop(&self, server: Option<&str>) {
        let conns: Vec<Arc<Connection>> = {
            let mut slots = self.slots.lock().await;
            let names: Vec<String> = slots
                .keys()
                .filter(|n| server.is_none_or(|s| s == n.as_str()))
                .cloned()
                .collect();
            names
                .into_iter()
                .filter_map(|n| slots.remove(&n).and_then(|s| s.conn))
                .collect()
        };
        for c in conns {
            c.close(Duration::from_secs(5)).await;
        }
    }

    /// The tools a run offers: every approved, unchanged tool of each enabled server that
    /// starts. A server that does not start is skipped (its state says why).
    pub async fn offered(
        self: &Arc<Self>,
        registry: &Registry,
        builtins: &[String],
    ) -> Vec<Arc<dyn ExternalTool>> {
        let Ok(servers) = registry.list() else {
            return vec![];
        };
        let mut out: Vec<Arc<dyn ExternalTool>> = Vec::new();
        for server in servers.iter().filter(|s| s.enabled && s.approved) {
            let conn = match self.connect(registry, server, builtins).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(server = %server.name, error = %e.detail, "MCP server is not available");
                    continue;
                }
            };
            let Ok(tools) = registry.tools(&server.name) else {
                continue;
            };
            drop(conn);
            for row in tools
                .into_iter()
                .filter(|t| t.state(server.approved) == ToolState::Enabled)
            {
                out.push(Arc::new(McpTool::new(
                    row,
                    Caller {
                        manager: self.clone(),
                        registry: registry.clone(),
                        server: server.clone(),
                        builtins: builtins.to_vec(),
                    },
                )));
            }
        }
        out
    }
}

/// How a tool reaches its server at call time: through the manager, so a server that
/// died since the turn began is started again (a crash mid-call is an error observation,
/// the next call finds it restarted).
#[derive(Clone)]
struct Caller {
    manager: Arc<Manager>,
    registry: Registry,
    server: ServerRow,
    builtins: Vec<String>,
}

/// An approved MCP tool, offered to the model under its exposed name.
pub struct McpTool {
    row: ToolRow,
    description: String,
    risk: Risk,
    caller: Caller,
}

impl McpTool {
    fn new(row: ToolRow, caller: Caller) -> Self {
        let description = format!("[MCP server {}] {}", row.server, row.definition.description);
        let risk = row.risk().0;
        Self {
            row,
            description,
            risk,
            caller,
        }
    }
}

impl ExternalTool for McpTool {
    fn name(&self) -> &str {
        &self.row.exposed
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        match &self.row.definition.input_schema {
            Value::Object(_) => self.row.definition.input_schema.clone(),
            _ => serde_json::json!({"type": "object"}),
        }
    }

    fn origin(&self) -> Origin {
        Origin::Mcp(self.row.server.clone())
    }

    fn risk(&self) -> Risk {
        self.risk
    }

    fn open_world(&self) -> bool {
        self.row.definition.open_world()
    }

    fn call(&self, arguments: Value) -> Pin<Box<dyn Future<Output = ExternalOutput> + Send>> {
        let caller = self.caller.clone();
        let (name, hash) = (self.row.definition.name.clone(), self.row.hash.clone());
        Box::pin(async move {
            let conn = match caller
                .manager
                .connect(&caller.registry, &caller.server, &caller.builtins)
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    return ExternalOutput {
                        text: format!(
                            "the MCP server {} is not available: {}",
                            caller.server.name, e.detail
                        ),
                        ok: false,
                        transient: true,
                    };
                }
            };
            // A definition that changed since the turn began (the server said so) is not
            // what the user approved: the call does not go out.
            let still = caller
                .registry
                .tools(&caller.server.name)
                .ok()
                .and_then(|ts| ts.into_iter().find(|t| t.definition.name == name))
                .is_some_and(|t| t.hash == hash && t.state(true) == ToolState::Enabled);
            if !still {
                return ExternalOutput {
                    text: "the server changed this tool since the user approved it; it is off until the user reviews it".into(),
                    ok: false,
                    transient: false,
                };
            }
            conn.call(name, arguments).await
        })
    }
}
