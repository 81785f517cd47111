//! hearth-embed — sentence embeddings: turning texts into unit-length vectors for memory
//! and retrieval.
//!
//! Two [`Embedder`]s: [`LocalEmbedder`] runs a [`LocalModel`] (all-MiniLM-L6-v2 by default,
//! or bge-small-en-v1.5) in-process on the CPU (`bert.rs`) (the model found via
//! [`ModelSource`], downloaded once if need be), and [`ApiEmbedder`]
//! calls a provider's OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, LM Studio, …).
//!
//! Invariant: every call is blocking and may take seconds (a model load, a download, a batch
//! of 256-token texts); async callers run it on `tokio::task::spawn_blocking`. Texts are
//! never logged.
//!
//! **Never depends on** the store, folders, memory or the engine (only `hearth-base`, and
//! `hearth-llm` for the API embedder): an embedder turns text into numbers and keeps
//! nothing, so it can be swapped or re-run without touching what is stored. Kept by this
//! crate's `Cargo.toml`.

mod api;
mod bert;
mod catalog;
mod choice;
pub mod download;
mod error;
mod local;
mod source;

use std::future::Future;
use std::sync::OnceLock;

pub use api::ApiEmbedder;
pub use catalog::{LocalModel, Pooling};
pub use choice::{EmbedderSlot, EmbeddingChoice, SETTING as CHOICE_SETTING};
pub use error::EmbedError;
pub use local::{
    DIMENSIONS, LocalEmbedder, MAX_TOKENS, MODEL_ID, QueryTurn, single_threaded_kernels,
};
pub use source::{
    HUB_DOWNLOAD_HOSTS, HUB_REPO, ModelFiles, ModelSource, PINNED_SHA256, Progress, REVISION,
};

use hearth_base::{Error, Result};
use hearth_base::{fsio, paths};

/// Something that turns texts into vectors. Object-safe: share it as `Arc<dyn Embedder>`.
pub trait Embedder: Send + Sync {
    /// The model's name, stored beside each vector so vectors of different models never mix.
    fn model_id(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// One L2-normalized vector per text, in the order given. Blocking; batched internally.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// The vector of a search query: as [`embed`](Self::embed) gives it, unless the model
    /// wants queries marked (bge's retrieval instruction). The texts searched go through
    /// `embed`.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embed(&[query])?
            .pop()
            .ok_or_else(|| EmbedError::Inference("no vector for the query".into()).into())
    }

    /// Whether the embedder holds a model in this process's memory (a local one, loaded).
    fn is_loaded(&self) -> bool {
        false
    }

    /// Drops the model held in memory if no call used it for `idle` and none runs; the
    /// next call loads it again. Returns whether it dropped one.
    fn unload_if_idle(&self, _idle: std::time::Duration) -> bool {
        false
    }
}

/// Runs `fut` to completion on a small runtime of its own, on a thread of its own, so it works
/// whether or not the caller is inside a tokio runtime (e.g. on `spawn_blocking`).
pub fn block_on<T: Send>(fut: impl Future<Output = Result<T>> + Send) -> Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::Task(format!("could not start a runtime: {e}")))?;
                runtime.block_on(fut)
            })
            .join()
            .map_err(|_| Error::Task("the embedding network thread panicked".into()))?
    })
}

/// The runtime that API embeddings run on: one worker thread, kept for the life of the
/// process, so connections the shared HTTP client opens there stay usable (a runtime per
/// call would leave dead connections in the client's pool).
static NETWORK: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();

/// Runs `fut` on the shared network runtime and blocks until it ends. Works whether or not
/// the caller is inside a tokio runtime (it waits on a channel, never a nested `block_on`).
pub fn on_network_runtime<T: Send + 'static>(
    fut: impl Future<Output = T> + Send + 'static,
) -> Result<T> {
    let runtime = NETWORK
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("hearth-net")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Task(format!("could not start the network runtime: {e}")))?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .map_err(|_| Error::Task("the embedding request stopped unexpectedly".into()))
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > f32::EPSILON {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
