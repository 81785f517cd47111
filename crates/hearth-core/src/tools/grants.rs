//! Grants: what the user allowed ahead of time — a tool for one conversation, or always.
//!
//! A grant covers only non-escalated `write` calls (the gate's rule); a destructive tool is
//! never granted, and [`Grants::add`] refuses one. A conversation's grants go with the
//! conversation (cascade); a temporary chat's are never stored (they live in the run).
//! Granting and revoking are audit entries.
//!
//! **A grant names what was granted** (issue 31): besides the exposed tool name and its
//! origin, its *binding* — for an MCP tool, its server's identity (command and arguments,
//! or URL) and the hash of the definition the user approved (`registry::grant_binding`);
//! empty for a built-in. A grant covers a call only when all three match, so removing or
//! replacing a server, or a changed definition, ends it; the registry also deletes a
//! removed server's grants.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{Origin, Risk};
use crate::audit::{self, NewEntry};
use crate::store::Store;
use crate::{Error, Result};

/// How far a grant reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Conversation,
    Always,
}

impl Scope {
    /// `conversation` or `always`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Conversation => "conversation",
            Scope::Always => "always",
        }
    }
}

/// One stored grant (`hearth grants list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    pub id: i64,
    pub tool: String,
    /// `built_in` or `mcp:<server>`.
    pub origin: String,
    /// What it covers, in words: a built-in's name, or an MCP tool with its server's
    /// program and the start of its definition's hash.
    pub covers: String,
    pub scope: Scope,
    /// The conversation of a `conversation` grant.
    pub conversation: Option<String>,
    /// Milliseconds since the epoch.
    pub created_at: i64,
}

/// What a grant names: a tool (its exposed name and origin), bound to what it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub tool: String,
    pub origin: Origin,
    /// `sha256(server identity):definition hash` for an MCP tool; empty for a built-in.
    pub binding: String,
    /// What it covers, in words.
    pub covers: String,
}

/// Deletes every grant of `origin` inside `tx`, each with its audit entry (`why`: what
/// ended it).
pub(crate) fn revoke_origin_in(
    tx: &rusqlite::Transaction<'_>,
    origin: &str,
    why: &str,
) -> rusqlite::Result<usize> {
    let victims: Vec<(i64, String, String, Option<String>)> = {
        let mut stmt = tx.prepare(
            "SELECT id, tool, scope, conversation_id FROM tool_grants WHERE origin = ?1",
        )?;
        let rows = stmt.query_map([origin], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (id, tool, scope, conversation) in &victims {
        tx.execute("DELETE FROM tool_grants WHERE id = ?1", [id])?;
        audit::append(
            tx,
            &NewEntry {
                kind: "grant",
                summary: serde_json::json!({
                    "op": "revoke", "tool": tool, "origin": origin, "scope": scope, "why": why,
                }),
                payload: serde_json::json!({"conversation": conversation}),
                keep_payload: true,
                conversation: conversation.as_deref(),
                memory: None,
            },
        )?;
    }
    Ok(victims.len())
}

/// The stored grants.
#[derive(Clone)]
pub struct Grants {
    store: Store,
}

impl Grants {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Every grant, newest first.
    pub fn list(&self) -> Result<Vec<Grant>> {
        self.store.read_blocking(|c| {
            let mut stmt = c.prepare(
                "SELECT id, tool, origin, scope, conversation_id, created_at, covers
                 FROM tool_grants ORDER BY id DESC",
            )?;
            let rows = stmt.query_map([], |r| {
                let scope: String = r.get(3)?;
                let tool: String = r.get(1)?;
                let covers: String = r.get(6)?;
                Ok(Grant {
                    id: r.get(0)?,
                    covers: if covers.is_empty() {
                        tool.clone()
                    } else {
                        covers
                    },
                    tool,
                    origin: r.get(2)?,
                    scope: if scope == "always" {
                        Scope::Always
                    } else {
                        Scope::Conversation
                    },
                    conversation: r.get(4)?,
                    created_at: r.get(5)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Whether a grant covers `tool` of `origin` bound to `binding` (see the module's
    /// text) in `conversation` (`None`: a temporary chat, which only "always" grants
    /// cover).
    pub fn covers(
        &self,
        tool: &str,
        origin: &Origin,
        binding: &str,
        conversation: Option<&str>,
    ) -> Result<bool> {
        let (tool, origin, binding, conversation) = (
            tool.to_owned(),
            origin.label(),
            binding.to_owned(),
            conversation.map(str::to_owned),
        );
        self.store.read_blocking(move |c| {
            c.query_row(
                "SELECT 1 FROM tool_grants WHERE tool = ?1 AND origin = ?2 AND binding = ?3
                   AND (scope = 'always' OR conversation_id = ?4) LIMIT 1",
                params![tool, origin, binding, conversation],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
        })
    }

    /// Stores a grant of `target` (again: a no-op). A destructive tool is never granted.
    pub fn add(
        &self,
        target: &Target,
        risk: Risk,
        scope: Scope,
        conversation: Option<&str>,
    ) -> Result<()> {
        let tool = target.tool.as_str();
        if risk == Risk::Destructive {
            return Err(Error::InvalidInput(format!(
                "{tool} is destructive: it always asks, so it cannot be granted"
            )));
        }
        let conversation = match scope {
            Scope::Always => None,
            Scope::Conversation => Some(conversation.map(str::to_owned).ok_or_else(|| {
                Error::InvalidInput("a conversation grant needs a saved conversation".into())
            })?),
        };
        let (tool, origin, binding, covers) = (
            tool.to_owned(),
            target.origin.label(),
            target.binding.clone(),
            target.covers.clone(),
        );
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let n = tx.execute(
                "INSERT INTO tool_grants (tool, origin, binding, covers, scope, conversation_id,
                   created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                params![
                    tool,
                    origin,
                    binding,
                    covers,
                    scope.as_str(),
                    conversation,
                    crate::time::now_millis()
                ],
            )?;
            if n > 0 {
                audit::append(
                    &tx,
                    &NewEntry {
                        kind: "grant",
                        summary: serde_json::json!({
                            "op": "grant", "tool": tool, "origin": origin,
                            "risk": risk.as_str(), "scope": scope.as_str(),
                        }),
                        payload: serde_json::json!({"conversation": conversation, "binding": binding}),
                        keep_payload: true,
                        conversation: conversation.as_deref(),
                        memory: None,
                    },
                )?;
            }
            tx.commit()
        })
    }

    /// Revokes grant `id`; false when there is none.
    pub fn revoke(&self, id: i64) -> Result<bool> {
        self.revoke_where(Some(id)).map(|n| n > 0)
    }

    /// Revokes every grant; returns how many there were.
    pub fn revoke_all(&self) -> Result<usize> {
        self.revoke_where(None)
    }

    fn revoke_where(&self, id: Option<i64>) -> Result<usize> {
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let victims: Vec<(i64, String, String, String, Option<String>)> = {
                let mut stmt = tx.prepare(
                    "SELECT id, tool, origin, scope, conversation_id FROM tool_grants
                     WHERE ?1 IS NULL OR id = ?1",
                )?;
                let rows = stmt.query_map([id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            for (id, tool, origin, scope, conversation) in &victims {
                tx.execute("DELETE FROM tool_grants WHERE id = ?1", [id])?;
                audit::append(
                    &tx,
                    &NewEntry {
                        kind: "grant",
                        summary: serde_json::json!({
                            "op": "revoke", "tool": tool, "origin": origin, "scope": scope,
                        }),
                        payload: serde_json::json!({"conversation": conversation}),
                        keep_payload: true,
                        conversation: conversation.as_deref(),
                        memory: None,
                    },
                )?;
            }
            tx.commit()?;
            Ok(victims.len())
        })
    }
}
