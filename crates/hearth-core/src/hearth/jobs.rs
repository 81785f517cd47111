//! The job runner: one loop for every kind of durable job (learning from an exchange,
//! re-embedding memories; folder ingestion next). The app starts it and stops it; the CLI
//! runs the one job a command waits for. A worker per lane (interactive, memory, ingest),
//! so a long ingest backlog never holds up learning, and nothing in the queue stands
//! between the user and a chat turn (turns are not jobs).
//!
//! Each claim takes a fenced lease ([`Lease`]), renewed while the job runs. A job's result
//! is applied only while its lease holds: learning checks it inside the transaction that
//! applies the changes, so an exchange is learned from exactly once even when two
//! processes drain the same queue or a stalled worker wakes up after a takeover. A failed
//! attempt is retried with exponential backoff; after `max_attempts` the job is `failed`,
//! with its error code visible in `hearth doctor`. A panicking job is a failed attempt.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Hearth;
use crate::events::Event;
use crate::learn::{Exchange, JOB_KIND as LEARN_JOB, Learner};
use crate::llm::ChatModel;
use crate::memory::Change;
use crate::store::jobs::{Job, JobId, Lane, Lease};
use crate::{Error, Result};

/// The job that gives every memory a vector from the embedding model now in use.
pub const REEMBED_JOB: &str = "memory_reembed";

/// Timing of the runner.
#[derive(Debug, Clone, Copy)]
pub struct RunPolicy {
    /// How long a claim holds a job; renewed every third of it while the job runs.
    pub lease: Duration,
    /// The wait before the first retry; doubled for each later one.
    pub retry_base: Duration,
    /// The longest wait between retries.
    pub retry_max: Duration,
    /// How often an idle worker looks for due jobs (retries, other processes' jobs).
    pub idle_poll: Duration,
}

impl Default for RunPolicy {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(60),
            retry_base: Duration::from_secs(30),
            retry_max: Duration::from_secs(3600),
            idle_poll: Duration::from_secs(5),
        }
    }
}

impl RunPolicy {
    fn retry_in(&self, attempts: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempts.saturating_sub(1).min(20));
        self.retry_base.saturating_mul(factor).min(self.retry_max)
    }
}

/// What a job did.
#[derive(Debug, Clone, PartialEq)]
pub enum JobResult {
    /// Learning from an exchange: the changes made (empty when nothing was learned).
    Learned(Vec<Change>),
    /// Re-embedding: how many memories got a vector.
    Embedded(usize),
    /// Folder ingestion: how many files were handled (`None`: another process indexes).
    Ingested(Option<u64>),
}

/// What a handler reports back.
pub(crate) struct Outcome {
    pub result: JobResult,
    /// The handler marked the job done itself, inside the transaction that applied its
    /// result (fenced by the lease).
    pub finished: bool,
}

/// What a job of one kind does.
pub(crate) trait JobHandler: Send + Sync + 'static {
    /// The lane a job of this kind goes to.
    fn lane(&self) -> Lane;
    fn run(&self, ctx: JobContext) -> BoxFuture<'static, Result<Outcome>>;
}

/// What a handler is given.
pub(crate) struct JobContext {
    pub hearth: Hearth,
    pub job: Job,
    /// The model for learning, when the caller chose one (the CLI's `--provider`).
    pub fast: Option<ChatModel>,
}

/// Runs durable jobs. Cheap to clone.
#[derive(Clone)]
pub struct JobRunner {
    hearth: Hearth,
    policy: RunPolicy,
    handlers: Arc<HashMap<&'static str, Arc<dyn JobHandler>>>,
    fast: Option<ChatModel>,
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Task(e.to_string()))?
}

impl JobRunner {
    pub(super) fn new(hearth: Hearth) -> Self {
        let mut handlers: HashMap<&'static str, Arc<dyn JobHandler>> = HashMap::new();
        handlers.insert(LEARN_JOB, Arc::new(LearnHandler));
        handlers.insert(REEMBED_JOB, Arc::new(ReembedHandler));
        handlers.insert(super::folders::INGEST_JOB, Arc::new(IngestHandler));
        Self {
            hearth,
            policy: RunPolicy::default(),
            handlers: Arc::new(handlers),
            fast: None,
        }
    }

    /// Learns with this model instead of the configured `fast` slot.
    pub fn with_fast_model(mut self, fast: ChatModel) -> Self {
        self.fast = Some(fast);
        self
    }

    /// Other timings (tests use short ones).
    pub fn with_policy(mut self, policy: RunPolicy) -> Self {
        self.policy = policy;
        self
    }

    #[cfg(test)]
    pub(crate) fn with_handler(mut self, kind: &'static str, handler: Arc<dyn JobHandler>) -> Self {
        Arc::make_mut(&mut self.handlers).insert(kind, handler);
        self
    }

    fn kinds_in(&self, lane: Option<Lane>) -> Vec<&'static str> {
        self.handlers
            .iter()
            .filter(|(_, h)| lane.is_none_or(|l| h.lane() == l))
            .map(|(k, _)| *k)
            .collect()
    }

    /// Runs job `id` now, if it is runnable (queued and due, or its lease ran out); `None`
    /// when it is not (done, failed, or another worker has it).
    pub async fn run_job(&self, id: JobId) -> Result<Option<JobResult>> {
        let store = self.hearth.inner.store.clone();
        let lease = self.policy.lease;
        let Some(job) = blocking(move || store.jobs().claim_id(id, lease)).await? else {
            return Ok(None);
        };
        self.execute(job).await.map(Some)
    }

    /// Runs every due job of every kind, one at a time, until none is left (or only ones
    /// waiting for a retry). Returns how many ran; a job that fails is counted too.
    pub async fn run_until_idle(&self) -> Result<usize> {
        let mut ran = 0;
        while let Some(job) = self.claim(None).await? {
            ran += 1;
            if let Err(e) = self.execute(job).await {
                tracing::debug!(code = e.code(), "a job attempt failed");
            }
        }
        Ok(ran)
    }

    async fn claim(&self, lane: Option<Lane>) -> Result<Option<Job>> {
        let kinds = self.kinds_in(lane);
        let store = self.hearth.inner.store.clone();
        let lease = self.policy.lease;
        blocking(move || {
            let jobs = store.jobs();
            match lane {
                Some(l) => jobs.claim_in(&kinds, l, lease),
                None => jobs.claim(&kinds, lease),
            }
        })
        .await
    }

    /// Runs a claimed job: renews its lease while it runs, then records the outcome. A
    /// panic in the job is a failed attempt, like an error.
    async fn execute(&self, job: Job) -> Result<JobResult> {
        let lease = job.lease();
        let attempts = job.attempts;
        let store = self.hearth.inner.store.clone();
        let Some(handler) = self.handlers.get(job.kind.as_str()).cloned() else {
            let retry = self.policy.retry_max;
            blocking(move || store.jobs().fail(lease, "unknown_kind", retry)).await?;
            return Err(Error::InvalidInput("a job of an unknown kind".into()));
        };
        let stop_renewing = CancellationToken::new();
        let renewer = tokio::spawn(renew(
            store.clone(),
            lease,
            self.policy.lease,
            stop_renewing.clone(),
        ));
        let ctx = JobContext {
            hearth: self.hearth.clone(),
            job,
            fast: self.fast.clone(),
        };
        let joined = tokio::spawn(handler.run(ctx)).await;
        stop_renewing.cancel();
        let _ = renewer.await;
        let retry = self.policy.retry_in(attempts);
        match joined {
            Ok(Ok(outcome)) => {
                if !outcome.finished && !blocking(move || store.jobs().complete(lease)).await? {
                    tracing::warn!("a job finished after its lease was taken over");
                }
                Ok(outcome.result)
            }
            Ok(Err(Error::LeaseLost)) => Err(Error::LeaseLost),
            // Paused by a spending cap: back in the queue, its attempts untouched, until the
            // period ends or the cap is raised.
            Ok(Err(e @ Error::OverBudget(_))) => {
                tracing::info!("a job is paused by a spending cap");
                let wait = self.policy.retry_max;
                blocking(move || store.jobs().postpone(lease, "over_budget", wait)).await?;
                Err(e)
            }
            Ok(Err(e)) => {
                let code = e.code();
                tracing::warn!(code, attempts, "a job attempt failed; will retry");
                blocking(move || store.jobs().fail(lease, code, retry)).await?;
                Err(e)
            }
            Err(join) => {
                let code = if join.is_panic() {
                    "panicked"
                } else {
                    "cancelled"
                };
                tracing::error!(code, attempts, "a job attempt did not finish");
                blocking(move || store.jobs().fail(lease, code, retry)).await?;
                Err(Error::Task(format!("a job {code}")))
            }
        }
    }

    /// Starts a worker per lane in the background (the desktop app). Workers wake when
    /// [`RunningJobs::wake`] is called and every `idle_poll`; the memory worker also gives
    /// vectors to memories added or edited elsewhere when the store changes.
    pub fn start(self) -> RunningJobs {
        let stop = CancellationToken::new();
        let wake = self.hearth.inner.jobs_wake.clone();
        let mut tasks = Vec::new();
        for lane in Lane::ALL {
            if self.kinds_in(Some(lane)).is_empty() && lane != Lane::Memory {
                continue;
            }
            tasks.push(tokio::spawn(self.clone().work(
                lane,
                stop.clone(),
                wake.clone(),
            )));
        }
        RunningJobs { stop, wake, tasks }
    }

    async fn work(self, lane: Lane, stop: CancellationToken, wake: Wake) {
        let mut events = self.hearth.subscribe();
        let mut index = lane == Lane::Memory;
        loop {
            loop {
                if stop.is_cancelled() {
                    return;
                }
                match self.claim(Some(lane)).await {
                    Ok(Some(job)) => {
                        if let Err(e) = self.execute(job).await {
                            tracing::debug!(code = e.code(), "a job attempt failed");
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(code = e.code(), "could not look for jobs");
                        break;
                    }
                }
            }
            if std::mem::take(&mut index) {
                let h = self.hearth.clone();
                if let Err(e) = blocking(move || h.embed_pending()).await {
                    tracing::warn!(code = e.code(), "could not index new memories");
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = wake[lane as usize].notified() => {}
                () = tokio::time::sleep(self.policy.idle_poll) => {}
                event = events.recv(), if lane == Lane::Memory => {
                    // Another process (or this one) wrote: new memories may need vectors.
                    if matches!(event, Ok(Event::StoreChanged) | Err(_)) {
                        index = true;
                    }
                }
            }
        }
    }
}

/// Renews `lease` every third of its duration until `stop`.
async fn renew(store: crate::store::Store, lease: Lease, every: Duration, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every / 3) => {}
        }
        let s = store.clone();
        match blocking(move || s.jobs().heartbeat(lease, every)).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!("a running job's lease was taken over");
                return;
            }
            Err(e) => tracing::warn!(code = e.code(), "could not renew a job's lease"),
        }
    }
}

/// One wake-up per lane: new work was queued there. A wake-up while the worker is busy
/// is kept for when it next waits.
pub(crate) type Wake = Arc<[Notify; 3]>;

/// Wakes the worker of `lane`, if one runs in this process.
pub(crate) fn wake(wake: &Wake, lane: Lane) {
    wake[lane as usize].notify_one();
}

/// Background workers started by [`JobRunner::start`]; stopped when dropped.
pub struct RunningJobs {
    stop: CancellationToken,
    wake: Wake,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl RunningJobs {
    /// New work was queued: look now rather than at the next poll.
    pub fn wake(&self) {
        for lane in Lane::ALL {
            wake(&self.wake, lane);
        }
    }

    /// Stops the workers after the job each is running.
    pub async fn stop(mut self) {
        self.stop.cancel();
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
    }
}

impl Drop for RunningJobs {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// `memory_extract`: learn from one exchange with the fast model.
struct LearnHandler;

impl JobHandler for LearnHandler {
    fn lane(&self) -> Lane {
        Lane::Memory
    }

    fn run(&self, ctx: JobContext) -> BoxFuture<'static, Result<Outcome>> {
        Box::pin(async move {
            let hearth = ctx.hearth;
            let exchange: Exchange =
                serde_json::from_value(ctx.job.payload.clone()).map_err(|_| {
                    Error::InvalidInput("a learning job with a malformed payload".into())
                })?;
            let fast = match ctx.fast {
                Some(f) => f,
                None => {
                    let h = hearth.clone();
                    blocking(move || h.model_slots())
                        .await?
                        .ok_or_else(|| {
                            Error::InvalidInput(crate::providers::NO_PROVIDER_HINT.into())
                        })?
                        .fast
                }
            };
            let learner = Learner {
                memories: crate::memory::Memories::new(hearth.inner.store.clone()),
                client: hearth.inner.llm.clone(),
                fast,
                embedder: hearth.inner.embedder.get(),
            };
            let changes = learner.learn(&exchange, Some(ctx.job.lease())).await?;
            if !changes.is_empty() {
                let _ = hearth.inner.events.send(Event::MemoryUpdated {
                    conversation: exchange.conversation.clone(),
                    message: exchange.answer_message,
                    changes: changes.clone(),
                });
            }
            Ok(Outcome {
                result: JobResult::Learned(changes),
                finished: true,
            })
        })
    }
}

/// `memory_reembed`: give every memory a vector from the model in use.
struct ReembedHandler;

impl JobHandler for ReembedHandler {
    fn lane(&self) -> Lane {
        Lane::Memory
    }

    fn run(&self, ctx: JobContext) -> BoxFuture<'static, Result<Outcome>> {
        Box::pin(async move {
            let (hearth, job) = (ctx.hearth, ctx.job);
            let n = blocking(move || hearth.reembed_for(&job)).await?;
            Ok(Outcome {
                result: JobResult::Embedded(n),
                finished: false,
            })
        })
    }
}

/// `folder_ingest`: index the pending files of watched folders, in the ingest lane (below
/// the user's turn and memory work), under the indexer's lock.
struct IngestHandler;

impl JobHandler for IngestHandler {
    fn lane(&self) -> Lane {
        Lane::Ingest
    }

    fn run(&self, ctx: JobContext) -> BoxFuture<'static, Result<Outcome>> {
        Box::pin(async move {
            let hearth = ctx.hearth;
            let n = blocking(move || {
                let n = hearth.folders().run_queue(&|| false)?;
                // The app's keyword copy takes the new chunks now, not at the user's
                // next search.
                if let Err(e) = crate::folders::lexical::keep_fresh(&hearth.inner.store) {
                    tracing::warn!(code = e.code(), "the keyword index could not follow");
                }
                Ok(n)
            })
            .await?;
            Ok(Outcome {
                result: JobResult::Ingested(n),
                finished: false,
            })
        })
    }
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
