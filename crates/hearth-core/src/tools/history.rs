//! The tool calls of a conversation's answers, as stored with them (`tool_calls`), for the
//! chat screen's inline calls and `hearth conversations show`.

use std::collections::HashMap;

use super::{CallRecord, Origin, Risk};
use crate::store::Store;

fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
}

/// The calls of every answer of `conversation`, by answer id, each answer's in order.
/// A row a later version wrote with a value this one does not know is skipped.
pub fn calls_of_conversation(
    store: &Store,
    conversation: &str,
) -> crate::Result<HashMap<i64, Vec<CallRecord>>> {
    let conversation = conversation.to_owned();
    store.read_blocking(move |c| {
        let mut stmt = c.prepare(
            "SELECT t.message_id, t.call_id, t.tool, t.origin, t.risk, t.arguments, t.decision,
                    t.decided_by, t.escalated, t.result_status, t.result
             FROM tool_calls t JOIN messages m ON m.id = t.message_id
             WHERE m.conversation_id = ?1
             ORDER BY t.message_id, t.seq",
        )?;
        let rows = stmt.query_map([&conversation], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, bool>(8)?,
                r.get::<_, String>(9)?,
                r.get::<_, Option<String>>(10)?,
            ))
        })?;
        let mut out: HashMap<i64, Vec<CallRecord>> = HashMap::new();
        for row in rows {
            let (message, id, tool, origin, risk, args, decision, by, escalated, status, result) =
                row?;
            let (Some(risk), Some(decision), Some(decided_by), Some(result_status)) = (
                parse::<Risk>(&risk),
                parse(&decision),
                parse(&by),
                parse(&status),
            ) else {
                continue;
            };
            let arguments = serde_json::from_str(&args).unwrap_or(serde_json::Value::String(args));
            out.entry(message).or_default().push(CallRecord {
                id,
                tool,
                origin: Origin::from_label(&origin),
                risk,
                arguments,
                decision,
                decided_by,
                escalated,
                result_status,
                observation: String::new(),
                result: result.unwrap_or_default(),
                memory: None,
                untrusted: false,
            });
        }
        Ok(out)
    })
}

/// The first call of `conversation` whose output was untrusted text and that the prompt
/// still carries (an answer before `before`, the message a redo answers again), described
/// for the consent question; `None` when there is none. The answers such a call served
/// stay in the history or the rolling summary, and with them what the text made the model
/// say — so later turns escalate their writes too.
pub fn untrusted_in(
    store: &Store,
    conversation: &str,
    before: Option<i64>,
) -> crate::Result<Option<String>> {
    let conversation = conversation.to_owned();
    let found: Option<(String, String)> = store.read_blocking(move |c| {
        use rusqlite::OptionalExtension;
        c.query_row(
            "SELECT t.tool, t.arguments FROM tool_calls t JOIN messages m ON m.id = t.message_id
             WHERE m.conversation_id = ?1 AND t.untrusted = 1 AND (?2 IS NULL OR m.id < ?2)
             ORDER BY t.message_id, t.seq LIMIT 1",
            rusqlite::params![conversation, before],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
    })?;
    Ok(found.map(|(tool, args)| {
        let path = serde_json::from_str::<serde_json::Value>(&args)
            .ok()
            .and_then(|v| v.get("path").and_then(|p| p.as_str().map(str::to_owned)));
        match path {
            Some(p) => format!("the output of {tool} on {p}, earlier in this conversation"),
            None => format!("the output of {tool}, earlier in this conversation"),
        }
    }))
}
