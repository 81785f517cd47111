//! Tools the model may call, and the consent gate every call goes through.
//!
//! - [`builtin`]: the built-in tools (files in watched folders, the time), each with a
//!   JSON-Schema input (`additionalProperties: false`), a description of what, when and
//!   when not, and a risk tier;
//! - [`paths`]: where a file tool may reach (inside watched folders; writable ones to
//!   change anything; never through a link out, never into what the indexer ignores);
//! - [`gate`]: the consent gate — `read` runs, `write` asks unless granted, `destructive`
//!   always asks — and what a front end shows the user (escaped arguments, a preview);
//! - [`run`]: one agent run's tool state (duplicates, untrusted provenance, grants of
//!   the run) and the handling of one call: parse, validate, gate, run, record.
//!
//! **Invariant:** nothing here runs a tool except through [`run::ToolRun::handle`], which
//! always consults the gate; no front end can reach a tool another way (they only see
//! [`ToolInfo`] and answer [`gate::ConsentRequest`]s). This module never depends on
//! `chat` or the façade.

pub mod builtin;
pub mod external;
pub mod gate;
pub mod grants;
pub mod history;
pub mod mcp;
pub mod paths;
pub mod run;
pub mod select;

use serde::{Deserialize, Serialize};

/// How much harm a call can do (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Changes something, reversibly (creates a file, never overwrites one).
    Write,
    /// Deletes, overwrites, moves, sends, spends: anything irreversible or leaving the
    /// machine.
    Destructive,
}

impl Risk {
    /// `read`, `write` or `destructive`.
    pub fn parse(s: &str) -> crate::Result<Risk> {
        match s {
            "read" => Ok(Risk::Read),
            "write" => Ok(Risk::Write),
            "destructive" => Ok(Risk::Destructive),
            other => Err(crate::Error::InvalidInput(format!(
                "{other:?} is not a risk tier: use read, write or destructive"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Read => "read",
            Risk::Write => "write",
            Risk::Destructive => "destructive",
        }
    }
}

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    BuiltIn,
    /// An MCP server, by its name (issue 13).
    Mcp(String),
}

impl Origin {
    /// `built_in`, or `mcp:<server>`.
    pub fn label(&self) -> String {
        match self {
            Origin::BuiltIn => "built_in".into(),
            Origin::Mcp(s) => format!("mcp:{s}"),
        }
    }
}

impl Origin {
    /// The origin a [`Origin::label`] names.
    pub fn from_label(label: &str) -> Self {
        match label.strip_prefix("mcp:") {
            Some(server) => Origin::Mcp(server.to_owned()),
            None => Origin::BuiltIn,
        }
    }
}

impl Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

/// A tool as people and front ends see it (`hearth tools list`, the Tools screen).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub origin: Origin,
    pub risk: Risk,
    /// Why it has that tier: `built_in` (set by Hearth); later `annotations` / `user`.
    pub risk_source: &'static str,
    pub enabled: bool,
}

/// What the gate decided about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allowed,
    Denied,
    /// Never reached the gate: unknown tool, malformed or refused arguments, a duplicate.
    Invalid,
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The user answered the consent request.
    User,
    /// A grant the user gave earlier (for this conversation, or always).
    Grant,
    /// The rules: a read runs; an invalid call never runs.
    Auto,
    /// `hearth chat --allow-writes` (non-escalated `write` calls only).
    AllowWrites,
    /// No one could be asked (no terminal, no consent surface): denied.
    PolicyNoTty,
    /// No answer in time: denied.
    Timeout,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Ok,
    Error,
    NotRun,
    Timeout,
    Cancelled,
}

/// One tool call of a turn, as stored with the answer and shown (`hearth chat --json`
/// `tool_calls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// The model's id for the call.
    pub id: String,
    pub tool: String,
    pub origin: Origin,
    pub risk: Risk,
    /// The arguments as the model sent them (parsed when they are JSON, else the text).
    pub arguments: serde_json::Value,
    pub decision: Decision,
    pub decided_by: DecidedBy,
    /// True when untrusted text earlier in the turn made the gate ask.
    pub escalated: bool,
    pub result_status: ResultStatus,
    /// What the model was told (truncated past the size limit).
    #[serde(skip)]
    pub observation: String,
    /// What the user is shown: the tool's whole output (the model got it truncated past
    /// [`MAX_OBSERVATION_BYTES`]), or why it did not run.
    #[serde(skip)]
    pub result: String,
    /// The memory the call created or removed (its audit payload goes with it).
    #[serde(skip)]
    pub memory: Option<String>,
    /// What it returned is untrusted text (a file's content, a listing, passages, an
    /// external tool's output or description): while the conversation holds it, writes
    /// of later turns are escalated too.
    #[serde(skip)]
    pub untrusted: bool,
}

impl CallRecord {
    /// What the user is shown of the call's result.
    pub fn shown_result(&self) -> &str {
        if self.result.is_empty() {
            &self.observation
        } else {
            &self.result
        }
    }

    /// The arguments as a person reads them: pretty-printed, hidden characters escaped
    /// (as the consent request shows them).
    pub fn arguments_for_display(&self) -> String {
        gate::escape_for_display(&serde_json::to_string_pretty(&self.arguments).unwrap_or_default())
    }

    /// The result as a person reads it: hidden characters escaped.
    pub fn result_for_display(&self) -> String {
        gate::escape_for_display(self.shown_result())
    }
}

/// Tool output past this many bytes reaches the model truncated, with a note.
pub const MAX_OBSERVATION_BYTES: usize = 32 * 1024;

/// `text` cut to `max` bytes at a character boundary, with a note when cut.
pub fn truncate_observation(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[truncated: {} of {} bytes shown]",
        &text[..cut],
        cut,
        text.len()
    )
}
