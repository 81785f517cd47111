//! Choosing the embedding model from the command line: a provider's embeddings API (the
//! scripted server's bag-of-words model), re-embedding every memory with progress, keyword
//! search meanwhile, a model that does not answer refused, and back to the local model.

use std::process::Output;

use hearth_testkit::llm_server::*;
use serde_json::Value;

mod common;
use common::*;

async fn run(home: &Home, server: &LlmServer, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.push("--json");
    output(home.cmd(server, &all)).await
}

async fn ok(home: &Home, server: &LlmServer, args: &[&str]) -> Value {
    let out = run(home, server, args).await;
    assert!(
        out.status.success(),
        "hearth {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

async fn add_provider(home: &Home, server: &LlmServer) {
    let out = with_stdin(
        home,
        server,
        &[
            "providers",
            "add",
            "lab",
            "--preset",
            "custom",
            "--url",
            &server.base_url,
            "--model",
            "gpt-4o-mini",
            "--json",
        ],
        "file",
        "",
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn search_texts(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|m| m["text"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_to_a_providers_model_re_embeds_every_memory_and_loses_nothing() {
    let server = LlmServer::start(vec![]).await;
    let home = Home::new();
    add_provider(&home, &server).await;
    let facts = [
        "Lives in Lisbon",
        "Allergic to peanuts",
        "Plays the cello on Tuesdays",
        "Prefers short answers",
        "Has a dog called Pico",
    ];
    for f in facts {
        ok(&home, &server, &["memory", "add", f]).await;
    }
    let before = ok(&home, &server, &["embedding", "show"]).await;
    assert_eq!(before["choice"]["kind"], "local");
    assert_eq!(before["memories"], 5);

    // A model the server does not have is refused, and nothing changes.
    let out = run(&home, &server, &["embedding", "use", "lab:no-such-model"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = json_of(&out);
    assert_eq!(err["error"]["code"], "provider_bad_request", "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no-such-model"),
        "{err}"
    );
    assert_eq!(
        ok(&home, &server, &["embedding", "show"]).await["label"],
        "local"
    );

    // Chosen with --no-wait: the job waits; keyword search still finds everything.
    let queued = ok(
        &home,
        &server,
        &["embedding", "use", "lab:bow-16", "--no-wait"],
    )
    .await;
    assert_eq!(queued["status"]["model"], "bow-16");
    assert_eq!(queued["status"]["dimensions"], 16, "measured by a probe");
    assert_eq!(queued["status"]["embedded"], 0);
    assert!(queued["job"].is_i64(), "{queued}");

    // The provider goes away: search is still hybrid-or-keyword (never an error) and finds
    // the memory; the command fails clearly, the memories are all there.
    server.set_embeddings_down(true);
    let meanwhile = ok(&home, &server, &["memory", "list", "--query", "cello"]).await;
    assert_eq!(search_texts(&meanwhile), ["Plays the cello on Tuesdays"]);
    let out = run(&home, &server, &["embedding", "use", "lab:bow-16"]).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        ok(&home, &server, &["memory", "list"])
            .await
            .as_array()
            .map(Vec::len),
        Some(5)
    );

    // Back up: waiting embeds them all, with progress on stderr.
    server.set_embeddings_down(false);
    let requests = server.embedding_requests();
    let out = run(&home, &server, &["embedding", "use", "lab:bow-16"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = json_of(&out);
    assert_eq!(done["status"]["embedded"], 5, "{done}");
    assert_eq!(done["status"]["memories"], 5);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("embedding memories with bow-16: 5/5"),
        "progress on stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.embedding_requests() > requests);

    // A memory added later has no vector yet (it gets one at the next search, turn or
    // `use`); using the same model again embeds only that one.
    ok(&home, &server, &["memory", "add", "Grows tomatoes"]).await;
    let status = ok(&home, &server, &["embedding", "show"]).await;
    assert_eq!(
        (status["embedded"].as_u64(), status["memories"].as_u64()),
        (Some(5), Some(6))
    );
    let again = ok(&home, &server, &["embedding", "use", "lab:bow-16"]).await;
    assert_eq!(again["embedded"], 1, "only the new one: {again}");
    assert_eq!(again["status"]["embedded"], 6);

    // Off: keyword only, no calls.
    let off = ok(&home, &server, &["embedding", "use", "off"]).await;
    assert_eq!(off["status"]["model"], Value::Null);
    let requests = server.embedding_requests();
    let found = ok(&home, &server, &["memory", "list", "--query", "peanuts"]).await;
    assert_eq!(search_texts(&found), ["Allergic to peanuts"]);
    assert_eq!(server.embedding_requests(), requests);

    // Back to the local model (installed for tests): all six re-embedded with it.
    let local = ok(&home, &server, &["embedding", "use", "local"]).await;
    assert_eq!(local["status"]["model"], "all-MiniLM-L6-v2");
    assert_eq!(local["status"]["dimensions"], 384);
    assert_eq!(local["status"]["embedded"], 6, "{local}");
    assert_eq!(local["embedded"], 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_choices_are_usage_errors_with_a_clear_message() {
    let server = LlmServer::start(vec![]).await;
    let home = Home::new();
    let out = run(&home, &server, &["embedding", "use", "nonsense"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = json_of(&out);
    assert_eq!(err["error"]["code"], "invalid_input");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("PROVIDER:MODEL")
    );
    let out = run(&home, &server, &["embedding", "use", "ghost:bow-8"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        json_of(&out)["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("ghost"),
    );
}

/// The installed model's files, to serve from a local hub.
fn model_files() -> std::collections::HashMap<String, Vec<u8>> {
    use hearth_core::embed::ModelSource;
    let dir = std::env::var_os("HEARTH_EMBED_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| std::path::PathBuf::from(h).join(".cache/hearth-models/minilm"))
        })
        .expect("HEARTH_EMBED_MODEL_DIR or HOME");
    let files = ModelSource::dir(&dir)
        .find()
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            panic!(
                "the embedding model is not at {} (scripts/fetch-model.sh)",
                dir.display()
            )
        });
    [
        ("config.json", files.config),
        ("tokenizer.json", files.tokenizer),
        ("model.safetensors", files.weights),
    ]
    .into_iter()
    .map(|(name, path)| {
        (
            name.to_owned(),
            std::fs::read(path).expect("read model file"),
        )
    })
    .collect()
}

/// `hearth` with no local model installed, downloading from `endpoint` into `cache`.
fn without_model(
    home: &Home,
    server: &LlmServer,
    args: &[&str],
    endpoint: &str,
    cache: &std::path::Path,
) -> std::process::Command {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = home.cmd(server, &all);
    cmd.env_remove("HEARTH_EMBED_MODEL_DIR")
        .env("HF_HUB_CACHE", cache)
        .env("HF_ENDPOINT", endpoint);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_downloads_once_with_progress_and_a_broken_download_changes_nothing() {
    use hearth_testkit::hub::{HubMode, HubServer};
    let server = LlmServer::start(vec![]).await;
    let home = Home::new();
    let cache = tempfile::tempdir().expect("cache");
    for f in ["Lives in Lisbon", "Plays the cello"] {
        ok(&home, &server, &["memory", "add", f]).await;
    }

    // A hub that breaks off the weights: a clear error, no model, nothing lost.
    let broken = HubServer::start(
        hearth_core::embed::HUB_REPO,
        model_files(),
        HubMode::BreakWeights,
    )
    .await;
    let out = output(without_model(
        &home,
        &server,
        &["embedding", "download"],
        &broken.endpoint,
        cache.path(),
    ))
    .await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = json_of(&out);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("download"),
        "{err}"
    );
    let shown = json_of(
        &output(without_model(
            &home,
            &server,
            &["embedding", "show"],
            &broken.endpoint,
            cache.path(),
        ))
        .await,
    );
    assert_eq!(shown["model"], Value::Null, "keyword-only: {shown}");
    assert_eq!(shown["local_model_on_disk"], false);
    assert_eq!(shown["memories"], 2);

    // What arrived before the break waits in the part file.
    let part = walk(cache.path())
        .into_iter()
        .find(|p| p.ends_with(".model.safetensors.part"))
        .expect("the part is kept");
    let kept = std::fs::metadata(&part).expect("part").len() as usize;
    assert!(kept > 0 && kept < weights_len(), "{kept}");

    // A working hub: progress on stderr, then both memories embedded with it.
    let hub = HubServer::start(hearth_core::embed::HUB_REPO, model_files(), HubMode::Serve).await;
    let download = || {
        output(without_model(
            &home,
            &server,
            &["embedding", "download"],
            &hub.endpoint,
            cache.path(),
        ))
    };
    let out = download().await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("downloading model.safetensors"), "{stderr}");
    // What arrived from the broken hub was kept: only the rest was asked for.
    assert_eq!(hub.ranges(), [format!("bytes={kept}-")]);
    assert_eq!(hub.weights_sent(), weights_len() - kept);
    let done = json_of(&out);
    assert_eq!(done["status"]["model"], "all-MiniLM-L6-v2", "{done}");
    assert_eq!(done["status"]["local_model_on_disk"], true);
    assert_eq!(
        (
            done["status"]["embedded"].as_u64(),
            done["embedded"].as_u64()
        ),
        (Some(2), Some(2))
    );
    assert!(
        stderr.contains("embedding memories with all-MiniLM-L6-v2: 2/2"),
        "{stderr}"
    );

    // Once is enough: a second download asks the hub for nothing.
    let requests = hub.requests();
    let again = download().await;
    assert!(again.status.success());
    assert_eq!(hub.requests(), requests);
}

/// The size of the test model's weights.
fn weights_len() -> usize {
    model_files()
        .get("model.safetensors")
        .map(Vec::len)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_that_would_not_fit_on_the_disk_is_refused_before_it_writes() {
    use hearth_testkit::hub::{HubMode, HubServer};
    let server = LlmServer::start(vec![]).await;
    let home = Home::new();
    let cache = tempfile::tempdir().expect("cache");
    let hub = HubServer::start(hearth_core::embed::HUB_REPO, model_files(), HubMode::Serve).await;
    let mut cmd = without_model(
        &home,
        &server,
        &["embedding", "download"],
        &hub.endpoint,
        cache.path(),
    );
    // The disk has 64 KiB free: the config fits, the tokenizer (466 KB) does not.
    cmd.env("HEARTH_TEST_FREE_BYTES", (64 * 1024).to_string());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    let message = json_of(&out)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("not enough free disk for tokenizer.json"),
        "{message}"
    );
    let written: Vec<String> = walk(cache.path())
        .into_iter()
        .filter(|p| p.contains("tokenizer") || p.contains("safetensors"))
        .collect();
    assert!(written.is_empty(), "{written:?}");
    assert_eq!(hub.weights_sent(), 0, "the weights were never asked for");
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.to_string_lossy().into_owned());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_model_re_embeds_the_passages_of_watched_folders_in_the_background_or_at_once() {
    let server = LlmServer::start(vec![]).await;
    let home = Home::new();
    add_provider(&home, &server).await;
    let docs = tempfile::tempdir().expect("docs");
    std::fs::write(
        docs.path().join("boiler.md"),
        "# Boiler\nService the boiler every autumn.\n",
    )
    .expect("write");
    std::fs::write(
        docs.path().join("garden.md"),
        "# Garden\nPrune the roses in March.\n",
    )
    .expect("write");
    let dir = docs.path().to_str().expect("utf-8");
    ok(&home, &server, &["folders", "add", dir]).await;
    let indexed = ok(&home, &server, &["index", "--wait", "--wait-vectors"]).await;
    assert_eq!(indexed["vectors"], "complete", "{indexed}");
    let chunks = indexed["chunks"].as_u64().expect("chunks");
    assert!(chunks >= 2, "{indexed}");
    let embedded = |list: &Value| list[0]["chunks_embedded"].as_u64();

    // A new model, left to the background: no passage has its vector yet, so hybrid search
    // is keyword search and says so — and still finds the passage.
    let queued = ok(
        &home,
        &server,
        &["embedding", "use", "lab:bow-16", "--no-wait"],
    )
    .await;
    assert_eq!(queued["chunks_embedded"], 0, "{queued}");
    assert_eq!(
        embedded(&ok(&home, &server, &["folders", "list"]).await),
        Some(0)
    );
    let found = ok(&home, &server, &["search", "boiler autumn"]).await;
    assert_eq!(found["mode"], "bm25", "{found}");
    assert!(
        found["warning"]
            .as_str()
            .is_some_and(|w| w.contains("keyword")),
        "{found}"
    );
    assert!(
        found["results"][0]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("boiler.md"))
    );

    // The background jobs (the app's runner; here `hearth jobs run`) embed them.
    let requests = server.embedding_requests();
    let out = output(home.cmd(&server, &["jobs", "run"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        server.embedding_requests() > requests,
        "the new model embedded them"
    );
    assert_eq!(
        embedded(&ok(&home, &server, &["folders", "list"]).await),
        Some(chunks)
    );
    let found = ok(
        &home,
        &server,
        &["search", "boiler autumn", "--mode", "vector"],
    )
    .await;
    assert_eq!(found["warning"], Value::Null, "{found}");
    assert!(
        !found["results"].as_array().expect("results").is_empty(),
        "{found}"
    );

    // Back to the local model, waiting: the command embeds the passages itself, with
    // progress, and says how many.
    let out = run(&home, &server, &["embedding", "use", "local"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let local = json_of(&out);
    assert_eq!(local["chunks_embedded"].as_u64(), Some(chunks), "{local}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "embedding passages of watched folders: {chunks}/{chunks}"
        )),
        "{stderr}"
    );
    assert_eq!(
        embedded(&ok(&home, &server, &["folders", "list"]).await),
        Some(chunks)
    );
    let found = ok(&home, &server, &["search", "boiler autumn"]).await;
    assert_eq!(found["mode"], "hybrid", "{found}");
}
