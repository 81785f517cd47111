//! Learning from conversations: after each exchange, the "fast" model extracts durable
//! memories (JSON-schema structured output, so small local models work without tool
//! calls), and each candidate is reconciled against the most similar existing memories,
//! offered by id: ADD / UPDATE / DELETE / NOOP (000:2608–2652). Every decision of one
//! exchange is applied in one transaction; malformed output is repaired or skipped with a
//! log line, never half-applied. Schemas: `docs/memory-formats.md`.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod guards;
mod prompts;
mod reconcile;

use guards::*;
pub use guards::{agree, contradicts, grounded_in_user, repair_json, supported_by_user};
pub use prompts::{
    CandidateMemory, EXTRACT_PROMPT, RECONCILE_PROMPT, extraction_schema, reconciliation_schema,
};
use prompts::{Extraction, Reconciliation};

use crate::embed::Embedder;
use crate::llm::ChatModel;
use crate::llm::{ChatRequest, LlmClient, Priority};
use crate::memory::block::Mode;
use crate::memory::proposals::{ProposalAction, is_protected_tx, propose_tx};
use crate::memory::{Actor, Change, Kind, Memories, NewMemory, Source, normalize};
use crate::store::jobs::{Lease, finish_tx};
use crate::types::Message;
use crate::{Error, Result};

/// The job kind of an extraction.
pub const JOB_KIND: &str = "memory_extract";
/// Existing memories offered per candidate.
pub const OFFERED: usize = 5;
/// Most candidates taken from one exchange.
pub const MAX_CANDIDATES: usize = 8;
/// Cosine similarity from which a candidate may be a near-duplicate of an existing memory.
/// A candidate test, not proof: "likes cilantro" and "doesn't like cilantro" pass it, so a
/// merge also needs the two texts to agree ([`agree`]).
pub const NEAR_DUPLICATE: f32 = 0.92;

/// What was decided for one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Add(NewMemory),
    Update {
        id: String,
        text: String,
        reason: String,
    },
    /// Add the candidate and remove `id` (soft) — or, when `keep_old` (the user's life
    /// changed: SUPERSEDE), keep it, marked no longer true.
    Replace {
        id: String,
        new: NewMemory,
        reason: String,
        keep_old: bool,
    },
    /// The user asked to forget `id`: a soft removal (the model chose which memory).
    Forget {
        id: String,
        reason: String,
    },
    Noop,
}

/// Whether untrusted text reached the answer `answer` of `conversation`: a tool call up to
/// it whose output was outside text, or passages of watched folders it was given.
fn untrusted_reached(store: &crate::store::Store, conversation: &str, answer: i64) -> Result<bool> {
    let conversation = conversation.to_owned();
    store.read_blocking(move |c| {
        c.query_row(
            "SELECT EXISTS (SELECT 1 FROM tool_calls t JOIN messages m ON m.id = t.message_id
                             WHERE m.conversation_id = ?1 AND t.untrusted = 1 AND m.id <= ?2)
                 OR EXISTS (SELECT 1 FROM message_sources WHERE message_id = ?2)",
            rusqlite::params![conversation, answer],
            |r| r.get::<_, bool>(0),
        )
    })
}

/// The exchange a job learns from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Exchange {
    pub conversation: String,
    pub user_message: i64,
    pub answer_message: i64,
}

/// The offered memory a model's answer names (`[m-…]` or `m-…`); none for an id that was
/// not offered.
fn find_offered<'a>(offered: &'a [Offered], id: Option<&str>) -> Option<&'a Offered> {
    let id = id?.trim().trim_matches(['[', ']']);
    offered.iter().find(|o| o.id == id)
}

/// An existing memory offered for reconciliation.
#[derive(Debug, Clone)]
struct Offered {
    id: String,
    text: String,
    /// Cosine similarity to the candidate, when an embedder is at hand.
    cosine: Option<f32>,
}

/// Learns from one exchange and applies the result; returns the changes.
/// The most tokens an extraction or reconciliation answer may take.
pub const LEARN_MAX_OUTPUT: u32 = 2048;

pub struct Learner {
    pub memories: Memories,
    pub client: LlmClient,
    pub fast: ChatModel,
    pub embedder: Option<Arc<dyn Embedder>>,
}

impl Learner {
    async fn ask(
        &self,
        system: &str,
        user: String,
        schema: (&str, Value),
    ) -> Result<Option<Value>> {
        let request = ChatRequest {
            model: self.fast.model.clone(),
            messages: vec![Message::system(system), Message::user(user)],
            temperature: Some(0.0),
            json_schema: Some((schema.0.to_owned(), schema.1)),
            // A list of short memories: a model that runs on past it is looping.
            max_output_tokens: Some(LEARN_MAX_OUTPUT),
            // No one waits for it: in the provider's rate-limit queue it yields to turns.
            priority: Priority::Background,
            ..ChatRequest::default()
        };
        // Learning counts against the spending caps and is the first to pause (at 80 %):
        // the job fails and is retried later, when the period ends or the cap is raised.
        let reservation = {
            let (store, model) = (self.memories.store().clone(), self.fast.clone());
            let input = (request_len(&request) / 3) as u64;
            tokio::task::spawn_blocking(move || {
                let table = crate::models::Models::new(store.clone()).table()?;
                crate::budget::reserve(
                    &store,
                    &table,
                    &model,
                    (input, u64::from(LEARN_MAX_OUTPUT)),
                    crate::budget::Work::Background,
                )
            })
            .await
            .map_err(|e| crate::Error::Task(e.to_string()))??
        };
        let never = CancellationToken::new();
        let mut started = std::time::Instant::now();
        let mut call = || {
            started = std::time::Instant::now();
            self.client
                .stream_chat(&self.fast.provider, &request, &never, |_| {})
        };
        // On the built-in model, learning waits for the user's turns (one request at a time).
        let result = if self.fast.provider.name == crate::builtin::PROVIDER {
            crate::builtin::yielding::behind_user_turns(call).await
        } else {
            call().await
        };
        // Every provider call is in the ledger (SPEC §7), learning's too.
        let (usage, outcome) = match &result {
            Ok(done) => (done.usage.unwrap_or_default(), "ok"),
            Err(e) => (Default::default(), e.code()),
        };
        let (store, model) = (self.memories.store().clone(), self.fast.clone());
        let outcome = outcome.to_owned();
        let latency_ms = started.elapsed().as_millis() as i64;
        // Best effort: a ledger row that cannot be written must not lose what is learned.
        let recorded = tokio::task::spawn_blocking(move || {
            let table = crate::models::Models::new(store.clone()).table()?;
            crate::usage::record(
                &store,
                &table,
                crate::usage::Call {
                    conversation: None,
                    message: None,
                    slot: "learning",
                    model: &model,
                    usage,
                    latency_ms,
                    outcome: &outcome,
                },
            )
        })
        .await;
        let store = self.memories.store().clone();
        let _ = tokio::task::spawn_blocking(move || crate::budget::release(&store, vec![reservation])).await;
        if let Ok(Err(e)) | Err(e) = recorded.map_err(|e| crate::Error::Task(e.to_string())) {
            tracing::warn!(
                code = e.code(),
                "could not record the learning call in the ledger"
            );
        }
        let done = result?;
        let parsed = repair_json(&done.text);
        if parsed.is_none() {
            tracing::warn!(schema = schema.0, "the model's answer is not JSON; skipped");
        }
        Ok(parsed)
    }

    /// Learns from one exchange: extract, reconcile each candidate, apply all at once. With
    /// the job's `lease`, the transaction that applies the result also marks the job done,
    /// and nothing is applied if the lease was lost meanwhile ([`Error::LeaseLost`]): an
    /// exchange is learned from exactly once, however many workers tried.
    pub async fn learn(&self, exchange: &Exchange, lease: Option<Lease>) -> Result<Vec<Change>> {
        let source = Source::Conversation {
            conversation: exchange.conversation.clone(),
            message: Some(exchange.user_message),
        };
        let decisions = self.decide(exchange).await?;
        crate::failpoint::hit("learn_before_apply");
        self.apply(decisions, &source, lease)
    }

    /// Extracts and reconciles: what to do, without doing it.
    async fn decide(&self, exchange: &Exchange) -> Result<Vec<Decision>> {
        let settings = crate::memory::settings(self.memories.store())?;
        if !settings.enabled || settings.extraction_paused {
            return Ok(Vec::new());
        }
        let convs = crate::conversations::Conversations::new(self.memories.store().clone());
        let messages = convs.messages(&exchange.conversation)?;
        let text_of = |id: i64| {
            messages
                .iter()
                .find(|m| m.id == id)
                .map(|m| m.message.content.clone())
        };
        let (Some(user), Some(answer)) = (
            text_of(exchange.user_message),
            text_of(exchange.answer_message),
        ) else {
            return Ok(Vec::new());
        };
        let today = jiff::Zoned::now().strftime("%Y-%m-%d").to_string();
        let prompt = format!(
            "<data>\nUser: {user}\nAssistant (context only, not a source of facts): {answer}\n</data>\nToday is {today}. Extract the memories from the user's words."
        );
        let Some(raw) = self
            .ask(
                EXTRACT_PROMPT,
                prompt,
                ("memory_extraction", extraction_schema()),
            )
            .await?
        else {
            return Ok(Vec::new());
        };
        let extraction: Extraction = match serde_json::from_value(raw) {
            Ok(e) => e,
            Err(e) => {
                // serde's message quotes the model's values (memory text): log its class
                // and position only.
                tracing::warn!(
                    class = ?e.classify(),
                    line = e.line(),
                    column = e.column(),
                    "an extraction answer has the wrong shape; nothing learned"
                );
                return Ok(Vec::new());
            }
        };
        let source = Source::Conversation {
            conversation: exchange.conversation.clone(),
            message: Some(exchange.user_message),
        };
        // Untrusted text reached this answer (a tool's output, an MCP server's, passages of
        // a document): what is learned from it must be the user's own words, and never an
        // instruction — a document cannot plant a lasting rule (issue 31).
        let untrusted = untrusted_reached(
            self.memories.store(),
            &exchange.conversation,
            exchange.answer_message,
        )?;
        let mut decisions = Vec::new();
        for c in extraction.memories.into_iter().take(MAX_CANDIDATES) {
            let Ok(kind) = Kind::parse(&c.kind) else {
                tracing::warn!("a candidate has an unknown kind; skipped");
                continue;
            };
            if !grounded_in_user(&c.text, &user, &answer) {
                tracing::info!("a candidate comes from the assistant's words only; skipped");
                continue;
            }
            if untrusted && (kind == Kind::Instruction || !supported_by_user(&c.text, &user)) {
                tracing::info!(
                    "a candidate from an exchange with untrusted content is not the user's own words; skipped"
                );
                continue;
            }
            let new = NewMemory {
                facets: Default::default(),
                text: c.text.trim().to_owned(),
                kind,
                subject: c.subject.filter(|s| !s.trim().is_empty()),
                importance: c.importance.unwrap_or(0.5),
                pinned: false,
                // Only a fact or preference may be critical (always in the prompt); a
                // learned instruction never is.
                critical: c.critical.unwrap_or(false)
                    && matches!(kind, Kind::Fact | Kind::Preference),
                confidence: 0.8,
                source: source.clone(),
                event_at: c
                    .event_date
                    .as_deref()
                    .and_then(|d| d.parse::<jiff::civil::Date>().ok())
                    .and_then(|d| d.to_zoned(jiff::tz::TimeZone::system()).ok())
                    .map(|z| z.timestamp().as_millisecond()),
                created: None,
                context: None,
            };
            if crate::memory::validate(&new).is_err() {
                tracing::warn!("a candidate is empty or too long; skipped");
                continue;
            }
            decisions.push(self.reconcile(new).await?);
        }
        for what in extraction.forget.iter().take(MAX_CANDIDATES) {
            decisions.push(self.forget(what).await?);
        }
        Ok(decisions)
    }

    /// Applies decisions in one transaction. A decision aimed at a pinned or critical
    /// memory is not applied: it becomes a proposal for the user.
    fn apply(
        &self,
        decisions: Vec<Decision>,
        source: &Source,
        lease: Option<Lease>,
    ) -> Result<Vec<Change>> {
        let source = source.clone();
        let source_json = serde_json::to_string(&source).ok();
        let changes = self.memories.store().write_blocking(move |c| {
            let tx = c.transaction()?;
            // First, while taking the write lock: is the job still ours? If not, nothing
            // of this is applied (the transaction is dropped, rolled back).
            if let Some(lease) = lease
                && !finish_tx(&tx, lease)?
            {
                return Ok(None);
            }
            let mut changes = Vec::new();
            let mut touched: HashSet<String> = HashSet::new();
            let change =
                |memory_id: String, op: &str, text: String, old_text: Option<String>| Change {
                    memory_id,
                    op: op.into(),
                    text,
                    old_text,
                    proposal_id: None,
                };
            for d in decisions {
                match d {
                    Decision::Noop => {}
                    Decision::Add(new) => {
                        let id = crate::memory::insert(&tx, &new, Actor::Assistant)?;
                        changes.push(change(id, "add", new.text, None));
                    }
                    Decision::Update { id, text, reason } => {
                        if !touched.insert(id.clone()) {
                            continue;
                        }
                        if is_protected_tx(&tx, &id)? {
                            changes.extend(propose_tx(
                                &tx,
                                &id,
                                ProposalAction::Update,
                                Some(text.trim()),
                                None,
                                &reason,
                                &source,
                            )?);
                        } else if let Some(old) = crate::memory::update_text_tx(
                            &tx,
                            &id,
                            &text,
                            Actor::Assistant,
                            source_json.as_deref(),
                        )? {
                            changes.push(change(id, "update", text, Some(old)));
                        }
                    }
                    Decision::Replace {
                        id,
                        new,
                        reason,
                        keep_old,
                    } => {
                        if !touched.insert(id.clone()) {
                            continue;
                        }
                        if is_protected_tx(&tx, &id)? {
                            // The candidate waits inside the proposal: storing it now would
                            // put a contradictory pair into every prompt.
                            changes.extend(propose_tx(
                                &tx,
                                &id,
                                ProposalAction::Remove,
                                None,
                                Some(&new),
                                &reason,
                                &source,
                            )?);
                            continue;
                        }
                        let added = crate::memory::insert(&tx, &new, Actor::Assistant)?;
                        let src = source_json.as_deref();
                        if keep_old {
                            if let Some(old) =
                                crate::memory::supersede_tx(&tx, &id, &added, Actor::Assistant, src)?
                            {
                                changes.push(change(id, "supersede", old, None));
                            }
                        } else if let Some(old) =
                            crate::memory::remove_tx(&tx, &id, Actor::Assistant, src)?
                        {
                            changes.push(change(id, "remove", old, None));
                        }
                        changes.push(change(added, "add", new.text, None));
                    }
                    Decision::Forget { id, reason } => {
                        if !touched.insert(id.clone()) {
                            continue;
                        }
                        if is_protected_tx(&tx, &id)? {
                            changes.extend(propose_tx(
                                &tx,
                                &id,
                                ProposalAction::Remove,
                                None,
                                None,
                                &reason,
                                &source,
                            )?);
                        } else if let Some(old) =
                            crate::memory::remove_tx(&tx, &id, Actor::Assistant, source_json.as_deref())?
                        {
                            // Soft: the model chose which memory; the user can restore it.
                            changes.push(change(id, "remove", old, None));
                        }
                    }
                }
            }
            tx.commit()?;
            Ok(Some(changes))
        })?;
        let Some(changes) = changes else {
            tracing::warn!("a learning job's lease was taken over; its result is not applied");
            return Err(Error::LeaseLost);
        };
        if !changes.is_empty() {
            tracing::info!(changes = changes.len(), "memory learned from an exchange");
        }
        Ok(changes)
    }
}

/// The characters of a request's messages (to estimate its tokens before the call).
fn request_len(request: &ChatRequest) -> usize {
    request.messages.iter().map(|m| m.content.len()).sum()
}
