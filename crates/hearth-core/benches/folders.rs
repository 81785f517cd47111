//! Folder search and ingest at scale (SPEC §9), on real text and real all-MiniLM-L6-v2
//! vectors. Run with `make bench` (needs the model: `scripts/fetch-model.sh` or
//! `HEARTH_EMBED_MODEL_DIR`).
//!
//! - **Corpus** (built once, cached outside the repository in `$HEARTH_BENCH_DIR`, default
//!   `~/.cache/hearth-bench/folders-v1`): text files from `/usr/share/doc` and Rust sources
//!   from the cargo registry, chunked by the product's chunker; 20,000 distinct chunks
//!   embedded by the product's embedder (~15 min on 2 vCPUs, once), and 200 held-out chunks
//!   whose first words are the queries (embedded as queries).
//! - **Search** at 10k and 20k (the real chunks), 100k and 1M (perturbed copies of them:
//!   the same text, the vector plus Gaussian noise, renormalised; 1M is latency only):
//!   p50/p95 of keyword search (by FTS5, then by the in-memory index once built, as the
//!   app does at start), vector and hybrid search over every query; the vector side's
//!   recall@10 against sqlite-vec's exact f32 scan; the in-memory index's bytes; and, in a
//!   fresh process, the RSS of a store of 100k chunks after its queries.
//! - **Ingest** (extract in the child worker + chunk + keyword index, embedding excluded)
//!   of a copy of the corpus files, in MB of text per minute; and, from `folders add` of
//!   10,000 small files, the time to the first keyword hit, to all indexed, and to full
//!   vector coverage.
//!
//! `HEARTH_BENCH_SCALES` (e.g. `10000,100000`) picks the search scales;
//! `HEARTH_BENCH_SKIP_EXACT=1` skips the exact scan and the recall it measures.
//! (Over 600 lines: one bench program, its corpus builder and each measured scenario.)

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;
use hearth_core::embed::{Embedder, LocalEmbedder, ModelSource};
use hearth_core::folders::chunk::chunk;
use hearth_core::folders::extract::Extracted;
use hearth_core::folders::lexical::{self, Engine};
use hearth_core::folders::search::{self, Filter};
use hearth_core::folders::vectors::{embedding_input, index_bytes, nearest, nearest_exact};
use hearth_core::folders::worker::{WORKER_ARG, WorkerCommand, serve};
use hearth_core::store::{OpenOptions, Store};
use hearth_core::{DataDir, KeyBackend};
use rand::{Rng, SeedableRng};
use rusqlite::params;

/// As in the binaries (the CLI and the app): see the workspace Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const REAL: usize = 20_000;
const QUERIES: usize = 200;
const DIMS: usize = 384;
/// Noise per dimension of a copy's vector (a unit vector's components are ~0.05): copies
/// sit at cosine ~0.9 from their original, so the neighbourhoods are crowded.
const NOISE: f32 = 0.02;
const RSS_PROBE: &str = "__rss-probe";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(WORKER_ARG) {
        std::process::exit(serve());
    }
    if args.get(1).map(String::as_str) == Some(RSS_PROBE) {
        rss_probe(Path::new(&args[2]));
        return;
    }
    // `cargo bench --no-run` builds this; `cargo test --benches` runs it with `--test`.
    if args.iter().any(|a| a == "--test" || a == "--list") {
        return;
    }
    // SAFETY: no other thread exists yet (as the binaries do).
    unsafe { hearth_core::embed::single_threaded_kernels() };
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let scales: Vec<usize> = std::env::var("HEARTH_BENCH_SCALES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, REAL, 100_000, 1_000_000]);
    // `HEARTH_BENCH_SCALES=` (none) measures ingest only: its files need no vectors.
    let corpus = if scales.is_empty() {
        Corpus::select()
    } else {
        Corpus::load_or_build()
    };
    for n in scales {
        search_at(&mut c, &corpus, n);
    }
    ingest(&corpus);
    first_hit(&corpus);
    c.final_summary();
}

fn cache_dir() -> PathBuf {
    std::env::var_os("HEARTH_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".cache/hearth-bench/folders-v1")
        })
}

fn model_dir() -> PathBuf {
    std::env::var_os("HEARTH_EMBED_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/hearth-models/minilm"))
        })
        .expect("set HEARTH_EMBED_MODEL_DIR or HOME")
}

fn embedder() -> LocalEmbedder {
    let e = LocalEmbedder::new(ModelSource::dir(model_dir()));
    if let Err(e) = e.load() {
        panic!("{e}\nInstall the model with scripts/fetch-model.sh");
    }
    e
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Chunk {
    file: usize,
    text: String,
    heading: Option<String>,
    lines: (usize, usize),
    bytes: (usize, usize),
    tokens: usize,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Corpus {
    /// Source files (absolute), as read.
    files: Vec<String>,
    chunks: Vec<Chunk>,
    queries: Vec<String>,
    #[serde(skip)]
    vectors: Vec<Vec<f32>>,
    #[serde(skip)]
    query_vectors: Vec<Vec<f32>>,
    model: String,
}

fn read_f32s(path: &Path) -> Option<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path).ok()?;
    Some(
        bytes
            .chunks_exact(DIMS * 4)
            .map(|row| {
                row.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect()
            })
            .collect(),
    )
}

fn write_f32s(path: &Path, rows: &[Vec<f32>]) {
    let bytes: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    std::fs::write(path, bytes).expect("write vectors");
}

/// Files of real text: docs under /usr/share/doc, Rust sources in the cargo registry.
fn source_files() -> Vec<PathBuf> {
    let mut roots = vec![PathBuf::from("/usr/share/doc")];
    if let Some(home) = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
    {
        roots.push(home.join("registry/src"));
    }
    let mut files = Vec::new();
    for root in roots {
        for entry in walkdir(&root) {
            let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let text = name.ends_with(".txt")
                || name.ends_with(".md")
                || name.ends_with(".rs")
                || name == "README";
            if text {
                files.push(entry);
            }
        }
    }
    files.sort();
    files
}

fn walkdir(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

impl Corpus {
    fn load_or_build() -> Corpus {
        let dir = cache_dir();
        let meta = dir.join("corpus.json");
        if let (Ok(json), Some(vectors), Some(query_vectors)) = (
            std::fs::read_to_string(&meta),
            read_f32s(&dir.join("vectors.f32")),
            read_f32s(&dir.join("queries.f32")),
        ) && let Ok(mut corpus) = serde_json::from_str::<Corpus>(&json)
            && vectors.len() == corpus.chunks.len()
            && query_vectors.len() == corpus.queries.len()
        {
            corpus.vectors = vectors;
            corpus.query_vectors = query_vectors;
            eprintln!(
                "corpus: {} chunks of {} files, {} queries (cached in {})",
                corpus.chunks.len(),
                corpus.files.len(),
                corpus.queries.len(),
                dir.display()
            );
            return corpus;
        }
        let mut corpus = Corpus::select();
        let e = embedder();
        let started = Instant::now();
        let mut vectors = Vec::with_capacity(REAL);
        for batch in corpus.chunks.chunks(64) {
            let inputs: Vec<String> = batch
                .iter()
                .map(|c| embedding_input(c.heading.as_deref(), &c.text))
                .collect();
            let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
            vectors.extend(e.embed(&refs).expect("embed"));
            if vectors.len() % 1024 == 0 {
                eprintln!(
                    "embedding the corpus once: {} of {REAL} ({:.0} chunks/s)",
                    vectors.len(),
                    vectors.len() as f64 / started.elapsed().as_secs_f64()
                );
            }
        }
        corpus.query_vectors = corpus
            .queries
            .iter()
            .map(|q| e.embed_query(q).expect("embed query"))
            .collect();
        corpus.vectors = vectors;
        corpus.model = e.model_id().to_owned();
        std::fs::create_dir_all(&dir).expect("cache dir");
        write_f32s(&dir.join("vectors.f32"), &corpus.vectors);
        write_f32s(&dir.join("queries.f32"), &corpus.query_vectors);
        std::fs::write(&meta, serde_json::to_string(&corpus).expect("json")).expect("write corpus");
        corpus
    }

    /// The corpus's files, chunks and held-out queries, without vectors.
    fn select() -> Corpus {
        let mut seen = std::collections::HashSet::new();
        let mut files = Vec::new();
        let mut chunks = Vec::new();
        let mut held_out = Vec::new();
        for path in source_files() {
            if held_out.len() >= QUERIES {
                break;
            }
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.len() < 200 || meta.len() > 200_000 {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let doc = Extracted {
                markdown: path.extension().is_some_and(|e| e == "md"),
                text,
                pages: Vec::new(),
                hash: String::new(),
            };
            let drafts = chunk(&doc);
            // Licence texts and boilerplate repeat across packages: distinct chunks only.
            let fresh: Vec<_> = drafts
                .into_iter()
                .filter(|d| d.text.split_whitespace().count() >= 12 && seen.insert(d.text.clone()))
                .collect();
            if fresh.is_empty() {
                continue;
            }
            if chunks.len() >= REAL {
                // Every later file gives one held-out chunk: its first words are a query.
                let words: Vec<&str> = fresh[0]
                    .text
                    .split_whitespace()
                    .filter(|w| w.chars().any(char::is_alphabetic))
                    .take(8)
                    .collect();
                held_out.push(words.join(" "));
                continue;
            }
            let file = files.len();
            files.push(path.display().to_string());
            for d in fresh.into_iter().take(REAL - chunks.len()) {
                chunks.push(Chunk {
                    file,
                    text: d.text,
                    heading: d.heading,
                    lines: (d.line_start, d.line_end),
                    bytes: (d.byte_start, d.byte_end),
                    tokens: d.tokens,
                });
            }
        }
        assert!(
            chunks.len() == REAL && held_out.len() == QUERIES,
            "not enough text on this machine: {} chunks, {} queries",
            chunks.len(),
            held_out.len()
        );
        Corpus {
            files,
            chunks,
            queries: held_out,
            vectors: Vec::new(),
            query_vectors: Vec::new(),
            model: String::new(),
        }
    }
}

fn open(dir: &Path) -> Store {
    let mut opts = OpenOptions::new(DataDir::new(dir.to_path_buf()));
    opts.new_key_backend = KeyBackend::File;
    Store::open(&opts).expect("open store")
}

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn perturbed(v: &[f32], rng: &mut impl Rng) -> Vec<f32> {
    // Box–Muller: Gaussian noise from two uniforms.
    let mut out: Vec<f32> = v
        .iter()
        .map(|x| {
            let (u1, u2): (f32, f32) = (rng.random::<f32>().max(1e-9), rng.random());
            x + NOISE * (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
        })
        .collect();
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    out.iter_mut().for_each(|x| *x /= norm);
    out
}

/// A store of `n` chunks with vectors (cached: built once per scale).
fn store_of(corpus: &Corpus, n: usize) -> (PathBuf, Store) {
    let dir = cache_dir().join(format!("store-{n}"));
    let done = dir.join("complete");
    if done.exists() {
        return (dir.clone(), open(&dir.join("data")));
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("store dir");
    let store = open(&dir.join("data"));
    let started = Instant::now();
    let folder: i64 = store
        .write_blocking(|c| {
            c.execute(
                "INSERT INTO folders (path, added_at) VALUES ('/corpus', 0)",
                [],
            )?;
            Ok(c.last_insert_rowid())
        })
        .expect("folder");
    let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
    let mut written = 0;
    let mut copy = 0;
    while written < n {
        let take = (n - written).min(REAL);
        let rows: Vec<(usize, Vec<f32>)> = (0..take)
            .map(|i| {
                let v = if copy == 0 {
                    corpus.vectors[i].clone()
                } else {
                    perturbed(&corpus.vectors[i], &mut rng)
                };
                (i, v)
            })
            .collect();
        let model = corpus.model.clone();
        let files = &corpus.files;
        let chunks = &corpus.chunks;
        store
            .write_blocking(|c| {
                let tx = c.transaction()?;
                {
                    let mut file_row = tx.prepare_cached(
                        "INSERT INTO folder_files (folder_id, rel_path, size, status) VALUES (?1, ?2, 0, 'indexed')",
                    )?;
                    let mut chunk_row = tx.prepare_cached(
                        "INSERT INTO chunks (file_id, ordinal, text, heading, byte_start, byte_end, line_start, line_end, tokens)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    )?;
                    let mut vector_row = tx.prepare_cached(
                        "INSERT INTO chunk_vectors (chunk_id, model, vector) VALUES (?1, ?2, ?3)",
                    )?;
                    let mut file_ids = std::collections::HashMap::new();
                    for (ordinal, (i, v)) in rows.iter().enumerate() {
                        let ch = &chunks[*i];
                        let file_id = match file_ids.get(&ch.file) {
                            Some(id) => *id,
                            None => {
                                file_row.execute(params![
                                    folder,
                                    format!("copy{copy}{}", files[ch.file])
                                ])?;
                                let id = tx.last_insert_rowid();
                                file_ids.insert(ch.file, id);
                                id
                            }
                        };
                        chunk_row.execute(params![
                            file_id,
                            ordinal as i64,
                            ch.text,
                            ch.heading,
                            ch.bytes.0 as i64,
                            ch.bytes.1 as i64,
                            ch.lines.0 as i64,
                            ch.lines.1 as i64,
                            ch.tokens as i64
                        ])?;
                        vector_row.execute(params![tx.last_insert_rowid(), model, blob(v)])?;
                    }
                }
                tx.commit()
            })
            .expect("write chunks");
        written += take;
        copy += 1;
        eprintln!(
            "building the store of {n}: {written} chunks ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }
    std::fs::write(&done, "").expect("mark complete");
    (dir, store)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// p50 and p95 in ms of `f` over every query, three passes after a warm-up one.
fn latencies(corpus: &Corpus, mut f: impl FnMut(&str, &[f32])) -> (f64, f64) {
    for (q, v) in corpus.queries.iter().zip(&corpus.query_vectors) {
        f(q, v);
    }
    let mut ms = Vec::new();
    for _ in 0..3 {
        for (q, v) in corpus.queries.iter().zip(&corpus.query_vectors) {
            let t = Instant::now();
            f(q, v);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    ms.sort_by(f64::total_cmp);
    (percentile(&ms, 0.5), percentile(&ms, 0.95))
}

fn search_at(c: &mut Criterion, corpus: &Corpus, n: usize) {
    let (dir, store) = store_of(corpus, n);
    let model = corpus.model.as_str();
    let all = Filter::default();
    let t = Instant::now();
    nearest(&store, model, &corpus.query_vectors[0], 10, &all).expect("first query");
    let load = t.elapsed();
    let index_bytes = index_bytes(&store);
    eprintln!(
        "\n== {n} chunks: index loaded in {:.0} ms, {:.1} MB in memory",
        load.as_secs_f64() * 1e3,
        index_bytes as f64 / 1e6
    );
    // HEARTH_BENCH_SKIP_EXACT=1 leaves out the exact scan (minutes at 100k) and recall.
    if n <= 100_000 && std::env::var_os("HEARTH_BENCH_SKIP_EXACT").is_none() {
        let mut found = 0;
        for q in &corpus.query_vectors {
            let exact: Vec<i64> = nearest_exact(&store, model, q, 10)
                .expect("exact")
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let ours = nearest(&store, model, q, 10, &all).expect("nearest");
            found += ours.iter().filter(|(id, _)| exact.contains(id)).count();
        }
        eprintln!(
            "{n}: vector side recall@10 vs exact f32 (sqlite-vec scan): {:.4} over {QUERIES} queries",
            found as f64 / (QUERIES * 10) as f64
        );
        let (p50, p95) = latencies(corpus, |_, v| {
            black_box(nearest_exact(&store, model, v, 10).expect("exact"));
        });
        eprintln!("{n}: exact f32 scan (sqlite-vec) p50 {p50:.2} ms, p95 {p95:.2} ms");
    }
    if n <= 100_000 {
        // Before the in-memory keyword index is built, keyword search is FTS5's.
        let (p50, p95) = latencies(corpus, |q, _| {
            let (_, engine) =
                search::keyword_ranked(&store, q, search::CANDIDATES, &all).expect("keyword");
            assert_eq!(engine, Engine::Fts5);
        });
        eprintln!(
            "{n}: keyword by FTS5 bm25 ({} deep) p50 {p50:.2} ms, p95 {p95:.2} ms",
            search::CANDIDATES
        );
    }
    let t = Instant::now();
    lexical::warm(&store).expect("warm");
    let (docs, bytes) = lexical::usage(&store);
    eprintln!(
        "{n}: in-memory keyword index (tantivy, RAM) built in {:.1} s: {docs} chunks, {:.1} MB",
        t.elapsed().as_secs_f64(),
        bytes as f64 / 1e6
    );
    let (p50, p95) = latencies(corpus, |q, _| {
        let (_, engine) =
            search::keyword_ranked(&store, q, search::CANDIDATES, &all).expect("keyword");
        assert_eq!(engine, Engine::Memory);
    });
    eprintln!(
        "{n}: keyword by the in-memory index ({} deep) p50 {p50:.2} ms, p95 {p95:.2} ms",
        search::CANDIDATES
    );
    let (p50, p95) = latencies(corpus, |_, v| {
        black_box(search::vector(&store, model, v, 10, &all).expect("vector"));
    });
    eprintln!("{n}: vector (int8 index + exact rescoring) p50 {p50:.2} ms, p95 {p95:.2} ms");
    let (p50, p95) = latencies(corpus, |q, v| {
        black_box(search::hybrid(&store, q, model, v, 10, &all).expect("hybrid"));
    });
    eprintln!("{n}: HYBRID p50 {p50:.2} ms, p95 {p95:.2} ms (target at 100k: ≤ 10 / ≤ 30)");
    let mut i = 0;
    c.bench_function(&format!("folders_hybrid_{n}"), |b| {
        b.iter(|| {
            let q = i % QUERIES;
            i += 1;
            search::hybrid(
                &store,
                &corpus.queries[q],
                model,
                &corpus.query_vectors[q],
                10,
                &all,
            )
            .expect("hybrid")
        })
    });
    drop(store);
    if n == 100_000 {
        // A fresh process holding only the store and its index: what the core pays.
        let out = std::process::Command::new(std::env::current_exe().expect("exe"))
            .arg(RSS_PROBE)
            .arg(&dir)
            .output()
            .expect("rss probe");
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
}

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The child of the RSS measurement: opens the store in `dir`, runs every query.
fn rss_probe(dir: &Path) {
    /// Only what the probe needs of `corpus.json` (its chunk texts are skipped unparsed).
    #[derive(serde::Deserialize)]
    struct Queries {
        model: String,
        queries: Vec<String>,
    }
    let corpus_dir = dir.parent().expect("cache dir");
    let query_vectors = read_f32s(&corpus_dir.join("queries.f32")).expect("queries");
    let Queries { model, queries } = {
        let json = std::fs::read_to_string(corpus_dir.join("corpus.json")).expect("corpus");
        serde_json::from_str(&json).expect("corpus json")
    };
    // The peak from here on is the store's: reading the corpus file is the probe's own.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kb("VmRSS:");
    let store = open(&dir.join("data"));
    lexical::warm(&store).expect("warm");
    for (q, v) in queries.iter().zip(&query_vectors) {
        black_box(search::hybrid(&store, q, &model, v, 10, &Filter::default()).expect("hybrid"));
    }
    eprintln!(
        "100000: a fresh process after opening the store, building the keyword index and {} hybrid queries: RSS {:.1} MB (peak since opening {:.1} MB; {:.1} MB before opening)",
        queries.len(),
        status_kb("VmRSS:") as f64 / 1024.0,
        status_kb("VmHWM:") as f64 / 1024.0,
        before as f64 / 1024.0
    );
}

fn hearth_at(dir: &Path) -> hearth_core::Hearth {
    let mut opts = OpenOptions::new(DataDir::new(dir.to_path_buf()));
    opts.new_key_backend = KeyBackend::File;
    hearth_core::Hearth::open_oneshot(&opts).expect("open hearth")
}

fn index_options(wait_vectors: bool) -> hearth_core::IndexOptions {
    hearth_core::IndexOptions {
        wait: true,
        wait_vectors,
        worker: Some(WorkerCommand::current_exe().expect("exe")),
        limits: Default::default(),
    }
}

/// The corpus's files, copied into a folder and indexed through the real pipeline.
fn ingest(corpus: &Corpus) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let docs = tmp.path().join("docs");
    let mut bytes = 0u64;
    for (i, f) in corpus.files.iter().enumerate() {
        let name = Path::new(f)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("f");
        let to = docs
            .join(format!("{:03}", i / 500))
            .join(format!("{i:05}-{name}"));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("dir");
        if let Ok(n) = std::fs::copy(f, &to) {
            bytes += n;
        }
    }
    let hearth = hearth_at(&tmp.path().join("data"));
    let started = Instant::now();
    hearth.folders().add(&docs).expect("add");
    let summary = hearth
        .folders()
        .index(&index_options(false), &mut |_| {})
        .expect("index");
    let took = started.elapsed().as_secs_f64();
    eprintln!(
        "\ningest of {} files, {:.1} MB of text (extract in the worker + chunk + keyword index): {:.1} s = {:.0} MB/min (target ≥ 50); {summary:?}",
        corpus.files.len(),
        bytes as f64 / 1e6,
        took,
        bytes as f64 / 1e6 / (took / 60.0)
    );
}

/// 10,000 small files: time from `folders add` to the first keyword hit, to all indexed,
/// and to every chunk with a vector.
fn first_hit(corpus: &Corpus) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let docs = tmp.path().join("small");
    for i in 0..10_000 {
        let dir = docs.join(format!("{:02}", i / 500));
        std::fs::create_dir_all(&dir).expect("dir");
        let words: Vec<&str> = corpus.chunks[i].text.split_whitespace().take(30).collect();
        std::fs::write(
            dir.join(format!("note{i:05}.txt")),
            format!("Note {i} about the quokka.\n{}\n", words.join(" ")),
        )
        .expect("write");
    }
    let hearth = hearth_at(&tmp.path().join("data"));
    let started = Instant::now();
    let runner = {
        let hearth = hearth.clone();
        let docs = docs.clone();
        std::thread::spawn(move || {
            hearth.folders().add(&docs).expect("add");
            hearth
                .folders()
                .index(&index_options(false), &mut |_| {})
                .expect("index");
            let indexed = started.elapsed();
            hearth
                .folders()
                .index(&index_options(true), &mut |_| {})
                .expect("embed");
            (indexed, started.elapsed())
        })
    };
    let scope = hearth_core::SearchScope::default();
    let first = loop {
        let found = hearth
            .folders()
            .search("quokka", Some(1), search::Mode::Bm25, &scope)
            .map(|f| !f.results.is_empty())
            .unwrap_or(false);
        if found {
            break started.elapsed();
        }
        if runner.is_finished() {
            break started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (indexed, embedded) = runner.join().expect("runner");
    eprintln!(
        "10,000 small files from `folders add`: first keyword hit {:.2} s (target ≤ 10), all indexed {:.1} s, every chunk with a vector {:.1} s",
        first.as_secs_f64(),
        indexed.as_secs_f64(),
        embedded.as_secs_f64()
    );
}
