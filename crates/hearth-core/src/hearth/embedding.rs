//! The embedding service of the façade: which embedder is in use, switching it (and
//! re-embedding every memory for the new model), downloading the local model, giving
//! vectors to memories that lack one, and hybrid memory search.

use std::sync::Arc;

use serde::Serialize;

use std::time::Duration;

use super::{Hearth, REEMBED_JOB, jobs};
use crate::embed::{
    ApiEmbedder, Embedder, EmbeddingChoice, LocalEmbedder, LocalModel, ModelSource, Progress,
};
use crate::events::Event;
use crate::llm::LlmClient;
use crate::store::Store;
use crate::{Error, Result};

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
    /// The chosen local model's files (the default's, when the choice is not local) are on
    /// this computer.
    pub local_model_on_disk: bool,
    /// Every local model the user can choose, and whether its files are here.
    pub local_models: Vec<LocalModelStatus>,
    /// Active memories (recently removed ones get vectors too, uncounted).
    pub memories: usize,
    /// Of those, how many have one from `model`.
    pub embedded: usize,
    /// The local model is downloading in this process now.
    pub downloading: bool,
    /// The local model is in this process's memory now (loaded on first use, dropped after
    /// the idle-unload time without use).
    pub loaded: bool,
}

/// A local model in the chooser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalModelStatus {
    /// What `hearth embedding use local:ID` takes.
    pub id: String,
    pub description: String,
    /// About how much its download is.
    pub download_mb: u32,
    pub on_disk: bool,
}

/// The local model a choice names: its own, or the default for other choices (what
/// `hearth embedding download` fetches then).
fn local_model_of(choice: &EmbeddingChoice) -> LocalModel {
    match choice {
        EmbeddingChoice::Local { model } => *model,
        _ => LocalModel::default(),
    }
}

fn on_disk(model: LocalModel) -> bool {
    matches!(ModelSource::from_env_for(model).find(), Ok(Some(_)))
}

/// The embedder for `choice`, if it can be used now. Never downloads or calls the network.
pub(super) fn embedder_for(
    store: &Store,
    client: &LlmClient,
    choice: &EmbeddingChoice,
) -> Option<Arc<dyn Embedder>> {
    match choice {
        EmbeddingChoice::Local { model } => local_embedder_if_present(*model),
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
fn local_embedder_if_present(model: LocalModel) -> Option<Arc<dyn Embedder>> {
    let source = ModelSource::from_env_for(model);
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

impl Hearth {
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
        let local_model_on_disk = on_disk(local_model_of(&choice));
        Ok(EmbeddingStatus {
            label: choice.label(),
            choice,
            dimensions: embedder.as_ref().map(|e| e.dimensions()),
            model,
            local_model_on_disk,
            local_models: LocalModel::ALL
                .into_iter()
                .map(|m| LocalModelStatus {
                    id: m.id().to_owned(),
                    description: m.description().to_owned(),
                    download_mb: m.download_mb(),
                    on_disk: on_disk(m),
                })
                .collect(),
            memories,
            embedded: if embedder.is_some() { embedded } else { 0 },
            downloading: self
                .inner
                .downloading_model
                .load(std::sync::atomic::Ordering::SeqCst),
            loaded: embedder.as_ref().is_some_and(|e| e.is_loaded()),
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

    /// Downloads the chosen local model (the default one when the choice is not local;
    /// once; with `progress` as bytes arrive) and, when the choice is local, starts using
    /// it and queues the embedding of every memory. Blocking.
    /// One download at a time: another call while one runs is `busy`.
    pub fn download_local_model(
        &self,
        progress: Option<&Progress>,
    ) -> Result<Option<crate::store::jobs::JobId>> {
        use std::sync::atomic::Ordering;
        /// Clears the flag however the download ends (an error, a panic).
        struct Downloading<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Downloading<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::SeqCst);
            }
        }
        if self.inner.downloading_model.swap(true, Ordering::SeqCst) {
            return Err(Error::Busy(
                "the embedding model is already downloading".into(),
            ));
        }
        let _downloading = Downloading(&self.inner.downloading_model);
        let choice: EmbeddingChoice = self
            .inner
            .store
            .setting(crate::embed::CHOICE_SETTING)?
            .unwrap_or_default();
        let model = local_model_of(&choice);
        let source = ModelSource::from_env_for(model);
        source.resolve(progress)?;
        if !matches!(choice, EmbeddingChoice::Local { .. }) {
            return Ok(None);
        }
        let already = self
            .inner
            .embedder
            .get()
            .is_some_and(|e| e.model_id() == model.id());
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
        // Passages of watched folders too: the ingest job embeds them after any indexing.
        self.folders().queue_vectors(&model)?;
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
    pub(super) fn reembed_for(&self, job: &crate::store::jobs::Job) -> Result<usize> {
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
                e.embed_query(&crate::memory::phrasing::as_memories_say(query))
                    .ok()
                    .map(|v| (e.model_id().to_owned(), v))
            }
            None => None,
        };
        let found = memories.search_listed(
            query,
            vector.as_ref().map(|(m, v)| (m.as_str(), v.as_slice())),
        )?;
        let mut out = Vec::new();
        for c in found {
            if let Some(m) = memories.get(&c.id)?
                && filter.admits(&m)
            {
                out.push(m);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod download_tests {
    use std::sync::atomic::Ordering;

    use crate::store::OpenOptions;
    use crate::{DataDir, Hearth, KeyBackend};

    #[test]
    fn one_download_at_a_time_another_is_busy_and_the_status_says_one_runs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("d")));
        opts.new_key_backend = KeyBackend::File;
        let hearth = Hearth::open(&opts).expect("open");
        assert!(!hearth.embedding_status().expect("status").downloading);
        // Another window (or the tray) started a download that is still running.
        hearth.inner.downloading_model.store(true, Ordering::SeqCst);
        assert!(hearth.embedding_status().expect("status").downloading);
        let err = hearth.download_local_model(None).expect_err("busy");
        assert_eq!(err.code(), "busy");
        assert!(
            hearth.inner.downloading_model.load(Ordering::SeqCst),
            "the refused call leaves the running download's flag alone"
        );
    }
}
