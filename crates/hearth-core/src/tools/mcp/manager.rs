//! The servers running in this process, started on first use and restarted (with a
//! backoff) when one died; and the tools a run offers from them.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ToolState;
use super::client::{Connection, ListLimits, Logs, StartError};
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

/// Running servers, by name. Each server has a lock of its own: starting or listing one
/// (each bounded in time, see [`ListLimits`]) never holds up another, and the map's own
/// lock is never held across a server's await.
#[derive(Default)]
pub struct Manager {
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    logs: Mutex<HashMap<String, Logs>>,
}

/// A server that could not be used for a turn, and why (the user is told).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unavailable {
    pub server: String,
    pub reason: String,
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

    /// The lock of `server`'s slot (the map's lock is held only to find it).
    fn slot(&self, server: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        match self.slots.lock() {
            Ok(mut m) => m.entry(server.to_owned()).or_default().clone(),
            // A poisoned map (a panic elsewhere): a fresh slot, never a panic here.
            Err(_) => Arc::default(),
        }
    }

    /// The server's live connection, started (or restarted after it died) as needed;
    /// its tool list recorded after a start or a `list_changed`. A server whose listing
    /// fails (an error, a time limit, the page cap) is stopped and marked `error`.
    pub async fn connect(
        &self,
        registry: &Registry,
        server: &ServerRow,
        builtins: &[String],
    ) -> Result<Arc<Connection>, StartError> {
        let slot = self.slot(&server.name);
        let mut slot = slot.lock().await;
        if let Some(c) = &slot.conn {
            if !c.is_closed() {
                let c = c.clone();
                if c.take_list_changed()
                    && let Err(e) = self
                        .list_and_record(registry, &server.name, &c, builtins)
                        .await
                {
                    tracing::warn!(server = %server.name, error = %e, "could not list an MCP server's tools again");
                    slot.conn = None;
                    drop(slot);
                    return Err(give_up(&c, registry, &server.name, e).await);
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
        let failed = |slot: &mut Slot| {
            slot.failures += 1;
            let wait = FIRST_BACKOFF
                .saturating_mul(1 << slot.failures.min(8))
                .min(MAX_BACKOFF);
            slot.not_before = Some(Instant::now() + wait);
        };
        match Connection::start(&server.transport, &secrets, slot.logs.clone()).await {
            Ok(c) => {
                let c = Arc::new(c);
                c.take_list_changed();
                if let Err(e) = self
                    .list_and_record(registry, &server.name, &c, builtins)
                    .await
                {
                    failed(&mut slot);
                    drop(slot);
                    return Err(give_up(&c, registry, &server.name, e).await);
                }
                slot.failures = 0;
                slot.not_before = None;
                slot.conn = Some(c.clone());
                let _ = registry.set_state(&server.name, "ready", None);
                Ok(c)
            }
            Err(e) => {
                failed(&mut slot);
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
        let defs = conn.list_tools(ListLimits::from_env()).await?;
        registry
            .record_tools(server, &defs, builtins)
            .map_err(|e| e.to_string())
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
        if let Err(detail) = self
            .list_and_record(registry, &server.name, &c, builtins)
            .await
        {
            let _ = registry.set_state(&server.name, "error", Some(&detail));
            self.stop(Some(&server.name)).await;
            return Err(StartError {
                detail,
                stderr: c.logs.tail(20),
            });
        }
        Ok(())
    }

    /// Stops one server (or every one) and forgets its connection.
    pub async fn stop(&self, server: Option<&str>) {
        let slots: Vec<Arc<tokio::sync::Mutex<Slot>>> = match self.slots.lock() {
            Ok(mut m) => {
                let names: Vec<String> = m
                    .keys()
                    .filter(|n| server.is_none_or(|s| s == n.as_str()))
                    .cloned()
                    .collect();
                names.into_iter().filter_map(|n| m.remove(&n)).collect()
            }
            Err(_) => Vec::new(),
        };
        for slot in slots {
            // A slot busy starting its server past the time limit is left to end by
            // itself: its connection is dropped with it.
            let conn = match tokio::time::timeout(Duration::from_secs(5), slot.lock()).await {
                Ok(mut s) => s.conn.take(),
                Err(_) => None,
            };
            if let Some(c) = conn {
                c.close(Duration::from_secs(5)).await;
            }
        }
    }

    /// The tools a run offers: every approved, unchanged tool of each enabled server that
    /// starts and lists its tools in time — the servers side by side, so the slowest
    /// bounds the wait. A server that does not is left out of the turn, with why.
    pub async fn offered(
        self: &Arc<Self>,
        registry: &Registry,
        builtins: &[String],
    ) -> (Vec<Arc<dyn ExternalTool>>, Vec<Unavailable>) {
        let Ok(servers) = registry.list() else {
            return (vec![], vec![]);
        };
        let servers: Vec<ServerRow> = servers
            .into_iter()
            .filter(|s| s.enabled && s.approved)
            .collect();
        let started = futures_util::future::join_all(
            servers
                .iter()
                .map(|server| self.connect(registry, server, builtins)),
        )
        .await;
        let mut out: Vec<Arc<dyn ExternalTool>> = Vec::new();
        let mut unavailable = Vec::new();
        for (server, conn) in servers.iter().zip(started) {
            if let Err(e) = conn {
                tracing::warn!(server = %server.name, "MCP server is not available");
                unavailable.push(Unavailable {
                    server: server.name.clone(),
                    reason: e.detail,
                });
                continue;
            }
            let Ok(tools) = registry.tools(&server.name) else {
                continue;
            };
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
        (out, unavailable)
    }
}

/// A server whose listing failed: closed, marked `error` with why, and the error to show.
async fn give_up(c: &Connection, registry: &Registry, server: &str, detail: String) -> StartError {
    c.close(Duration::from_secs(5)).await;
    let _ = registry.set_state(server, "error", Some(&detail));
    StartError {
        detail,
        stderr: c.logs.tail(20),
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
        self.row.open_world()
    }

    fn binding(&self) -> String {
        super::registry::grant_binding(&self.caller.server, &self.row)
    }

    fn covers(&self) -> String {
        super::registry::grant_covers(&self.caller.server, &self.row)
    }

    fn call(&self, arguments: Value) -> Pin<Box<dyn Future<Output = ExternalOutput> + Send>> {
        let caller = self.caller.clone();
        let (name, hash) = (self.row.definition.name.clone(), self.row.hash.clone());
        Box::pin(async move {
            // A server the user turned off (or removed, or replaced by another program under
            // the same name) since the turn began is not called, nor started again.
            let same = caller
                .registry
                .get(&caller.server.name)
                .ok()
                .flatten()
                .is_some_and(|now| {
                    now.enabled
                        && now.approved
                        && super::registry::server_identity(&now.transport)
                            == super::registry::server_identity(&caller.server.transport)
                });
            if !same {
                return ExternalOutput {
                    text: format!(
                        "the MCP server {} was turned off or changed since this turn began; \
                         its tools cannot be called",
                        caller.server.name
                    ),
                    ok: false,
                    transient: false,
                };
            }
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
