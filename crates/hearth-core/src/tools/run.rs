//! One agent run's tools: what the model is offered, and the handling of each call it
//! makes — parse, validate, gate, run, record. The run remembers the calls it made (an
//! identical call is blocked: its result is already in the turn), whether untrusted text
//! entered the turn (then `write` calls ask even when granted), and the grants the user
//! gave during it.
//!
//! **Provenance rule** (ARCHITECTURE.md, "Invariants"; docs/decisions/0016-tool-consent-gate-and-run-limits.md): the output of a tool that returns
//! outside text (`read_file`, `list_directory`, MCP tools) is untrusted; after it, every
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

/// The tools array offered to the model, fitted to the tools zone of the window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub specs: Vec<ToolSpec>,
    /// What the array costs, counted as the provider receives it.
    pub tokens: u32,
    /// Tools that did not fit the zone (the context inspector lists them).
    pub left_out: Vec<String>,
    /// The full schemas did not fit: every tool is a short entry beside `describe_tool`
    /// and `call_tool`, and each message gets the schemas of its likeliest tools
    /// ([`super::select`]).
    pub selection: bool,
}

/// Framing tokens per tool in a tools array (the provider's wrapper around each).
const TOOL_OVERHEAD: u32 = 8;

/// The tokens one tool costs in the tools array: its JSON as sent.
pub fn spec_tokens(spec: &ToolSpec, encoding: crate::tokens::Encoding) -> u32 {
    let json = serde_json::json!({
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    });
    encoding.count(&json.to_string()) as u32 + TOOL_OVERHEAD
}

/// The tools of `specs` (given read tools first, then write, then destructive) that fit
/// `budget` tokens: taken in that order, a tier's tools while they fit; once a tool of a
/// tier is left out, no tool of a riskier tier goes in (a small model gets its reads
/// before anything that changes files). A function of its inputs only, so a conversation
/// with the same model and enabled tools gets the same array every turn (the prompt cache
/// keeps it).
pub fn fit_catalog(
    specs: &[(ToolSpec, Risk)],
    budget: u32,
    encoding: crate::tokens::Encoding,
) -> Catalog {
    let mut out = Catalog::default();
    let mut cut_at: Option<Risk> = None;
    for (spec, risk) in specs {
        let cost = spec_tokens(spec, encoding);
        let blocked = cut_at.is_some_and(|r| *risk > r);
        if !blocked && out.tokens + cost <= budget {
            out.tokens += cost;
            out.specs.push(spec.clone());
        } else {
            cut_at = Some(cut_at.map_or(*risk, |r| r.min(*risk)));
            out.left_out.push(spec.name.clone());
        }
    }
    out
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

    /// Parses, validates and gates a call: `Ok` when it is to run, else its finished record.
    async fn check(&mut self, call: &ToolCall) -> Result<Ready, CallRecord> {
        if self.selecting() && call.name == select::DESCRIBE_TOOL {
            return Err(self.describe(call));
        }
        if self.selecting() && call.name == select::CALL_TOOL {
            let mut record = first_record(call, None);
            record.observation = "Error: call_tool needs {\"name\": \"TOOL\", \"arguments\": {…}} \
                naming a tool of the catalog."
                .into();
            return Err(record);
        }
        let tool = self.find(&call.name);
        let mut record = first_record(call, tool.as_ref());
        let arguments = record.arguments.clone();
        let Some(tool) = tool else {
            record.observation = format!(
                "Error: there is no tool named `{}`. The tools are: {}.",
                call.name,
                self.specs()
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(record);
        };
        if !arguments.is_object() {
            record.observation = format!(
                "Error: the arguments of {} must be a JSON object matching its schema.",
                tool.name()
            );
            return Err(record);
        }
        let name = tool.name().to_owned();
        let key = (name.clone(), canonical_json(&arguments));
        if self.seen.contains(&key) {
            record.observation = "Error: this exact call was already made in this turn; its \
                result is above. Do not repeat it."
                .into();
            return Err(record);
        }
        self.seen.insert(key);
        let folders = match self.folders().await {
            Ok(f) => f,
            Err(e) => {
                record.result_status = ResultStatus::Error;
                record.observation = format!("Error: the watched folders could not be read: {e}");
                return Err(record);
            }
        };
        let folders = Env {
            folders,
            store: self.store.clone(),
            conversation: self.conversation.clone(),
            retrieval: self.retrieval.clone(),
            worker: self.settings.worker.clone(),
        };
        let action = match &tool {
            Callable::BuiltIn(builtin) => {
                let (args, folders, builtin) = (arguments.clone(), folders.clone(), *builtin);
                match tokio::task::spawn_blocking(move || builtin.prepare(&args, &folders)).await {
                    Ok(r) => r.map(Some),
                    Err(_) => Err("the call's arguments could not be checked".into()),
                }
            }
            Callable::External(x) => {
                super::external::check_arguments(&x.parameters(), &arguments).map(|()| None)
            }
        };
        let action = match action {
            Ok(a) => a,
            Err(message) => {
                record.observation = format!("Error: {message}");
                return Err(record);
            }
        };
        if let Some(Action::Forget(m)) = &action {
            record.memory = Some(m.id.clone());
        }
        // `remember` runs unasked only for the user's own "remember that …" (not an
        // instruction, not after untrusted text).
        let asked_to_remember = matches!(&action, Some(Action::Remember(m))
            if m.kind != crate::memory::Kind::Instruction && self.user_asked_to_remember);
        // The gate.
        let risk = tool.risk();
        let open_world = tool.open_world();
        let quoted = self.quotes_a_passage(&arguments);
        let escalated_by = if risk >= Risk::Write || open_world {
            self.untrusted.clone().or(quoted)
        } else {
            None
        };
        record.escalated = escalated_by.is_some();
        // A path Hearth does not read on its own (hidden, ignored, a secret place): the
        // user decides, every time, whatever the tier, grants or `--allow-writes`.
        let excluded = action.as_ref().and_then(Action::excluded);
        let decided: Result<DecidedBy, (DecidedBy, Option<String>)> = match risk {
            // A read runs, unless it can send data out after untrusted text came in.
            Risk::Read if escalated_by.is_none() && excluded.is_none() => Ok(DecidedBy::Auto),
            Risk::Write if escalated_by.is_none() && excluded.is_none() && asked_to_remember => {
                Ok(DecidedBy::Auto)
            }
            Risk::Write
                if escalated_by.is_none() && excluded.is_none() && self.settings.allow_writes =>
            {
                Ok(DecidedBy::AllowWrites)
            }
            Risk::Write
                if escalated_by.is_none()
                    && excluded.is_none()
                    && self.is_granted(&tool.grant_target()).await =>
            {
                Ok(DecidedBy::Grant)
            }
            _ => {
                let reason = match (&excluded, risk, &escalated_by) {
                    (Some(why), _, _) => format!(
                        "{why}; Hearth does not read or change it unless you allow this call"
                    ),
                    (None, Risk::Destructive, _) => {
                        "it cannot be undone from here: destructive calls always ask".into()
                    }
                    (None, Risk::Read, Some(by)) => format!(
                        "it can send data off this computer, and untrusted content entered \
                         this turn before the request ({by})"
                    ),
                    (None, _, Some(by)) => format!(
                        "untrusted content entered this turn before the request ({by}); \
                         grants do not cover it"
                    ),
                    (None, _, None) => {
                        "it changes files, and you have not allowed this tool".into()
                    }
                };
                // A temporary chat stores nothing, so it offers no lasting grant. Grants
                // cover writes only (a read asks only when escalated, which no grant
                // covers), and never a path Hearth does not read on its own.
                let grantable = risk == Risk::Write && excluded.is_none();
                let request = ConsentRequest {
                    call_id: call.id.clone(),
                    tool: name.clone(),
                    origin: tool.origin(),
                    risk,
                    arguments: escape_for_display(
                        &serde_json::to_string_pretty(&arguments).unwrap_or_default(),
                    ),
                    preview: action
                        .as_ref()
                        .and_then(Action::preview)
                        .map(|p| escape_for_display(&p)),
                    reason,
                    escalated_by: escalated_by.clone(),
                    offers_always: grantable && self.conversation.is_some(),
                    offers_conversation: grantable,
                };
                // An excluded path's answer is never stored as a grant.
                let stored_as = if excluded.is_some() {
                    Risk::Destructive
                } else {
                    risk
                };
                self.ask(&request, stored_as, &tool.grant_target()).await
            }
        };
        let by = match decided {
            Ok(by) => by,
            Err((by, reason)) => {
                record.decision = Decision::Denied;
                record.decided_by = by;
                record.observation = match by {
                    DecidedBy::PolicyNoTty => format!(
                        "The call was not run: it needs the user's approval and no one could be \
                         asked here (no terminal). Tell the user what you wanted to do ({name}) \
                         so they can do it or approve it in the app."
                    ),
                    DecidedBy::Timeout => {
                        "The call was not run: the user did not answer in time.".into()
                    }
                    _ => format!(
                        "The user denied this call{}. Do not retry it; go on without it or ask \
                         the user.",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    ),
                };
                return Err(record);
            }
        };
        record.decision = Decision::Allowed;
        record.decided_by = by;
        Ok(Ready {
            record,
            tool,
            action,
            env: folders,
            arguments,
        })
    }

    /// What follows a call that ran: the trash's refusal asked again as a permanent
    /// delete, untrusted output marked, the observation for the model.
    async fn finish(&mut self, ready: Ready, mut output: Output) -> CallRecord {
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

    /// Asks the user; a grant answer is kept for the rest of the run (and stored, bound to
    /// `target`, in a saved conversation).
    async fn ask(
        &mut self,
        request: &ConsentRequest,
        risk: Risk,
        target: &Target,
    ) -> Result<DecidedBy, (DecidedBy, Option<String>)> {
        let Some(surface) = self.settings.consent.clone() else {
            return Err((DecidedBy::PolicyNoTty, None));
        };
        let asked = Instant::now();
        let answer =
            tokio::time::timeout(self.settings.consent_timeout, surface.ask(request)).await;
        self.consent_wait += asked.elapsed();
        let Ok(answer) = answer else {
            return Err((DecidedBy::Timeout, None));
        };
        match answer {
            Answer::AllowOnce => Ok(DecidedBy::User),
            Answer::AllowConversation | Answer::AllowAlways => {
                if risk != Risk::Destructive {
                    self.granted
                        .insert((target.tool.clone(), target.binding.clone()));
                    let scope = match answer {
                        Answer::AllowAlways => Scope::Always,
                        _ => Scope::Conversation,
                    };
                    // A temporary chat's grant stays in the run; a saved one is stored.
                    if self.conversation.is_some() {
                        let (grants, target, conversation) = (
                            self.grants.clone(),
                            target.clone(),
                            self.conversation.clone(),
                        );
                        let stored = tokio::task::spawn_blocking(move || {
                            grants.add(&target, risk, scope, conversation.as_deref())
                        })
                        .await;
                        if !matches!(stored, Ok(Ok(()))) {
                            tracing::warn!(tool = %request.tool, "a grant could not be stored");
                        }
                    }
                }
                Ok(DecidedBy::User)
            }
            Answer::Deny(reason) => Err((DecidedBy::User, reason)),
            Answer::NoSurface => Err((DecidedBy::PolicyNoTty, None)),
        }
    }

    /// Whether the user granted `target` (its name, origin and binding) in this run, this
    /// conversation, or always.
    async fn is_granted(&self, target: &Target) -> bool {
        if self
            .granted
            .contains(&(target.tool.clone(), target.binding.clone()))
        {
            return true;
        }
        let (grants, target, conversation) = (
            self.grants.clone(),
            target.clone(),
            self.conversation.clone(),
        );
        tokio::task::spawn_blocking(move || {
            grants.covers(
                &target.tool,
                &target.origin,
                &target.binding,
                conversation.as_deref(),
            )
        })
        .await
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or(false)
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

    async fn folders(&self) -> crate::Result<Vec<crate::folders::Folder>> {
        let folders = Folders::new(self.store.clone());
        tokio::task::spawn_blocking(move || folders.list())
            .await
            .map_err(|e| crate::Error::InvalidInput(e.to_string()))?
    }

    /// Which passage (if any) a string argument quotes.
    fn quotes_a_passage(&self, arguments: &Value) -> Option<String> {
        if self.passages.is_empty() {
            return None;
        }
        let mut strings = Vec::new();
        collect_strings(arguments, &mut strings);
        for s in strings {
            let w = words(s);
            if w.len() < QUOTE_WORDS {
                continue;
            }
            for (i, p) in self.passages.iter().enumerate() {
                if p.len() < QUOTE_WORDS {
                    continue;
                }
                let windows: HashSet<&[String]> = p.windows(QUOTE_WORDS).collect();
                if w.windows(QUOTE_WORDS).any(|win| windows.contains(win)) {
                    return Some(format!(
                        "the call quotes passage [{}] of a watched folder",
                        i + 1
                    ));
                }
            }
        }
        None
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

/// Attempts of a read call that failed for a system reason (retried with backoff; a
/// write never is: it could apply twice, or run without fresh consent).
const READ_ATTEMPTS: u32 = 3;

/// Runs a call the gate let through, within its time limit, stopped by the user's cancel;
/// `None` when it did not finish (the record says why).
async fn execute(
    mut ready: Ready,
    settings: &ToolSettings,
    cancel: &CancellationToken,
) -> (Ready, Option<Output>) {
    let name = ready.tool.name().to_owned();
    let read = ready.tool.risk() == Risk::Read;
    let mut attempt = 0;
    loop {
        attempt += 1;
        if cancel.is_cancelled() {
            ready.record.result_status = ResultStatus::Cancelled;
            ready.record.observation = "The call was not run: the user stopped the turn.".into();
            return (ready, None);
        }
        let run: std::pin::Pin<Box<dyn std::future::Future<Output = Option<Output>> + Send>> =
            match (&ready.tool, &ready.action) {
                (Callable::BuiltIn(_), Some(action)) => {
                    let (action, env, stop) = (action.clone(), ready.env.clone(), cancel.clone());
                    Box::pin(async move {
                        tokio::task::spawn_blocking(move || action.execute(&env, &stop))
                            .await
                            .ok()
                    })
                }
                // Dropped on a stop or a timeout: the tool's own drop ends what it started.
                (Callable::External(x), _) => {
                    let call = x.call(ready.arguments.clone());
                    Box::pin(async move {
                        let out = call.await;
                        Some(Output {
                            text: out.text,
                            ok: out.ok,
                            untrusted: true,
                            trash_failed: None,
                            memory: None,
                            transient: out.transient,
                        })
                    })
                }
                (Callable::BuiltIn(_), None) => Box::pin(async { None }),
            };
        let run = {
            use tracing::Instrument;
            run.instrument(tracing::info_span!("tool_call", tool = %name, attempt))
        };
        let output = tokio::select! {
            r = run => r,
            _ = tokio::time::sleep(settings.call_timeout) => {
                ready.record.result_status = ResultStatus::Timeout;
                ready.record.observation = format!(
                    "Error: {name} did not finish within {} s and was abandoned.{}",
                    settings.call_timeout.as_secs_f64(),
                    if read {
                        ""
                    } else {
                        " It may still complete: check its result before trying again."
                    }
                );
                return (ready, None);
            }
            _ = cancel.cancelled() => {
                ready.record.result_status = ResultStatus::Cancelled;
                ready.record.observation = "The call was stopped: the user stopped the turn.".into();
                return (ready, None);
            }
        };
        match output {
            Some(o) if o.transient && read && attempt < READ_ATTEMPTS => {
                tracing::info!(tool = %name, attempt, "retrying a read after a system error");
                tokio::time::sleep(Duration::from_millis(50 * 4u64.pow(attempt - 1))).await;
            }
            Some(o) => return (ready, Some(o)),
            None => {
                ready.record.result_status = ResultStatus::Error;
                ready.record.observation = format!("Error: {name} failed unexpectedly.");
                return (ready, None);
            }
        }
    }
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
