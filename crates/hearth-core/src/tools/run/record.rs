//! The end of a call: its result made an observation, its record and audit entry saved.

use super::*;

impl ToolRun {
    /// What follows a call that ran: the trash's refusal asked again as a permanent
    /// delete, untrusted output marked, the observation for the model.
    pub(super) async fn finish(&mut self, ready: Ready, mut output: Output) -> CallRecord {
        let Ready {
            mut record,
            tool,
            env: folders,
            arguments,
            ..
        } = ready;
        // The trash refused: never a silent hard delete. The user is asked again, for a
        // permanent delete this time.
        if let Some(permanent) = output.trash_failed.take() {
            // Shown as it is now, never as it was when the first question was built.
            let permanent = permanent.retaken().unwrap_or(permanent);
            let request = ConsentRequest {
                call_id: record.id.clone(),
                tool: tool.name().into(),
                origin: tool.origin(),
                risk: Risk::Destructive,
                arguments: escape_for_display(
                    &serde_json::to_string_pretty(&arguments).unwrap_or_default(),
                ),
                preview: permanent.preview().map(|p| escape_for_display(&p)),
                reason: format!(
                    "{}; deleting permanently instead cannot be undone",
                    output.text
                ),
                escalated_by: None,
                offers_always: false,
                offers_conversation: false,
            };
            match self
                .ask(&request, Risk::Destructive, &tool.grant_target())
                .await
            {
                Ok(by) => {
                    record.decided_by = by;
                    let folders = folders.clone();
                    match tokio::task::spawn_blocking(move || {
                        // A delete is not a child process: nothing for a stop to kill.
                        permanent.execute(&folders, &CancellationToken::new())
                    })
                    .await
                    {
                        Ok(o) => output = o,
                        Err(_) => {
                            record.result_status = ResultStatus::Error;
                            record.observation =
                                format!("Error: {} failed unexpectedly.", tool.name());
                            return record;
                        }
                    }
                }
                Err((by, _)) => {
                    record.decision = Decision::Denied;
                    record.decided_by = by;
                    record.result_status = ResultStatus::Error;
                    record.observation = format!(
                        "Error: {}. The user did not approve deleting it permanently, so \
                         nothing was deleted.",
                        output.text
                    );
                    return record;
                }
            }
        }
        if output.memory.is_some() {
            record.memory = output.memory.clone();
        }
        record.result_status = if output.ok {
            ResultStatus::Ok
        } else {
            ResultStatus::Error
        };
        let text = truncate_observation(&output.text, MAX_OBSERVATION_BYTES);
        // The user keeps the whole output, as the tool gave it (the model gets it cut past
        // the size limit, and untrusted text inside `<data>`).
        record.result = output.text.clone();
        record.untrusted = output.untrusted;
        record.observation = if output.untrusted {
            if self.untrusted.is_none() {
                let what = arguments
                    .get("path")
                    .and_then(Value::as_str)
                    .map(|p| format!("the output of {} on {p}", tool.name()))
                    .unwrap_or_else(|| format!("the output of {}", tool.name()));
                self.untrusted = Some(what);
            }
            format!(
                "<data source=\"{}\">\n{}\n</data>",
                tool.name(),
                crate::context::neutralize_tags(&text)
            )
        } else if output.ok {
            text
        } else {
            format!("Error: {text}")
        };
        record
    }

    /// Stores `record` as call `seq` of answer `message_id` (none in a temporary chat)
    /// and appends its audit entry, in one transaction. A temporary chat's entry keeps no
    /// payload.
    pub async fn save(
        &self,
        message_id: Option<i64>,
        seq: usize,
        record: &CallRecord,
    ) -> crate::Result<()> {
        let (store, r, conversation) = (
            self.store.clone(),
            record.clone(),
            self.conversation.clone(),
        );
        tokio::task::spawn_blocking(move || {
            save(&store, message_id, conversation.as_deref(), seq, &r)
        })
        .await
        .map_err(|e| crate::Error::InvalidInput(e.to_string()))?
    }
}

/// JSON with every object's keys sorted, recursively: equal values give equal text.
pub fn canonical_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                let m: BTreeMap<&String, Value> = o.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(m.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// The start of a call's result an audit payload keeps.
const AUDIT_RESULT_CHARS: usize = 300;

/// Stores `record` as call `seq` of answer `message_id` (when there is one) with its audit
/// entry, in one transaction.
fn save(
    store: &Store,
    message_id: Option<i64>,
    conversation: Option<&str>,
    seq: usize,
    record: &CallRecord,
) -> crate::Result<()> {
    let r = record.clone();
    let conversation = conversation.map(str::to_owned);
    store.write_blocking(move |c| {
        let tx = c.transaction()?;
        crate::audit::append(
            &tx,
            &crate::audit::NewEntry {
                kind: "tool_call",
                summary: serde_json::json!({
                    "tool": r.tool,
                    "origin": r.origin.label(),
                    "risk": r.risk.as_str(),
                    "decision": enum_text(&r.decision),
                    "decided_by": enum_text(&r.decided_by),
                    "escalated": r.escalated,
                    "result_status": enum_text(&r.result_status),
                }),
                payload: serde_json::json!({
                    "call_id": r.id,
                    "arguments": r.arguments,
                    "result": r.observation.chars().take(AUDIT_RESULT_CHARS).collect::<String>(),
                }),
                keep_payload: conversation.is_some(),
                conversation: conversation.as_deref(),
                memory: r.memory.as_deref(),
            },
        )?;
        let Some(message_id) = message_id else {
            return tx.commit();
        };
        tx.execute(
            "INSERT INTO tool_calls (message_id, call_id, seq, tool, origin, risk, arguments,
                decision, decided_by, escalated, result_status, result, created_at, untrusted)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            rusqlite::params![
                message_id,
                r.id,
                seq as i64,
                r.tool,
                r.origin.label(),
                r.risk.as_str(),
                r.arguments.to_string(),
                enum_text(&r.decision),
                enum_text(&r.decided_by),
                r.escalated,
                enum_text(&r.result_status),
                r.shown_result(),
                crate::time::now_millis(),
                r.untrusted,
            ],
        )?;
        tx.commit()
    })
}

pub(crate) fn enum_text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
