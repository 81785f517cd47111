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
    /// Whether "for this conversation" and "always" are offered (never for destructive).
    pub offers_always: bool,
}

impl From<hearth_core::tools::gate::Pending> for ConsentRequestDto {
    fn from(p: hearth_core::tools::gate::Pending) -> Self {
        let r = p.request;
        Self {
            id: p.id,
            call_id: r.call_id,
            tool: r.tool,
            origin: r.origin.label(),
            risk: r.risk.as_str().to_owned(),
            arguments: r.arguments,
            preview: r.preview,
            reason: r.reason,
            escalated_by: r.escalated_by,
            offers_always: r.offers_always,
        }
    }
}

/// The arguments of `answer_consent`.
#[derive(Debug, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AnswerConsentArgs {
    #[ts(type = "number")]
    pub id: u64,
    /// `once`, `conversation`, `always` or `deny`.
    pub choice: String,
    /// With `deny`: why, passed back to the model.
    pub reason: Option<String>,
}
