//! Durable jobs from the command line: two real processes draining the same queue of
//! learning jobs apply each exchange exactly once; `hearth doctor` reports the queue.

use std::sync::Arc;
use std::time::Duration;

use hearth_testkit::llm_server::*;
use serde_json::{Value, json};

mod common;
use common::*;

const EXCHANGES: usize = 6;

/// Each exchange mentions one number; its extraction learns one memory about it. The
/// model answers slowly, so both workers are busy at the same time.
fn script() -> Reply {
    Reply::Dynamic(Arc::new(|body: &Value| {
        let prompt = last_text(body);
        let schema = body["response_format"]["json_schema"]["name"].as_str();
        let slow = |text: String| Reply::Stream {
            data: text_stream(&[&text], None),
            pace: Duration::from_millis(150),
            end: End::Done,
        };
        match schema {
            Some("memory_extraction") => {
                let n = (0..EXCHANGES)
                    .find(|n| prompt.contains(&format!("locker {n}.")))
                    .unwrap_or(99);
                slow(
                    json!({"memories": [{"text": format!("User's gym locker is number {n}."),
                        "kind": "fact", "subject": null, "importance": 0.5, "critical": false,
                        "event_date": null}], "forget": []})
                    .to_string(),
                )
            }
            Some(_) => {
                slow(r#"{"action": "ADD", "id": null, "text": null, "reason": "new"}"#.into())
            }
            None => slow("Got it.".into()),
        }
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_draining_one_queue_learn_from_each_exchange_exactly_once() {
    let server = LlmServer::start(vec![script(); 200]).await;
    let home = Home::new();
    for n in 0..EXCHANGES {
        // `--no-wait` (added by the helper for chats) leaves the learning job queued.
        let out = output(home.cmd(&server, &["chat", &format!("My gym locker {n}.")])).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let doctor = json_of(&output(home.cmd(&server, &["doctor", "--json"])).await);
    assert_eq!(
        doctor["jobs"],
        json!({"queued": EXCHANGES, "running": 0, "failed": 0})
    );

    let run = || {
        let mut c = home.cmd(&server, &["jobs", "run", "--json"]);
        c.env("HEARTH_LOG", "hearth_core=debug");
        output(c)
    };
    let (a, b) = tokio::join!(run(), run());
    let logs = format!(
        "first worker:\n{}\nsecond worker:\n{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    let (a, b) = (json_of(&a), json_of(&b));
    let ran = a["ran"].as_u64().expect("ran") + b["ran"].as_u64().expect("ran");
    assert_eq!(
        ran, EXCHANGES as u64,
        "each job was run by one of them: {a} {b}"
    );

    let store = home.store();
    let (memories, adds): (i64, i64) = store
        .read_blocking(|c| {
            Ok((
                c.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?,
                c.query_row(
                    "SELECT count(*) FROM memory_history WHERE op = 'add'",
                    [],
                    |r| r.get(0),
                )?,
            ))
        })
        .expect("counts");
    assert_eq!(
        (memories, adds),
        (EXCHANGES as i64, EXCHANGES as i64),
        "{logs}"
    );
    let listed = json_of(&output(home.cmd(&server, &["memory", "list", "--json"])).await);
    let mut texts: Vec<String> = listed
        .as_array()
        .expect("array")
        .iter()
        .map(|m| m["text"].as_str().unwrap_or("").to_owned())
        .collect();
    texts.sort();
    let want: Vec<String> = (0..EXCHANGES)
        .map(|n| format!("User's gym locker is number {n}."))
        .collect();
    assert_eq!(texts, want);
    let doctor = json_of(&output(home.cmd(&server, &["doctor", "--json"])).await);
    assert_eq!(
        doctor["jobs"],
        json!({"queued": 0, "running": 0, "failed": 0})
    );
}
