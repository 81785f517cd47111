//! A local sentence encoder ([`LocalModel`]: all-MiniLM-L6-v2 by default) run in-process
//! on the CPU by the encoder of [`super::bert`].
//!
//! Matches sentence-transformers: `[CLS] … [SEP]`, token type ids 0, the model's pooling
//! (MiniLM: the mean over the real tokens, i.e. the attention mask; bge: `[CLS]`), then L2
//! normalisation; a search query gets the model's query instruction first. Texts are cut at
//! 256 tokens, not at the 128 MiniLM's shipped tokenizer.json fixes. The model is loaded on first use and can be
//! unloaded when idle; the next call loads it again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use candle_core::Device;
use candle_nn::VarBuilder;
use candle_transformers::models::bert;
use tokenizers::{Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::bert::Bert;
use super::catalog::{LocalModel, Pooling};
use super::{EmbedError, Embedder, ModelFiles, ModelSource, Progress};
use crate::{Error, Result};

/// The name [`LocalEmbedder::model_id`] returns for the default model.
pub const MODEL_ID: &str = LocalModel::MiniLm.id();

/// The length of every local model's vectors.
pub const DIMENSIONS: usize = 384;

/// Longest input in tokens, `[CLS]` and `[SEP]` included; the rest of a text is ignored.
pub const MAX_TOKENS: usize = 256;

/// Most texts run through the model together.
const BATCH_TEXTS: usize = 32;

/// Most tokens in one batch, counted as if padded to its longest text (the encoder packs
/// them without padding). Texts are sorted by length first, so short texts go 32 at a time
/// and 256-token ones 4 at a time. Batches run one per core; a 1024-token batch's buffers
/// are about 16 MB (activations of 1024 × (384 × 6 + 1536) floats).
const BATCH_TOKENS: usize = 1024;

/// Vectors of one worker's batches, by text position.
type Embedded = Vec<(usize, Vec<f32>)>;

/// The local embedder. Cheap to construct: the model is found (or downloaded) and loaded on
/// the first call that needs it.
pub struct LocalEmbedder {
    source: ModelSource,
    progress: Option<Arc<Progress>>,
    state: Mutex<State>,
    priority: Priority,
}

/// Search queries before bulk embedding: while a query is being embedded (a user's turn or
/// search is waiting for it), no batch of [`Embedder::embed`] starts — those running
/// finish, the rest wait — so a query never queues behind an ingest backlog nor shares
/// the cores with it. Counted under one lock, so "no batch started while a query was
/// in flight" holds exactly.
#[derive(Default)]
struct Priority {
    /// Queries in flight.
    queries: Mutex<usize>,
    idle: Condvar,
    /// Batches of bulk embedding started (a test's witness).
    started: AtomicU64,
}

/// A query's claim on the embedder (see [`LocalEmbedder::query_turn`]); released on drop.
pub struct QueryTurn<'a>(&'a Priority);

impl Drop for QueryTurn<'_> {
    fn drop(&mut self) {
        let mut n = self.0.queries.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.0.idle.notify_all();
        }
    }
}

impl Priority {
    fn claim(&self) -> QueryTurn<'_> {
        *self.queries.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        QueryTurn(self)
    }

    /// Waits until no query is in flight, then counts one bulk batch as started.
    fn start_batch(&self) {
        let mut n = self.queries.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            n = self.idle.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        self.started.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct State {
    files: Option<ModelFiles>,
    tokenizer: Option<Arc<Tokenizer>>,
    model: Option<Arc<Bert>>,
    /// When a call last started or ended.
    used: Option<Instant>,
    /// Calls holding the tokenizer or the model now.
    running: usize,
}

/// A call's hold on the embedder: counted as running until dropped, then stamps the time.
struct InUse<'a>(&'a LocalEmbedder);

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.running = state.running.saturating_sub(1);
        state.used = Some(Instant::now());
    }
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("source", &self.source)
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

impl LocalEmbedder {
    /// An embedder whose model comes from `source`; nothing is read yet.
    pub fn new(source: ModelSource) -> Self {
        LocalEmbedder {
            source,
            progress: None,
            state: Mutex::new(State::default()),
            priority: Priority::default(),
        }
    }

    /// Claims the embedder for a query: until the returned guard is dropped, no batch of
    /// bulk embedding ([`Embedder::embed`]) starts. [`Embedder::embed_query`] holds one
    /// while it runs.
    pub fn query_turn(&self) -> QueryTurn<'_> {
        self.priority.claim()
    }

    /// How many batches of bulk embedding have started in this embedder.
    pub fn batches_started(&self) -> u64 {
        self.priority.started.load(Ordering::Relaxed)
    }

    /// An embedder whose model is found as [`ModelSource::from_env`] says.
    pub fn from_env() -> Self {
        Self::new(ModelSource::from_env())
    }

    /// The model found as [`ModelSource::from_env`] says, if it is on disk already (never
    /// downloads): what the evaluations measure with. `None` when it is not installed.
    pub fn installed_from_env() -> Result<Option<Self>> {
        Self::installed_from_env_for(LocalModel::default())
    }

    /// The same for `model`.
    pub fn installed_from_env_for(model: LocalModel) -> Result<Option<Self>> {
        let source = ModelSource::from_env_for(model);
        Ok(source.find()?.map(|_| Self::new(source)))
    }

    /// Tells `progress(file, bytes_done, bytes_total)` how a first-use download goes.
    pub fn with_progress(
        mut self,
        progress: impl Fn(&str, u64, Option<u64>) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Loads the model now (downloading it if need be) instead of on the first call.
    pub fn load(&self) -> Result<()> {
        self.loaded().map(|_| ())
    }

    /// Drops the tokenizer and the weights (about 115 MB with what inference allocated); the
    /// next call loads them again.
    /// Calls already running finish with the copy they hold.
    pub fn unload(&self) {
        let mut state = self.lock();
        let was_loaded = state.model.take().is_some();
        state.tokenizer = None;
        if was_loaded {
            tracing::info!("embedding model unloaded");
        }
    }

    /// Whether the weights are in memory.
    pub fn is_loaded(&self) -> bool {
        self.lock().model.is_some()
    }

    /// [`unload`](Self::unload)s if loaded, no call runs and none used it for `idle`.
    pub fn unload_if_idle(&self, idle: std::time::Duration) -> bool {
        let mut state = self.lock();
        let idle_long_enough = state.used.is_none_or(|t| t.elapsed() >= idle);
        if state.running > 0
            || !idle_long_enough
            || (state.model.is_none() && state.tokenizer.is_none())
        {
            return false;
        }
        state.model = None;
        state.tokenizer = None;
        tracing::info!(
            idle_s = idle.as_secs(),
            "embedding model unloaded when idle"
        );
        true
    }

    /// Counts a call as running until the guard drops.
    fn in_use(&self) -> InUse<'_> {
        let mut state = self.lock();
        state.running += 1;
        state.used = Some(Instant::now());
        InUse(self)
    }

    /// How many tokens the model sees of each text: `[CLS]` and `[SEP]` included, at most
    /// [`MAX_TOKENS`]. Loads the tokenizer, not the weights.
    pub fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>> {
        let _in_use = self.in_use();
        let tokenizer = {
            let mut state = self.lock();
            self.tokenizer(&mut state)?
        };
        texts
            .iter()
            .map(|t| {
                tokenizer
                    .encode(*t, true)
                    .map(|e| e.len())
                    .map_err(|e| EmbedError::Inference(format!("tokenizing failed: {e}")).into())
            })
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a set of Options each written in one step, so it is sound after a panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tokenizer and model, loading them under the lock so concurrent first calls load once.
    fn loaded(&self) -> Result<(Arc<Tokenizer>, Arc<Bert>)> {
        let mut state = self.lock();
        let tokenizer = self.tokenizer(&mut state)?;
        if let Some(model) = &state.model {
            return Ok((tokenizer, model.clone()));
        }
        let files = self.files(&mut state)?;
        let started = Instant::now();
        // Loaded on a thread of its own, for the reason the batches run on scoped threads
        // (`embed_texts`): the caller's heap keeps nothing of the weights once dropped.
        let which = self.source.model();
        let loaded = std::thread::scope(|scope| {
            scope
                .spawn(|| load_model(&files, which))
                .join()
                .unwrap_or_else(|_| {
                    Err(EmbedError::Inference("loading the embedding model panicked".into()).into())
                })
        });
        let model = Arc::new(loaded?);
        tracing::info!(
            model = self.source.model().id(),
            ms = started.elapsed().as_millis() as u64,
            "embedding model loaded"
        );
        state.model = Some(model.clone());
        Ok((tokenizer, model))
    }

    fn tokenizer(&self, state: &mut State) -> Result<Arc<Tokenizer>> {
        if let Some(t) = &state.tokenizer {
            return Ok(t.clone());
        }
        let files = self.files(state)?;
        let tokenizer = Arc::new(load_tokenizer(&files)?);
        state.tokenizer = Some(tokenizer.clone());
        Ok(tokenizer)
    }

    fn files(&self, state: &mut State) -> Result<ModelFiles> {
        if let Some(files) = &state.files {
            return Ok(files.clone());
        }
        let files = self.source.resolve(self.progress.as_deref())?;
        state.files = Some(files.clone());
        Ok(files)
    }
}

impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        self.source.model().id()
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let prefix = self.source.model().query_prefix();
        let text = format!("{prefix}{query}");
        let _turn = self.query_turn();
        self.embed_texts(&[text.as_str()], false)?
            .pop()
            .ok_or_else(|| EmbedError::Inference("no vector for the query".into()).into())
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_texts(texts, true)
    }

    fn is_loaded(&self) -> bool {
        LocalEmbedder::is_loaded(self)
    }

    fn unload_if_idle(&self, idle: std::time::Duration) -> bool {
        LocalEmbedder::unload_if_idle(self, idle)
    }
}

impl LocalEmbedder {
    /// Embeds `texts`; with `bulk`, each batch first waits for the queries in flight.
    fn embed_texts(&self, texts: &[&str], bulk: bool) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let _in_use = self.in_use();
        let (tokenizer, model) = self.loaded()?;
        let pooling = self.source.model().pooling();
        let started = Instant::now();
        let encodings = tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Inference(format!("tokenizing failed: {e}")))?;
        // Similar lengths together, so little of a batch is padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut batches: Vec<&[usize]> = Vec::new();
        let mut rest = order.as_slice();
        while !rest.is_empty() {
            let mut n = 1;
            // Sorted ascending, so the last text of a batch is its longest.
            while n < rest.len()
                && n < BATCH_TEXTS
                && (n + 1) * encodings[rest[n]].len() <= BATCH_TOKENS
            {
                n += 1;
            }
            let (batch, tail) = rest.split_at(n);
            batches.push(batch);
            rest = tail;
        }
        // Batches run side by side, one per core (see `single_threaded_kernels`).
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(batches.len());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: Vec<Result<Embedded>> = std::thread::scope(|scope| {
            let run = || -> Result<Embedded> {
                let mut out = Vec::new();
                loop {
                    let b = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(batch) = batches.get(b) else {
                        return Ok(out);
                    };
                    if bulk {
                        self.priority.start_batch();
                    }
                    let batch_encodings: Vec<&Encoding> =
                        batch.iter().map(|&i| &encodings[i]).collect();
                    out.extend(batch.iter().copied().zip(embed_batch(
                        &model,
                        &batch_encodings,
                        pooling,
                    )?));
                }
            };
            // Every share runs on a scoped thread, none on the caller's: what a thread keeps
            // after inference (gemm's scratch, the allocator's pages of its heap) leaves with
            // it, so a long-lived caller (learning) holds nothing once the model is dropped.
            let helpers: Vec<_> = (0..workers).map(|_| scope.spawn(run)).collect();
            let mut all = Vec::with_capacity(workers);
            for h in helpers {
                all.push(h.join().unwrap_or_else(|_| {
                    Err(EmbedError::Inference("an embedding thread panicked".into()).into())
                }));
            }
            all
        });
        let mut vectors = vec![Vec::new(); texts.len()];
        for part in done {
            for (i, v) in part? {
                vectors[i] = v;
            }
        }
        tracing::debug!(
            texts = texts.len(),
            ms = started.elapsed().as_millis() as u64,
            "embedded locally"
        );
        Ok(vectors)
    }
}

/// Makes the kernels of the libraries the embedder uses (candle, gemm, rayon) single-threaded
/// in this process, unless the user set `CANDLE_NUM_THREADS` or `RAYON_NUM_THREADS`:
/// [`LocalEmbedder`] runs one batch per core instead, which measured faster on 2 cores
/// (less synchronisation, and the element-wise work runs side by side too).
///
/// # Safety
/// It sets environment variables: call it first thing in `main`, before any other thread
/// exists.
pub unsafe fn single_threaded_kernels() {
    let vars = ["CANDLE_NUM_THREADS", "RAYON_NUM_THREADS"];
    if vars.iter().all(|v| std::env::var_os(v).is_none()) {
        for v in vars {
            // SAFETY: the caller promises no other thread exists yet.
            unsafe { std::env::set_var(v, "1") };
        }
    }
}

/// One batch through the model: pooled as the model is (the mean over the tokens, or
/// `[CLS]`) and normalized.
fn embed_batch(model: &Bert, encodings: &[&Encoding], pooling: Pooling) -> Result<Vec<Vec<f32>>> {
    let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
    model
        .embed(&ids, pooling)
        .map_err(|e| EmbedError::Inference(e).into())
}

/// The shipped tokenizer with truncation at [`MAX_TOKENS`] instead of 128, and without its
/// fixed padding to 128: [`embed_batch`] pads each batch to its longest text.
pub fn load_tokenizer(files: &ModelFiles) -> Result<Tokenizer> {
    let path = &files.tokenizer;
    let corrupt = |detail: String| -> Error {
        EmbedError::Corrupt {
            path: path.clone(),
            detail,
        }
        .into()
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| corrupt(e.to_string()))?;
    if let Some(pad) = tokenizer.get_padding()
        && pad.pad_id != 0
    {
        return Err(corrupt(format!(
            "expected [PAD] to be token 0, found {}",
            pad.pad_id
        )));
    }
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: MAX_TOKENS,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| corrupt(e.to_string()))?;
    Ok(tokenizer)
}

/// Reads the config and the weights; checks it is a 384-dimensional BERT.
pub fn load_model(files: &ModelFiles, expected: LocalModel) -> Result<Bert> {
    let text = std::fs::read_to_string(&files.config).map_err(|e| Error::io(&files.config, e))?;
    let config: bert::Config = serde_json::from_str(&text).map_err(|e| EmbedError::Corrupt {
        path: files.config.clone(),
        detail: format!("not a BERT config ({e})"),
    })?;
    if config.hidden_size != DIMENSIONS || config.max_position_embeddings < MAX_TOKENS {
        return Err(EmbedError::Corrupt {
            path: files.config.clone(),
            detail: format!(
                "expected {} ({DIMENSIONS} dimensions, ≥ {MAX_TOKENS} positions), found \
                 {} dimensions and {} positions",
                expected.id(),
                config.hidden_size,
                config.max_position_embeddings
            ),
        }
        .into());
    }
    let weights = &files.weights;
    let bytes = std::fs::read(weights).map_err(|e| Error::io(weights, e))?;
    let corrupt = |detail: String| -> Error {
        EmbedError::Corrupt {
            path: weights.clone(),
            detail,
        }
        .into()
    };
    // Buffered, not memory-mapped: a file changed under a map is undefined behaviour. The
    // buffer is freed once the tensors are copied out of it.
    let vb = VarBuilder::from_buffered_safetensors(bytes, bert::DTYPE, &Device::Cpu)
        .map_err(|e| corrupt(e.to_string()))?;
    Bert::load(vb, &config).map_err(corrupt)
}
