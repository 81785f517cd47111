//! The model, its context and the decoding loop, on one thread that owns them (a llama.cpp
//! context is not shared between threads). Requests arrive on a channel and run one at a
//! time; pieces of text go back on each request's own channel, and a request whose channel
//! is gone (the client hung up, or the user pressed Stop) ends at the next token.
//!
//! **Prefix reuse.** The context holds a few sequences ("slots") in one unified KV cache.
//! Each slot remembers the tokens its cache holds; a prompt goes to the slot whose tokens
//! share the longest prefix with it (an empty or least recently used slot when none
//! does), the cache past that prefix is dropped, and only the rest is evaluated. A
//! conversation's next turn therefore reuses its system prompt, tools, stable memories and
//! history, and an extraction call in between lands in another slot instead of evicting
//! it. The reused count is reported as cached prompt tokens.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::mpsc;

use llama_cpp_2::DecodeError;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;

/// How the worker was asked to run.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub model: PathBuf,
    /// The context window in tokens; `None` takes the model's trained length, capped at
    /// [`DEFAULT_MAX_CTX`].
    pub n_ctx: Option<u32>,
    pub threads: Option<i32>,
    /// Sequences kept in the cache (conversations, extraction).
    pub slots: u32,
    /// End-of-generation tokens are suppressed until this many tokens are out (tests use
    /// it to keep a tiny model talking).
    pub min_tokens: u32,
}

/// The window taken when neither the caller nor memory asks for less.
pub const DEFAULT_MAX_CTX: u32 = 8192;

/// When the engine last worked, and whether it works now: the worker unloads itself
/// (exits) after a while without work.
#[derive(Debug)]
pub struct Activity {
    start: std::time::Instant,
    last_ms: std::sync::atomic::AtomicU64,
    busy: std::sync::atomic::AtomicBool,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            start: std::time::Instant::now(),
            last_ms: std::sync::atomic::AtomicU64::new(0),
            busy: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Activity {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
    fn set_busy(&self, busy: bool) {
        use std::sync::atomic::Ordering;
        self.last_ms.store(self.now_ms(), Ordering::Relaxed);
        self.busy.store(busy, Ordering::Relaxed);
    }
    /// How long the engine has been without work (zero while it works).
    pub fn idle_for(&self) -> std::time::Duration {
        use std::sync::atomic::Ordering;
        if self.busy.load(Ordering::Relaxed) {
            return std::time::Duration::ZERO;
        }
        let last = self.last_ms.load(Ordering::Relaxed);
        std::time::Duration::from_millis(self.now_ms().saturating_sub(last))
    }
}

/// What the loaded model is.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub n_ctx: u32,
    pub n_ctx_train: u32,
    pub template: Option<String>,
    pub bos: String,
    pub eos: String,
    pub architecture: String,
}

/// One generation.
pub struct Job {
    pub prompt: String,
    pub max_tokens: u32,
    /// 0 samples greedily.
    pub temperature: f32,
    /// A GBNF grammar the answer must follow (JSON output).
    pub grammar: Option<String>,
    pub out: tokio::sync::mpsc::Sender<Piece>,
}

/// What a generation sends back.
#[derive(Debug)]
pub enum Piece {
    Text(String),
    Done(Finish),
    Failed(String),
}

/// How a generation ended, with its token counts.
#[derive(Debug, Clone, Copy)]
pub struct Finish {
    /// `stop`, `length` or `cancelled`.
    pub reason: &'static str,
    pub prompt_tokens: u32,
    pub cached_tokens: u32,
    pub completion_tokens: u32,
}

/// A request to the engine thread.
pub enum Request {
    Generate(Job),
    /// Token counts of each text in the model's own tokenizer.
    Count {
        texts: Vec<String>,
        reply: tokio::sync::oneshot::Sender<Vec<u32>>,
    },
}

/// Why the engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("llama.cpp could not start: {0}")]
    Backend(String),
    #[error("the model could not be loaded: {0}")]
    Load(String),
    #[error(
        "the model's context could not be created (too little memory for {n_ctx} tokens?): {detail}"
    )]
    Context { n_ctx: u32, detail: String },
}

/// Starts the engine thread: loads the model, creates the context, and answers `requests`
/// until the channel closes. Returns once the model is loaded (or failed to).
pub fn start(
    config: EngineConfig,
    requests: mpsc::Receiver<Request>,
    activity: std::sync::Arc<Activity>,
) -> Result<(ModelInfo, std::thread::JoinHandle<()>), StartError> {
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let handle = std::thread::Builder::new()
        .name("llama-engine".into())
        .spawn(move || run(config, requests, ready_tx, &activity))
        .map_err(|e| StartError::Backend(e.to_string()))?;
    match ready_rx.recv() {
        Ok(Ok(info)) => Ok((info, handle)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(StartError::Backend("the engine thread ended".into())),
    }
}

fn run(
    config: EngineConfig,
    requests: mpsc::Receiver<Request>,
    ready: mpsc::SyncSender<Result<ModelInfo, StartError>>,
    activity: &Activity,
) {
    let mut backend = match LlamaBackend::init() {
        Ok(b) => b,
        Err(e) => {
            let _ = ready.send(Err(StartError::Backend(e.to_string())));
            return;
        }
    };
    if std::env::var_os("HEARTH_LLAMA_LOG").is_none() {
        backend.void_logs();
    }
    let model =
        match LlamaModel::load_from_file(&backend, &config.model, &LlamaModelParams::default()) {
            Ok(m) => m,
            Err(e) => {
                let _ = ready.send(Err(StartError::Load(e.to_string())));
                return;
            }
        };
    let n_ctx_train = model.n_ctx_train().max(1);
    let n_ctx = config
        .n_ctx
        .unwrap_or(DEFAULT_MAX_CTX)
        .clamp(256, n_ctx_train.max(256));
    let slots = config.slots.clamp(1, 8);
    let threads = config.threads.unwrap_or_else(default_threads);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(512)
        .with_n_seq_max(slots)
        .with_kv_unified(true)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = match model.new_context(&backend, params) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(StartError::Context {
                n_ctx,
                detail: e.to_string(),
            }));
            return;
        }
    };
    let vocab = model.vocab();
    let piece =
        |t: LlamaToken| String::from_utf8_lossy(&vocab.token_to_piece(t, true, None)).into_owned();
    let info = ModelInfo {
        n_ctx,
        n_ctx_train,
        template: model
            .chat_template(None)
            .ok()
            .and_then(|t| t.to_string().ok()),
        bos: piece(vocab.bos()),
        eos: piece(vocab.eos()),
        architecture: model
            .meta_val_str("general.architecture")
            .unwrap_or_default(),
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let mut engine = Engine {
        model: &model,
        ctx: &mut ctx,
        slots: (0..slots).map(|_| Slot::default()).collect(),
        clock: 0,
        min_tokens: config.min_tokens,
        n_ctx,
    };
    activity.set_busy(false);
    while let Ok(request) = requests.recv() {
        activity.set_busy(true);
        match request {
            Request::Count { texts, reply } => {
                let counts = texts
                    .iter()
                    .map(|t| {
                        engine
                            .tokenize(t, false)
                            .len()
                            .try_into()
                            .unwrap_or(u32::MAX)
                    })
                    .collect();
                let _ = reply.send(counts);
            }
            // The client left while the job waited: nothing to do.
            Request::Generate(job) if job.out.is_closed() => {}
            Request::Generate(job) => {
                let out = job.out.clone();
                let end = match engine.generate(job) {
                    Ok(finish) => Piece::Done(finish),
                    Err(e) => Piece::Failed(e),
                };
                let _ = out.blocking_send(end);
            }
        }
        activity.set_busy(false);
    }
}

/// Threads for decoding: the physical cores, at most 8, leaving one for the app on small
/// machines.
fn default_threads() -> i32 {
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    let n = if n > 4 { n - 1 } else { n };
    i32::try_from(n.min(8)).unwrap_or(4)
}

#[derive(Default)]
struct Slot {
    /// The tokens whose keys and values the cache holds for this sequence, in order.
    tokens: Vec<LlamaToken>,
    last_used: u64,
}

struct Engine<'m, 'c> {
    model: &'m LlamaModel,
    ctx: &'c mut LlamaContext<'m>,
    slots: Vec<Slot>,
    clock: u64,
    min_tokens: u32,
    n_ctx: u32,
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Engine<'_, '_> {
    fn tokenize(&self, text: &str, whole_prompt: bool) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let bos_text =
            String::from_utf8_lossy(&vocab.token_to_piece(vocab.bos(), true, None)).into_owned();
        let add_bos = whole_prompt
            && vocab.should_add_bos()
            && !(bos_text.is_empty() || text.starts_with(&bos_text));
        vocab.tokenize(text.as_bytes(), add_bos, whole_prompt)
    }

    /// The slot for `prompt`: among the slots it would keep at least half of (an empty
    /// slot always qualifies), the one sharing the longest prefix, empty ones before the
    /// least recently used; when it would keep little of any, the least recently used.
    /// An extraction call shares only the first words of the system prompt with a
    /// conversation: it takes another slot instead of evicting the conversation's cache.
    fn choose_slot(&self, prompt: &[LlamaToken]) -> (usize, usize) {
        let best = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| (i, common_prefix(&s.tokens, prompt)))
            .filter(|&(i, n)| n * 2 >= self.slots[i].tokens.len())
            .max_by_key(|&(i, n)| {
                let s = &self.slots[i];
                (n, s.tokens.is_empty(), std::cmp::Reverse(s.last_used))
            });
        match best {
            Some(found) => found,
            None => {
                let lru = self
                    .slots
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, s)| s.last_used)
                    .map_or(0, |(i, _)| i);
                (lru, 0)
            }
        }
    }

    fn seq(i: usize) -> i32 {
        i32::try_from(i).unwrap_or(0)
    }

    /// Drops the cache of slot `i` from token `from` on.
    fn truncate(&mut self, i: usize, from: usize) {
        let seq = Self::seq(i);
        let from_u = u32::try_from(from).unwrap_or(u32::MAX);
        let _ = self
            .ctx
            .clear_kv_cache_seq(u32::try_from(seq).ok(), Some(from_u), None);
        self.slots[i].tokens.truncate(from);
    }

    /// Frees the cache of the least recently used slot other than `keep` that holds
    /// anything; false when there is none.
    fn evict_other(&mut self, keep: usize) -> bool {
        let victim = self
            .slots
            .iter()
            .enumerate()
            .filter(|(i, s)| *i != keep && !s.tokens.is_empty())
            .min_by_key(|(_, s)| s.last_used)
            .map(|(i, _)| i);
        match victim {
            Some(v) => {
                self.truncate(v, 0);
                true
            }
            None => false,
        }
    }

    /// Decodes `tokens` into slot `i` starting at its current length, asking for logits
    /// of the last one. Makes room by evicting other slots when the cache is full.
    fn feed(&mut self, i: usize, tokens: &[LlamaToken]) -> Result<(), String> {
        let n_batch = usize::try_from(self.ctx.n_batch()).unwrap_or(512).max(1);
        let seq = Self::seq(i);
        for (c, chunk) in tokens.chunks(n_batch).enumerate() {
            let last_chunk = (c + 1) * n_batch >= tokens.len();
            loop {
                let start = self.slots[i].tokens.len();
                let mut batch = LlamaBatch::new(chunk.len(), 1);
                for (k, &t) in chunk.iter().enumerate() {
                    let pos = i32::try_from(start + k).map_err(|e| e.to_string())?;
                    batch
                        .add(t, pos, &[seq], last_chunk && k + 1 == chunk.len())
                        .map_err(|e| e.to_string())?;
                }
                match self.ctx.decode(&mut batch) {
                    Ok(()) => {
                        self.slots[i].tokens.extend_from_slice(chunk);
                        break;
                    }
                    Err(DecodeError::NoKvCacheSlot) if self.evict_other(i) => continue,
                    Err(e) => {
                        // What was decoded of this chunk is unknown: forget the slot.
                        self.truncate(i, 0);
                        return Err(format!("llama.cpp could not evaluate the prompt: {e}"));
                    }
                }
            }
        }
        Ok(())
    }

    fn generate(&mut self, job: Job) -> Result<Finish, String> {
        let prompt = self.tokenize(&job.prompt, true);
        let prompt_len = prompt.len();
        let window = usize::try_from(self.n_ctx).unwrap_or(usize::MAX);
        if prompt_len == 0 {
            return Err("the prompt is empty".into());
        }
        if prompt_len + 1 >= window {
            return Err(format!(
                "the prompt has {prompt_len} tokens and the context window holds {window}"
            ));
        }
        self.clock += 1;
        let (i, shared) = self.choose_slot(&prompt);
        // At least the last prompt token is evaluated again, for its logits.
        let keep = shared.min(prompt_len - 1);
        self.truncate(i, keep);
        self.slots[i].last_used = self.clock;
        self.feed(i, &prompt[keep..])?;

        let vocab = self.model.vocab();
        let mut sampler = self.sampler(&job, false)?;
        let mut grammar = match &job.grammar {
            Some(g) => Some(
                LlamaSampler::grammar(self.model, g, "root")
                    .map_err(|e| format!("the JSON grammar was refused: {e}"))?,
            ),
            None => None,
        };
        let mut early = if self.min_tokens > 0 {
            Some(self.sampler(&job, true)?)
        } else {
            None
        };
        // Without a grammar, the next token is drawn from the model's top candidates, picked
        // in one pass over the logits: the same choice as llama.cpp's top-k first chain, with
        // no copy of the whole vocabulary per token (3 MB for a 262k-token vocabulary).
        let mut quick = (job.grammar.is_none()).then(|| QuickSampler::new(&job));
        let ends: Vec<bool> = if self.min_tokens > 0 {
            let mut ends = vec![false; usize::try_from(self.model.n_vocab()).unwrap_or(0)];
            for t in vocab.tokens().filter(|&t| vocab.is_eog(t)) {
                if let Some(e) = usize::try_from(t.0).ok().and_then(|i| ends.get_mut(i)) {
                    *e = true;
                }
            }
            ends
        } else {
            Vec::new()
        };
        let mut decoder = encoding_rs::UTF_8.new_decoder();
        let mut produced: u32 = 0;
        let mut reason = "length";
        let room = window.saturating_sub(prompt_len + 1);
        let limit = job.max_tokens.min(u32::try_from(room).unwrap_or(u32::MAX));
        while produced < limit {
            let banned = (produced < self.min_tokens && !ends.is_empty()).then_some(&ends[..]);
            let mut token = match (quick.as_mut(), early.as_mut()) {
                (Some(q), _) => q
                    .sample(self.ctx.get_logits_ith(-1), banned)
                    .ok_or("the model gave no usable next token")?,
                (None, Some(e)) if produced < self.min_tokens => {
                    let t = e.sample(self.ctx, -1);
                    sampler.accept(t);
                    t
                }
                _ => sampler.sample(self.ctx, -1),
            };
            // The grammar checks the free choice first, and only when it breaks the grammar
            // masks the whole vocabulary (as llama.cpp's own sampler does): most tokens of
            // a JSON answer are what the model would have written anyway.
            if let Some(g) = grammar.as_mut() {
                let mut one =
                    LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
                one.apply_sampler(g);
                if !one.data.first().is_some_and(|d| d.logit().is_finite()) {
                    let mut all = self.ctx.token_data_array();
                    all.apply_sampler(g);
                    let mut pick = if job.temperature <= 0.0 {
                        LlamaSampler::greedy()
                    } else {
                        LlamaSampler::chain_simple([
                            LlamaSampler::temp(job.temperature),
                            LlamaSampler::dist(rand_seed()),
                        ])
                    };
                    all.apply_sampler(&mut pick);
                    token = all
                        .selected_token()
                        .ok_or("the JSON grammar allows no next token")?;
                }
                g.accept(token);
            }
            if vocab.is_eog(token) {
                reason = "stop";
                break;
            }
            produced += 1;
            let bytes = vocab.token_to_piece(token, false, None);
            let mut text = String::with_capacity(bytes.len() + 4);
            let _ = decoder.decode_to_string(&bytes, &mut text, false);
            if !text.is_empty() && job.out.blocking_send(Piece::Text(text)).is_err() {
                reason = "cancelled";
                break;
            }
            if produced >= limit {
                break;
            }
            self.feed(i, &[token])?;
        }
        Ok(Finish {
            reason,
            prompt_tokens: u32::try_from(prompt_len).unwrap_or(u32::MAX),
            cached_tokens: u32::try_from(keep).unwrap_or(u32::MAX),
            completion_tokens: produced,
        })
    }

    /// The sampler chain for `job` (its grammar apart: see `generate`); `suppress_end` bans
    /// end-of-generation tokens.
    fn sampler(&self, job: &Job, suppress_end: bool) -> Result<LlamaSampler, String> {
        let mut chain = Vec::new();
        if suppress_end {
            let vocab = self.model.vocab();
            let ends: Vec<LlamaLogitBias> = vocab
                .tokens()
                .filter(|&t| vocab.is_eog(t))
                .map(|t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
                .collect();
            chain.push(LlamaSampler::logit_bias(self.model.n_vocab(), &ends));
        }
        if job.grammar.is_some() {
            // A small model under a grammar tends to repeat list items until the bound: a
            // mild penalty on what it just wrote lets it close the list.
            chain.push(LlamaSampler::penalties(
                self.model.n_vocab(),
                64,
                1.1,
                0.0,
                0.0,
            ));
        }
        if job.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::top_k(40));
            chain.push(LlamaSampler::top_p(0.95, 1));
            chain.push(LlamaSampler::min_p(0.05, 1));
            chain.push(LlamaSampler::temp(job.temperature));
            chain.push(LlamaSampler::dist(rand_seed()));
        }
        Ok(LlamaSampler::chain_simple(chain))
    }
}

/// How many candidates a sampled (not greedy) token is drawn from, as `top_k(40)`.
const TOP_K: usize = 40;

/// Picks the next token from the logits: the best one at temperature 0, else one drawn
/// from the `TOP_K` best by llama.cpp's own top-p, min-p, temperature and dist samplers.
struct QuickSampler {
    greedy: bool,
    rest: Option<LlamaSampler>,
    best: Vec<(f32, i32)>,
}

impl QuickSampler {
    fn new(job: &Job) -> Self {
        let greedy = job.temperature <= 0.0;
        Self {
            greedy,
            rest: (!greedy).then(|| {
                LlamaSampler::chain_simple([
                    LlamaSampler::top_p(0.95, 1),
                    LlamaSampler::min_p(0.05, 1),
                    LlamaSampler::temp(job.temperature),
                    LlamaSampler::dist(rand_seed()),
                ])
            }),
            best: Vec::with_capacity(TOP_K + 1),
        }
    }

    /// The next token; `banned` marks tokens that may not come now (end tokens before the
    /// minimum length). `None` when no logit is a number.
    fn sample(&mut self, logits: &[f32], banned: Option<&[bool]>) -> Option<LlamaToken> {
        let k = if self.greedy { 1 } else { TOP_K };
        top_k(logits, k, banned, &mut self.best);
        if self.greedy || self.best.len() == 1 {
            return self.best.first().map(|&(_, t)| LlamaToken::new(t));
        }
        let data = self
            .best
            .iter()
            .map(|&(logit, t)| LlamaTokenData::new(LlamaToken::new(t), logit, 0.0))
            .collect();
        let mut array = LlamaTokenDataArray::new(data, true);
        if let Some(rest) = self.rest.as_mut() {
            array.apply_sampler(rest);
        }
        array
            .selected_token()
            .or_else(|| self.best.first().map(|&(_, t)| LlamaToken::new(t)))
    }
}

/// The `k` highest finite logits with their token ids into `out`, best first, in one pass
/// (ties keep the lower id, as llama.cpp's greedy does).
fn top_k(logits: &[f32], k: usize, banned: Option<&[bool]>, out: &mut Vec<(f32, i32)>) {
    out.clear();
    let mut floor = f32::NEG_INFINITY;
    for (i, &logit) in logits.iter().enumerate() {
        if !logit.is_finite() || (out.len() == k && logit <= floor) {
            continue;
        }
        if banned.is_some_and(|b| b.get(i).copied().unwrap_or(false)) {
            continue;
        }
        let Ok(id) = i32::try_from(i) else { break };
        let at = out.partition_point(|&(l, _)| l >= logit);
        out.insert(at, (logit, id));
        if out.len() > k {
            out.pop();
        }
        if out.len() == k {
            floor = out[k - 1].0;
        }
    }
}

fn rand_seed() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id()
}

#[cfg(test)]
mod tests {
    use super::top_k;

    #[test]
    fn top_k_keeps_the_best_finite_logits_best_first_and_skips_banned_ones() {
        let logits = [0.5, 3.0, f32::NAN, 2.0, 3.0, f32::NEG_INFINITY, -1.0, 9.0];
        let mut out = Vec::new();
        top_k(&logits, 3, None, &mut out);
        assert_eq!(
            out,
            vec![(9.0, 7), (3.0, 1), (3.0, 4)],
            "ties keep the lower id first"
        );
        top_k(&logits, 1, None, &mut out);
        assert_eq!(out, vec![(9.0, 7)]);
        let mut banned = vec![false; logits.len()];
        banned[7] = true;
        top_k(&logits, 2, Some(&banned), &mut out);
        assert_eq!(out, vec![(3.0, 1), (3.0, 4)]);
        top_k(&[f32::NAN, f32::INFINITY], 2, None, &mut out);
        assert!(out.is_empty(), "no number, no candidate");
    }
}
