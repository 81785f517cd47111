//! The built-in engine against raw llama.cpp, side by side in one run on this machine
//! (`make bench`): prompt processing and generation tokens/s through the worker's HTTP API
//! against llama.cpp's C API driven directly (the `llama-bench` method: one batch of the
//! prompt, then one token per decode, no sampling), the time to first token of turn 2 of a
//! conversation with a ~3,000-token stable prefix against turn 1, and the worker's cold start
//! to its first token. Each figure is the median of [`RUNS`] runs; raw and worker runs
//! alternate, and each ratio is the median of the runs' ratios.
//!
//! Models: `HEARTH_BENCH_GGUFS` (paths separated by `:`), else `HEARTH_TEST_GGUF`.
//! The vendored llama.cpp has no `tools/` (no `llama-bench` binary to build), so the raw
//! side is the same library the worker links, called the way `llama-bench` calls it.

use std::io::{BufRead, BufReader, Write};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use serde_json::{Value, json};

const RUNS: usize = 5;

struct Raw {
    pp: f64,
    tg: f64,
}

struct Through {
    pp: f64,
    tg: f64,
}
const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";
/// Tokens generated for the generation rate.
const GEN: usize = 128;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The same thread count the worker picks.
fn threads() -> i32 {
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    let n = if n > 4 { n - 1 } else { n };
    i32::try_from(n.min(8)).unwrap_or(4)
}

/// Prose of about `words` words, different for each `seed` (so no cache serves it).
fn prose(seed: usize, words: usize) -> String {
    let vocab = [
        "the", "garden", "keeps", "a", "record", "of", "every", "season", "and", "river", "light",
        "moves", "slowly", "across", "old", "stone", "walls", "where", "people", "gather", "to",
        "talk", "about", "weather", "travel", "books", "music", "work",
    ];
    let mut out = format!("Note {seed}:");
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    for i in 0..words {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        out.push(' ');
        out.push_str(vocab[(x >> 33) % vocab.len()]);
        if i % 14 == 13 {
            out.push('.');
        }
    }
    out
}

/// llama.cpp driven directly, as `llama-bench` does: the prompt's tokens in batches of 512
/// (logits for the last), and `GEN` single-token decodes from an empty context; tokens/s
/// of each.
fn raw_once(ctx: &mut llama_cpp_2::context::LlamaContext<'_>, tokens: &[LlamaToken]) -> (f64, f64) {
    ctx.clear_kv_cache();
    let started = Instant::now();
    for (c, chunk) in tokens.chunks(512).enumerate() {
        let mut batch = LlamaBatch::new(chunk.len(), 1);
        for (k, &t) in chunk.iter().enumerate() {
            let last = c * 512 + k + 1 == tokens.len();
            batch
                .add(t, i32::try_from(c * 512 + k).expect("pos"), &[0], last)
                .expect("batch");
        }
        ctx.decode(&mut batch).expect("decode the prompt");
    }
    let pp = tokens.len() as f64 / started.elapsed().as_secs_f64();
    ctx.clear_kv_cache();
    let started = Instant::now();
    let mut batch = LlamaBatch::new(1, 1);
    for i in 0..GEN {
        batch.clear();
        batch
            .add(
                LlamaToken::new(1 + (i as i32 % 100)),
                i32::try_from(i).expect("pos"),
                &[0],
                true,
            )
            .expect("batch");
        ctx.decode(&mut batch).expect("decode a token");
    }
    (pp, GEN as f64 / started.elapsed().as_secs_f64())
}

struct Worker {
    child: Child,
    url: String,
    n_ctx: u32,
    http: reqwest::blocking::Client,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_worker(model: &Path, min_tokens: u32) -> (Worker, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth-llama-worker"))
        .arg("--model")
        .arg(model)
        .args(["--name", "bench", "--min-tokens", &min_tokens.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the worker");
    writeln!(child.stdin.as_mut().expect("stdin"), "{TOKEN}").expect("token");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let ready: Value = serde_json::from_str(&line).expect("ready JSON");
    let port = ready["port"].as_u64().unwrap_or_else(|| panic!("{ready}"));
    let worker = Worker {
        child,
        url: format!("http://127.0.0.1:{port}/v1/chat/completions"),
        n_ctx: ready["n_ctx"].as_u64().unwrap_or(4096) as u32,
        http: reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(900))
            .build()
            .expect("client"),
    };
    (worker, started.elapsed())
}

/// What one streamed request did: time to the first content, to the last, and the usage.
struct Streamed {
    first: Duration,
    last: Duration,
    prompt_tokens: u64,
    cached_tokens: u64,
    completion_tokens: u64,
}

fn stream(w: &Worker, messages: &Value, max_tokens: u32) -> Streamed {
    let started = Instant::now();
    let response = w
        .http
        .post(&w.url)
        .bearer_auth(TOKEN)
        .json(&json!({
            "model": "bench", "messages": messages, "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": max_tokens, "temperature": 0
        }))
        .send()
        .expect("request");
    assert!(response.status().is_success(), "{}", response.status());
    let (mut first, mut last) = (None, Duration::ZERO);
    let mut usage = Value::Null;
    for line in BufReader::new(response).lines() {
        let line = line.expect("read the stream");
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        let v: Value = serde_json::from_str(data).expect("chunk");
        if v["choices"][0]["delta"]["content"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
        {
            let now = started.elapsed();
            first.get_or_insert(now);
            last = now;
        }
        if !v["usage"].is_null() {
            usage = v["usage"].clone();
        }
    }
    let first = first.unwrap_or_else(|| started.elapsed());
    Streamed {
        first,
        last: last.max(first),
        prompt_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
        cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        completion_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
    }
}

/// Through the worker's API, on a worker of its own (so its cache holds no other
/// conversation, as the raw side's holds none): a new prompt of about 512 tokens answered
/// with one token (pp: the tokens evaluated over the time to the answer), then `GEN` tokens
/// streamed (tg: tokens after the first over the time between the first and the last).
/// Returns pp, tg and the tokens evaluated.
fn through_once(model: &Path, run: usize) -> (f64, f64, u64) {
    let (w, _) = start_worker(model, GEN as u32);
    // A warm-up answer first, as llama-bench runs one: the weights are paged in.
    stream(&w, &json!([{"role": "user", "content": "Hi"}]), 1);
    let messages = json!([{"role": "user", "content": prose(100 + run, 330)}]);
    let s = stream(&w, &messages, 1);
    let n = s.prompt_tokens - s.cached_tokens;
    let pp = n as f64 / s.first.as_secs_f64();
    let messages = json!([{"role": "user", "content": format!("{} Tell me a long story.", prose(200 + run, 8))}]);
    let s = stream(&w, &messages, GEN as u32);
    assert!(
        s.completion_tokens >= GEN as u64 - 1,
        "{} tokens",
        s.completion_tokens
    );
    let tg = (s.completion_tokens - 1) as f64 / (s.last - s.first).as_secs_f64();
    (pp, tg, n)
}

/// Time to first token of turn 2 (turn 1's prompt and answer, then a new message) against
/// turn 1, with a ~3,000-token system prompt; and how much of turn 2 came from the cache.
fn ttft(w: &Worker) -> (f64, f64, f64, u64, u64) {
    let (mut ones, mut twos, mut ratios, mut prompt, mut cached) =
        (Vec::new(), Vec::new(), Vec::new(), 0, 0);
    for run in 0..RUNS {
        let system = prose(300 + run, 2200);
        let mut messages = json!([
            {"role": "system", "content": system},
            {"role": "user", "content": "What did the note say about the river?"}
        ]);
        let one = stream(w, &messages, 24);
        let answer = "It said the river light moves slowly across old stone walls.";
        if let Some(m) = messages.as_array_mut() {
            m.push(json!({"role": "assistant", "content": answer}));
            m.push(json!({"role": "user", "content": "And about the garden?"}));
        }
        let two = stream(w, &messages, 24);
        prompt = two.prompt_tokens;
        cached = two.cached_tokens;
        ones.push(one.first.as_secs_f64());
        twos.push(two.first.as_secs_f64());
        ratios.push(two.first.as_secs_f64() / one.first.as_secs_f64());
    }
    (median(ones), median(twos), median(ratios), prompt, cached)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to filter.
    let models: Vec<PathBuf> = match std::env::var("HEARTH_BENCH_GGUFS") {
        Ok(v) if !v.is_empty() => v.split(':').map(PathBuf::from).collect(),
        _ => match std::env::var_os("HEARTH_TEST_GGUF") {
            Some(p) => vec![PathBuf::from(p)],
            None => {
                eprintln!(
                    "engine bench: set HEARTH_TEST_GGUF or HEARTH_BENCH_GGUFS (scripts/fetch-llm.sh, scripts/fetch-bench-llm.sh); skipped"
                );
                return;
            }
        },
    };
    println!("threads: {}; median of {RUNS} runs each", threads());
    println!(
        "| model | pp t/s raw | pp t/s worker | ratio | tg t/s raw | tg t/s worker | ratio | TTFT turn 1 | TTFT turn 2 | turn2/turn1 | turn 2 cached | cold start: ready | cold start: first token |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for model in models {
        let name = model
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Cold start: the process, the model loaded, then a first short answer.
        let cold_started = Instant::now();
        let (w, ready) = start_worker(&model, GEN as u32);
        let first = stream(&w, &json!([{"role": "user", "content": "Hello."}]), 1);
        let cold_first = cold_started.elapsed() - first.last + first.first;
        let (t1, t2, ratio, prompt, cached) = ttft(&w);
        let n_ctx = w.n_ctx;
        drop(w);
        // Raw and worker alternate, run by run, so a swing of the machine hits both.
        let mut backend = LlamaBackend::init().expect("llama backend");
        backend.void_logs();
        let loaded = LlamaModel::load_from_file(&backend, &model, &LlamaModelParams::default())
            .expect("load the model");
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(512)
            .with_n_seq_max(4)
            .with_kv_unified(true)
            .with_n_threads(threads())
            .with_n_threads_batch(threads());
        let mut ctx = loaded.new_context(&backend, params).expect("context");
        let text = prose(0, 700);
        let all = loaded.vocab().tokenize(text.as_bytes(), true, false);
        let (mut raw_pp, mut raw_tg, mut w_pp, mut w_tg, mut pp_r, mut tg_r) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        raw_once(&mut ctx, &all[..64.min(all.len())]); // warm-up
        for run in 0..RUNS {
            let (pp, tg, n) = through_once(&model, run);
            let tokens = &all[..(n as usize).min(all.len())];
            let (rpp, rtg) = raw_once(&mut ctx, tokens);
            w_pp.push(pp);
            w_tg.push(tg);
            raw_pp.push(rpp);
            raw_tg.push(rtg);
            pp_r.push(pp / rpp);
            tg_r.push(tg / rtg);
        }
        drop(ctx);
        let raw = Raw {
            pp: median(raw_pp),
            tg: median(raw_tg),
        };
        let through = Through {
            pp: median(w_pp),
            tg: median(w_tg),
        };
        let (pp_ratio, tg_ratio) = (median(pp_r), median(tg_r));
        println!(
            "| {name} | {:.1} | {:.1} | {:.3} | {:.1} | {:.1} | {:.3} | {:.0} ms | {:.0} ms | {:.3} | {cached} of {prompt} | {:.0} ms | {:.0} ms |",
            raw.pp,
            through.pp,
            pp_ratio,
            raw.tg,
            through.tg,
            tg_ratio,
            t1 * 1000.0,
            t2 * 1000.0,
            ratio,
            ready.as_secs_f64() * 1000.0,
            cold_first.as_secs_f64() * 1000.0,
        );
    }
}
