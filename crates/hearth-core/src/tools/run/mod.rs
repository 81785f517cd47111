//! One agent run's tools: what the model is offered, and the handling of each call it
//! makes — parse, validate, gate, run, record. The run remembers the calls it made (an
//! identical call is blocked: its result is already in the turn), whether untrusted text
//! entered the turn (then `write` calls ask even when granted), and the grants the user
//! gave during it.
//!
//! **Provenance rule** (ARCHITECTURE.md, "Invariants"; docs/decisions/0016): the output of
//! a tool that returns outside text (`read_file`, `list_directory`, MCP tools) is untrusted; after it, every
//! `write` call of the run is escalated and asks, whatever was granted. Passages of watched
//! folders that the engine puts into the prompt escalate only a call whose string
//! arguments quote one of them (a run of [`QUOTE_WORDS`] words), so a user with watched
//! folders keeps the meaning of "always allow".

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::builtin::{ALL, Action, BuiltIn, Env, Output};
use super::external::ExternalTool;
use super::gate::{Answer, ConsentRequest, ToolSettings, escape_for_display};
use super::grants::{Grants, Scope, Target};
use super::select;
use super::{
    CallRecord, DecidedBy, Decision, MAX_OBSERVATION_BYTES, Origin, ResultStatus, Risk, ToolInfo,
    truncate_observation,
};
use crate::context::RetrievalSource;
use crate::folders::Folders;
use crate::store::Store;
use crate::types::{ToolCall, ToolSpec};

mod check;
mod execute;
mod fit;
mod record;

use execute::execute;
pub use fit::{Catalog, fit_catalog, spec_tokens};
pub use record::canonical_json;

/// Words in a row an argument must share with a retrieved passage to count as quoting it.
pub const QUOTE_WORDS: usize = 8;

/// A tool a run may call: one of Hearth's own, or one from outside.
#[derive(Clone)]
enum Callable {
    BuiltIn(BuiltIn),
    External(Arc<dyn ExternalTool>),
}

impl Callable {
    fn name(&self) -> &str {
        match self {
            Callable::BuiltIn(b) => b.name(),
            Callable::External(x) => x.name(),
        }
    }

    fn risk(&self) -> Risk {
        match self {
            Callable::BuiltIn(b) => b.risk(),
            Callable::External(x) => x.risk(),
        }
    }

    fn origin(&self) -> Origin {
        match self {
            Callable::BuiltIn(_) => Origin::BuiltIn,
            Callable::External(x) => x.origin(),
        }
    }

    /// It can send data off this computer (no built-in can).
    fn open_world(&self) -> bool {
        match self {
            Callable::BuiltIn(_) => false,
            Callable::External(x) => x.open_world(),
        }
    }

    /// What a grant of it names (see [`super::grants`]).
    fn grant_target(&self) -> Target {
        match self {
            Callable::BuiltIn(b) => Target {
                tool: b.name().into(),
                origin: Origin::BuiltIn,
                binding: String::new(),
                covers: b.name().into(),
            },
            Callable::External(x) => Target {
                tool: x.name().into(),
                origin: x.origin(),
                binding: x.binding(),
                covers: x.covers(),
            },
        }
    }
}

/// Every built-in tool, as front ends list them.
pub fn catalog(enabled: bool) -> Vec<ToolInfo> {
    ALL.iter()
        .map(|t| ToolInfo {
            name: t.name().into(),
            description: t.description().into(),
            origin: Origin::BuiltIn,
            risk: t.risk(),
            risk_source: "built_in",
            enabled,
        })
        .collect()
}

/// One run's tool state.
pub struct ToolRun {
    settings: ToolSettings,
    store: Store,
    /// `(tool, canonical arguments)` of the calls made so far.
    seen: HashSet<(String, String)>,
    /// What untrusted text entered the turn first, if any.
    untrusted: Option<String>,
    /// Passages of watched folders in the prompt (their words, lowercased).
    passages: Vec<Vec<String>>,
    /// Tools the user allowed for the rest of the run (a temporary chat's grants live
    /// here only), as (name, binding).
    granted: HashSet<(String, String)>,
    /// The conversation (`None`: a temporary chat, of which nothing is stored).
    conversation: Option<String>,
    grants: Grants,
    /// The folder search `search_documents` uses.
    retrieval: Option<Arc<dyn RetrievalSource>>,
    /// The user's message says "remember …" (then `remember` runs unasked).
    user_asked_to_remember: bool,
    /// Time spent waiting for answers.
    consent_wait: Duration,
    /// The tools array of the run, fitted to the tools zone ([`ToolRun::fit`]); `None`
    /// until fitted (then every enabled tool is offered).
    catalog: Option<Catalog>,
}

impl ToolRun {
    pub fn new(settings: ToolSettings, store: Store, conversation: Option<String>) -> Self {
        Self {
            settings,
            grants: Grants::new(store.clone()),
            store,
            seen: HashSet::new(),
            untrusted: None,
            passages: Vec::new(),
            granted: HashSet::new(),
            conversation,
            retrieval: None,
            user_asked_to_remember: false,
            consent_wait: Duration::ZERO,
            catalog: None,
        }
    }

    /// The user's message of the turn, and the folder search the tools may use.
    pub fn set_turn(&mut self, message: &str, retrieval: Option<Arc<dyn RetrievalSource>>) {
        self.user_asked_to_remember = asks_to_remember(message);
        self.retrieval = retrieval;
    }

    pub fn settings(&self) -> &ToolSettings {
        &self.settings
    }

    /// Untrusted text an earlier turn brought into the conversation and that is still in
    /// the prompt (its history or summary): the run starts escalated, as if it had come in
    /// this turn (issue 31: untrusted content lasts as long as the prompt holds it).
    pub fn set_untrusted_history(&mut self, what: Option<String>) {
        if self.untrusted.is_none() {
            self.untrusted = what;
        }
    }

    /// The passages the engine put into the prompt (for the quoting rule).
    pub fn set_passages(&mut self, texts: &[String]) {
        self.passages = texts.iter().map(|t| words(t)).collect();
    }

    /// Every enabled tool with its tier, read tools first.
    fn enabled_specs(&self) -> Vec<(ToolSpec, Risk)> {
        if !self.settings.enabled {
            return Vec::new();
        }
        let mut specs: Vec<(ToolSpec, Risk)> = ALL
            .iter()
            .map(|t| {
                (
                    ToolSpec {
                        name: t.name().into(),
                        description: t.description().into(),
                        parameters: t.parameters(),
                    },
                    t.risk(),
                )
            })
            .collect();
        specs.extend(self.settings.external.iter().map(|x| {
            (
                ToolSpec {
                    name: x.name().into(),
                    description: x.description().into(),
                    parameters: x.parameters(),
                },
                x.risk(),
            )
        }));
        // Read tools first, then write, then destructive (the order the zone is cut in).
        specs.sort_by_key(|(_, risk)| *risk);
        specs
    }

    /// The tool `name` names, if the run offers it.
    fn find(&self, name: &str) -> Option<Callable> {
        if !self.offered(name) {
            return None;
        }
        BuiltIn::from_name(name).map(Callable::BuiltIn).or_else(|| {
            self.settings
                .external
                .iter()
                .find(|x| x.name() == name)
                .cloned()
                .map(Callable::External)
        })
    }

    /// Fits the tools array to the tools zone of the window (`budget` tokens, counted
    /// with `encoding`); the run offers that array on every call.
    pub fn fit(&mut self, budget: u32, encoding: crate::tokens::Encoding) -> &Catalog {
        let all = self.enabled_specs();
        let full = fit_catalog(&all, budget, encoding);
        // Built-ins alone keep the tiers that fit (reads first); selection is for the
        // many tools MCP servers bring.
        if full.left_out.is_empty() || self.settings.external.is_empty() {
            return self.catalog.insert(full);
        }
        // Short entries for every tool, the two catalog tools first (so they always fit).
        let mut short = vec![
            (select::describe_spec(), Risk::Read),
            (select::call_spec(), Risk::Read),
        ];
        let bare = short.clone();
        short.extend(all.iter().map(|(s, r)| (select::short_spec(s), *r)));
        let mut catalog = fit_catalog(&short, budget, encoding);
        if !catalog.left_out.is_empty() {
            // Too many even for short entries: names alone (describe_tool tells the rest),
            // so every tool stays callable.
            let mut bare = bare;
            bare.extend(all.iter().map(|(s, r)| (select::bare_spec(s), *r)));
            catalog = fit_catalog(&bare, budget, encoding);
        }
        catalog.selection = true;
        self.catalog.insert(catalog)
    }

    /// The call as the run handles it: a `call_tool` (in selection) is the call it names.
    pub fn resolve(&self, call: &ToolCall) -> ToolCall {
        if self.selecting()
            && call.name == select::CALL_TOOL
            && let Some(inner) = select::unwrap_call_tool(call)
        {
            return inner;
        }
        call.clone()
    }

    fn selecting(&self) -> bool {
        self.catalog.as_ref().is_some_and(|c| c.selection)
    }

    /// In selection, the tools whose full schemas may go with the message (every offered
    /// one, to be ranked by [`select::ToolIndex`]); `None` when the tools array holds the
    /// full schemas.
    pub fn selection_specs(&self) -> Option<Vec<ToolSpec>> {
        if !self.selecting() {
            return None;
        }
        Some(
            self.enabled_specs()
                .into_iter()
                .map(|(s, _)| s)
                .filter(|s| self.offered(&s.name))
                .collect(),
        )
    }

    /// `describe_tool`: the full description and schema of an offered tool (a read, run
    /// unasked; an external tool's description is untrusted text).
    fn describe(&mut self, call: &ToolCall) -> CallRecord {
        let mut record = first_record(call, None);
        record.risk = Risk::Read;
        let wanted = serde_json::from_str::<Value>(&call.arguments)
            .ok()
            .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_owned));
        let found = wanted.as_deref().and_then(|w| {
            self.offered(w)
                .then(|| self.enabled_specs().into_iter().find(|(s, _)| s.name == w))
                .flatten()
        });
        match (wanted, found) {
            (Some(name), Some((spec, risk))) => {
                record.decision = Decision::Allowed;
                record.result_status = ResultStatus::Ok;
                record.observation = serde_json::to_string_pretty(&serde_json::json!({
                    "name": spec.name,
                    "risk": risk,
                    "description": spec.description,
                    "parameters": spec.parameters,
                }))
                .unwrap_or_default();
                let external = self.settings.external.iter().any(|x| x.name() == name);
                record.untrusted = external;
                if external && self.untrusted.is_none() {
                    self.untrusted = Some(format!("the description of {name}"));
                }
            }
            (Some(name), None) => {
                record.observation = format!("Error: there is no tool named `{name}`.");
            }
            (None, _) => {
                record.observation = "Error: describe_tool needs {\"name\": \"TOOL\"}.".into();
            }
        }
        record
    }

    /// The tools array of every request of the run: the same each turn, so the prompt
    /// cache keeps it (SPEC §3).
    pub fn specs(&self) -> Vec<ToolSpec> {
        match &self.catalog {
            Some(c) => c.specs.clone(),
            None => self.enabled_specs().into_iter().map(|(s, _)| s).collect(),
        }
    }

    /// Tools the window had no room for (none before [`ToolRun::fit`]).
    pub fn left_out(&self) -> Vec<String> {
        self.catalog
            .as_ref()
            .map(|c| c.left_out.clone())
            .unwrap_or_default()
    }

    /// Whether `name` is offered to the model in this run.
    fn offered(&self, name: &str) -> bool {
        self.settings.enabled
            && self
                .catalog
                .as_ref()
                .is_none_or(|c| c.specs.iter().any(|s| s.name == name))
    }

    /// Handles one call the model made; the record says what happened and what the
    /// model is told.
    pub async fn handle(&mut self, call: &ToolCall, cancel: &CancellationToken) -> CallRecord {
        if cancel.is_cancelled() {
            return self.not_started(call);
        }
        match self.check(call).await {
            Err(record) => record,
            Ok(ready) => {
                let ready = match self.retake_delete(ready).await {
                    Ok(r) => r,
                    Err(record) => return record,
                };
                let (ready, output) = execute(ready, &self.settings, cancel).await;
                match output {
                    Some(output) => self.finish(ready, output).await,
                    None => ready.record,
                }
            }
        }
    }

    /// A delete's file list taken again just before it runs: when files came or went while
    /// the user was asked, the user is asked again with what would go now (a set that keeps
    /// changing is refused after three questions). Never deletes what the user was not shown.
    async fn retake_delete(&mut self, mut ready: Ready) -> Result<Ready, CallRecord> {
        for _ in 0..3 {
            let Some(now) = ready.action.as_ref().and_then(Action::retaken) else {
                return Ok(ready);
            };
            let request = ConsentRequest {
                call_id: ready.record.id.clone(),
                tool: ready.tool.name().into(),
                origin: ready.tool.origin(),
                risk: Risk::Destructive,
                arguments: escape_for_display(
                    &serde_json::to_string_pretty(&ready.arguments).unwrap_or_default(),
                ),
                preview: now.preview().map(|p| escape_for_display(&p)),
                reason: "what it would delete changed while you were asked: this is what \
                         would go now"
                    .into(),
                escalated_by: None,
                offers_always: false,
                offers_conversation: false,
            };
            let target = ready.tool.grant_target();
            match self.ask(&request, Risk::Destructive, &target).await {
                Ok(by) => {
                    ready.record.decided_by = by;
                    ready.action = Some(now);
                }
                Err((by, reason)) => {
                    ready.record.decision = Decision::Denied;
                    ready.record.decided_by = by;
                    ready.record.observation = format!(
                        "The user denied this call{} (what it would delete had changed). Do \
                         not retry it; go on without it or ask the user.",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    );
                    return Err(ready.record);
                }
            }
        }
        ready.record.decision = Decision::Denied;
        ready.record.observation =
            "Error: what this delete would remove kept changing; nothing was deleted.".into();
        Err(ready.record)
    }

    /// Handles calls of one model step that are all reads: checked in order, run at the
    /// same time, finished in order (`000`:1198–1218: only reads run in parallel).
    pub async fn handle_reads(
        &mut self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Vec<CallRecord> {
        let mut checked = Vec::with_capacity(calls.len());
        for call in calls {
            checked.push(if cancel.is_cancelled() {
                Err(self.not_started(call))
            } else {
                self.check(call).await
            });
        }
        let settings = self.settings.clone();
        let runs = checked.into_iter().map(|c| {
            let settings = settings.clone();
            async move {
                match c {
                    Err(record) => Err(record),
                    Ok(ready) => Ok(execute(ready, &settings, cancel).await),
                }
            }
        });
        let ran = futures_util::future::join_all(runs).await;
        let mut out = Vec::with_capacity(ran.len());
        for r in ran {
            out.push(match r {
                Err(record) => record,
                Ok((ready, Some(output))) => self.finish(ready, output).await,
                Ok((ready, None)) => ready.record,
            });
        }
        out
    }

    /// The record of a call the user's stop came before: never checked, asked or run.
    fn not_started(&self, call: &ToolCall) -> CallRecord {
        CallRecord {
            // The user's stop is their decision not to run it.
            decision: Decision::Denied,
            decided_by: DecidedBy::User,
            result_status: ResultStatus::Cancelled,
            observation: "The call was not run: the user stopped the turn.".into(),
            ..first_record(call, self.find(&call.name).as_ref())
        }
    }

    /// Whether `call` names a read tool (which may run beside other reads).
    pub fn is_read(&self, call: &ToolCall) -> bool {
        self.find(&call.name)
            .is_some_and(|t| t.risk() == Risk::Read)
    }

    /// Time spent waiting for the user's answers in this run (not counted against the
    /// run's time limit).
    pub fn consent_wait(&self) -> Duration {
        self.consent_wait
    }

}

/// A call's record before anything is decided: its arguments parsed (when they are JSON,
/// else kept as text), its tool's origin and tier (an unknown tool counts as destructive),
/// nothing run.
fn first_record(call: &ToolCall, tool: Option<&Callable>) -> CallRecord {
    let arguments = if call.arguments.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()))
    };
    CallRecord {
        id: call.id.clone(),
        tool: call.name.clone(),
        origin: tool.map_or(Origin::BuiltIn, Callable::origin),
        risk: tool.map_or(Risk::Destructive, Callable::risk),
        arguments,
        decision: Decision::Invalid,
        decided_by: DecidedBy::Auto,
        escalated: false,
        result_status: ResultStatus::NotRun,
        observation: String::new(),
        result: String::new(),
        memory: None,
        untrusted: false,
    }
}

/// A call the gate let through, ready to run.
struct Ready {
    record: CallRecord,
    tool: Callable,
    /// What a built-in will do (`None` for an external tool).
    action: Option<Action>,
    env: Env,
    arguments: Value,
}

/// Whether `message` asks, in the user's own words, to remember something: "remember
/// that …", "please remember: …", "remember my …".
pub fn asks_to_remember(message: &str) -> bool {
    let m = message.to_lowercase();
    let w = words(&m);
    w.iter().enumerate().any(|(i, word)| {
        word == "remember"
            && (i == 0 || matches!(w[i - 1].as_str(), "please" | "pls" | "to" | "and" | "also"))
            && w.get(i + 1)
                .is_some_and(|next| next != "when" && next != "if")
    }) && !m.contains("do you remember")
        && !m.trim_end().ends_with('?')
}

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::asks_to_remember;

    #[test]
    fn only_the_users_own_request_counts_as_asking_to_remember() {
        for yes in [
            "Remember that I take my coffee black",
            "please remember: my sister is Ana",
            "ok, and remember my badge number is 41",
            "I want you to remember I'm vegetarian",
        ] {
            assert!(asks_to_remember(yes), "{yes}");
        }
        for no in [
            "Do you remember my sister's name?",
            "what did I ask you to remember?",
            "I can't remember when the meeting is",
            "summarise the file",
            "remember when we went to Lisbon",
        ] {
            assert!(!asks_to_remember(no), "{no}");
        }
    }
}
