//! The third stage: the user's message and an empty `streaming` answer are written, then
//! the model is called, the answer checkpointed as it streams. On a context-length error the
//! prompt is assembled once more at half the window; when the main model fails before
//! saying anything and the user enabled a fallback, the fallback answers.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::assemble::Prompt;
use super::prepare::Prepared;
use super::{cache, semantic};
use super::caller::ModelCaller;
use super::step::{RunBudget, Spent, ToolStep};
use super::{CHECKPOINT_INTERVAL, ChatModel, HEARTBEAT_INTERVAL, TurnContext};
use crate::Result;
use crate::context::{Assembled, ZoneTokens};
use crate::conversations::{Conversations, MessageState};
use crate::llm::{ChatRequest, Completion, LlmError, StreamEvent};
use crate::tokens::Encoding;
use crate::tools::CallRecord;
use crate::tools::run::ToolRun;
use crate::types::{Message, Role, Usage};
use crate::budget::Reservation;
use crate::usage::{self, Call};

/// The rows of a saved turn (`None` in a temporary chat).
pub(super) struct Rows {
    pub user_id: Option<i64>,
    pub answer_id: Option<i64>,
}

/// Writes the user's message (not for a redo: it is there) and the empty answer.
pub(super) fn begin(ctx: &TurnContext<'_>, turn: &Prepared, user: &Message) -> Result<Rows> {
    let mut user_id = turn.redo.as_ref().map(|(id, _)| *id);
    let answer_id = match &turn.conversation {
        Some(c) => {
            if turn.redo.is_none() {
                user_id = Some(turn.convs.append(
                    c,
                    user,
                    turn.encoding,
                    MessageState::Complete,
                    None,
                )?);
            }
            let id = turn.convs.append(
                c,
                &Message::assistant(""),
                turn.encoding,
                MessageState::Streaming,
                Some(&ctx.slots.main.model),
            )?;
            if let Some(owner) = ctx.owner {
                turn.convs.set_owner(id, owner)?;
            }
            Some(id)
        }
        None => None,
    };
    Ok(Rows { user_id, answer_id })
}

/// What the calls produced, with the checkpoint guard still holding the answer.
pub(super) struct Streamed<'a> {
    pub result: std::result::Result<Completion, LlmError>,
    /// The model that answered last (the fallback, if it took over).
    pub model: &'a ChatModel,
    pub encoding: Encoding,
    pub zones: ZoneTokens,
    /// The passages the answering prompt carried: `(citation id, chunk id)`.
    pub cited: Vec<(u32, i64)>,
    /// The main model and why it failed, when the fallback answered.
    pub fallback_from: Option<(String, String)>,
    pub checkpoints: Checkpoints,
    /// The tool calls of the run, in order.
    pub tool_calls: Vec<CallRecord>,
    /// True when the iteration cap (or the run's time limit) forced the final answer.
    pub capped: bool,
    /// True when it was the run's time limit.
    pub timed_out: bool,
    /// Tools the tools zone had no room for.
    pub tools_left_out: Vec<String>,
    /// The calls' reservations against the spending caps (released once the ledger has
    /// their cost).
    pub reservations: Vec<Reservation>,
    /// The run stopped before a call that would have crossed a spending cap.
    pub over_budget: bool,
    /// The answer came from the response cache (no call was made).
    pub cached: bool,
    /// The semantic cache answered: the question its saved reply was given to.
    pub cached_from: Option<String>,
}

/// A stateless question as the semantic cache sees it.
struct Meaning {
    scope: [u8; 32],
    question: String,
    embedding_model: String,
    vector: Vec<f32>,
}

/// The question's embedding by the user's embedding model (off the async threads), or
/// `None` when there is no model or it fails (the semantic cache then just misses).
async fn embed_question(
    ctx: &TurnContext<'_>,
    model: &ChatModel,
    request: &ChatRequest,
    question: &str,
) -> Option<Meaning> {
    let embedder = ctx.sources.embedder.as_ref()?.get()?;
    let (e, q) = (embedder.clone(), semantic::normalized(question));
    match tokio::task::spawn_blocking(move || e.embed_query(&q)).await {
        Ok(Ok(vector)) => Some(Meaning {
            scope: semantic::scope(model, request),
            question: question.to_owned(),
            embedding_model: embedder.model_id().to_owned(),
            vector,
        }),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "no embedding for the semantic cache");
            None
        }
        Err(_) => None,
    }
}




pub(super) async fn stream<'a>(
    ctx: &TurnContext<'a>,
    (turn, opts): (&Prepared, &super::ChatOptions),
    prompt: &Prompt<'_>,
    (assembled, first_call): (Assembled, Reservation),
    rows: &Rows,
    tools: &mut ToolRun,
    mut on_event: impl FnMut(super::TurnEvent<'_>) + Send,
) -> Result<Streamed<'a>> {
    let mut caller = ModelCaller::new(ctx.slots, turn.encoding, turn.window);
    // Checkpoints: a background task saves the answer so far, so a crash loses little.
    // The guard stops it on every way out (a panic, an early return) and marks the answer
    // failed if the turn did not get to write its end.
    let so_far = Arc::new(Mutex::new(String::new()));
    let mut checkpoints =
        Checkpoints::start(&turn.convs, rows.answer_id, so_far.clone(), turn.encoding);
    let sink = so_far.clone();
    let mut zones = assembled.zones;
    let mut cited = assembled.cited;
    let mut messages = assembled.messages;
    tools.set_passages(&prompt.passage_texts());
    let specs = tools.specs();
    let mut tool_calls: Vec<CallRecord> = Vec::new();
    // The text and usage of the model calls before the last (each asked for tools).
    let (mut carried_text, mut carried_usage) = (String::new(), Usage::default());
    let mut budget = RunBudget::start();
    let mut capped = false;
    let mut timed_out = false;
    // Each priced call's reservation against the spending caps, held until the ledger row.
    let mut reservations: Vec<Reservation> = Vec::new();
    let mut next_reservation = Some(first_call);
    let mut over_budget = false;
    let first_messages = messages.len();
    let cache_settings = cache::settings(ctx.store)?;
    let mut cached = false;
    let mut cached_from: Option<String> = None;
    // The calls: `Err` only when recording usage failed (the store), never for a failed
    // provider call, so the end of the turn always runs after the checkpoints stop.
    let looped: Result<std::result::Result<Completion, LlmError>> = async {
        Ok(loop {
            let model = caller.model;
            // Every call after the first is reserved before it goes (a tool loop stops
            // before the call that would cross a cap).
            let reservation = match next_reservation.take() {
                Some(r) => r,
                None => {
                    let grown: usize = messages
                        .iter()
                        .skip(first_messages)
                        .map(|m| m.content.len() + m.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>())
                        .sum();
                    let input = zones.input_tokens() + (grown / 3) as u64;
                    let (store, models, m) = (ctx.store.clone(), turn.models.clone(), model.clone());
                    let work = crate::budget::Work::User {
                        anyway: opts.over_budget,
                    };
                    let output = u64::from(zones.output_reserve);
                    let reserved = tokio::task::spawn_blocking(move || {
                        crate::budget::reserve(&store, &models, &m, (input, output), work)
                    })
                    .await
                    .map_err(|e| crate::Error::Task(e.to_string()))?;
                    match reserved {
                        Ok(r) => r,
                        Err(crate::Error::OverBudget(_)) => {
                            over_budget = true;
                            break Ok(Completion::default());
                        }
                        Err(e) => return Err(e),
                    }
                }
            };
            let sent = std::mem::take(&mut messages);
            let request = ChatRequest {
                model: model.model.clone(),
                messages: sent.clone(),
                // The same array every call of every turn (the prompt cache keeps it);
                // only the forced final answer goes without.
                tools: if capped { Vec::new() } else { specs.clone() },
                max_output_tokens: Some(zones.output_reserve),
                ..ChatRequest::default()
            };
            // The caches: a turn's first call only (no tool results), never for Regenerate
            // or a temporary chat.
            let cacheable = budget.iterations == 0
                && !opts.temporary
                && opts.redo != super::Redo::Regenerate
                && turn.conversation.is_some();
            // The exact response cache.
            let cache_key = (cache_settings.enabled && cacheable).then(|| cache::key(model, &request));
            // The semantic cache: stateless questions only (nothing about the user, no
            // passages, no summary, no history).
            let stateless = zones.memory == 0
                && zones.retrieved == 0
                && zones.summary == 0
                && zones.history == 0
                && cited.is_empty();
            let meaning = match (cache_settings.semantic && cacheable && stateless)
                .then(|| semantic::stateless_question(&request))
                .flatten()
            {
                Some(question) => embed_question(ctx, model, &request, question).await,
                None => None,
            };
            tracing::debug!(
                stateless,
                cacheable,
                semantic = cache_settings.semantic,
                embedded = meaning.is_some(),
                "semantic cache"
            );
            let hit = match (&cache_key, &meaning) {
                (Some(key), _) if let Some(answer) = cache::lookup(ctx.store, key)? => {
                    tracing::info!("answered from the response cache");
                    Some((answer, None))
                }
                (_, Some(m)) => semantic::lookup(
                    ctx.store,
                    &m.scope,
                    &m.embedding_model,
                    &m.vector,
                    &m.question,
                    cache_settings.similarity,
                )?
                .map(|hit| {
                    tracing::info!(similarity = hit.similarity, "answered from the semantic cache");
                    (hit.answer, Some(hit.question))
                }),
                _ => None,
            };
            if let Some((answer, from)) = hit {
                cached_from = from;
                crate::budget::settle(ctx.store, &reservation, Some(0.0))?;
                reservations.push(reservation);
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&answer);
                }
                on_event(super::TurnEvent::Text(&answer));
                cached = true;
                break Ok(Completion {
                    text: answer,
                    finish_reason: Some("stop".into()),
                    ..Completion::default()
                });
            }
            let call_started = Instant::now();
            let result = {
                use tracing::Instrument;
                let span = tracing::info_span!(
                    "model_call",
                    iteration = budget.iterations + 1,
                    model = %model.model,
                    tools = request.tools.len()
                );
                tracing::info!(state = "inferring");
                ctx.client
                    .stream_chat(&model.provider, &request, ctx.cancel, |event| match event {
                        StreamEvent::Text(t) => {
                            if let Ok(mut s) = sink.lock() {
                                s.push_str(&t);
                            }
                            on_event(super::TurnEvent::Text(&t));
                            crate::failpoint::panic_at("turn");
                        }
                        StreamEvent::Waiting { seconds } => on_event(super::TurnEvent::Waiting {
                            provider: &model.provider.name,
                            seconds,
                        }),
                        _ => {}
                    })
                    .instrument(span)
                    .await
            };
            // The reservation now holds the call's real cost, until the turn's ledger row.
            let call_usage = match &result {
                Ok(done) => done.usage,
                Err(e) => e.partial().and_then(|p| p.usage),
            };
            let real = match call_usage {
                Some(u) => turn.models.cost(&model.provider.base_url, &model.model, u),
                None => Some(0.0),
            };
            crate::budget::settle(ctx.store, &reservation, real)?;
            reservations.push(reservation);
            // A whole answer with no tool calls is saved under its request's key.
            if let (Some(key), Ok(done), Some(conversation)) =
                (&cache_key, &result, &turn.conversation)
                && done.tool_calls.is_empty()
                && !done.stopped
                && !done.text.trim().is_empty()
                && !matches!(done.finish_reason.as_deref(), Some("length" | "max_tokens"))
            {
                cache::save(
                    ctx.store,
                    key,
                    cache::Entry {
                        conversation,
                        model,
                        answer: &done.text,
                        carried_memory: zones.memory > 0,
                        carried_passages: zones.retrieved > 0 || !cited.is_empty(),
                    },
                    cache_settings,
                )?;
            }
            if let (Some(m), Ok(done), Some(conversation)) = (&meaning, &result, &turn.conversation)
                && done.tool_calls.is_empty()
                && !done.stopped
                && !done.text.trim().is_empty()
                && !matches!(done.finish_reason.as_deref(), Some("length" | "max_tokens"))
            {
                semantic::save(
                    ctx.store,
                    semantic::Entry {
                        scope: &m.scope,
                        conversation,
                        question: &m.question,
                        embedding_model: &m.embedding_model,
                        vector: &m.vector,
                        model,
                        answer: &done.text,
                    },
                    cache_settings.ttl_hours,
                )?;
            }
            let error = match &result {
                Ok(done) if !done.tool_calls.is_empty() && !done.stopped && !capped => {
                    // The model asked for tools: run them through the gate, tell it what
                    // happened, and call it again.
                    budget.iterations += 1;
                    add_usage(&mut carried_usage, done.usage);
                    carried_text.push_str(&done.text);
                    messages = sent;
                    messages.push(Message {
                        role: Role::Assistant,
                        content: done.text.clone(),
                        tool_calls: done.tool_calls.clone(),
                        tool_call_id: None,
                    });
                    let observations = ToolStep {
                        tools: &mut *tools,
                        answer_id: rows.answer_id,
                        cancel: ctx.cancel,
                    }
                    .run(&done.tool_calls, &mut tool_calls, &mut on_event)
                    .await?;
                    messages.extend(observations);
                    if ctx.cancel.is_cancelled() {
                        break Ok(Completion {
                            text: String::new(),
                            stopped: true,
                            ..Completion::default()
                        });
                    }
                    let tokens = carried_usage.input_tokens + carried_usage.output_tokens;
                    let cost = turn
                        .models
                        .cost(&model.provider.base_url, &model.model, carried_usage)
                        .unwrap_or(0.0);
                    if let Some(spent) =
                        budget.spent(tools.settings(), tools.consent_wait(), tokens, cost)
                    {
                        tracing::info!(?spent, "the run must answer now");
                        capped = true;
                        timed_out = spent == Spent::Time;
                        messages.push(Message::user(spent.note()));
                    }
                    continue;
                }
                Ok(_) => break result,
                Err(error) => error,
            };
            let nothing_yet = so_far.lock().map(|s| s.is_empty()).unwrap_or(false);
            let record_failed = |model: &ChatModel, slot: &str| {
                usage::record(
                    ctx.store,
                    &turn.models,
                    Call {
                        conversation: turn.conversation.as_deref(),
                        message: rows.answer_id,
                        slot,
                        model,
                        usage: Usage::default(),
                        latency_ms: call_started.elapsed().as_millis() as i64,
                        outcome: error.code(),
                    },
                )
            };
            let recovery = caller.recover(error, nothing_yet, prompt, &turn.models);
            if let Some((failed, slot)) = recovery.record {
                record_failed(failed, slot)?;
            }
            if let Some(again) = recovery.retry {
                zones = again.zones;
                cited = again.cited;
                messages = again.messages;
                continue;
            }
            break result;
        })
    }
    .await;
    // No checkpoint may land after the final write: stop the task and wait for a write
    // in flight (an abort would not cancel a blocking write already running).
    checkpoints.stop().await;
    // A store failure while recording: the guard marks the answer failed on the way out.
    let result = looped?.map(|mut done| {
        // The answer is everything the model said in the run; its usage, all the calls'.
        if !carried_text.is_empty() {
            done.text = format!("{carried_text}{}", done.text);
        }
        if budget.iterations > 0 {
            add_usage(&mut carried_usage, done.usage);
            done.usage = Some(carried_usage);
        }
        done
    });
    Ok(Streamed {
        result,
        reservations,
        over_budget,
        cached,
        cached_from,
        model: caller.model,
        encoding: caller.encoding,
        zones,
        cited,
        fallback_from: caller.fallback_from,
        checkpoints,
        tool_calls,
        capped,
        timed_out,
        tools_left_out: tools.left_out(),
    })
}

fn add_usage(total: &mut Usage, more: Option<Usage>) {
    if let Some(u) = more {
        total.input_tokens += u.input_tokens;
        total.output_tokens += u.output_tokens;
        total.cached_input_tokens += u.cached_input_tokens;
        total.cache_write_tokens += u.cache_write_tokens;
    }
}

/// The checkpoint task of a streaming answer, as a guard. [`Checkpoints::stop`] ends it
/// and waits for a write in flight; dropped without [`Checkpoints::finish`] (a panic, an
/// early return) it stops the task and marks the answer `failed`, keeping its text, unless
/// the answer already left `streaming`.
pub(super) struct Checkpoints {
    convs: Conversations,
    answer: Option<i64>,
    so_far: Arc<Mutex<String>>,
    encoding: Encoding,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    finished: bool,
}

impl Checkpoints {
    fn start(
        convs: &Conversations,
        answer: Option<i64>,
        so_far: Arc<Mutex<String>>,
        encoding: Encoding,
    ) -> Self {
        let stop = CancellationToken::new();
        let task = answer.map(|id| {
            let (convs, so_far, stop) = (convs.clone(), so_far.clone(), stop.clone());
            tokio::spawn(async move {
                // Also a heartbeat: a row that stops being touched belongs to a dead turn.
                let (mut saved, mut last_write) = (0usize, Instant::now());
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(CHECKPOINT_INTERVAL) => {}
                    }
                    let text = text_of(&so_far);
                    if text.len() != saved || last_write.elapsed() >= HEARTBEAT_INTERVAL {
                        (saved, last_write) = (text.len(), Instant::now());
                        let c = convs.clone();
                        // Awaited to its end even when stopped meanwhile: `stop` waits for it.
                        let _ =
                            tokio::task::spawn_blocking(move || c.checkpoint(id, &text, encoding))
                                .await;
                    }
                }
            })
        });
        Self {
            convs: convs.clone(),
            answer,
            so_far,
            encoding,
            stop,
            task,
            finished: false,
        }
    }

    /// Stops the task and waits until it has ended, with any write it had started.
    async fn stop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// The turn wrote its end: nothing to do on drop.
    pub(super) fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.stop.cancel();
        if self.finished {
            return;
        }
        let Some(id) = self.answer else {
            return;
        };
        // Any checkpoint still in flight only touches a `streaming` row, so it cannot undo this.
        let text = text_of(&self.so_far);
        match self.convs.fail_if_streaming(id, &text, self.encoding) {
            Ok(true) => tracing::warn!(
                message = id,
                "the turn ended before writing its answer; the answer is marked failed"
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!(
                code = e.code(),
                message = id,
                "could not mark the answer of an aborted turn failed"
            ),
        }
    }
}

/// The text so far (even from a lock a panicking thread held).
fn text_of(so_far: &Mutex<String>) -> String {
    match so_far.lock() {
        Ok(t) => t.clone(),
        Err(p) => p.into_inner().clone(),
    }
}
