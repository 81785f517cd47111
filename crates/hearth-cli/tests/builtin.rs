//! `hearth model …` and `hearth chat` on the built-in model, with the real engine and the
//! real test model (SmolLM2-135M, `HEARTH_TEST_GGUF`): a chat with no provider is answered
//! on this computer and says so in `--json`; a file that cannot run is refused with a clear
//! reason before anything loads, and nothing is installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// One worker at a time (llama.cpp's threads spin while they wait).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn gguf() -> PathBuf {
    PathBuf::from(std::env::var_os("HEARTH_TEST_GGUF").expect(
        "HEARTH_TEST_GGUF names the test model: export HEARTH_TEST_GGUF=$(scripts/fetch-llm.sh)",
    ))
}

fn hearth(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hearth"));
    c.args(args)
        .env("HEARTH_HOME", home)
        .env("HEARTH_KEY_BACKEND", "file")
        .env_remove("HEARTH_PROVIDER_URL")
        .env_remove("HEARTH_MODEL")
        .stdin(Stdio::null());
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("run hearth")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_chat_with_no_provider_is_answered_by_the_built_in_model() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("hearth");
    let model = gguf();
    let added = run(hearth(
        &home,
        &[
            "--json",
            "model",
            "add",
            model.to_str().expect("utf-8 path"),
            "--name",
            "smollm2",
        ],
    ));
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let added = json(&added);
    assert_eq!(added["name"], "smollm2");
    assert_eq!(added["fits"], true);
    assert_eq!(added["main"], true, "the first model answers chats");

    let listed = json(&run(hearth(&home, &["--json", "model", "list"])));
    assert_eq!(listed["installed"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed["installed"][0]["architecture"], "llama");

    let out = run(hearth(
        &home,
        &[
            "--json",
            "chat",
            "--no-wait",
            "--no-tools",
            "Name one colour.",
        ],
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let turn = json(&out);
    assert_eq!(turn["provider"], "builtin");
    assert_eq!(turn["model"], "smollm2");
    assert!(
        !turn["answer"].as_str().unwrap_or("").trim().is_empty(),
        "{turn}"
    );
    assert!(
        turn["usage"]["output_tokens"].as_u64().unwrap_or(0) > 0,
        "{turn}"
    );
    assert_eq!(
        turn["cost_usd"], 0.0,
        "nothing is paid for on this computer"
    );

    // Streaming to a terminal-less stdout: the answer's text, nothing else.
    // (At least 16 tokens, so the answer measures the model's speed here.)
    let mut c = hearth(&home, &["chat", "--no-wait", "--no-tools", "Say hello."]);
    c.env("HEARTH_TEST_LLAMA_MIN_TOKENS", "16");
    let plain = run(c);
    assert!(plain.status.success());
    assert!(!String::from_utf8_lossy(&plain.stdout).trim().is_empty());
    // Its speed on this computer, measured over that answer, is kept with the model.
    let listed = json(&run(hearth(&home, &["--json", "model", "list"])));
    let speed = listed["installed"][0]["tokens_per_s"].as_f64();
    assert!(speed.is_some_and(|s| s > 0.0), "{listed}");
    let text = run(hearth(&home, &["model", "list"]));
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("tokens/s here at its last answer"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    // The built-in model is a tier like any other: with a cloud model answering, the user
    // makes it the fast one, and the router sends a thank-you to it (nothing reaches the
    // cloud) and a careful question to the cloud model.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt.block_on(hearth_testkit::llm_server::LlmServer::start(vec![
        hearth_testkit::llm_server::stream(hearth_testkit::llm_server::text_stream(
            &["Renting keeps you free to move; buying builds equity."],
            Some((120, 12, 0)),
        )),
    ]));
    let added = run(hearth(
        &home,
        &[
            "--json",
            "providers",
            "add",
            "cloud",
            "--preset",
            "custom",
            "--url",
            &server.base_url,
            "--model",
            "big-model",
        ],
    ));
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stdout)
    );
    let slots = run(hearth(
        &home,
        &[
            "--json",
            "providers",
            "slots",
            "--main",
            "cloud:big-model",
            "--fast",
            "builtin:smollm2",
        ],
    ));
    assert!(
        slots.status.success(),
        "{}",
        String::from_utf8_lossy(&slots.stdout)
    );
    let thanks = json(&run(hearth(
        &home,
        &["--json", "chat", "--no-wait", "--no-tools", "Thanks!"],
    )));
    assert_eq!(
        (
            &thanks["provider"],
            &thanks["model"],
            &thanks["route"]["tier"]
        ),
        (&"builtin".into(), &"smollm2".into(), &"fast".into()),
        "{thanks}"
    );
    assert!(server.seen().is_empty(), "nothing reached the cloud");
    let careful = json(&run(hearth(
        &home,
        &[
            "--json",
            "chat",
            "--no-wait",
            "--no-tools",
            "Compare renting and buying a home and explain why, step by step.",
        ],
    )));
    assert_eq!(
        (&careful["provider"], &careful["route"]["tier"]),
        (&"cloud".into(), &"strong".into()),
        "{careful}"
    );
    assert_eq!(server.seen().len(), 1);
    // A built-in model that is not installed cannot take a slot.
    let missing = run(hearth(
        &home,
        &["--json", "providers", "slots", "--fast", "builtin:nope"],
    ));
    assert_eq!(json(&missing)["error"]["code"], "invalid_input");
    let back = run(hearth(
        &home,
        &["--json", "providers", "remove", "cloud", "--yes"],
    ));
    assert!(back.status.success());

    let status = json(&run(hearth(&home, &["--json", "model", "status"])));
    assert_eq!(status["engine_installed"], true);
    assert_eq!(status["main"], "smollm2");
    assert_eq!(status["running"], false, "this process started no worker");

    let removed = run(hearth(&home, &["--json", "model", "remove", "smollm2"]));
    assert!(removed.status.success());
    assert!(model.exists(), "a file the user added is never deleted");
    let none = run(hearth(&home, &["--json", "chat", "--no-wait", "hi"]));
    assert_eq!(json(&none)["error"]["code"], "no_provider");
}

/// A minimal GGUF v3 header: `arch` as its architecture, no tensors.
fn header_only(arch: &str) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes()); // tensors
    b.extend(1u64.to_le_bytes()); // key-value pairs
    let key = b"general.architecture";
    b.extend((key.len() as u64).to_le_bytes());
    b.extend(key);
    b.extend(8u32.to_le_bytes()); // a string
    b.extend((arch.len() as u64).to_le_bytes());
    b.extend(arch.as_bytes());
    b
}

#[test]
fn a_file_that_cannot_run_here_is_refused_before_anything_loads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("hearth");
    let model = gguf();
    let bytes = std::fs::read(&model).expect("the test model");

    let truncated = tmp.path().join("truncated.gguf");
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).expect("write");
    let text = tmp.path().join("notes.gguf");
    std::fs::write(&text, "these are my notes, not a model").expect("write");
    let encoder = tmp.path().join("encoder.gguf");
    std::fs::write(&encoder, header_only("bert")).expect("write");

    let cases: [(&Path, &str, Option<&str>); 4] = [
        (&truncated, "cut short", None),
        (&text, "not a GGUF", None),
        (&encoder, "cannot run", None),
        // 256 MiB of memory: the 98 MB model with its cache needs more than 3/4 of it.
        (&model, "memory", Some("268435456")),
    ];
    for (path, reason, memory) in cases {
        let mut c = hearth(
            &home,
            &["--json", "model", "add", path.to_str().expect("utf-8 path")],
        );
        if let Some(m) = memory {
            c.env("HEARTH_TEST_TOTAL_MEMORY", m);
        }
        let out = run(c);
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        let err = json(&out);
        assert_eq!(err["error"]["code"], "local_model", "{err}");
        let message = err["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(reason), "{}: {message}", path.display());
    }
    let listed = json(&run(hearth(&home, &["--json", "model", "list"])));
    assert_eq!(
        listed["installed"],
        serde_json::json!([]),
        "nothing was installed"
    );
}

mod download {
    //! `hearth model download` from a hub on 127.0.0.1 serving the test GGUF, through a
    //! catalogue that pins it (`HEARTH_MODEL_CATALOG`, `HEARTH_MODEL_HUB`).

    use super::*;
    use hearth_testkit::hub::{COMMIT, HubMode, HubServer};
    use sha2::{Digest, Sha256};

    const REPO: &str = "test/smollm2-gguf";
    const FILE: &str = "smollm2-135m-instruct-q4_1.gguf";

    struct Setup {
        _tmp: tempfile::TempDir,
        home: PathBuf,
        catalog: PathBuf,
        bytes: Vec<u8>,
    }

    fn setup(sha256: Option<&str>) -> Setup {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bytes = std::fs::read(gguf()).expect("the test model");
        let sha = sha256.map_or_else(|| hex_sha(&bytes), str::to_owned);
        let catalog = tmp.path().join("catalog.json");
        let entry = serde_json::json!([{
            "name": "smollm2", "label": "SmolLM2 135M Instruct", "family": "llama",
            "parameters": "135M", "quantisation": "Q4_1", "repo": REPO, "revision": COMMIT,
            "file": FILE, "bytes": bytes.len(), "sha256": sha, "sha256_source": "the test",
            "trained_context": 8192, "kv_bytes_per_token": 23040, "licence": "Apache-2.0",
            "tools": false, "recommended_from_gib": 0
        }]);
        std::fs::write(&catalog, entry.to_string()).expect("catalog");
        Setup {
            home: tmp.path().join("hearth"),
            catalog,
            bytes,
            _tmp: tmp,
        }
    }

    fn hex_sha(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn hub_cmd(s: &Setup, hub: &HubServer, args: &[&str]) -> Command {
        let mut c = hearth(&s.home, args);
        c.env("HEARTH_MODEL_CATALOG", &s.catalog)
            .env("HEARTH_MODEL_HUB", &hub.endpoint);
        c
    }

    async fn go(c: Command) -> Output {
        tokio::task::spawn_blocking(move || run(c))
            .await
            .expect("join")
    }

    fn models_dir(s: &Setup) -> Vec<String> {
        std::fs::read_dir(s.home.join("models"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_broken_download_resumes_where_it_stopped_reports_progress_and_installs() {
        let s = setup(None);
        let hub = HubServer::start(
            REPO,
            [(FILE.to_owned(), s.bytes.clone())].into(),
            HubMode::BreakWeights,
        )
        .await;
        let listed = json(&go(hub_cmd(&s, &hub, &["--json", "model", "list"])).await);
        assert_eq!(listed["catalog"][0]["name"], "smollm2");
        assert_eq!(listed["catalog"][0]["recommended"], true, "{listed}");
        assert_eq!(listed["catalog"][0]["installed"], false);

        // The hub breaks off halfway: a clear error, what arrived kept for next time.
        let first = go(hub_cmd(
            &s,
            &hub,
            &["--json", "model", "download", "smollm2"],
        ))
        .await;
        assert_eq!(
            first.status.code(),
            Some(1),
            "{}\n{}",
            String::from_utf8_lossy(&first.stdout),
            String::from_utf8_lossy(&first.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        let err = json(&first);
        assert_eq!(err["error"]["code"], "local_model");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("again to resume"),
            "{err}"
        );
        let part = s.home.join("models").join(format!(".{FILE}.part"));
        let kept = std::fs::metadata(&part).expect("the part is kept").len() as usize;
        assert!(kept > 0 && kept < s.bytes.len(), "{kept}");
        let installed = json(&go(hub_cmd(&s, &hub, &["--json", "model", "list"])).await);
        assert_eq!(installed["installed"], serde_json::json!([]));

        // Again: only the rest is asked for, with progress lines, and the model installs.
        let second = go(hub_cmd(
            &s,
            &hub,
            &["--json", "model", "download", "smollm2"],
        ))
        .await;
        assert!(
            second.status.success(),
            "{}",
            String::from_utf8_lossy(&second.stderr)
        );
        assert_eq!(hub.ranges(), vec![format!("bytes={kept}-")]);
        let progress: Vec<serde_json::Value> = String::from_utf8_lossy(&second.stderr)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        assert!(progress.len() > 2, "progress lines: {progress:?}");
        let done: Vec<u64> = progress.iter().filter_map(|p| p["done"].as_u64()).collect();
        assert!(done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
        assert_eq!(progress.last().unwrap()["total"], s.bytes.len());
        let model = json(&second);
        assert_eq!(model["name"], "smollm2");
        assert_eq!(model["source"], "download");
        assert_eq!(models_dir(&s), vec![FILE.to_owned()], "no part left");

        // Removing a downloaded model frees its disk.
        let removed = go(hub_cmd(&s, &hub, &["--json", "model", "remove", "smollm2"])).await;
        assert!(removed.status.success());
        assert!(models_dir(&s).is_empty());
    }

    /// `model download smollm2` from a hub in `mode` (with `env`), expected to fail: the
    /// hub and the error's message.
    async fn refused(s: &Setup, mode: HubMode, env: Option<(&str, &str)>) -> (HubServer, String) {
        let hub = HubServer::start(REPO, [(FILE.to_owned(), s.bytes.clone())].into(), mode).await;
        let mut c = hub_cmd(s, &hub, &["--json", "model", "download", "smollm2"]);
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let out = go(c).await;
        assert_eq!(out.status.code(), Some(1));
        let message = json(&out)["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        (hub, message)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wrong_file_a_redirect_away_and_a_full_disk_install_nothing() {
        // The catalogue pins another hash: the file arrives, does not match, and is deleted.
        let s = setup(Some(&"0".repeat(64)));
        let (_hub, message) = refused(&s, HubMode::Serve, None).await;
        assert!(
            message.contains("does not match") && message.contains("nothing was installed"),
            "{message}"
        );
        assert!(
            models_dir(&s).is_empty(),
            "the partial is deleted: {:?}",
            models_dir(&s)
        );

        // A redirect to a host off the allow-list is not followed.
        let s = setup(None);
        let (away, message) = refused(&s, HubMode::RedirectAway, None).await;
        assert!(message.contains("elsewhere.invalid"), "{message}");
        assert_eq!(away.weights_sent(), 0);

        // Not enough disk: refused before a byte is written.
        let (full, message) = refused(
            &s,
            HubMode::Serve,
            Some(("HEARTH_TEST_FREE_BYTES", "1000000")),
        )
        .await;
        assert!(message.contains("disk"), "{message}");
        assert_eq!(full.weights_sent(), 0);
        let listed = json(&go(hub_cmd(&s, &full, &["--json", "model", "list"])).await);
        assert_eq!(listed["installed"], serde_json::json!([]));
    }
}
