//! Local embedding throughput (all-MiniLM-L6-v2 in candle, CPU): batches of 64 short
//! (~10-token) and 256-token texts, in sentences/s and tokens/s.
//! Needs the model: `scripts/fetch-model.sh` (or HEARTH_EMBED_MODEL_DIR). Run with `make bench`.

use std::cell::RefCell;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use hearth_core::embed::{Embedder, LocalEmbedder, ModelSource};

/// As in the binaries (the CLI and the app): see the workspace Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 64;

fn model_dir() -> PathBuf {
    std::env::var_os("HEARTH_EMBED_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/hearth-models/minilm"))
        })
        .expect("set HEARTH_EMBED_MODEL_DIR or HOME")
}

/// 64 distinct short sentences of about 10 tokens.
fn short_texts() -> Vec<String> {
    let subjects = ["My sister", "The old dog", "Our landlord", "A colleague"];
    let verbs = ["moved to", "asked about", "talked of", "dreams of"];
    let objects = [
        "Lisbon last spring.",
        "the blue kettle.",
        "Tuesday's meeting.",
        "a quiet holiday.",
    ];
    let mut texts = Vec::new();
    for s in subjects {
        for v in verbs {
            for o in objects {
                texts.push(format!("{s} {v} {o}"));
            }
        }
    }
    texts
}

/// 64 distinct texts each long enough to be cut at 256 tokens.
fn long_texts() -> Vec<String> {
    let prose = "Hearth keeps what you tell it in one encrypted file on your own machine. \
                 It remembers that you moved to Lisbon last spring, that you prefer short \
                 answers, and that your sister's birthday is in October. ";
    (0..BATCH)
        .map(|i| format!("Note {i}: {}", prose.repeat(8)))
        .collect()
}

fn bench(c: &mut Criterion) {
    // As the binaries do (criterion has started no thread yet).
    // SAFETY: no other thread exists at this point.
    unsafe { hearth_core::embed::single_threaded_kernels() };
    let embedder = LocalEmbedder::new(ModelSource::dir(model_dir()));
    if let Err(e) = embedder.load() {
        panic!("{e}\nInstall the model with scripts/fetch-model.sh");
    }
    for (name, texts) in [("short", short_texts()), ("long", long_texts())] {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let tokens: usize = embedder
            .token_counts(&refs)
            .expect("token counts")
            .iter()
            .sum();
        eprintln!(
            "{name}: {} texts, {tokens} tokens ({:.1} per text, [CLS] and [SEP] included)",
            refs.len(),
            tokens as f64 / refs.len() as f64
        );
        let mut group = c.benchmark_group(format!("embed_x{BATCH}"));
        // Each iteration is a whole batch (up to seconds): few, equal samples.
        group.sampling_mode(SamplingMode::Flat);
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(2));
        group.measurement_time(Duration::from_secs(if name == "long" { 60 } else { 8 }));
        group.throughput(Throughput::Elements(refs.len() as u64));
        // Criterion reports sentences/s; the same runs, timed here too, give tokens/s.
        let runs = RefCell::new((0u64, Duration::ZERO));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let started = Instant::now();
                for _ in 0..iters {
                    black_box(embedder.embed(&refs).expect("embed"));
                }
                let took = started.elapsed();
                let mut r = runs.borrow_mut();
                r.0 += iters;
                r.1 += took;
                took
            })
        });
        let (batches, took) = runs.into_inner();
        let per_batch = took.as_secs_f64() / batches as f64;
        eprintln!(
            "{name}: mean of {batches} batches (warm-up included): {:.1} sentences/s, {:.0} tokens/s\n",
            refs.len() as f64 / per_batch,
            tokens as f64 / per_batch
        );
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
