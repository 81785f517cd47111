//! [`Hearth`]: the one handle the desktop shell and the CLI talk to.

mod jobs;
mod memory;

pub use jobs::{JobResult, JobRunner, REEMBED_JOB, RunPolicy, RunningJobs};
pub use memory::{ExportFormat, MemoryCounts, MemoryDetail, MemoryService};

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::chat::{ChatOptions, ModelSlots, TurnOutcome};
use crate::conversations::Conversations;
use crate::embed::{
    ApiEmbedder, Embedder, EmbedderSlot, EmbeddingChoice, LocalEmbedder, ModelSource, Progress,
};
use crate::events::Event;
use crate::llm::{LlmClient, RetryPolicy, Timeouts};
use crate::store::{ChangeWatcher, OpenOptions, Store};
use crate::{Error, Result};

const EVENT_CAPACITY: usize = 256;

/// A `streaming` answer not checkpointed for this long belongs to a turn that died.
pub const STALE_TURN: Duration = Duration::from_secs(30);

/// The least cosine similarity for which a memory found only by meaning is listed in a
/// search the user reads; below it the vector index's nearest neighbours are mostly
/// unrelated (the memory block, which ranks rather than lists, keeps them all).
pub const SEARCH_MIN_SIMILARITY: f64 = 0.3;

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
}

/// Memories embedded per step of a re-embedding (one progress event each).
const REEMBED_BATCH: usize = 32;

/// What `hearth embedding show` and the app's memory settings show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmbeddingStatus {
    /// The user's choice.
    pub choice: EmbeddingChoice,
    /// The choice as written on the command line (`local`, `off`, `PROVIDER:MODEL`).
    pub label: String,
    /// The model whose vectors search uses now; none: keyword-only.
    pub model: Option<String>,
    pub dimensions: Option<usize>,
    /// The local model's files are on this computer.
    pub local_model_on_disk: bool,
    /// Active memories (recently removed ones get vectors too, uncounted).
    pub memories: usize,
    /// Of those, how many have one from `model`.
    pub embedded: usize,
}

/// The embedder for `choice`, if it can be used now. Never downloads or calls the network.
fn embedder_for(
    store: &Store,
    client: &LlmClient,
    choice: &EmbeddingChoice,
) -> Option<Arc<dyn Embedder>> {
    match choice {
        EmbeddingChoice::Local => local_embedder_if_present(),
        EmbeddingChoice::Off => None,
        EmbeddingChoice::Provider {
            provider,
            model,
            dimensions,
        } => {
            let providers = crate::providers::Providers::new(store.clone());
            let made = providers
                .get(provider)
                .and_then(|cfg| {
                    cfg.ok_or_else(|| {
                        Error::NotFound(format!("provider {provider:?} (chosen for embeddings)"))
                    })
                })
                .and_then(|cfg| providers.endpoint(&cfg))
                .and_then(|p| ApiEmbedder::new(client, p, model.clone(), *dimensions));
            match made {
                Ok(e) => Some(Arc::new(e)),
                Err(e) => {
                    tracing::warn!(
                        code = e.code(),
                        "the chosen embedding provider cannot be used; memory search is keyword-only"
                    );
                    None
                }
            }
        }
    }
}

/// The local embedder if its model is already on disk: opening never downloads anything.
fn local_embedder_if_present() -> Option<Arc<dyn Embedder>> {
    let source = ModelSource::from_env();
    match source.find() {
        Ok(Some(_)) => Some(Arc::new(LocalEmbedder::new(source))),
        Ok(None) => {
            tracing::info!("no local embedding model yet; memory search is keyword-only");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "the local embedding model cannot be used");
            None
        }
    }
}

/// This process's claim on the turns it streams: `run/<id>.lock`, held locked while the
/// engine is open. Another process that can lock it knows this one is gone.
struct Liveness {
    id: String,
    path: PathBuf,
    file: Option<File>,
}

impl Liveness {
    fn claim(run_dir: &Path) -> Option<Self> {
        let id = uuid::Uuid::new_v4().to_string();
        let path = run_dir.join(format!("{id}.lock"));
        let claimed = std::fs::create_dir_all(run_dir)
            .and_then(|()| File::create(&path))
            .and_then(|f| f.try_lock().map(|()| f).map_err(std::io::Error::other));
        match claimed {
            Ok(file) => Some(Self {
                id,
                path,
                file: Some(file),
            }),
            Err(e) => {
                // Dead turns are then found by their stale heartbeat instead.
                tracing::warn!(error = %e, "could not create the process liveness file");
                None
            }
        }
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        drop(self.file.take());
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Marks `streaming` answers whose process is gone as interrupted, at once: their owner's
/// liveness file is missing or no longer locked. Returns how many were marked.
fn sweep_dead_turns(store: &Store, me: Option<&str>) -> Result<usize> {
    let owners: Vec<String> = store.read_blocking(|c| {
        let mut stmt = c.prepare(
            "SELECT DISTINCT owner FROM messages WHERE state = 'streaming' AND owner IS NOT NULL",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect()
    })?;
    let run_dir = store.data_dir().run_dir();
    let mut marked = 0;
    for owner in owners {
        let plain = owner.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if Some(owner.as_str()) == me || !plain {
            continue;
        }
        let path = run_dir.join(format!("{owner}.lock"));
        let alive = match File::open(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(_) => true,
            Ok(f) => match f.try_lock() {
                Ok(()) => false,
                Err(std::fs::TryLockError::WouldBlock) => true,
                Err(std::fs::TryLockError::Error(_)) => true,
            },
        };
        if !alive {
            let o = owner.clone();
            marked += store.write_blocking(move |c| {
                c.execute(
                    "UPDATE messages SET state = 'interrupted' WHERE state = 'streaming' AND owner = ?1",
                    [o],
                )
            })?;
            let _ = std::fs::remove_file(&path);
        }
    }
    if marked > 0 {
        tracing::info!(
            marked,
            "marked answers of processes that died as interrupted"
        );
    }
    Ok(marked)
}

/// What `hearth doctor` and the app's Status panel show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
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
        let llm = LlmClient::new(RetryPolicy::default(), Timeouts::default())?;
        let liveness = Liveness::claim(&store.data_dir().run_dir());
        if let Err(e) = sweep_dead_turns(&store, liveness.as_ref().map(|l| l.id.as_str())) {
            tracing::warn!(error = %e, "could not look for turns of processes that died");
        }
        let choice: EmbeddingChoice = store
            .setting(crate::embed::CHOICE_SETTING)?
            .unwrap_or_default();
        let embedder = EmbedderSlot::new(embedder_for(&store, &llm, &choice));
        let sources = crate::chat::Sources {
            memory: Some(Arc::new(crate::memory::block::MemoryBlockSource::new(
                crate::memory::Memories::new(store.clone()),
                embedder.clone(),
            ))),
            retrieval: None,
        };
        let stale = crate::time::now_millis() - STALE_TURN.as_millis() as i64;
        let marked =
            crate::conversations::Conversations::new(store.clone()).mark_interrupted(stale)?;
        if marked > 0 {
            tracing::info!(marked, "marked answers of turns that died as interrupted");
        }
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                llm,
                events,
                _watcher: watcher,
                sources: std::sync::Mutex::new(sources),
                liveness,
                embedder,
                jobs_wake: Default::default(),
            }),
        })
    }

    /// Events from now on (store changes; later tokens, consent requests, progress).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// The store, for subsystems built on it.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Plugs in where the memory and retrieved zones of every prompt come from.
    pub fn set_sources(&self, sources: crate::chat::Sources) {
        if let Ok(mut s) = self.inner.sources.lock() {
            *s = sources;
        }
    }

    /// The shared LLM client (one connection pool for the process).
    pub fn llm(&self) -> &LlmClient {
        &self.inner.llm
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

    /// The embedder memory search uses, if any.
    pub fn embedder(&self) -> Option<Arc<dyn Embedder>> {
        self.inner.embedder.get()
    }

    /// The embedding choice, the model in use and how many memories have its vectors.
    pub fn embedding_status(&self) -> Result<EmbeddingStatus> {
        let store = &self.inner.store;
        let choice: EmbeddingChoice = store
            .setting(crate::embed::CHOICE_SETTING)?
            .unwrap_or_default();
        let embedder = self.inner.embedder.get();
        let model = embedder.as_ref().map(|e| e.model_id().to_owned());
        let (embedded, memories) = crate::memory::Memories::new(store.clone())
            .vector_counts(model.as_deref().unwrap_or(""))?;
        Ok(EmbeddingStatus {
            label: choice.label(),
            choice,
            dimensions: embedder.as_ref().map(|e| e.dimensions()),
            model,
            local_model_on_disk: matches!(ModelSource::from_env().find(), Ok(Some(_))),
            memories,
            embedded: if embedder.is_some() { embedded } else { 0 },
        })
    }

    /// Switches the embedder. A provider's model is tried first (its dimensions measured)
    /// and refused if it does not answer; the local model must already be on disk (see
    /// [`Hearth::download_local_model`]), else search stays keyword-only until it is.
    /// Queues a re-embedding of every memory when the model changed and returns the job;
    /// until it has run, memories without a new vector are still found by keyword, and
    /// nothing is lost. Blocking (the probe is a network call).
    pub fn set_embedding(
        &self,
        choice: EmbeddingChoice,
    ) -> Result<Option<crate::store::jobs::JobId>> {
        let store = &self.inner.store;
        let (choice, embedder): (EmbeddingChoice, Option<Arc<dyn Embedder>>) = match choice {
            EmbeddingChoice::Provider {
                provider, model, ..
            } => {
                let providers = crate::providers::Providers::new(store.clone());
                let cfg = providers.get(&provider)?.ok_or_else(|| {
                    Error::NotFound(format!(
                        "provider {provider:?}; add it with `hearth providers add`"
                    ))
                })?;
                let e =
                    ApiEmbedder::detect(&self.inner.llm, providers.endpoint(&cfg)?, model.clone())?;
                let dimensions = e.dimensions();
                (
                    EmbeddingChoice::Provider {
                        provider,
                        model,
                        dimensions,
                    },
                    Some(Arc::new(e)),
                )
            }
            other => {
                let e = embedder_for(store, &self.inner.llm, &other);
                (other, e)
            }
        };
        store.set_setting(crate::embed::CHOICE_SETTING, &choice)?;
        self.install_embedder(embedder)
    }

    /// Downloads the local model (once; with `progress` as bytes arrive) and, when the
    /// choice is `local`, starts using it and queues the embedding of every memory.
    /// Blocking.
    pub fn download_local_model(
        &self,
        progress: Option<&Progress>,
    ) -> Result<Option<crate::store::jobs::JobId>> {
        let source = ModelSource::from_env();
        source.resolve(progress)?;
        let choice: EmbeddingChoice = self
            .inner
            .store
            .setting(crate::embed::CHOICE_SETTING)?
            .unwrap_or_default();
        if choice != EmbeddingChoice::Local {
            return Ok(None);
        }
        let already = self
            .inner
            .embedder
            .get()
            .is_some_and(|e| e.model_id() == crate::embed::MODEL_ID);
        if already {
            return Ok(None);
        }
        self.install_embedder(Some(Arc::new(LocalEmbedder::new(source))))
    }

    fn install_embedder(
        &self,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Option<crate::store::jobs::JobId>> {
        let model = embedder.as_ref().map(|e| e.model_id().to_owned());
        self.inner.embedder.set(embedder);
        tracing::info!(
            model = model.as_deref().unwrap_or("none"),
            "embedding model set"
        );
        let Some(model) = model else { return Ok(None) };
        let (embedded, total) =
            crate::memory::Memories::new(self.inner.store.clone()).vector_counts(&model)?;
        if embedded == total {
            return Ok(None);
        }
        let job = self
            .inner
            .store
            .jobs()
            .enqueue(REEMBED_JOB, &serde_json::json!({ "model": model }))?;
        jobs::wake(&self.inner.jobs_wake, crate::store::jobs::Lane::Memory);
        Ok(Some(job))
    }

    /// A re-embedding job: embeds memories lacking a vector from the model in use, a batch
    /// at a time, emitting [`Event::EmbeddingProgress`] at the start and after each, and
    /// checking between batches that the job is still this worker's. A job for a model no
    /// longer in use ends at once. A failure (the provider went away) keeps what was done;
    /// memories keep their text and stay findable by keyword. Blocking.
    fn reembed_for(&self, job: &crate::store::jobs::Job) -> Result<usize> {
        let wanted = job.payload["model"].as_str().unwrap_or("").to_owned();
        let Some(embedder) = self.inner.embedder.get().filter(|e| e.model_id() == wanted) else {
            return Ok(0);
        };
        let (jobs, lease) = (self.inner.store.jobs(), job.lease());
        let alive = || match jobs.heartbeat(lease, Duration::from_secs(60))? {
            true => Ok(()),
            false => Err(Error::LeaseLost),
        };
        self.embed_all(embedder.as_ref(), alive, true)
    }

    /// Gives every memory that lacks one a vector from the model in use: new memories, edits,
    /// imports, another process's additions. The app calls it when the store changes, so the
    /// Memory screen never sits at "0 of N indexed". Progress events only when there is
    /// work. Returns how many were embedded; 0 at once without an embedder. Blocking.
    pub fn embed_pending(&self) -> Result<usize> {
        match self.inner.embedder.get() {
            Some(e) => self.embed_all(e.as_ref(), || Ok(()), false),
            None => Ok(0),
        }
    }

    /// Embeds pending memories a batch at a time, with a progress event after each (and one
    /// at the start when `announce`), calling `alive` between batches.
    fn embed_all(
        &self,
        embedder: &dyn Embedder,
        alive: impl Fn() -> Result<()>,
        announce: bool,
    ) -> Result<usize> {
        let memories = crate::memory::Memories::new(self.inner.store.clone());
        let model = embedder.model_id().to_owned();
        let progress = || -> Result<()> {
            let (done, total) = memories.vector_counts(&model)?;
            let _ = self.inner.events.send(Event::EmbeddingProgress {
                model: model.clone(),
                done,
                total,
            });
            Ok(())
        };
        if announce {
            progress()?;
        }
        let mut embedded = 0;
        loop {
            let n = memories.embed_pending(embedder, REEMBED_BATCH)?;
            embedded += n;
            if n == 0 && !announce {
                return Ok(embedded);
            }
            progress()?;
            if n == 0 {
                return Ok(embedded);
            }
            alive()?;
        }
    }

    /// Searches active memories (hybrid when an embedder is at hand, else keyword), best
    /// first, keeping those that pass `filter`'s other conditions. Blocking.
    pub fn search_memories(
        &self,
        query: &str,
        filter: &crate::memory::Filter,
    ) -> Result<Vec<crate::memory::Memory>> {
        let memories = crate::memory::Memories::new(self.inner.store.clone());
        let vector = match &self.inner.embedder.get() {
            Some(e) => {
                // An embedder that is down leaves the search keyword-only, never failed.
                if let Err(err) = memories.embed_pending(e.as_ref(), 256) {
                    tracing::warn!(
                        code = err.code(),
                        "could not embed new memories for a search"
                    );
                }
                e.embed(&[query])
                    .ok()
                    .and_then(|mut v| v.pop())
                    .map(|v| (e.model_id().to_owned(), v))
            }
            None => None,
        };
        let found = memories.search(
            query,
            vector.as_ref().map(|(m, v)| (m.as_str(), v.as_slice())),
            crate::memory::block::Mode::Hybrid,
            200,
        )?;
        let mut out = Vec::new();
        // A search the user reads lists what matches: by its words, or close in meaning —
        // not every nearest neighbour the vector index returns.
        for c in found
            .into_iter()
            .filter(|c| c.lexical || c.similarity.is_some_and(|s| s >= SEARCH_MIN_SIMILARITY))
        {
            if let Some(m) = memories.get(&c.id)?
                && filter.admits(&m)
            {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// Memory: every use case of the Memory screen and `hearth memory`.
    pub fn memory(&self) -> MemoryService {
        MemoryService::new(self.clone())
    }

    /// Tokens the memory zone of a prompt may use with the main model: the assembler's
    /// own budget for that model's window (so the Memory screen shows the number used).
    pub fn memory_budget(&self) -> Result<u32> {
        let store = &self.inner.store;
        let window = match crate::providers::resolve_slots(store, None, None)? {
            Some(slots) => {
                let table = crate::models::Models::new(store.clone()).table()?;
                crate::chat::window_of(&slots.main, &table)
            }
            None => crate::context::DEFAULT_WINDOW,
        };
        Ok(crate::context::Budgets::for_window(window).memory)
    }

    /// Deletes a conversation and its messages for real, and the memory proposals that
    /// came from it; with `with_memories`, the memories learned in it too. False if there
    /// was no such conversation. Blocking.
    pub fn delete_conversation(&self, id: &str, with_memories: bool) -> Result<bool> {
        let memories = crate::memory::Memories::new(self.inner.store.clone());
        if with_memories {
            memories.forget_conversation(id)?;
        } else {
            memories.drop_proposals_from(id)?;
        }
        let deleted = self.conversations().delete(id)?;
        if deleted {
            self.inner.store.checkpoint_wal();
        }
        Ok(deleted)
    }

    /// Conversation storage.
    pub fn conversations(&self) -> Conversations {
        Conversations::new(self.inner.store.clone())
    }

    /// Runs one chat turn, calling `on_text` with each piece of the answer as it streams.
    /// Cancelling `cancel` stops the answer and keeps what arrived, marked as stopped.
    pub async fn chat(
        &self,
        models: &ModelSlots,
        options: ChatOptions,
        cancel: &tokio_util::sync::CancellationToken,
        on_text: impl FnMut(&str) + Send,
    ) -> Result<TurnOutcome> {
        let sources = self
            .inner
            .sources
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        let outcome = crate::chat::run_turn(
            &self.inner.store,
            &self.inner.llm,
            models,
            &sources,
            self.inner.liveness.as_ref().map(|l| l.id.as_str()),
            options,
            cancel,
            on_text,
        )
        .await?;
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
