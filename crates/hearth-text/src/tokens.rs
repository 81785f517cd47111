//! Token counting with the model's own encoding.
//!
//! GPT-4o-class models (gpt-4o, gpt-4.1, gpt-5, o1/o3/o4) use `o200k_base`; GPT-4 and
//! GPT-3.5 use `cl100k_base`. For other models (Llama, Qwen, Mistral, Claude …) we have no
//! exact tokenizer here, so we count with `o200k_base` and add a safety margin
//! ([`ESTIMATE_MARGIN`]): BPE vocabularies of that size tokenise prose within about ±15% of
//! each other, and code and CJK are counted as tokens, never as characters/4. An encoder loads
//! on first use (`o200k_base` is about 50 MB in memory, `cl100k_base` 16 MB) and is dropped
//! by [`release_idle_encoders`] when unused for a while; the next count loads it again.
//!
//! A model whose server counts tokens (the built-in model's worker) gets
//! [`Encoding::Model`]: counts learned from its own tokenizer, cached per model for the
//! process. A text not learned yet is estimated, and remembered as a miss the caller fetches
//! in one batch ([`ModelTokens::take_misses`]) and teaches back ([`ModelTokens::learn`]).

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tiktoken_rs::CoreBPE;

/// Factor applied to `o200k_base` counts for models without a known tokenizer, chosen so
/// budgets err on the side of fitting.
pub const ESTIMATE_MARGIN: f64 = 1.15;

/// How tokens are counted for a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Exact: `o200k_base`.
    O200kBase,
    /// Exact: `cl100k_base`.
    Cl100kBase,
    /// `o200k_base` × [`ESTIMATE_MARGIN`], rounded up.
    Estimated,
    /// The model's own tokenizer, through its server: exact for texts it has counted,
    /// [`Encoding::Estimated`] for the others until they are learned.
    Model(ModelTokens),
}

/// Counts a model's tokenizer gave, cached for the process (one per model key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelTokens(u32);

/// The most counts kept per model; past it the cache starts again.
const MAX_KNOWN: usize = 100_000;
/// The most misses kept for one batch, and their bytes.
const MAX_MISSES: usize = 4096;
const MAX_MISS_BYTES: usize = 4 * 1024 * 1024;

#[derive(Default)]
struct Counts {
    known: HashMap<u64, u32>,
    misses: Vec<String>,
    missed: HashSet<u64>,
    miss_bytes: usize,
    /// Misses are remembered only between `start_recording` and `take_misses`.
    recording: bool,
}

/// Each model's key and its counts.
type Registry = Vec<(String, Arc<Mutex<Counts>>)>;

static MODELS: LazyLock<Mutex<Registry>> = LazyLock::new(|| Mutex::new(Vec::new()));

fn key_of(text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

impl ModelTokens {
    /// The cache of the model `key` (e.g. `builtin:<name>`), made on first use.
    pub fn for_key(key: &str) -> Self {
        let Ok(mut models) = MODELS.lock() else {
            return Self(u32::MAX);
        };
        if let Some(i) = models.iter().position(|(k, _)| k == key) {
            return Self(i as u32);
        }
        models.push((key.to_owned(), Arc::default()));
        Self((models.len() - 1) as u32)
    }

    fn counts(self) -> Option<Arc<Mutex<Counts>>> {
        MODELS
            .lock()
            .ok()?
            .get(self.0 as usize)
            .map(|(_, c)| c.clone())
    }

    /// The learned count of `text`, or `None` (then it is remembered as a miss).
    fn lookup(self, text: &str) -> Option<u32> {
        let counts = self.counts()?;
        let mut c = counts.lock().ok()?;
        let key = key_of(text);
        if let Some(n) = c.known.get(&key) {
            return Some(*n);
        }
        if c.recording
            && c.misses.len() < MAX_MISSES
            && c.miss_bytes + text.len() <= MAX_MISS_BYTES
            && c.missed.insert(key)
        {
            c.miss_bytes += text.len();
            c.misses.push(text.to_owned());
        }
        None
    }

    /// From now on, texts not learned yet are remembered (for [`Self::take_misses`]).
    pub fn start_recording(self) {
        if let Some(c) = self.counts()
            && let Ok(mut c) = c.lock()
        {
            c.recording = true;
        }
    }

    /// The texts counted by estimate while recording, to be counted by the model; stops
    /// recording.
    pub fn take_misses(self) -> Vec<String> {
        let Some(counts) = self.counts() else {
            return Vec::new();
        };
        let Ok(mut c) = counts.lock() else {
            return Vec::new();
        };
        c.recording = false;
        c.missed.clear();
        c.miss_bytes = 0;
        std::mem::take(&mut c.misses)
    }

    /// Teaches the model's counts of `texts` (one count per text).
    pub fn learn(self, texts: &[String], counts: &[u32]) {
        let Some(cache) = self.counts() else {
            return;
        };
        let Ok(mut c) = cache.lock() else {
            return;
        };
        if c.known.len() + texts.len() > MAX_KNOWN {
            c.known.clear();
        }
        for (text, n) in texts.iter().zip(counts) {
            c.known.insert(key_of(text), *n);
        }
    }

    /// How many counts are learned (for tests and status).
    pub fn learned(self) -> usize {
        self.counts()
            .and_then(|c| c.lock().ok().map(|c| c.known.len()))
            .unwrap_or(0)
    }
}

impl Encoding {
    /// The encoding for a model name (provider prefixes like `openai/` are ignored).
    pub fn for_model(model: &str) -> Self {
        let m = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let starts = |p: &str| m.starts_with(p);
        if starts("gpt-4o")
            || starts("gpt-4.1")
            || starts("gpt-4.5")
            || starts("gpt-5")
            || starts("o1")
            || starts("o3")
            || starts("o4")
            || starts("chatgpt-4o")
            || starts("gpt-oss")
        {
            Encoding::O200kBase
        } else if starts("gpt-4")
            || starts("gpt-3.5")
            || starts("text-embedding-3")
            || starts("text-embedding-ada")
        {
            Encoding::Cl100kBase
        } else {
            Encoding::Estimated
        }
    }

    /// Whether counts are exact for the model (a model's own counts are, once learned).
    pub fn is_exact(self) -> bool {
        self != Encoding::Estimated
    }

    fn bpe(self) -> Option<Arc<CoreBPE>> {
        match self {
            Encoding::Cl100kBase => CL100K.get(tiktoken_rs::cl100k_base),
            Encoding::O200kBase | Encoding::Estimated | Encoding::Model(_) => {
                O200K.get(tiktoken_rs::o200k_base)
            }
        }
    }

    /// Tokens in `text` (special-token strings in user text count as ordinary text).
    pub fn count(self, text: &str) -> usize {
        if let Encoding::Model(m) = self {
            if let Some(n) = m.lookup(text) {
                return n as usize;
            }
            return Encoding::Estimated.count(text);
        }
        let n = match self.bpe() {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            // The encoders are built into this crate, so this does not happen; if it did,
            // three bytes a token errs toward fitting for prose.
            None => text.len().div_ceil(3),
        };
        match self {
            Encoding::Estimated => (n as f64 * ESTIMATE_MARGIN).ceil() as usize,
            _ => n,
        }
    }
}

/// An encoder loaded on first use and dropped when idle.
struct Encoder(Mutex<Option<(Arc<CoreBPE>, Instant)>>);

static O200K: Encoder = Encoder(Mutex::new(None));
static CL100K: Encoder = Encoder(Mutex::new(None));

impl Encoder {
    fn lock(&self) -> MutexGuard<'_, Option<(Arc<CoreBPE>, Instant)>> {
        // One Option written in one step: sound after a panic.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get<E: Send>(&self, load: fn() -> Result<CoreBPE, E>) -> Option<Arc<CoreBPE>> {
        let mut slot = self.lock();
        if let Some((bpe, used)) = slot.as_mut() {
            *used = Instant::now();
            return Some(bpe.clone());
        }
        // Built on a thread of its own: its tables (tens of MB) fill allocator pages that
        // hold nothing else, so when the encoder is dropped those pages are wholly free and
        // go back to the system, instead of staying pinned by a long-lived caller's objects.
        let built = std::thread::scope(|s| s.spawn(load).join());
        let bpe = Arc::new(built.ok()?.ok()?);
        *slot = Some((bpe.clone(), Instant::now()));
        Some(bpe)
    }

    /// Drops the encoder if unused for `idle` (counts still running keep their copy).
    fn release_if_idle(&self, idle: Duration) -> bool {
        let mut slot = self.lock();
        if slot
            .as_ref()
            .is_some_and(|(_, used)| used.elapsed() >= idle)
        {
            *slot = None;
            return true;
        }
        false
    }
}

/// Drops the encoders unused for `idle`; returns whether any was dropped (its memory is
/// free for the allocator to hand back). The next count loads them again.
pub fn release_idle_encoders(idle: Duration) -> bool {
    let o = O200K.release_if_idle(idle);
    let c = CL100K.release_if_idle(idle);
    o || c
}

/// Whether an encoder is in memory.
pub fn encoders_loaded() -> bool {
    O200K.lock().is_some() || CL100K.lock().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoders are process-wide: a test that releases them must not run while another
    /// loads them (it did, now and then, under the parallel test runner).
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[test]
    fn an_encoder_released_when_idle_loads_again_with_the_same_counts() {
        let _serial = serial();
        let text = "Hearth counts tokens with the model's own encoding.";
        let before = Encoding::O200kBase.count(text);
        assert!(
            !release_idle_encoders(Duration::from_secs(3600)),
            "just used"
        );
        assert!(encoders_loaded());
        // Released (other modules' tests in this binary may load it again at once, so the
        // slot itself is not checked here).
        assert!(release_idle_encoders(Duration::ZERO));
        assert_eq!(Encoding::O200kBase.count(text), before);
        assert!(O200K.lock().is_some());
    }

    #[test]
    fn models_get_their_own_encoding() {
        let _serial = serial();
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("openai/gpt-4.1"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4-turbo"), Encoding::Cl100kBase);
        assert_eq!(Encoding::for_model("llama3.2:3b"), Encoding::Estimated);
    }

    #[test]
    fn a_models_own_counts_are_used_once_learned_and_misses_are_batched() {
        let _serial = serial();
        let m = ModelTokens::for_key("test:model-a");
        assert_eq!(
            ModelTokens::for_key("test:model-a"),
            m,
            "one cache per model"
        );
        assert_ne!(ModelTokens::for_key("test:model-b"), m);
        let enc = Encoding::Model(m);
        let text = "The quick brown fox jumps over the lazy dog.";
        enc.count("not recording");
        m.start_recording();
        assert_eq!(
            enc.count(text),
            Encoding::Estimated.count(text),
            "a miss is estimated"
        );
        enc.count(text);
        enc.count("another text");
        let misses = m.take_misses();
        assert_eq!(
            misses,
            vec![text.to_owned(), "another text".to_owned()],
            "each miss once"
        );
        m.start_recording();
        assert!(m.take_misses().is_empty());
        m.learn(&misses, &[7, 2]);
        assert_eq!(enc.count(text), 7);
        assert_eq!(enc.count("another text"), 2);
        m.start_recording();
        enc.count(text);
        assert!(m.take_misses().is_empty(), "a learned text is no miss");
        // Another model's cache is its own.
        assert_eq!(
            Encoding::Model(ModelTokens::for_key("test:model-b")).count(text),
            Encoding::Estimated.count(text)
        );
    }

    #[test]
    fn counts_match_the_reference_tokenizers() {
        let _serial = serial();
        // Reference counts from OpenAI's tiktoken.
        assert_eq!(Encoding::Cl100kBase.count("hello world"), 2);
        assert_eq!(Encoding::O200kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count(""), 0);
    }

    #[test]
    fn code_and_cjk_are_not_counted_as_characters_over_four() {
        let _serial = serial();
        let cjk = "東京都の天気は明日晴れるでしょう。週末は雨が降るかもしれません。";
        let chars_over_4 = cjk.chars().count() / 4;
        assert!(
            Encoding::O200kBase.count(cjk) > chars_over_4 * 2,
            "CJK is token-dense"
        );
        let estimated = Encoding::Estimated.count(cjk);
        assert!(estimated >= Encoding::O200kBase.count(cjk));
    }
}
