//! Providers beyond the basics, against scripted servers on 127.0.0.1: Ollama's model
//! windows, the model table, local-server detection, model slots with an opt-in fallback,
//! and answering again (regenerate, edit-and-resend).

use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hearth_testkit::llm_server::*;
use serde_json::{Value, json};

mod common;
use common::*;

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `hearth ARGS --json` without a one-off provider, file key backend.
async fn run(home: &Home, server: &LlmServer, args: &[&str]) -> (Output, Value) {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--json");
    let out = with_stdin(home, server, &all, "file", "").await;
    let v = json(&out);
    (out, v)
}

/// A new home with one provider, `cloud`, on `server`, answering with `big-model` (and
/// `fast` as its fast model, when given).
async fn cloud_home(server: &LlmServer, fast: Option<&str>) -> Home {
    let home = Home::new();
    let mut add = add_args("cloud", "custom", &server.base_url);
    add.extend(["--model", "big-model"]);
    if let Some(fast) = fast {
        add.extend(["--fast-model", fast]);
    }
    let (out, v) = run(&home, server, &add).await;
    assert!(out.status.success(), "{v}");
    home
}

fn add_args<'a>(name: &'a str, preset: &'a str, url: &'a str) -> Vec<&'a str> {
    vec!["providers", "add", name, "--preset", preset, "--url", url]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_reports_its_windows_and_the_model_table_can_override_them() {
    let server =
        LlmServer::start(vec![stream(text_stream(&["Fine."], Some((1_000, 500, 0))))]).await;
    let home = Home::new();
    let (out, _) = run(
        &home,
        &server,
        &add_args("local", "ollama", &server.base_url),
    )
    .await;
    assert!(out.status.success());

    let (out, tested) = run(&home, &server, &["providers", "test", "local"]).await;
    assert!(out.status.success(), "{tested}");
    assert_eq!(tested["models"], serde_json::json!(OLLAMA_MODELS));
    let detail = |id: &str| {
        tested["details"]
            .as_array()
            .and_then(|d| d.iter().find(|m| m["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {tested}"))
    };
    // Trained 131072 but no num_ctx: Ollama runs it at 4096, so that is the window.
    assert_eq!(detail("llama3.2:3b")["context_window"], 4_096);
    assert_eq!(detail("llama3.2:3b")["window_source"], "server");
    assert_eq!(detail("qwen-long:7b")["context_window"], 16_384);
    assert_eq!(detail("mystery:1b")["context_window"], Value::Null);
    assert_eq!(detail("mystery:1b")["window_source"], "unknown");

    let (_, table) = run(&home, &server, &["models", "list"]).await;
    let row = |table: &Value, m: &str| {
        table
            .as_array()
            .and_then(|t| t.iter().find(|r| r["model"] == m))
            .cloned()
    };
    let llama = row(&table, "llama3.2:3b").expect("the server's window is remembered");
    assert_eq!(llama["context_window"], 4_096);
    assert_eq!(llama["edited"], false);
    assert_eq!(
        row(&table, "gpt-4o").expect("built in")["input_usd_per_mtok"],
        2.5
    );

    let (out, table) = run(
        &home,
        &server,
        &[
            "models",
            "set",
            "mystery",
            "--window",
            "2048",
            "--input-price",
            "1",
            "--output-price",
            "2",
        ],
    )
    .await;
    assert!(out.status.success(), "{table}");
    assert_eq!(row(&table, "mystery").expect("added")["edited"], true);

    // The chat uses the user's window and price, even on a local server.
    let (out, done) = run(
        &home,
        &server,
        &[
            "chat",
            "--provider",
            "local",
            "--model",
            "mystery:1b",
            "hello",
        ],
    )
    .await;
    assert!(out.status.success(), "{done}");
    assert_eq!(done["context"]["window"], 2_048);
    assert_eq!(done["provider"], "local");
    assert_eq!(done["model"], "mystery:1b");
    let cost = done["cost_usd"].as_f64().expect("priced");
    assert!((cost - 0.002).abs() < 1e-12, "{cost}");
    let z = &done["context"];
    let used: u64 = [
        "system",
        "memory",
        "summary",
        "history",
        "retrieved",
        "current",
    ]
    .iter()
    .map(|k| z[k].as_u64().expect("zone"))
    .sum();
    assert!(z["system"].as_u64() > Some(0) && z["current"].as_u64() > Some(0));
    assert!(used <= z["input_budget"].as_u64().expect("budget"));

    let (out, _) = run(&home, &server, &["models", "reset", "mystery"]).await;
    assert!(out.status.success());
    let (out, err) = run(&home, &server, &["models", "reset", "mystery"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(err["error"]["code"], "not_found");
    let (out, err) = run(&home, &server, &["models", "set", "x", "--window", "10"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(err["error"]["code"], "invalid_input");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detection_finds_running_local_servers_and_marks_configured_ones() {
    let server = LlmServer::start(Vec::new()).await;
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let home = Home::new();
    let servers = format!(
        "ollama={},lmstudio=http://127.0.0.1:{dead}/v1",
        server.base_url
    );
    let detect = |home: &Home, servers: String| {
        let mut cmd = home.cmd(&server, &["providers", "detect", "--json"]);
        cmd.env_remove("HEARTH_PROVIDER_URL")
            .env("HEARTH_LOCAL_SERVERS", servers);
        output(cmd)
    };
    let found = json(&detect(&home, servers.clone()).await);
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(found[0]["preset"], "ollama");
    assert_eq!(found[0]["base_url"], server.base_url);
    assert_eq!(found[0]["models"][0], "gpt-4o-mini");
    assert_eq!(found[0]["configured_as"], Value::Null);

    let (out, _) = run(&home, &server, &add_args("ol", "ollama", &server.base_url)).await;
    assert!(out.status.success());
    let found = json(&detect(&home, servers).await);
    assert_eq!(found[0]["configured_as"], "ol");

    let out = detect(&home, "nonsense".into()).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "invalid_input");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_answers_only_when_enabled_and_says_so() {
    let broken = LlmServer::start(vec![
        status(401, r#"{"error":{"message":"bad key"}}"#),
        status(401, r#"{"error":{"message":"bad key"}}"#),
    ])
    .await;
    let good = LlmServer::start(vec![stream(text_stream(&["From the fallback."], None))]).await;
    let home = Home::new();
    for (name, url) in [("cloud", &broken.base_url), ("spare", &good.base_url)] {
        let (out, v) = run(&home, &good, &add_args(name, "custom", url)).await;
        assert!(out.status.success(), "{v}");
    }
    let (out, slots) = run(
        &home,
        &good,
        &[
            "providers",
            "slots",
            "--main",
            "cloud:model-a",
            "--fallback",
            "spare:model-b",
        ],
    )
    .await;
    assert!(out.status.success(), "{slots}");
    assert_eq!(slots["main"]["model"], "model-a");
    assert_eq!(slots["fallback_enabled"], false);

    // Not enabled: the failure is reported and no other model is tried.
    let (out, err) = run(&home, &good, &["chat", "hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(err["error"]["code"], "provider_auth");
    assert!(good.seen().is_empty(), "the fallback was not asked");

    let (out, _) = run(&home, &good, &["providers", "slots", "--enable-fallback"]).await;
    assert!(out.status.success());
    let (out, done) = run(&home, &good, &["chat", "hi"]).await;
    assert!(out.status.success(), "{done}");
    assert_eq!(done["answer"], "From the fallback.");
    assert_eq!(done["model"], "model-b");
    assert_eq!(done["fallback_from"], "model-a");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("model-a failed; this answer came from the fallback model model-b")
    );
    assert_eq!(good.seen()[0].body["model"], "model-b");
    assert_eq!(broken.seen().len(), 2);

    // The ledger has the failed main call and the fallback's answer; the answer says so.
    let id = done["conversation"].as_str().expect("id").to_owned();
    let (_, shown) = run(&home, &good, &["conversations", "show", &id]).await;
    assert_eq!(shown[1]["turn"]["fallback_from"], "model-a");
    assert!(
        shown[1]["turn"]["fallback_reason"]
            .as_str()
            .is_some_and(|r| r.contains("API key"))
    );
    let rows: Vec<(String, String, String)> = home
        .store()
        .read_blocking(|c| {
            let mut s = c.prepare("SELECT slot, model, outcome FROM usage_ledger ORDER BY id")?;
            let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect()
        })
        .expect("ledger");
    let row = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
    assert_eq!(
        rows,
        vec![
            row("main", "model-a", "provider_auth"),
            row("main", "model-a", "provider_auth"),
            row("fallback", "model-b", "ok"),
        ]
    );

    // Slots are checked, and removing a provider clears the slots naming it.
    let (out, err) = run(&home, &good, &["providers", "slots", "--main", "ghost:m"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(err["error"]["code"], "invalid_input");
    let (out, err) = run(&home, &good, &["providers", "slots", "--main", "no-colon"]).await;
    assert_eq!(out.status.code(), Some(1), "{err}");
    let (out, _) = run(&home, &good, &["providers", "remove", "spare", "--yes"]).await;
    assert!(out.status.success());
    let (_, slots) = run(&home, &good, &["providers", "slots"]).await;
    assert_eq!(slots["fallback"], Value::Null);
    assert_eq!(slots["fallback_enabled"], false);
    assert_eq!(slots["main"]["provider"], "cloud");
}

/// Answers "Answer N to: <the last user message>".
fn echo(counter: Arc<AtomicUsize>) -> Reply {
    Reply::Dynamic(Arc::new(move |body: &Value| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_owned();
        stream(text_stream(&[&format!("Answer {n} to: {last}")], None))
    }))
}

fn contents(shown: &Value) -> Vec<(String, String)> {
    shown
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["content"].as_str().unwrap_or("").to_owned(),
                m["state"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_owned(), b.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regenerate_and_edit_replace_the_last_answer_and_a_failure_changes_nothing() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = LlmServer::start(vec![
        echo(n.clone()),
        echo(n.clone()),
        status(401, "no"),
        echo(n.clone()),
        status(401, "no"),
    ])
    .await;
    let home = Home::new();
    let out = output(home.cmd(&server, &["chat", "first question"])).await;
    assert!(out.status.success());
    let id = conversation_id(&out);
    let show = |home: &Home| output(home.cmd(&server, &["conversations", "show", &id, "--json"]));

    let out = output(home.cmd(
        &server,
        &["chat", "--conversation", &id, "--regenerate", "--json"],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(json(&out)["answer"], "Answer 2 to: first question");
    // The question is sent once, without the answer it replaces.
    let sent = &server.seen()[1].body["messages"];
    assert_eq!(sent.as_array().map(Vec::len), Some(2), "{sent}");
    assert_eq!(
        contents(&json(&show(&home).await)),
        vec![
            pair("first question", "complete"),
            pair("Answer 2 to: first question", "complete")
        ]
    );

    // A regeneration that fails keeps the answer there was.
    let out = output(home.cmd(
        &server,
        &["chat", "--conversation", &id, "--regenerate", "--json"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "provider_auth");
    assert_eq!(
        contents(&json(&show(&home).await)),
        vec![
            pair("first question", "complete"),
            pair("Answer 2 to: first question", "complete")
        ]
    );

    let out = output(home.cmd(
        &server,
        &["chat", "--conversation", &id, "--edit", "second version"],
    ))
    .await;
    assert!(out.status.success());
    assert_eq!(
        contents(&json(&show(&home).await)),
        vec![
            pair("second version", "complete"),
            pair("Answer 3 to: second version", "complete")
        ]
    );

    // An edit that fails puts the old text and answer back.
    let out = output(home.cmd(
        &server,
        &[
            "chat",
            "--conversation",
            &id,
            "--edit",
            "third version",
            "--json",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        contents(&json(&show(&home).await)),
        vec![
            pair("second version", "complete"),
            pair("Answer 3 to: second version", "complete")
        ]
    );

    // Answering again needs a conversation.
    let out = output(home.cmd(&server, &["chat", "--regenerate", "--json"])).await;
    assert_eq!(out.status.code(), Some(2));
}

/// A scripted server answering `answers` in order, and a home whose provider on it has a
/// main model (`big-model`) and a different fast one (`small-model`), so the router chooses.
async fn two_model_provider(answers: &[&'static str]) -> (LlmServer, Home) {
    let server = LlmServer::start(
        answers
            .iter()
            .map(|t| stream(text_stream(&[t], Some((50, 5, 0)))))
            .collect(),
    )
    .await;
    let home = cloud_home(&server, Some("small-model")).await;
    (server, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_sends_simple_messages_to_the_fast_model_and_every_answer_says_why() {
    let (server, home) = two_model_provider(&[
        "You're welcome.",
        "Day one: the river.",
        "Any time.",
        "Glad to help.",
        "Of course.",
    ])
    .await;

    // On by default: thanks go to the fast model, a plan to the main one; each says why.
    let (out, thanks) = run(&home, &server, &["chat", "Thanks!"]).await;
    assert!(out.status.success(), "{thanks}");
    assert_eq!(thanks["model"], "small-model", "{thanks}");
    assert_eq!(
        thanks["route"],
        serde_json::json!({"tier": "fast", "reason": "chit_chat", "escalated_from": null})
    );
    let (out, plan) = run(
        &home,
        &server,
        &["chat", "Plan a three-day trip to Porto with a toddler."],
    )
    .await;
    assert!(out.status.success(), "{plan}");
    assert_eq!(plan["model"], "big-model");
    assert_eq!(plan["route"]["tier"], "strong");
    assert_eq!(plan["route"]["reason"], "hard_task");

    // The user's choice for one message wins over the rules.
    let (_, forced) = run(&home, &server, &["chat", "--tier", "strong", "Thanks!"]).await;
    assert_eq!(forced["model"], "big-model", "{forced}");
    assert_eq!(forced["route"]["reason"], "chosen");

    // The route is kept with the answer.
    let id = thanks["conversation"].as_str().expect("conversation");
    let (_, shown) = run(&home, &server, &["conversations", "show", id]).await;
    assert_eq!(shown[1]["turn"]["route"]["tier"], "fast", "{shown}");
    assert_eq!(shown[1]["turn"]["model"], "small-model");

    // Routing off: the main model answers everything, and says so.
    let (out, off) = run(&home, &server, &["providers", "routing", "--off"]).await;
    assert!(out.status.success());
    assert_eq!(off, serde_json::json!({"enabled": false, "cascade": false}));
    let (_, thanks_off) = run(&home, &server, &["chat", "Thanks!"]).await;
    assert_eq!(thanks_off["model"], "big-model", "{thanks_off}");
    assert_eq!(thanks_off["route"]["reason"], "routing_off");

    // In text, which model answered and why is on stderr.
    let (out, on) = run(&home, &server, &["providers", "routing", "--on"]).await;
    assert!(out.status.success());
    assert_eq!(on["enabled"], true);
    let out = with_stdin(&home, &server, &["chat", "Thanks a lot"], "file", "").await;
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("answered by small-model: fast — conversation"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let models: Vec<String> = server
        .seen()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        models,
        [
            "small-model",
            "big-model",
            "big-model",
            "big-model",
            "small-model"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_routed_fast_strong_fast_keep_each_models_prompt_prefix_byte_identical() {
    let (server, home) =
        two_model_provider(&["You're welcome.", "Day one: the river.", "Any time."]).await;
    let (_, first) = run(&home, &server, &["chat", "Thanks!"]).await;
    let id = first["conversation"]
        .as_str()
        .expect("conversation")
        .to_owned();
    for message in [
        "Plan a three-day trip to Porto with a toddler.",
        "Thanks again!",
    ] {
        let (out, v) = run(&home, &server, &["chat", "--conversation", &id, message]).await;
        assert!(out.status.success(), "{v}");
    }
    let seen = server.seen();
    let models: Vec<&str> = seen
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(models, ["small-model", "big-model", "small-model"]);
    // Everything the fast model read on the first turn leads its request on the third,
    // byte for byte (the provider's prefix cache keeps it), tools included.
    let bytes = |v: &Value| serde_json::to_string(v).expect("json");
    let (one, three) = (&seen[0].body, &seen[2].body);
    let first_messages = one["messages"].as_array().expect("messages");
    let third_messages = three["messages"].as_array().expect("messages");
    assert!(third_messages.len() > first_messages.len());
    for (i, m) in first_messages.iter().enumerate() {
        assert_eq!(bytes(m), bytes(&third_messages[i]), "message {i} changed");
    }
    assert_eq!(
        bytes(&one["tools"]),
        bytes(&three["tools"]),
        "the tools array changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hearth_usage_agrees_with_the_ledger_and_never_counts_an_unknown_price_as_zero() {
    let server = LlmServer::start(vec![
        stream(text_stream(&["One."], Some((20, 3, 0)))),
        stream(text_stream(&["Two."], Some((40, 4, 16)))),
        stream(text_stream(&["Three."], Some((10, 2, 0)))),
    ])
    .await;
    let home = Home::new();
    // The user's price applies even on this local server ($1 / $2 per million tokens).
    let out = output(home.cmd(
        &server,
        &[
            "models",
            "set",
            "gpt-4o-mini",
            "--input-price",
            "1",
            "--output-price",
            "2",
        ],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for message in ["first", "second", "third"] {
        let out = output(home.cmd(&server, &["chat", message])).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A hosted model no price table knows: its ledger row has no cost.
    home.store()
        .write_blocking(|c| {
            c.execute(
                "UPDATE usage_ledger SET model = 'mystery-model-9', cost_usd = NULL
                  WHERE id = (SELECT max(id) FROM usage_ledger)",
                [],
            )?;
            Ok(())
        })
        .expect("a row of unknown price");

    let usage = |args: &[&str]| {
        let mut all = vec!["usage"];
        all.extend_from_slice(args);
        all.push("--json");
        let cmd = home.cmd(&server, &all);
        async move {
            let out = output(cmd).await;
            (
                out.status.code(),
                serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null),
            )
        }
    };
    let (code, by_model) = usage(&[]).await;
    assert_eq!(code, Some(0), "{by_model}");
    let (ledger_cost, ledger_calls): (f64, i64) = home
        .store()
        .read_blocking(|c| {
            c.query_row(
                "SELECT coalesce(sum(cost_usd), 0), count(*) FROM usage_ledger",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
        .expect("ledger");
    assert_eq!(ledger_calls, 3);
    let total = &by_model["total"];
    assert_eq!(total["calls"], 3, "{by_model}");
    assert_eq!(total["input_tokens"], 70);
    assert_eq!(total["output_tokens"], 9);
    assert_eq!(total["cached_input_tokens"], 16);
    assert_eq!(total["calls_without_price"], 1, "{by_model}");
    let cost = total["cost_usd"].as_f64().expect("cost");
    assert!(
        cost > 0.0 && (cost - ledger_cost).abs() < 1e-12,
        "{cost} vs {ledger_cost}"
    );
    let rows = by_model["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{by_model}");
    let known = rows
        .iter()
        .find(|r| {
            r["key"]
                .as_str()
                .is_some_and(|k| k.ends_with("/gpt-4o-mini"))
        })
        .expect("the priced model");
    assert_eq!(known["calls"], 2);
    assert_eq!(known["calls_without_price"], 0);
    assert!(known["latency_ms_p50"].is_u64() && known["latency_ms_p95"].is_u64());

    // Days are local days; a later day has nothing yet; a day that does not exist is refused.
    let today: String = home
        .store()
        .read_blocking(|c| c.query_row("SELECT date('now', 'localtime')", [], |r| r.get(0)))
        .expect("today");
    let (_, by_day) = usage(&["--by", "day", "--since", &today]).await;
    assert_eq!(by_day["rows"][0]["key"], today.as_str(), "{by_day}");
    assert_eq!(by_day["total"]["calls"], 3);
    let (_, later) = usage(&["--since", "2999-01-01"]).await;
    assert_eq!(later["total"]["calls"], 0, "{later}");
    assert_eq!(later["rows"], serde_json::json!([]));
    let (code, bad) = usage(&["--since", "2026-13-45"]).await;
    assert_eq!(code, Some(1), "{bad}");
    assert_eq!(bad["error"]["code"], "invalid_input");
}

/// An OpenAI stream that stops at the length limit, as a model cut off mid-answer does.
fn cut_off_stream(text: &str) -> Vec<String> {
    vec![
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
            .to_string(),
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
            .to_string(),
        serde_json::json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 64}})
            .to_string(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cascade_escalates_each_failing_fast_answer_and_never_after_a_write_was_asked_for() {
    let text = |t: &str| stream(text_stream(&[t], Some((50, 5, 0))));
    let server = LlmServer::start(vec![
        // Cut off → the main model answers again.
        stream(cut_off_stream("Five miles is about")),
        text("Five miles is 8.05 km."),
        // A refusal.
        text("I'm sorry, but I can't help with that."),
        text("France won the 1998 World Cup."),
        // Not the JSON asked for.
        text("Red, green and blue."),
        text("[\"red\", \"green\", \"blue\"]"),
        // A good fast answer stands.
        text("You're welcome."),
        // A write asked for (refused: no one to ask), then an empty answer: no escalation.
        stream(tool_call_stream(&[(
            "w1",
            "create_file",
            r#"{"path": "note.txt", "content": "tea"}"#,
        )])),
        text(""),
        // In text.
        stream(cut_off_stream("Three miles is")),
        text("Three miles is 4.83 km."),
    ])
    .await;
    let home = cloud_home(&server, Some("small-model")).await;
    let (out, on) = run(&home, &server, &["providers", "routing", "--cascade"]).await;
    assert!(out.status.success(), "{on}");
    assert_eq!(on, serde_json::json!({"enabled": true, "cascade": true}));

    for (message, reason, first, answer) in [
        (
            "Convert 5 miles to km.",
            "escalated_cut_off",
            "Five miles is about",
            "Five miles is 8.05 km.",
        ),
        (
            "Who won the 1998 World Cup?",
            "escalated_refusal",
            "I'm sorry, but I can't help with that.",
            "France won the 1998 World Cup.",
        ),
        (
            "List three colours as JSON.",
            "escalated_invalid_json",
            "Red, green and blue.",
            "[\"red\", \"green\", \"blue\"]",
        ),
    ] {
        let (out, v) = run(&home, &server, &["chat", message]).await;
        assert!(out.status.success(), "{v}");
        assert_eq!(v["answer"], answer, "{v}");
        assert_eq!(v["model"], "big-model");
        assert_eq!(
            v["route"],
            serde_json::json!({"tier": "strong", "reason": reason, "escalated_from": "small-model"})
        );
        assert_eq!(v["first_answer"], first);
        // Stored: one answer, the strong one, with its route and the first answer under it.
        let id = v["conversation"].as_str().expect("conversation");
        let (_, shown) = run(&home, &server, &["conversations", "show", id]).await;
        let shown = shown.as_array().expect("messages");
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert_eq!(shown[1]["content"], answer);
        assert_eq!(shown[1]["turn"]["route"]["reason"], reason);
        assert_eq!(shown[1]["turn"]["first_answer"], first);
    }

    // A fast answer that passes every check is kept.
    let (_, thanks) = run(&home, &server, &["chat", "Thanks!"]).await;
    assert_eq!(thanks["model"], "small-model", "{thanks}");
    assert_eq!(thanks["route"]["escalated_from"], Value::Null);
    assert_eq!(thanks["first_answer"], Value::Null);

    // The fast model asked for a write: whatever its answer, the main model is not asked.
    let (out, wrote) = run(&home, &server, &["chat", "Note that I like tea."]).await;
    assert!(out.status.success(), "{wrote}");
    assert_eq!(wrote["model"], "small-model", "{wrote}");
    assert_eq!(wrote["route"]["tier"], "fast");
    assert_eq!(wrote["tool_calls"][0]["tool"], "create_file");

    // In text, the fast answer stays on stdout and a note says why the main model follows.
    let out = with_stdin(
        &home,
        &server,
        &["chat", "Convert 3 miles to km."],
        "file",
        "",
    )
    .await;
    assert!(out.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stdout.contains("Three miles is\nThree miles is 4.83 km."),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "note: small-model answered; strong — escalated: the fast answer was cut off — big-model answers again:"
        ),
        "{stderr}"
    );

    let models: Vec<String> = server
        .seen()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        models,
        [
            "small-model",
            "big-model",
            "small-model",
            "big-model",
            "small-model",
            "big-model",
            "small-model",
            "small-model",
            "small-model",
            "small-model",
            "big-model"
        ]
    );

    // The report counts them: two fast answers kept, four replaced by the main model.
    let (_, usage) = run(&home, &server, &["usage"]).await;
    assert_eq!(usage["routing"]["fast"], 2, "{usage}");
    assert_eq!(usage["routing"]["strong"], 4);
    assert_eq!(usage["routing"]["escalated"], 4);

    let (out, off) = run(&home, &server, &["providers", "routing", "--no-cascade"]).await;
    assert!(out.status.success());
    assert_eq!(off["cascade"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daily_cap_warns_at_80_percent_refuses_past_100_and_offers_three_ways_on() {
    // Each call reads 100,000 tokens and writes 5: $0.1001 at $1 per million in, $20 out.
    let priced = |t: &str| stream(text_stream(&[t], Some((100_000, 5, 0))));
    let server = LlmServer::start(vec![
        priced("One."),
        priced("Two."),
        // The third message is refused: the server never sees it.
        priced("From the local model."),
        priced("Sent anyway."),
    ])
    .await;
    let home = cloud_home(&server, None).await;
    let price = [
        "models",
        "set",
        "big-model",
        "--input-price",
        "1",
        "--output-price",
        "20",
    ];
    let (out, v) = run(&home, &server, &price).await;
    assert!(out.status.success(), "{v}");

    // No cap yet: nothing to show.
    let (out, none) = run(&home, &server, &["usage", "budget"]).await;
    assert!(out.status.success(), "{none}");
    assert_eq!(none["status"], serde_json::json!([]));
    // A cap for a provider that does not exist is refused; a number is needed.
    let (out, v) = run(
        &home,
        &server,
        &["usage", "budget", "--provider", "nope", "--daily", "1"],
    )
    .await;
    assert!(!out.status.success());
    assert_eq!(v["error"]["code"], "not_found", "{v}");
    let (out, v) = run(&home, &server, &["usage", "budget", "--daily", "lots"]).await;
    assert!(!out.status.success());
    assert_eq!(v["error"]["code"], "invalid_input", "{v}");

    let (out, set) = run(&home, &server, &["usage", "budget", "--daily", "0.22"]).await;
    assert!(out.status.success(), "{set}");
    assert_eq!(set["caps"]["overall"]["daily_usd"], 0.22);
    assert_eq!(set["status"][0]["period"], "day");
    assert_eq!(set["status"][0]["spent_usd"], 0.0);

    // 45 %: no notice.
    let (out, one) = run(&home, &server, &["chat", "Hello?"]).await;
    assert!(out.status.success(), "{one}");
    assert_eq!(one["budget"], Value::Null, "{one}");
    // The reservation was at most the output limit at $10 per million: far under the cap.
    let max_tokens = server.seen()[0].body["max_tokens"]
        .as_u64()
        .expect("max_tokens");
    assert!(max_tokens * 10 < 40_000 * 1000 / 1000, "{max_tokens}");

    // 83 %: a notice, in JSON and in text.
    let out = with_stdin(&home, &server, &["chat", "Hello again?"], "file", "").await;
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: You have spent $0.20 of your daily budget of $0.22 (91 %)."),
        "{stderr}"
    );

    // Past 100 %: the message is not sent, nothing is stored, and the error names the ways on.
    let (_, before) = run(&home, &server, &["conversations", "list"]).await;
    let (out, refused) = run(&home, &server, &["chat", "And again?"]).await;
    assert_eq!(out.status.code(), Some(1), "{refused}");
    assert_eq!(refused["error"]["code"], "over_budget", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("would cross your daily budget")
            && message
                .contains("Send this message anyway, switch to a local model, or raise the cap"),
        "{message}"
    );
    assert_eq!(
        server.seen().len(),
        2,
        "the refused call never reached the server"
    );
    let (_, after) = run(&home, &server, &["conversations", "list"]).await;
    assert_eq!(
        before, after,
        "a refused message leaves no conversation behind"
    );

    // A local model still answers (no price on this 127.0.0.1 server: free).
    let (out, local) = run(
        &home,
        &server,
        &["chat", "--model", "local-model", "And again?"],
    )
    .await;
    assert!(out.status.success(), "{local}");
    assert_eq!(local["answer"], "From the local model.");
    assert_eq!(local["model"], "local-model");
    assert_eq!(local["cost_usd"], 0.0);

    // This message anyway: sent, answered, and recorded as sent over the cap.
    let (out, anyway) = run(&home, &server, &["chat", "--over-budget", "And again?"]).await;
    assert!(out.status.success(), "{anyway}");
    assert_eq!(anyway["answer"], "Sent anyway.");
    assert_eq!(anyway["budget"]["period"], "day");
    assert!(anyway["budget"]["spent_usd"].as_f64().unwrap_or(0.0) > 0.30);
    let id = anyway["conversation"].as_str().expect("conversation");
    let (_, shown) = run(&home, &server, &["conversations", "show", id]).await;
    assert_eq!(shown[1]["turn"]["over_budget"], true, "{shown}");
    let (_, status) = run(&home, &server, &["usage", "budget"]).await;
    let spent = status["status"][0]["spent_usd"].as_f64().unwrap_or(0.0);
    assert!((spent - 0.3003).abs() < 1e-9, "{status}");
    let (_, usage) = run(&home, &server, &["usage"]).await;
    assert_eq!(usage["total"]["calls"], 4, "{usage}");

    // Raising the cap lets messages through again; removing it leaves no cap.
    let (out, raised) = run(&home, &server, &["usage", "budget", "--daily", "none"]).await;
    assert!(out.status.success(), "{raised}");
    assert_eq!(raised["status"], serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_response_cache_answers_only_a_request_identical_in_every_byte() {
    let text = |t: &str| stream(text_stream(&[t], Some((50, 5, 0))));
    let server = LlmServer::start(vec![
        text("Lima."),
        text("Santiago."),
        text("Lima, where your trip starts."),
        text("Lima, again."),
        stream(tool_call_stream(&[(
            "t1",
            "list_directory",
            r#"{"path": "."}"#,
        )])),
        text("Nothing there."),
        stream(tool_call_stream(&[(
            "t2",
            "list_directory",
            r#"{"path": "."}"#,
        )])),
        text("Still nothing."),
        text("Lima, regenerated."),
        text("Lima, temporarily."),
    ])
    .await;
    let home = cloud_home(&server, None).await;
    let (out, on) = run(&home, &server, &["providers", "cache", "--on"]).await;
    assert!(out.status.success(), "{on}");
    assert_eq!(
        on,
        serde_json::json!({"enabled": true, "ttl_hours": 24, "entries": 0, "semantic": false,
                           "similarity": 0.95, "semantic_entries": 0, "cleared": 0})
    );
    let question = "What's the capital of Peru?";

    // Asked in a new chat, then again in another: the second answer is the saved one, and
    // the server is not called.
    let (_, first) = run(&home, &server, &["chat", question]).await;
    assert_eq!(first["cached"], false, "{first}");
    let (_, again) = run(&home, &server, &["chat", question]).await;
    assert_eq!(again["answer"], "Lima.", "{again}");
    assert_eq!(again["cached"], true);
    assert_eq!(server.seen().len(), 1);
    let b = again["conversation"]
        .as_str()
        .expect("conversation")
        .to_owned();
    let (_, shown) = run(&home, &server, &["conversations", "show", &b]).await;
    assert_eq!(shown[1]["turn"]["cached"], true, "{shown}");

    // Other history: a miss.
    let (_, chile) = run(
        &home,
        &server,
        &["chat", "--conversation", &b, "And of Chile?"],
    )
    .await;
    assert_eq!(chile["answer"], "Santiago.", "{chile}");
    assert_eq!(chile["cached"], false);

    // A memory in the prompt now: a miss; asked again with the same memory: a hit.
    let (out, memory) = run(
        &home,
        &server,
        &[
            "memory",
            "add",
            "--pin",
            "User is planning a trip to Peru in May.",
        ],
    )
    .await;
    assert!(out.status.success(), "{memory}");
    let (_, with_memory) = run(&home, &server, &["chat", question]).await;
    assert_eq!(
        with_memory["answer"], "Lima, where your trip starts.",
        "{with_memory}"
    );
    assert!(with_memory["context"]["memory"].as_u64().unwrap_or(0) > 0);
    let (_, hit) = run(&home, &server, &["chat", question]).await;
    assert_eq!(hit["answer"], "Lima, where your trip starts.", "{hit}");
    assert_eq!(hit["cached"], true);
    // Deleting the memory purges every answer that carried one.
    let (_, cache) = run(&home, &server, &["providers", "cache"]).await;
    assert_eq!(
        cache["entries"], 3,
        "Peru, Chile, Peru with the memory: {cache}"
    );
    let id = memory["id"].as_str().expect("memory id");
    let (out, _) = run(&home, &server, &["memory", "delete", id]).await;
    assert!(out.status.success());
    let (_, cache) = run(&home, &server, &["providers", "cache"]).await;
    assert_eq!(
        cache["entries"], 2,
        "the answers without memory are left: {cache}"
    );

    // Deleting the conversation it came from removes it: asked again, the model answers.
    let a = first["conversation"].as_str().expect("conversation");
    let (out, _) = run(&home, &server, &["conversations", "delete", a, "--yes"]).await;
    assert!(out.status.success());
    let (_, cache) = run(&home, &server, &["providers", "cache"]).await;
    assert_eq!(
        cache["entries"], 1,
        "Chile's, in the other conversation: {cache}"
    );
    let (_, fresh) = run(&home, &server, &["chat", question]).await;
    assert_eq!(fresh["answer"], "Lima, again.", "{fresh}");

    // A turn whose model called a tool is never saved: the same request asks again.
    for expected in ["Nothing there.", "Still nothing."] {
        let (out, listed) = run(&home, &server, &["chat", "What is in my notes folder?"]).await;
        assert!(out.status.success(), "{listed}");
        assert_eq!(listed["answer"], expected, "{listed}");
        assert_eq!(listed["cached"], false);
    }

    // Regenerate exists to get a new answer; a temporary chat neither reads nor saves.
    let f = fresh["conversation"].as_str().expect("conversation");
    let (_, regenerated) = run(
        &home,
        &server,
        &["chat", "--conversation", f, "--regenerate"],
    )
    .await;
    assert_eq!(regenerated["answer"], "Lima, regenerated.", "{regenerated}");
    let (_, temporary) = run(&home, &server, &["chat", "--temporary", question]).await;
    assert_eq!(temporary["answer"], "Lima, temporarily.", "{temporary}");
    assert_eq!(server.seen().len(), 10);

    // Off: nothing kept.
    let (_, off) = run(&home, &server, &["providers", "cache", "--off"]).await;
    assert_eq!(off["enabled"], false);
    assert_eq!(off["entries"], 0);
    let (out, bad) = run(&home, &server, &["providers", "cache", "--ttl-hours", "0"]).await;
    assert!(!out.status.success());
    assert_eq!(bad["error"]["code"], "invalid_input", "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_semantic_cache_answers_a_stateless_paraphrase_and_never_with_memory_history_or_other_numbers()
 {
    let text = |t: &str| stream(text_stream(&[t], Some((50, 5, 0))));
    let server = LlmServer::start(vec![
        text("About 8.05 km."),
        text("About 80.5 km."),
        text("Still about 8.05 km."),
        text("About 8 km: your usual morning run."),
        text("8.05 km, freshly worked out."),
    ])
    .await;
    let home = cloud_home(&server, None).await;
    let (out, on) = run(&home, &server, &["providers", "cache", "--semantic"]).await;
    assert!(out.status.success(), "{on}");
    assert_eq!(
        (&on["semantic"], &on["enabled"]),
        (&json!(true), &json!(false)),
        "{on}"
    );
    let question = "How many kilometres is 5 miles?";
    let marker = "About 8.05 km.";

    // A new chat, nothing about the user in it: saved; a paraphrase in another new chat is
    // answered from it without a request, and says which question it answered.
    let (_, first) = run(&home, &server, &["chat", question]).await;
    assert_eq!(first["answer"], marker, "{first}");
    assert_eq!(first["cached_from"], Value::Null);
    // Typed again another way (case, punctuation): the exact cache misses, this does not.
    let paraphrase = "how many kilometres is 5 miles";
    let (_, hit) = run(&home, &server, &["chat", paraphrase]).await;
    assert_eq!(hit["answer"], marker, "{hit}");
    assert_eq!(
        (&hit["cached"], &hit["cached_from"]),
        (&json!(true), &json!(question))
    );
    assert_eq!(server.seen().len(), 1, "no request for the paraphrase");
    let b = hit["conversation"]
        .as_str()
        .expect("conversation")
        .to_owned();
    let (_, shown) = run(&home, &server, &["conversations", "show", &b]).await;
    assert_eq!(shown[1]["turn"]["cached_from"], question, "{shown}");
    // In text mode the answer says so, with the way to ask the model instead.
    let out = with_stdin(&home, &server, &["chat", paraphrase], "file", "").await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("answered from a saved reply to: “{question}”")),
        "{said}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), marker);

    // Other numbers are another question, however close the words.
    let (_, fifty) = run(
        &home,
        &server,
        &["chat", "How many kilometres is 50 miles?"],
    )
    .await;
    assert_eq!(fifty["answer"], "About 80.5 km.", "{fifty}");
    assert_eq!(fifty["cached"], false);
    // With history, never: the same words later in a conversation go to the model.
    let (_, later) = run(&home, &server, &["chat", "--conversation", &b, question]).await;
    assert_eq!(later["answer"], "Still about 8.05 km.", "{later}");
    // With a memory in the prompt, never.
    let (out, memory) = run(
        &home,
        &server,
        &["memory", "add", "--pin", "User runs 5 miles every morning."],
    )
    .await;
    assert!(out.status.success(), "{memory}");
    let (_, with_memory) = run(&home, &server, &["chat", question]).await;
    assert_eq!(
        with_memory["answer"], "About 8 km: your usual morning run.",
        "{with_memory}"
    );
    assert!(with_memory["context"]["memory"].as_u64().unwrap_or(0) > 0);
    let id = memory["id"].as_str().expect("memory id");
    let (out, _) = run(&home, &server, &["memory", "delete", id]).await;
    assert!(out.status.success());

    // "Ask the model instead": Regenerate never reads a cache.
    let (_, again) = run(
        &home,
        &server,
        &["chat", "--conversation", &b, "--regenerate"],
    )
    .await;
    assert_eq!(again["answer"], "8.05 km, freshly worked out.", "{again}");
    assert_eq!(server.seen().len(), 5);

    // Encrypted at rest like everything else: the saved answer is nowhere in plaintext.
    let mut files = vec![home.root.clone()];
    while let Some(dir) = files.pop() {
        for e in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                files.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                assert!(
                    !bytes.windows(marker.len()).any(|w| w == marker.as_bytes()),
                    "plaintext in {}",
                    p.display()
                );
            }
        }
    }
    // Deleting the conversation it came from removes the entry.
    let (_, cache) = run(&home, &server, &["providers", "cache"]).await;
    let before = cache["semantic_entries"].as_u64().expect("entries");
    let a = first["conversation"].as_str().expect("conversation");
    let (out, _) = run(&home, &server, &["conversations", "delete", a, "--yes"]).await;
    assert!(out.status.success());
    let (_, cache) = run(&home, &server, &["providers", "cache"]).await;
    assert_eq!(
        cache["semantic_entries"].as_u64(),
        Some(before - 1),
        "{cache}"
    );
    // A threshold that would match different questions is refused; off keeps nothing.
    let (out, bad) = run(
        &home,
        &server,
        &["providers", "cache", "--similarity", "0.5"],
    )
    .await;
    assert!(!out.status.success());
    assert_eq!(bad["error"]["code"], "invalid_input", "{bad}");
    let (_, off) = run(&home, &server, &["providers", "cache", "--no-semantic"]).await;
    assert_eq!(
        (&off["semantic"], &off["semantic_entries"]),
        (&json!(false), &json!(0))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hearth_usage_counts_the_routers_decisions_and_what_routing_saved() {
    let (server, home) = two_model_provider(&["You're welcome.", "Day one: the river."]).await;
    for (model, input, output) in [("big-model", "10", "30"), ("small-model", "0.1", "0.4")] {
        let (out, v) = run(
            &home,
            &server,
            &[
                "models",
                "set",
                model,
                "--input-price",
                input,
                "--output-price",
                output,
            ],
        )
        .await;
        assert!(out.status.success(), "{v}");
    }
    let (_, fast) = run(&home, &server, &["chat", "Thanks!"]).await;
    assert_eq!(fast["model"], "small-model", "{fast}");
    let (_, strong) = run(
        &home,
        &server,
        &["chat", "Plan a three-day trip to Porto with a toddler."],
    )
    .await;
    assert_eq!(strong["model"], "big-model", "{strong}");
    let (out, usage) = run(&home, &server, &["usage"]).await;
    assert!(out.status.success(), "{usage}");
    let routing = &usage["routing"];
    assert_eq!(routing["fast"], 1, "{usage}");
    assert_eq!(routing["strong"], 1);
    assert_eq!(routing["escalated"], 0);
    // 50 tokens in, 5 out: $0.0000070 on the fast model, $0.00065 on the main one.
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    assert!(
        (f(&routing["fast_cost_usd"]) - 0.000007).abs() < 1e-12,
        "{routing}"
    );
    assert!(
        (f(&routing["always_strong_usd"]) - 0.00065).abs() < 1e-12,
        "{routing}"
    );
    assert!(
        (f(&routing["saved_usd"]) - 0.000643).abs() < 1e-12,
        "{routing}"
    );
    assert_eq!(usage["cache_hit_ratio"], 0.0);
    let out = with_stdin(&home, &server, &["usage"], "file", "").await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("answers: 1 fast, 1 main (0 escalated), 0 from the response cache")
            && text.contains("routing saved about $0.0006: the fast answers cost $0.0000, $0.0006 on the main model"),
        "{text}"
    );
}

/// A provider whose model costs $1 per million tokens in and `output` out, under a daily
/// cap of $0.12: one call reading 100,000 tokens ($0.10) takes it past 80 %.
async fn capped_provider(output: &str, replies: Vec<Reply>) -> (LlmServer, Home) {
    let server = LlmServer::start(replies).await;
    // The same priced model learns too (an unpriced one on this local server would be free).
    let home = cloud_home(&server, Some("big-model")).await;
    let price = [
        "models",
        "set",
        "big-model",
        "--input-price",
        "1",
        "--output-price",
        output,
    ];
    let (out, v) = run(&home, &server, &price).await;
    assert!(out.status.success(), "{v}");
    let (out, v) = run(&home, &server, &["usage", "budget", "--daily", "0.12"]).await;
    assert!(out.status.success(), "{v}");
    (server, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_loop_stops_before_the_call_that_would_cross_a_cap() {
    // The first call asks for a tool and reads 100,000 tokens ($0.10): the call after the
    // tool would cross $0.12, so the run stops before it.
    let mut asks = tool_call_stream(&[("l1", "list_directory", r#"{"path": "."}"#)]);
    asks.push(
        serde_json::json!({"choices": [], "usage": {"prompt_tokens": 100_000, "completion_tokens": 5}})
            .to_string(),
    );
    // $20 per million out: the next call may cost up to $0.035.
    let (server, home) = capped_provider(
        "20",
        vec![
            stream(asks),
            stream(text_stream(&["Never sent."], Some((100_000, 5, 0)))),
        ],
    )
    .await;
    let (out, turn) = run(&home, &server, &["chat", "What is in my notes folder?"]).await;
    assert!(out.status.success(), "{turn}");
    assert_eq!(turn["stop_reason"], "budget", "{turn}");
    assert_eq!(turn["tool_calls"][0]["tool"], "list_directory");
    assert_eq!(server.seen().len(), 1, "the second call was never sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learning_pauses_at_80_percent_of_a_cap_while_the_user_can_still_ask() {
    // $5 per million out: the user's next message ($0.01 at most) still fits under $0.12,
    // learning ($0.01 more) would pass the 80 % at which background work stops.
    let (server, home) = capped_provider(
        "5",
        vec![
            stream(text_stream(&["Noted."], Some((100_000, 5, 0)))),
            stream(text_stream(&["Never asked."], Some((10, 5, 0)))),
        ],
    )
    .await;
    // The answer takes spending to 83 %: the user is told, and learning from the exchange
    // (another call of the same priced model) waits instead of spending the rest.
    let out = with_stdin(
        &home,
        &server,
        &[
            "chat",
            "--learn",
            "I live in Lisbon and I am allergic to peanuts.",
        ],
        "file",
        "",
    )
    .await;
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(83 %)"), "{stderr}");
    assert!(
        stderr.contains("could not learn from this exchange yet")
            && stderr.contains("Background work (learning, summarising) is paused"),
        "{stderr}"
    );
    assert_eq!(server.seen().len(), 1, "no learning call was sent");
    // The job waits in the queue, none of its attempts used; the user can still ask.
    let (out, doctor) = run(&home, &server, &["doctor"]).await;
    assert!(out.status.success(), "{doctor}");
    assert_eq!(doctor["jobs"]["queued"], 1, "{doctor}");
    assert_eq!(doctor["jobs"]["failed"], 0, "{doctor}");
    let (out, again) = run(&home, &server, &["chat", "And the weather?"]).await;
    assert!(out.status.success(), "{again}");
    assert_eq!(again["answer"], "Never asked.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_asks_to_slow_down_holds_the_next_call_and_the_cli_says_so() {
    // The first call (the model asks for a tool) says the request bucket is empty for 3 s:
    // the turn's second call waits in the queue instead of failing, and stderr says why.
    let server = LlmServer::start(vec![
        with_headers(
            &[
                ("x-ratelimit-limit-requests", "1"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "3s"),
            ],
            stream(tool_call_stream(&[(
                "t1",
                "list_directory",
                r#"{"path": "."}"#,
            )])),
        ),
        stream(text_stream(&["Nothing there."], None)),
    ])
    .await;
    let home = cloud_home(&server, None).await;
    let out = with_stdin(
        &home,
        &server,
        &["chat", "What is in my notes folder?"],
        "file",
        "",
    )
    .await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("note: cloud asks Hearth to slow down: waiting about")
            && said.contains("s for its rate limit (Ctrl-C stops)"),
        "{said}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Nothing there."));
    assert_eq!(server.seen().len(), 2, "both calls went, none failed");
}
