//! [`Hearth`]: the one handle the desktop shell and the CLI talk to.

mod activity;
mod builtin;
mod conversations;
mod embedding;
mod folders;
mod idle;
mod jobs;
mod keys;
mod liveness;
mod mcp;
mod memory;
mod providers;
mod turn;
mod updates;

/// The settings key of the quick-prompt shortcut.
const QUICK_PROMPT_SHORTCUT: &str = "shortcut.quick_prompt";

pub use activity::{ActivityService, RECENT_AUDIT_ENTRIES};
pub use builtin::{BuiltinService, BuiltinStatus, DownloadProgress};
pub use conversations::ConversationService;
use embedding::embedder_for;
pub use embedding::{EmbeddingStatus, LocalModelStatus};
pub use folders::{
    FolderService, FolderState, FolderSummary, INGEST_JOB, IndexOptions, IndexSummary, SearchScope,
    WatchingFolders,
};
pub use idle::set_release_freed_memory;
pub use jobs::{JobResult, JobRunner, REEMBED_JOB, RunPolicy, RunningJobs};
pub use keys::KeyService;
pub use liveness::STALE_TURN;
use liveness::{Liveness, sweep_dead_turns};
pub use mcp::{
    ImportReport, ImportedServer, McpService, McpToolInfo, NewServer, ServerReport, ToolReview,
};
pub use memory::{ExportFormat, MemoryCounts, MemoryDetail, MemoryService};
pub use providers::{EffectiveSlots, ModelService, ProviderService};
pub use turn::{ModelChoice, Turn};
pub use updates::{UPDATE_CHECK_EVERY_MS, UpdateService, UpdateSettings};

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::chat::{ChatOptions, ModelSlots, TurnOutcome};
use crate::embed::{EmbedderSlot, EmbeddingChoice};
use crate::events::Event;
use crate::llm::{LlmClient, RetryPolicy, Timeouts};
use crate::store::{ChangeWatcher, OpenOptions, Store};
use crate::{Error, Result};

const EVENT_CAPACITY: usize = 256;

/// How often other processes' commits are looked for.
pub const CHANGE_POLL_INTERVAL: Duration = Duration::from_millis(300);

/// The engine. Cheap to clone; every clone shares one store and one event channel.
#[derive(Clone)]
pub struct Hearth {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    llm: LlmClient,
    events: broadcast::Sender<Event>,
    _watcher: Option<ChangeWatcher>,
    sources: std::sync::Mutex<crate::chat::Sources>,
    liveness: Option<Liveness>,
    /// The embedder the user chose, when it can be used (the local model only once its
    /// files are on this computer; loaded on first use). Swapped when the choice changes.
    embedder: EmbedderSlot,
    /// Wakes this process's job workers (if started) when a job is queued here.
    jobs_wake: jobs::Wake,
    /// The MCP servers this process started.
    mcp: Arc<crate::tools::mcp::manager::Manager>,
    /// The local embedding model is downloading in this process (one at a time).
    downloading_model: std::sync::atomic::AtomicBool,
    /// Drops models unused for a while (long-lived engines only).
    _idle: Option<idle::IdleRelease>,
}

/// The commit the binary was built from, as its build script saw it.
static BUILD_COMMIT: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Tells the engine which commit the binary was built from (`env!("HEARTH_COMMIT")`), for
/// the status report. Set once, first thing in `main`.
pub fn set_build_commit(commit: &'static str) {
    let _ = BUILD_COMMIT.set(commit);
}

/// What `hearth doctor` and the app's Status panel show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    /// Hearth's version.
    pub version: String,
    /// The commit the running binary was built from ("unknown" if it did not say).
    pub commit: String,
    pub data_dir: String,
    pub db_path: String,
    pub db_id: String,
    pub schema_version: u32,
    pub sqlite_version: String,
    pub sqlcipher_version: String,
    pub sqlite_vec_version: String,
    pub key_backend: String,
    pub encrypted: bool,
    pub fts5: bool,
    pub vec0: bool,
    /// Durable background jobs: waiting, running, failed for good.
    pub jobs: crate::store::jobs::JobCounts,
    /// The error codes of jobs that failed for good, newest first (at most 10).
    pub failed_jobs: Vec<FailedJob>,
    /// Things the user should know (e.g. the key is kept in a plain file).
    pub warnings: Vec<String>,
}

/// A job that gave up: its kind and the error code of its last attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedJob {
    pub id: i64,
    pub kind: String,
    pub code: Option<String>,
    pub attempts: u32,
}

impl Hearth {
    /// Opens (or creates) the store and starts watching it for changes from other processes.
    pub fn open(opts: &OpenOptions) -> Result<Self> {
        Self::open_inner(opts, true)
    }

    /// Opens the store without the change watcher (for one-shot CLI commands).
    pub fn open_oneshot(opts: &OpenOptions) -> Result<Self> {
        Self::open_inner(opts, false)
    }

    fn open_inner(opts: &OpenOptions, watch: bool) -> Result<Self> {
        let store = Store::open(opts)?;
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let watcher = if watch {
            let tx = events.clone();
            Some(store.watch_changes(CHANGE_POLL_INTERVAL, move || {
                let _ = tx.send(Event::StoreChanged);
            })?)
        } else {
            None
        };
        // The audit log's first entry, and its hash in the id file (an emptied log is then
        // found).
        if let Err(e) = crate::audit::Audit::new(store.clone()).ensure_started() {
            tracing::warn!(error = %e, "could not start the audit log");
        }
        let llm = LlmClient::new(RetryPolicy::default(), Timeouts::default())?;
        let liveness = Liveness::claim(&store.data_dir().run_dir());
        if let Err(e) = sweep_dead_turns(&store, liveness.as_ref().map(|l| l.id.as_str())) {
            tracing::warn!(error = %e, "could not look for turns of processes that died");
        }
        if let Err(e) = crate::memory::Memories::new(store.clone()).upgrade_vector_tables() {
            tracing::warn!(error = %e, "could not move memory vectors to the partitioned table");
        }
        match crate::memory::Memories::new(store.clone()).tag_untagged() {
            Ok(0) => {}
            Ok(n) => tracing::info!(memories = n, "tagged memories with their facets"),
            Err(e) => tracing::warn!(error = %e, "could not tag memories with their facets"),
        }
        let choice: EmbeddingChoice = store
            .setting(crate::embed::CHOICE_SETTING)?
            .unwrap_or_default();
        let embedder = EmbedderSlot::new(embedder_for(&store, &llm, &choice));
        let sources = crate::chat::Sources {
            memory: Some(Arc::new(crate::memory::block::MemoryBlockSource::new(
                crate::memory::Memories::new(store.clone()).with_vector_index(),
                embedder.clone(),
            ))),
            retrieval: Some(crate::folders::cite::FolderRetrieval::new(
                store.clone(),
                embedder.clone(),
            )),
            tools: Arc::new(crate::tools::select::ToolIndex::new(embedder.clone())),
            embedder: Some(embedder.clone()),
        };
        let stale = crate::time::now_millis() - STALE_TURN.as_millis() as i64;
        let marked =
            crate::conversations::Conversations::new(store.clone()).mark_interrupted(stale)?;
        if marked > 0 {
            tracing::info!(marked, "marked answers of turns that died as interrupted");
        }
        Ok(Self {
            inner: Arc::new_cyclic(|me| Inner {
                _idle: if watch { idle::start(me.clone()) } else { None },
                store,
                llm,
                events,
                _watcher: watcher,
                sources: std::sync::Mutex::new(sources),
                liveness,
                embedder,
                jobs_wake: Default::default(),
                downloading_model: Default::default(),
                mcp: Default::default(),
            }),
        })
    }

    /// Events from now on (store changes; later tokens, consent requests, progress).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    crate::internal! {
        /// Drops what was unused for `idle` now, as the idle check does (tests).
        fn release_idle_memory(&self, idle: Duration) -> bool {
            idle::release_when_idle(self, Some(idle))
        }
    }

    crate::internal! {
        /// The store. Front ends never reach it (they call the façade's use cases); tests and
        /// benches get it with the `internals` feature.
        fn store(&self) -> &Store {
            &self.inner.store
        }
    }

    /// The tools a chat may offer the model, built in and from MCP servers (as last
    /// listed; starts nothing), with their risk tiers.
    pub fn tools(&self) -> Result<Vec<crate::tools::ToolInfo>> {
        let mut all = crate::tools::run::catalog(true);
        all.extend(self.mcp().tool_infos()?);
        Ok(all)
    }

    /// MCP servers and their tools, one method per use case.
    pub fn mcp(&self) -> McpService {
        McpService::new(self.clone())
    }

    /// Grants and the audit log, one method per use case.
    pub fn activity(&self) -> ActivityService {
        ActivityService::new(self.clone())
    }

    crate::internal! {
        /// The grants table itself (tests add grants directly); `internals` only.
        fn grants(&self) -> crate::tools::grants::Grants {
            crate::tools::grants::Grants::new(self.inner.store.clone())
        }
    }

    crate::internal! {
        /// The audit log itself (payloads, tampering in tests); `internals` only.
        fn audit(&self) -> crate::audit::Audit {
            crate::audit::Audit::new(self.inner.store.clone())
        }
    }

    /// The quick-prompt shortcut the user chose, if any (the shell decides what it means).
    pub fn quick_prompt_shortcut(&self) -> Result<Option<String>> {
        self.inner.store.setting(QUICK_PROMPT_SHORTCUT)
    }

    /// Remembers the quick-prompt shortcut.
    pub fn set_quick_prompt_shortcut(&self, accelerator: &str) -> Result<()> {
        self.inner
            .store
            .set_setting(QUICK_PROMPT_SHORTCUT, &accelerator)
    }

    /// Plugs in where the memory and retrieved zones of every prompt come from.
    pub fn set_sources(&self, sources: crate::chat::Sources) {
        if let Ok(mut s) = self.inner.sources.lock() {
            *s = sources;
        }
    }

    crate::internal! {
        /// The shared LLM client (one connection pool for the process); `internals` only.
        fn llm(&self) -> &LlmClient {
            &self.inner.llm
        }
    }

    /// Marks answers still `streaming` for a process that died as interrupted (the app calls
    /// this before showing a conversation). Returns how many were marked.
    pub fn sweep_dead_turns(&self) -> Result<usize> {
        sweep_dead_turns(
            &self.inner.store,
            self.inner.liveness.as_ref().map(|l| l.id.as_str()),
        )
    }

    /// The job runner (learning, re-embedding; folder ingestion next). The app starts it;
    /// the CLI runs the job a command waits for.
    pub fn jobs(&self) -> JobRunner {
        JobRunner::new(self.clone())
    }

    /// The models the user chose for each job (main, fast, fallback), or the one-off
    /// provider of the environment (`HEARTH_PROVIDER_URL`); `None` when nothing is set up.
    /// Blocking.
    pub fn model_slots(&self) -> Result<Option<ModelSlots>> {
        crate::providers::resolve_slots(&self.inner.store, None, None)
    }

    /// Memory: every use case of the Memory screen and `hearth memory`.
    pub fn memory(&self) -> MemoryService {
        MemoryService::new(self.clone())
    }

    /// Watched folders, indexing and document search, one method per use case.
    pub fn folders(&self) -> FolderService {
        FolderService::new(self.clone())
    }

    /// Providers and model slots, one method per use case.
    pub fn providers(&self) -> ProviderService {
        ProviderService::new(self.clone())
    }

    /// The built-in model: installed GGUF files, the choice among them, the engine.
    pub fn builtin(&self) -> BuiltinService {
        BuiltinService::new(self.clone())
    }

    /// When Hearth may look for a newer version of itself.
    pub fn updates(&self) -> UpdateService {
        UpdateService::new(self.clone())
    }

    /// The model table (windows, prices).
    pub fn models(&self) -> ModelService {
        ModelService::new(self.clone())
    }

    /// Tokens the memory zone of a prompt may use with the main model: the assembler's
    /// own budget for that model's window (so the Memory screen shows the number used).
    pub fn memory_budget(&self) -> Result<u32> {
        let store = &self.inner.store;
        let window = match crate::providers::resolve_slots(store, None, None)? {
            Some(slots) => {
                let table = crate::models::Models::new(store.clone()).table()?;
                table.window_for(&slots.main)
            }
            None => crate::context::DEFAULT_WINDOW,
        };
        Ok(crate::context::Budgets::for_window(window).memory)
    }

    /// Conversations, one method per use case.
    pub fn conversations(&self) -> ConversationService {
        ConversationService::new(self.clone())
    }

    /// What the ledger says about spending since local midnight of `since` (`YYYY-MM-DD`;
    /// `None`: all of it), grouped by model, slot or local day.
    pub fn usage(
        &self,
        since: Option<&str>,
        by: crate::usage::UsageGroup,
    ) -> Result<crate::usage::UsageReport> {
        let store = &self.inner.store;
        let table = crate::models::Models::new(store.clone()).table()?;
        // What the fast answers would have cost on the main model (the one set now).
        let main = crate::providers::resolve_slots(store, None, None)?.map(|s| s.main);
        crate::usage::report(store, since, by, |u| {
            main.as_ref()
                .and_then(|m| table.cost(&m.provider.base_url, &m.model, u))
        })
    }

    /// The user's spending caps.
    pub fn budgets(&self) -> Result<crate::budget::BudgetSettings> {
        crate::budget::settings(&self.inner.store)
    }

    /// Sets (`Some(Some(usd))`), removes (`Some(None)`) or keeps (`None`) the daily and
    /// monthly caps — overall, or for one provider.
    pub fn set_budget(
        &self,
        provider: Option<&str>,
        daily: Option<Option<f64>>,
        monthly: Option<Option<f64>>,
    ) -> Result<crate::budget::BudgetSettings> {
        let store = &self.inner.store;
        if let Some(p) = provider
            && crate::providers::Providers::new(store.clone())
                .get(p)?
                .is_none()
        {
            return Err(Error::NotFound(format!("there is no provider {p}")));
        }
        let mut settings = crate::budget::settings(store)?;
        settings.set(provider, daily, monthly)?;
        store.set_setting(crate::budget::BUDGET_SETTING, &settings)?;
        Ok(settings)
    }

    /// Where every cap stands: spent since local midnight (or the first of the month),
    /// calls in flight included.
    pub fn budget_status(&self) -> Result<Vec<crate::budget::Standing>> {
        crate::budget::status(&self.inner.store)
    }

    /// Whether answers are cached, and for how long.
    pub fn response_cache(&self) -> Result<crate::chat::cache::CacheSettings> {
        crate::chat::cache::settings(&self.inner.store)
    }

    /// Turns the exact response cache on or off and sets how long entries live.
    pub fn set_response_cache(&self, settings: crate::chat::cache::CacheSettings) -> Result<()> {
        if settings.ttl_hours == 0 || settings.ttl_hours > crate::chat::cache::MAX_TTL_HOURS {
            return Err(Error::InvalidInput(format!(
                "entries live from 1 to {} hours",
                crate::chat::cache::MAX_TTL_HOURS
            )));
        }
        let least = crate::chat::semantic::MIN_SIMILARITY;
        if !(least..=1.0).contains(&settings.similarity) {
            return Err(Error::InvalidInput(format!(
                "the semantic cache's similarity is from {least} to 1"
            )));
        }
        self.inner
            .store
            .set_setting(crate::chat::cache::CACHE_SETTING, &settings)?;
        // Off means nothing kept.
        if !settings.enabled {
            crate::chat::cache::clear_exact(&self.inner.store)?;
        }
        if !settings.semantic {
            crate::chat::semantic::clear(&self.inner.store)?;
        }
        Ok(())
    }

    /// How many answers the exact response cache holds.
    pub fn response_cache_entries(&self) -> Result<u64> {
        crate::chat::cache::entries(&self.inner.store)
    }

    /// How many answers the semantic cache holds.
    pub fn semantic_cache_entries(&self) -> Result<u64> {
        crate::chat::semantic::entries(&self.inner.store)
    }

    /// Empties both caches; returns how many answers they held.
    pub fn clear_response_cache(&self) -> Result<u64> {
        crate::chat::cache::clear(&self.inner.store)
    }

    /// Whether the router runs (on unless the user turned it off).
    pub fn routing(&self) -> Result<crate::route::RoutingSettings> {
        Ok(self
            .inner
            .store
            .setting(crate::route::ROUTING_SETTING)?
            .unwrap_or_default())
    }

    /// Turns the router, and its cascade, on or off.
    pub fn set_routing(&self, settings: crate::route::RoutingSettings) -> Result<()> {
        self.inner
            .store
            .set_setting(crate::route::ROUTING_SETTING, &settings)
    }

    /// The route of a turn and, when the fast model answers, the slots with it as the main
    /// one (its window, encoding and compaction then apply to the whole turn).
    async fn route_turn(
        &self,
        models: &ModelSlots,
        options: &ChatOptions,
        sources: &crate::chat::Sources,
    ) -> Result<(crate::route::Route, Option<ModelSlots>)> {
        use crate::route::{Reason, Request, Route, Tier, TierChoice};
        let fast_distinct = models.fast_is_distinct();
        let enabled = self.routing()?.enabled;
        let mut decision = if options.redo == crate::chat::Redo::Regenerate
            && options.tier == TierChoice::Auto
            && enabled
            && fast_distinct
        {
            // Asked again for a better answer: the strong model gives it.
            crate::route::Decision {
                tier: Tier::Strong,
                reason: Reason::AskedAgain,
            }
        } else {
            crate::route::decide(
                options.tier,
                Request {
                    message: &options.message,
                    passages: 0,
                    attachments: 0,
                },
                enabled,
                fast_distinct,
            )
        };
        // A message the rules send fast still goes strong when it brings passages from the
        // user's files (retrieval is asked only for such short messages).
        if decision.tier == Tier::Fast
            && options.tier == TierChoice::Auto
            && let Some(retrieval) = sources.retrieval.clone()
        {
            let message = options.message.clone();
            let found = tokio::task::spawn_blocking(move || {
                retrieval.retrieve(&message, crate::route::PASSAGE_PROBE_TOKENS)
            })
            .await
            .map_err(|e| Error::Task(e.to_string()))?;
            match found {
                Ok(p) if !p.is_empty() => {
                    decision = crate::route::Decision {
                        tier: Tier::Strong,
                        reason: Reason::ReadsFiles,
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(code = e.code(), "could not look for passages to route"),
            }
        }
        let route = Route {
            tier: decision.tier,
            reason: decision.reason,
            escalated_from: None,
        };
        tracing::info!(tier = route.tier.as_str(), reason = ?route.reason, "routed");
        let routed = (decision.tier == Tier::Fast).then(|| ModelSlots {
            main: models.fast.clone(),
            fast: models.fast.clone(),
            fallback: models.fallback.clone(),
        });
        Ok((route, routed))
    }

    /// Runs one chat turn, calling `on_event` with each piece of the answer as it streams
    /// and with each tool call as it starts and ends.
    /// Cancelling `cancel` stops the answer and keeps what arrived, marked as stopped.
    pub async fn chat(
        &self,
        models: &ModelSlots,
        options: ChatOptions,
        cancel: &tokio_util::sync::CancellationToken,
        on_event: impl FnMut(crate::chat::TurnEvent<'_>) + Send,
    ) -> Result<TurnOutcome> {
        turn::check(&options)?;
        let sources = self
            .inner
            .sources
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        // Which tier answers: the user's choice, else the router's rules (one place).
        let (route, routed) = self.route_turn(models, &options, &sources).await?;
        // Cascade (when the user turned it on): a turn the rules sent fast is checked, and
        // answered again by the strong model when the check fails.
        let cascade = routed.is_some()
            && options.tier == crate::route::TierChoice::Auto
            && self.routing()?.cascade;
        let mut on_event = on_event;
        let first = self
            .run_routed(
                routed.as_ref().unwrap_or(models),
                &sources,
                (route, None),
                options.clone(),
                cancel,
                &mut on_event,
            )
            .await?;
        if !cascade || first.stopped || cancel.is_cancelled() {
            return Ok(first);
        }
        // Never after a write or destructive call ran or was asked for: no second consent,
        // no side effect twice (an unknown tool counts as destructive).
        if first
            .tool_calls
            .iter()
            .any(|c| c.risk != crate::tools::Risk::Read)
        {
            return Ok(first);
        }
        let Some(reason) = crate::route::check(crate::route::FastAnswer {
            message: &options.message,
            answer: &first.answer,
            cut_off: first.cut_off,
            bad_tool_call: bad_tool_call(&first.tool_calls),
        }) else {
            return Ok(first);
        };
        on_event(crate::chat::TurnEvent::Escalating {
            from: &first.model,
            to: &models.main.model,
            reason,
        });
        tracing::info!(reason = ?reason, "escalating to the strong model");
        if let Some(answer) = first.message_id {
            // Its ledger row stays, marked: what the cascade spent on the fast answer.
            let store = self.inner.store.clone();
            tokio::task::spawn_blocking(move || crate::usage::mark_escalated(&store, answer))
                .await
                .map_err(|e| Error::Task(e.to_string()))??;
        }
        let mut again = options;
        if let Some(id) = &first.conversation {
            // The strong answer replaces the fast one (which it keeps, to show under it).
            again.conversation = Some(id.clone());
            again.redo = crate::chat::Redo::Regenerate;
        }
        let route = crate::route::Route::escalated(reason, &first.model);
        match self
            .run_routed(
                models,
                &sources,
                (route, Some(first.answer.clone())),
                again,
                cancel,
                &mut on_event,
            )
            .await
        {
            Ok(better) if !better.stopped || !better.answer.is_empty() => Ok(better),
            // The strong model failed or was stopped before a word: the fast answer stands.
            Ok(_) => Ok(first),
            Err(e) => {
                tracing::warn!(
                    code = e.code(),
                    "the strong model could not improve the answer"
                );
                Ok(first)
            }
        }
    }

    /// One run of a routed turn on `models`: tools offered as the model can take them, the
    /// built-in model's speed measured, learning woken.
    async fn run_routed(
        &self,
        models: &ModelSlots,
        sources: &crate::chat::Sources,
        (route, first_answer): (crate::route::Route, Option<String>),
        options: ChatOptions,
        cancel: &tokio_util::sync::CancellationToken,
        on_event: &mut (impl FnMut(crate::chat::TurnEvent<'_>) + Send),
    ) -> Result<TurnOutcome> {
        let ctx = crate::chat::TurnContext {
            store: &self.inner.store,
            client: &self.inner.llm,
            slots: models,
            sources,
            owner: self.inner.liveness.as_ref().map(|l| l.id.as_str()),
            cancel,
            route: Some(route),
            first_answer,
        };
        let mut options = options;
        let mut unavailable = Vec::new();
        // A built-in model whose template renders no tools was never taught to call them.
        if options.tools.enabled && models.main.provider.name == crate::builtin::PROVIDER {
            let (store, name) = (self.inner.store.clone(), models.main.model.clone());
            let offers =
                tokio::task::spawn_blocking(move || crate::builtin::offers_tools(&store, &name))
                    .await
                    .map_err(|e| Error::Task(e.to_string()))??;
            options.tools.enabled = offers;
        }
        if options.tools.enabled {
            // The approved tools of enabled MCP servers join the built-ins, through the
            // same gate. Starting and listing them is bounded in time and pages, and the
            // user's stop ends the wait (the turn then stops before the model is called).
            let mcp = self.mcp();
            tokio::select! {
                (offered, down) = mcp.offered() => {
                    options.tools.external.extend(offered);
                    unavailable = down;
                }
                () = cancel.cancelled() => {}
            }
        }
        // When the answer's text came, for the built-in model's measured speed.
        let mut streamed: Option<(std::time::Instant, std::time::Instant)> = None;
        let timed = |event: crate::chat::TurnEvent<'_>| {
            if matches!(event, crate::chat::TurnEvent::Text(_)) {
                let now = std::time::Instant::now();
                streamed = Some(streamed.map_or((now, now), |(first, _)| (first, now)));
            }
            on_event(event);
        };
        // Background work on the built-in model gives way while the user waits.
        let _turn = (models.main.provider.name == crate::builtin::PROVIDER)
            .then(crate::builtin::yielding::UserTurn::begin);
        let mut outcome = crate::chat::run_turn(&ctx, options, timed).await?;
        outcome.tools_unavailable = unavailable;
        if outcome.provider == crate::builtin::PROVIDER
            && outcome.tool_calls.is_empty()
            && let (Some((first, last)), Some(usage)) = (streamed, outcome.usage)
        {
            let store = self.inner.store.clone();
            let name = outcome.model.clone();
            let secs = last.duration_since(first).as_secs_f64();
            // Best effort: a speed not recorded is only a figure Settings does not show.
            let _ = tokio::task::spawn_blocking(move || {
                crate::builtin::record_speed(&store, &name, usage.output_tokens, secs)
            })
            .await;
        }
        if outcome.learn_job.is_some() {
            // Answer, then learn: the app's memory worker takes the job now; the CLI runs
            // it itself (see `JobRunner::run_job`).
            jobs::wake(&self.inner.jobs_wake, crate::store::jobs::Lane::Memory);
        }
        Ok(outcome)
    }

    /// The status report, on this thread.
    pub fn status_blocking(&self) -> Result<Status> {
        let store = &self.inner.store;
        let info = store.info()?;
        let dir = store.data_dir();
        Ok(Status {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            commit: BUILD_COMMIT.get().copied().unwrap_or("unknown").to_owned(),
            data_dir: dir.root().display().to_string(),
            db_path: dir.db_path().display().to_string(),
            db_id: info.db_id,
            schema_version: info.schema_version,
            sqlite_version: info.sqlite_version,
            sqlcipher_version: info.sqlcipher_version,
            sqlite_vec_version: info.sqlite_vec_version,
            key_backend: info.key_backend.to_string(),
            encrypted: info.encrypted,
            fts5: info.fts5,
            vec0: info.vec0,
            jobs: store.jobs().counts()?,
            failed_jobs: store
                .jobs()
                .failed()?
                .into_iter()
                .take(10)
                .map(|j| FailedJob {
                    id: j.id,
                    kind: j.kind,
                    code: j.last_error,
                    attempts: j.attempts,
                })
                .collect(),
            warnings: info
                .key_backend
                .warning()
                .map(|w| vec![w.to_owned()])
                .unwrap_or_default(),
        })
    }

    /// The status report, off the async runtime's threads.
    pub async fn status(&self) -> Result<Status> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.status_blocking())
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }
}

/// Whether the fast model sent a call it could not form (malformed arguments, no such tool)
/// and never got the same tool to run afterwards.
fn bad_tool_call(calls: &[crate::tools::CallRecord]) -> bool {
    calls.iter().enumerate().any(|(i, c)| {
        c.decision == crate::tools::Decision::Invalid
            && !calls[i + 1..].iter().any(|later| {
                later.tool == c.tool && later.result_status == crate::tools::ResultStatus::Ok
            })
    })
}
