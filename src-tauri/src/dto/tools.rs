//! The consent surface's contract: a question before a tool runs, and the user's answer.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A tool call waiting for the user's answer (the consent window shows it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ConsentRequestDto {
    /// The question's id, named by the answer.
    #[ts(type = "number")]
    pub id: u64,
    /// The question's digest, sent back with the answer.
    pub hash: String,
    pub call_id: String,
    pub tool: String,
    /// `built_in` or `mcp:<server>`.
    pub origin: String,
    /// `read`, `write` or `destructive`.
    pub risk: String,
    /// The complete arguments, pretty-printed, hidden characters escaped.
    pub arguments: String,
    /// What the call would do (a diff, the files a delete removes).
    pub preview: Option<String>,
    /// Why Hearth asks.
    pub reason: String,
    /// The untrusted content that came before the request, when escalated.
    pub escalated_by: Option<String>,
    /// Whether "always" is offered (never for destructive, nor in a temporary chat).
    pub offers_always: bool,
    /// Whether "for this conversation" is offered (never for destructive; in a temporary
    /// chat it lasts for the chat's run only).
    pub offers_conversation: bool,
}

impl From<hearth_core::PendingConsent> for ConsentRequestDto {
    fn from(p: hearth_core::PendingConsent) -> Self {
        let r = p.request;
        Self {
            id: p.id,
            hash: p.hash,
            call_id: r.call_id,
            tool: r.tool,
            origin: r.origin.label(),
            risk: r.risk.as_str().to_owned(),
            arguments: r.arguments,
            preview: r.preview,
            reason: r.reason,
            escalated_by: r.escalated_by,
            offers_always: r.offers_always,
            offers_conversation: r.offers_conversation,
        }
    }
}

/// The arguments of `answer_consent`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AnswerConsentArgs {
    #[ts(type = "number")]
    pub id: u64,
    /// The digest of the question the window showed (`ConsentRequestDto.hash`): an answer
    /// applies only to that exact question.
    pub hash: String,
    /// `once`, `conversation`, `always` or `deny`.
    pub choice: String,
    /// With `deny`: why, passed back to the model.
    pub reason: Option<String>,
}

/// A tool as the Tools screen lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ToolDto {
    pub name: String,
    pub description: String,
    pub origin: String,
    /// `read`, `write` or `destructive`.
    pub risk: String,
    pub risk_source: String,
    pub enabled: bool,
}

/// A stored grant (the Tools screen can revoke it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct GrantDto {
    #[ts(type = "number")]
    pub id: i64,
    pub tool: String,
    pub origin: String,
    /// `conversation` or `always`.
    pub scope: String,
    pub conversation_id: Option<String>,
    #[ts(type = "number")]
    pub created_at: i64,
}

/// One entry of the audit log (the Activity screen).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct AuditEntryDto {
    #[ts(type = "number")]
    pub seq: i64,
    /// `tool_call`, `memory` or `grant`.
    pub kind: String,
    pub tool: Option<String>,
    pub risk: Option<String>,
    pub decision: Option<String>,
    pub decided_by: Option<String>,
    /// For a memory change or a grant: what happened (`add`, `update`, `grant`, `revoke`…).
    pub op: Option<String>,
    /// For a tool call: how it ended.
    pub result_status: Option<String>,
    pub escalated: bool,
    #[ts(type = "number")]
    pub time: i64,
    pub payload_redacted: bool,
}

impl From<hearth_core::AuditEntry> for AuditEntryDto {
    fn from(e: hearth_core::AuditEntry) -> Self {
        let text = |k: &str| e.summary.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        Self {
            op: text("op"),
            result_status: text("result_status"),
            escalated: e
                .summary
                .get("escalated")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            seq: e.seq,
            kind: e.kind,
            tool: e.tool,
            risk: e.risk,
            decision: e.decision,
            decided_by: e.decided_by,
            time: e.time,
            payload_redacted: e.payload_redacted,
        }
    }
}

/// What a check of the audit log's chain found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct AuditVerifyDto {
    pub ok: bool,
    #[ts(type = "number")]
    pub entries: u64,
    #[ts(type = "number | null")]
    pub first_bad_seq: Option<i64>,
    pub problem: Option<String>,
}

/// The arguments of `revoke_grant`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct GrantIdArgs {
    #[ts(type = "number")]
    pub id: i64,
}
