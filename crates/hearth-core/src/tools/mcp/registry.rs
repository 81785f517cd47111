//! The servers the user added and their tools' pinned definitions (tables `mcp_servers`,
//! `mcp_tools`), with the servers' secrets in the keyring (or the encrypted database).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::config::{Secrets, Transport};
use super::{Definition, ToolState, exposed_name};
use crate::store::Store;
use crate::store::key::KeyBackend;
use crate::store::secret::SecretSlot;
use crate::time::now_millis;
use crate::tools::Risk;
use crate::{Error, Result};

/// A server as stored (never with its secret values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerRow {
    pub name: String,
    #[serde(flatten)]
    pub transport: Transport,
    /// The env variables and headers it is given (values are secrets, not shown).
    pub env: Vec<String>,
    pub headers: Vec<String>,
    /// `none`, `keyring` or `database`.
    pub secrets_location: String,
    pub enabled: bool,
    /// The user approved its tools once (pinning their definitions).
    pub approved: bool,
    /// Last known: `new`, `ready` or `error`.
    pub state: String,
    pub last_error: Option<String>,
}

/// One tool of a server, as listed and as approved.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRow {
    pub server: String,
    /// The name the model calls it by.
    pub exposed: String,
    pub definition: Definition,
    pub hash: String,
    pub approved: Option<Definition>,
    pub approved_hash: Option<String>,
    /// The user's own tier for it, made on the definition listed now (a tier set on an
    /// earlier definition is dropped when it changes).
    pub risk_override: Option<Risk>,
    /// The user took the server's labels (annotations) as this tool's tier, on the
    /// definition listed now.
    pub labels_accepted: bool,
    /// The server still lists it.
    pub present: bool,
}

impl ToolRow {
    /// Where it stands: see [`ToolState`].
    pub fn state(&self, server_approved: bool) -> ToolState {
        match (&self.approved_hash, server_approved) {
            (_, false) => ToolState::NeedsApproval,
            (None, true) => ToolState::DisabledNew,
            (Some(h), true) if *h != self.hash => ToolState::DisabledChanged,
            _ => ToolState::Enabled,
        }
    }

    /// Its effective tier and why: the tier the user set (`user`), else its annotations
    /// when the user accepted them as labels (`labels_accepted`), else `destructive`
    /// (`unconfirmed`): an MCP server's annotations are claims, never permissions.
    pub fn risk(&self) -> (Risk, &'static str) {
        match (self.risk_override, self.labels_accepted) {
            (Some(r), _) => (r, "user"),
            (None, true) => (self.definition.annotated_risk().0, "labels_accepted"),
            (None, false) => (Risk::Destructive, "unconfirmed"),
        }
    }

    /// What the server claims for it: its annotations' tier, and whether they say it
    /// reaches outside.
    pub fn claim(&self) -> (Risk, bool) {
        (
            self.definition.annotated_risk().0,
            self.definition.open_world(),
        )
    }

    /// Whether it may reach beyond the computer: the claim when the user accepted the
    /// labels, else yes.
    pub fn open_world(&self) -> bool {
        !self.labels_accepted || self.definition.open_world()
    }
}

/// What identifies a server's program: the command and its arguments, or the URL — a
/// different program under the same name is a different server. SHA-256 over canonical
/// JSON, hex.
pub fn server_identity(transport: &Transport) -> String {
    use sha2::{Digest, Sha256};
    let v = match transport {
        Transport::Stdio { command, args } => serde_json::json!({
            "command": command.to_string_lossy(), "args": args,
        }),
        Transport::Http { url } => serde_json::json!({ "url": url }),
    };
    hex::encode(Sha256::digest(super::canonical_json(&v).as_bytes()))
}

/// What a grant of `tool` names: its server's identity and its definition's hash.
pub fn grant_binding(server: &ServerRow, tool: &ToolRow) -> String {
    format!("{}:{}", server_identity(&server.transport), tool.hash)
}

/// What a grant of `tool` covers, in words (`hearth grants list`).
pub fn grant_covers(server: &ServerRow, tool: &ToolRow) -> String {
    let program = match &server.transport {
        Transport::Stdio { command, args } => format!("{} {}", command.display(), args.join(" "))
            .trim_end()
            .to_owned(),
        Transport::Http { url } => super::config::redact_url(url),
    };
    format!(
        "{} of MCP server {} ({program}), definition {}",
        tool.definition.name,
        server.name,
        tool.hash.get(..12).unwrap_or(&tool.hash)
    )
}

/// The registry over one store.
#[derive(Clone)]
pub struct Registry {
    store: Store,
}

fn risk_from(s: Option<String>) -> Option<Risk> {
    match s.as_deref() {
        Some("read") => Some(Risk::Read),
        Some("write") => Some(Risk::Write),
        Some("destructive") => Some(Risk::Destructive),
        _ => None,
    }
}

impl Registry {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    fn keyring_entry(&self, name: &str) -> Result<SecretSlot> {
        SecretSlot::new(&self.store, "mcp", name)
    }

    /// Stores a new server (`replace`: over one of that name, its tools and approval gone).
    pub fn add(
        &self,
        name: &str,
        transport: &Transport,
        secrets: &Secrets,
        replace: bool,
    ) -> Result<ServerRow> {
        super::config::check_name(name)?;
        if self.get(name)?.is_some() {
            if !replace {
                return Err(Error::InvalidInput(format!(
                    "a server named {name:?} exists; remove it first"
                )));
            }
            self.remove(name)?;
        }
        let location = match (secrets.is_empty(), self.store.key_backend()) {
            (true, _) => "none",
            (false, KeyBackend::Keyring) => "keyring",
            (false, _) => "database",
        };
        let json = serde_json::to_string(secrets).map_err(|e| Error::Database(e.to_string()))?;
        if location == "keyring" {
            self.keyring_entry(name)?.set(&json)?;
        }
        let db_secrets = (location == "database").then_some(json);
        let (command, args, url, transport_kind) = match transport {
            Transport::Stdio { command, args } => (
                Some(command.to_string_lossy().into_owned()),
                serde_json::to_string(args).unwrap_or_else(|_| "[]".into()),
                None,
                "stdio",
            ),
            Transport::Http { url } => (None, "[]".to_owned(), Some(url.clone()), "http"),
        };
        let env_names = serde_json::to_string(&secrets.env.keys().collect::<Vec<_>>())
            .unwrap_or_else(|_| "[]".into());
        let header_names = serde_json::to_string(&secrets.headers.keys().collect::<Vec<_>>())
            .unwrap_or_else(|_| "[]".into());
        let n = name.to_owned();
        let identity = server_identity(transport);
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            // Adding a server starts a program of the user's choosing: an audit entry.
            crate::audit::append(
                &tx,
                &crate::audit::NewEntry {
                    kind: "mcp",
                    summary: serde_json::json!({"op": "add", "server": n, "transport": transport_kind}),
                    payload: serde_json::json!({"identity": identity}),
                    keep_payload: true,
                    conversation: None,
                    memory: None,
                },
            )?;
            tx.execute(
                "INSERT INTO mcp_servers (name, transport, command, args, url, env_names, header_names,
                   secrets_location, secrets, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    n,
                    transport_kind,
                    command,
                    args,
                    url,
                    env_names,
                    header_names,
                    location,
                    db_secrets,
                    now_millis()
                ],
            )?;
            tx.commit()
        })?;
        self.get(name)?
            .ok_or_else(|| Error::Database("the server vanished".into()))
    }

    /// One server by name.
    pub fn get(&self, name: &str) -> Result<Option<ServerRow>> {
        let n = name.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                &format!("{SERVER_COLUMNS} WHERE name = ?1"),
                [n],
                row_to_server,
            )
            .optional()
        })
    }

    /// One server, or `not_found`.
    pub fn require(&self, name: &str) -> Result<ServerRow> {
        self.get(name)?
            .ok_or_else(|| Error::NotFound(format!("no MCP server named {name:?}")))
    }

    /// Every server, by name.
    pub fn list(&self) -> Result<Vec<ServerRow>> {
        self.store.read_blocking(|c| {
            let mut stmt = c.prepare(&format!("{SERVER_COLUMNS} ORDER BY name"))?;
            let rows = stmt.query_map([], row_to_server)?;
            rows.collect()
        })
    }

    /// A server's secret values.
    pub fn secrets(&self, server: &ServerRow) -> Result<Secrets> {
        let json = match server.secrets_location.as_str() {
            "keyring" => self.keyring_entry(&server.name)?.get()?,
            "database" => {
                let n = server.name.clone();
                self.store.read_blocking(move |c| {
                    c.query_row(
                        "SELECT secrets FROM mcp_servers WHERE name = ?1",
                        [n],
                        |r| r.get::<_, Option<String>>(0),
                    )
                })?
            }
            _ => None,
        };
        Ok(json
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default())
    }

    /// Removes a server, its tools and its secrets. False when there was none.
    pub fn remove(&self, name: &str) -> Result<bool> {
        let Some(server) = self.get(name)? else {
            return Ok(false);
        };
        if server.secrets_location == "keyring" {
            self.keyring_entry(name)?.delete()?;
        }
        let n = name.to_owned();
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            // Its grants end with it: a program added later under this name is another
            // server, and no grant of this one covers it.
            crate::tools::grants::revoke_origin_in(
                &tx,
                &crate::tools::Origin::Mcp(n.clone()).label(),
                "server removed",
            )?;
            tx.execute("DELETE FROM mcp_servers WHERE name = ?1", [&n])?;
            crate::audit::append(
                &tx,
                &crate::audit::NewEntry {
                    kind: "mcp",
                    summary: serde_json::json!({"op": "remove", "server": n}),
                    payload: serde_json::Value::Null,
                    keep_payload: false,
                    conversation: None,
                    memory: None,
                },
            )?;
            tx.commit()
        })?;
        Ok(true)
    }

    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<ServerRow> {
        self.require(name)?;
        let n = name.to_owned();
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE mcp_servers SET enabled = ?2 WHERE name = ?1",
                params![n, enabled],
            )
            .map(|_| ())
        })?;
        self.require(name)
    }

    /// Remembers how the last start went (`ready`, or `error` with why).
    pub fn set_state(&self, name: &str, state: &str, error: Option<&str>) -> Result<()> {
        let (n, s, e) = (name.to_owned(), state.to_owned(), error.map(str::to_owned));
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE mcp_servers SET state = ?2, last_error = ?3 WHERE name = ?1",
                params![n, s, e],
            )
            .map(|_| ())
        })
    }

    /// Records what the server lists now: new tools get their exposed name; changed ones
    /// their new definition (the approved one stays, so the tool is off until reviewed);
    /// ones it no longer lists are marked absent. `builtins` are names no tool may take.
    pub fn record_tools(
        &self,
        server: &str,
        defs: &[Definition],
        builtins: &[String],
    ) -> Result<()> {
        let (server, defs, builtins) = (server.to_owned(), defs.to_vec(), builtins.to_vec());
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let mut taken: Vec<String> = {
                let mut stmt = tx.prepare("SELECT exposed FROM mcp_tools")?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            taken.extend(builtins);
            tx.execute(
                "UPDATE mcp_tools SET present = 0 WHERE server = ?1",
                [&server],
            )?;
            for d in &defs {
                let known: Option<String> = tx
                    .query_row(
                        "SELECT exposed FROM mcp_tools WHERE server = ?1 AND name = ?2",
                        params![server, d.name],
                        |r| r.get(0),
                    )
                    .optional()?;
                let (canonical, hash) = (d.canonical(), d.hash());
                match known {
                    Some(_) => {
                        tx.execute(
                            "UPDATE mcp_tools SET definition = ?3, hash = ?4, present = 1
                             WHERE server = ?1 AND name = ?2",
                            params![server, d.name, canonical, hash],
                        )?;
                    }
                    None => {
                        // A pure function of (server, tool): a re-added server's tools get
                        // the names they had, whatever order it lists them in.
                        let exposed =
                            exposed_name(&server, &d.name, &|n: &str| taken.iter().any(|t| t == n));
                        tx.execute(
                            "INSERT INTO mcp_tools (server, name, exposed, definition, hash)
                             VALUES (?1, ?2, ?3, ?4, ?5)",
                            params![server, d.name, exposed, canonical, hash],
                        )?;
                        taken.push(exposed);
                    }
                }
            }
            tx.commit()
        })
    }

    /// A server's tools (those it still lists), by name.
    pub fn tools(&self, server: &str) -> Result<Vec<ToolRow>> {
        self.tool_rows(Some(server))
    }

    /// Every server's tools.
    pub fn all_tools(&self) -> Result<Vec<ToolRow>> {
        self.tool_rows(None)
    }

    fn tool_rows(&self, server: Option<&str>) -> Result<Vec<ToolRow>> {
        let server = server.map(str::to_owned);
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT server, exposed, definition, hash, approved_definition, approved_hash,
                        CASE WHEN risk_override_hash = hash THEN risk_override END,
                        present, labels_accepted_hash IS NOT NULL AND labels_accepted_hash = hash
                 FROM mcp_tools WHERE present = 1 AND (?1 IS NULL OR server = ?1)
                 ORDER BY server, name",
            )?;
            let rows = stmt.query_map([server], |r| {
                let def: String = r.get(2)?;
                let approved: Option<String> = r.get(4)?;
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    def,
                    r.get::<_, String>(3)?,
                    approved,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, Option<String>>(6)?,
                    r.get::<_, bool>(7)?,
                    r.get::<_, bool>(8)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (server, exposed, def, hash, approved, approved_hash, risk, present, labels) =
                    row?;
                let Some(definition) = Definition::from_canonical(&def) else {
                    continue;
                };
                out.push(ToolRow {
                    server,
                    exposed,
                    definition,
                    hash,
                    approved: approved.as_deref().and_then(Definition::from_canonical),
                    approved_hash,
                    risk_override: risk_from(risk),
                    labels_accepted: labels,
                    present,
                });
            }
            Ok(out)
        })
    }

    /// Pins exactly the definitions the user was shown: `chosen` is each tool's own name
    /// with the hash of the definition in the question. All or nothing: if any of them is
    /// no longer what the server lists (a relist between the question and the answer),
    /// nothing is pinned and the user is told to look again. Marks the server approved;
    /// with `accept_labels` the user also takes the server's annotations as those tools'
    /// tiers (bound to these hashes). An audit entry names the tools and hashes. Returns
    /// how many tools.
    pub fn approve(
        &self,
        server: &str,
        chosen: &[(String, String)],
        accept_labels: bool,
    ) -> Result<usize> {
        self.require(server)?;
        let (s, chosen) = (server.to_owned(), chosen.to_vec());
        let n = chosen.len();
        let pinned = self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let mut pinned = 0;
            for (name, hash) in &chosen {
                // Pinned only if the definition is still the one the user was shown.
                pinned += tx.execute(
                    "UPDATE mcp_tools SET approved_definition = definition, approved_hash = hash,
                       labels_accepted_hash = CASE WHEN ?4 THEN hash ELSE labels_accepted_hash END
                     WHERE server = ?1 AND name = ?2 AND hash = ?3 AND present = 1",
                    params![s, name, hash, accept_labels],
                )?;
            }
            if pinned != chosen.len() {
                // Dropped: the transaction rolls back.
                return Ok(pinned);
            }
            tx.execute("UPDATE mcp_servers SET approved = 1 WHERE name = ?1", [&s])?;
            crate::audit::append(
                &tx,
                &crate::audit::NewEntry {
                    kind: "mcp",
                    summary: serde_json::json!({
                        "op": "approve", "server": s, "tools": chosen.len(),
                        "labels_accepted": accept_labels,
                    }),
                    payload: serde_json::json!({
                        "tools": chosen.iter().map(|(n, h)| format!("{n}@{h}")).collect::<Vec<_>>(),
                    }),
                    keep_payload: true,
                    conversation: None,
                    memory: None,
                },
            )?;
            tx.commit()?;
            Ok(pinned)
        })?;
        if pinned != n {
            return Err(Error::InvalidInput(format!(
                "{} of the tools of {server:?} changed while you were asked; nothing was \
                 approved: look at them again (hearth mcp review {server})",
                n - pinned
            )));
        }
        Ok(n)
    }

    /// Sets (or clears, with `None`) the user's risk tier for an MCP tool by its exposed
    /// name, bound to its definition listed now (a changed definition drops it). An audit
    /// entry says what was set. False when no MCP tool has that name.
    pub fn set_risk(&self, exposed: &str, risk: Option<Risk>) -> Result<bool> {
        let (e, r) = (exposed.to_owned(), risk.map(Risk::as_str));
        let n = self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let n = tx.execute(
                "UPDATE mcp_tools SET risk_override = ?2,
                   risk_override_hash = CASE WHEN ?2 IS NULL THEN NULL ELSE hash END
                 WHERE exposed = ?1",
                params![e, r],
            )?;
            if n > 0 {
                crate::audit::append(
                    &tx,
                    &crate::audit::NewEntry {
                        kind: "mcp",
                        summary: serde_json::json!({"op": "set_risk", "tool": e, "risk": r}),
                        payload: serde_json::Value::Null,
                        keep_payload: false,
                        conversation: None,
                        memory: None,
                    },
                )?;
            }
            tx.commit()?;
            Ok(n)
        })?;
        Ok(n > 0)
    }
}

const SERVER_COLUMNS: &str = "SELECT name, transport, command, args, url, env_names, header_names,
    secrets_location, enabled, approved, state, last_error FROM mcp_servers";

fn row_to_server(r: &rusqlite::Row<'_>) -> rusqlite::Result<ServerRow> {
    let kind: String = r.get(1)?;
    let command: Option<String> = r.get(2)?;
    let args: String = r.get(3)?;
    let url: Option<String> = r.get(4)?;
    let names = |s: String| -> Vec<String> { serde_json::from_str(&s).unwrap_or_default() };
    let transport = match (kind.as_str(), command, url) {
        ("stdio", Some(command), _) => Transport::Stdio {
            command: command.into(),
            args: serde_json::from_str(&args).unwrap_or_default(),
        },
        (_, _, url) => Transport::Http {
            url: url.unwrap_or_default(),
        },
    };
    Ok(ServerRow {
        name: r.get(0)?,
        transport,
        env: names(r.get(5)?),
        headers: names(r.get(6)?),
        secrets_location: r.get(7)?,
        enabled: r.get(8)?,
        approved: r.get(9)?,
        state: r.get(10)?,
        last_error: r.get(11)?,
    })
}

/// A line-by-line diff of two definitions, for the review (pretty JSON, keys sorted).
pub fn definition_diff(old: &Definition, new: &Definition) -> String {
    let pretty = |d: &Definition| -> String {
        let v: serde_json::Value = serde_json::from_str(&d.canonical()).unwrap_or_default();
        let sorted: BTreeMap<String, serde_json::Value> = v
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        serde_json::to_string_pretty(&sorted).unwrap_or_default() + "\n"
    };
    similar::TextDiff::from_lines(&pretty(old), &pretty(new))
        .unified_diff()
        .context_radius(3)
        .header("approved", "now")
        .to_string()
}
