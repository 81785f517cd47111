//! The worker as its parent sees it, on the real test model (`HEARTH_TEST_GGUF`): it says
//! it is ready, answers only the bearer token it was given, refuses a model it cannot
//! load with an error line, and dies with its parent — when stdin ends, and (Linux) when
//! the parent is killed while something else still holds stdin open.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

/// One worker at a time: llama.cpp's threads spin while they wait, and two workers on the
/// same cores slow each other down by orders of magnitude.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn gguf() -> PathBuf {
    PathBuf::from(std::env::var_os("HEARTH_TEST_GGUF").expect(
        "HEARTH_TEST_GGUF names the test model: export HEARTH_TEST_GGUF=$(scripts/fetch-llm.sh)",
    ))
}

fn worker() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hearth-llama-worker"));
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

/// Starts the worker on `model`, gives it the token, and returns it with its ready line.
fn start(model: &std::path::Path) -> (Child, serde_json::Value) {
    let mut child = worker()
        .arg("--model")
        .arg(model)
        .args(["--name", "smollm2"])
        .spawn()
        .expect("spawn the worker");
    let stdin = child.stdin.as_mut().expect("stdin");
    writeln!(stdin, "{TOKEN}").expect("token");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    (child, serde_json::from_str(&line).expect("a JSON line"))
}

fn gone_within(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        // Gone, or a zombie waiting to be reaped: either way it runs no more.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().chars().next());
        if !matches!(state, Some(Some(c)) if c != 'Z') {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn it_answers_only_its_token_and_ends_with_stdin() {
    let _serial = serial();
    let (mut child, ready) = start(&gguf());
    let port = ready["port"].as_u64().expect("a port");
    assert!(ready["n_ctx"].as_u64().unwrap_or(0) >= 256, "{ready}");
    let url = format!("http://127.0.0.1:{port}/v1/models");
    let client = reqwest::blocking::Client::new();
    let refused = client.get(&url).send().expect("request");
    assert_eq!(refused.status().as_u16(), 401);
    let wrong = client
        .get(&url)
        .bearer_auth("not-the-token-not-the-token-not-the-token")
        .send()
        .expect("request");
    assert_eq!(wrong.status().as_u16(), 401);
    let ok = client.get(&url).bearer_auth(TOKEN).send().expect("request");
    assert_eq!(ok.status().as_u16(), 200);
    let body: serde_json::Value = ok.json().expect("json");
    assert_eq!(body["data"][0]["id"], "smollm2");

    // A JSON schema is a grammar: the answer parses and has the required field.
    let answer: serde_json::Value = client
        .post(format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({
            "messages": [{"role": "user", "content": "Give the name of a city."}],
            "max_tokens": 48,
            "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": {
                "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                "required": ["city"], "additionalProperties": false}}}
        }))
        .send()
        .expect("request")
        .json()
        .expect("json");
    let content = answer["choices"][0]["message"]["content"]
        .as_str()
        .expect("content");
    let parsed: serde_json::Value = serde_json::from_str(content).expect("valid JSON");
    assert!(parsed["city"].is_string(), "{parsed}");

    let pid = child.id();
    drop(child.stdin.take());
    assert!(
        gone_within(pid, Duration::from_secs(10)),
        "the worker outlived stdin"
    );
    let _ = child.wait();
}

#[test]
fn a_file_that_is_not_a_model_gets_an_error_line_and_exit_3() {
    let _serial = serial();
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad = tmp.path().join("bad.gguf");
    std::fs::write(&bad, b"GGUF\x03\x00\x00\x00 not really").expect("write");
    let (mut child, line) = start(&bad);
    assert!(line["error"].is_string(), "{line}");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(3));
}

#[cfg(target_os = "linux")]
#[test]
fn it_dies_with_its_parent_even_while_stdin_stays_open() {
    let _serial = serial();
    // A shell parent starts the worker (the token, then stdin held by this test) and is
    // killed with SIGKILL; only the parent-death signal can end the worker then.
    let worker = env!("CARGO_BIN_EXE_hearth-llama-worker");
    let script = format!(
        "exec 3<&0; HEARTH_PARENT_PID=$$ {worker:?} --model {:?} <&3 & echo $!; wait",
        gguf()
    );
    let mut parent = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the parent");
    let mut stdin = parent.stdin.take().expect("stdin");
    writeln!(stdin, "{TOKEN}").expect("token");
    let mut out = BufReader::new(parent.stdout.take().expect("stdout"));
    let mut pid = String::new();
    out.read_line(&mut pid).expect("the worker's pid");
    let pid: u32 = pid.trim().parse().expect("a pid");
    let mut ready = String::new();
    out.read_line(&mut ready).expect("ready");
    assert!(ready.contains("port"), "{ready}");
    parent.kill().expect("kill the parent");
    let _ = parent.wait();
    assert!(
        gone_within(pid, Duration::from_secs(10)),
        "the worker outlived its parent"
    );
    drop(stdin);
}
