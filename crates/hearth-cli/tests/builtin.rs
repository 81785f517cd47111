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
    let plain = run(hearth(
        &home,
        &["chat", "--no-wait", "--no-tools", "Say hello."],
    ));
    assert!(plain.status.success());
    assert!(!String::from_utf8_lossy(&plain.stdout).trim().is_empty());

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
