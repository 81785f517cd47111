//! The model never erases or rewrites what the user protected, and nothing it decides is a
//! real delete (SPEC §1.2, §4): a change aimed at a pinned or critical memory becomes a
//! proposal the user accepts or rejects; every other removal is soft. Facts come from the
//! user's own words; an import cannot forge a memory's provenance. Against a scripted model
//! that answers by what each request asks.

use std::sync::Arc;

use hearth_testkit::llm_server::*;
use serde_json::{Value, json};

mod common;
use common::*;

/// The id the prompt offers for the memory whose text contains `needle` (`[m-…] text`).
fn offered_id(prompt: &str, needle: &str) -> Option<String> {
    prompt.lines().find(|l| l.contains(needle)).and_then(|l| {
        let start = l.find("[m-")? + 1;
        let end = start + l[start..].find(']')?;
        Some(l[start..end].to_owned())
    })
}

fn extraction(memories: Value, forget: &[&str]) -> Reply {
    answer(&json!({"memories": memories, "forget": forget}).to_string())
}

fn candidate(text: &str, kind: &str, critical: bool) -> Value {
    json!({"text": text, "kind": kind, "subject": null, "importance": 0.8,
           "critical": critical, "event_date": null})
}

/// A model that, for the reconciliation or forget request naming `needle`, answers
/// `action` on that memory (with `text` for an update); extracts `memories` / `forget`.
fn model(
    memories: Value,
    forget: &'static [&'static str],
    action: &'static str,
    needle: &'static str,
    text: Option<&'static str>,
) -> Vec<Reply> {
    let script = Reply::Dynamic(Arc::new(move |body: &Value| {
        let prompt = last_text(body);
        match schema_name(body).as_deref() {
            Some("memory_extraction") => extraction(memories.clone(), forget),
            Some("reconciliation") => match offered_id(&prompt, needle) {
                Some(id) => answer(
                    &json!({"action": action, "id": id, "text": text, "reason": "the user said so"})
                        .to_string(),
                ),
                None => answer(r#"{"action": "ADD", "id": null, "text": null, "reason": "new"}"#),
            },
            _ => answer("Noted."),
        }
    }));
    vec![script; 12]
}

fn proposal_changes(done: &Value) -> Vec<Value> {
    done["memory_changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["op"] == "proposal")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_pinned_critical_memory_makes_a_proposal_and_the_memory_stays_in_the_prompt() {
    let server = LlmServer::start(model(
        json!([]),
        &["the peanut allergy"],
        "DELETE",
        "peanuts",
        None,
    ))
    .await;
    let home = Home::new();
    let m = hearth_ok(
        &home,
        &server,
        &[
            "memory",
            "add",
            "User is allergic to peanuts.",
            "--critical",
            "--pin",
        ],
    )
    .await;
    let id = m["id"].as_str().expect("id").to_owned();

    let done = hearth_ok(
        &home,
        &server,
        &[
            "chat",
            "--learn",
            "Please forget that I'm allergic to peanuts.",
        ],
    )
    .await;
    let proposals = proposal_changes(&done);
    assert_eq!(proposals.len(), 1, "{done}");
    assert_eq!(proposals[0]["memory_id"], id.as_str());
    let proposal_id = proposals[0]["proposal_id"]
        .as_str()
        .expect("proposal id")
        .to_owned();

    // Nothing changed: the memory is active and still goes into every prompt.
    let active = hearth_ok(&home, &server, &["memory", "list"]).await;
    assert_eq!(active[0]["id"], id.as_str());
    assert_eq!(active[0]["status"], "active");
    hearth_ok(&home, &server, &["chat", "What snacks are fine?"]).await;
    let last = server.seen().last().expect("a request").raw.clone();
    assert!(
        String::from_utf8_lossy(&last).contains("allergic to peanuts"),
        "the protected memory is still injected"
    );

    let listed = hearth_ok(&home, &server, &["memory", "proposals"]).await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let p = &listed[0];
    assert_eq!(p["id"], proposal_id.as_str());
    assert_eq!(p["memory_id"], id.as_str());
    assert_eq!(p["action"], "remove");
    assert_eq!(p["proposed_text"], Value::Null);
    assert_eq!(p["new_memory"], Value::Null);
    assert_eq!(p["conversation"], done["conversation"]);
    assert!(p["message_id"].is_i64(), "{p}");
    assert!(
        p["reason"].as_str().is_some_and(|r| r.contains("peanut")),
        "{p}"
    );

    // Accepting removes it softly (restorable, consented to).
    let accepted = hearth_ok(&home, &server, &["memory", "accept", &proposal_id]).await;
    assert_eq!(accepted, json!({"accepted": proposal_id}));
    assert_eq!(
        hearth_ok(&home, &server, &["memory", "list"]).await,
        json!([])
    );
    let removed = hearth_ok(&home, &server, &["memory", "list", "--removed"]).await;
    assert_eq!(texts(&removed), vec!["User is allergic to peanuts."]);
    assert_eq!(removed[0]["removal_awaits_consent"], false);
    assert_eq!(
        hearth_ok(&home, &server, &["memory", "proposals"]).await,
        json!([])
    );
    let out = output(home.cmd(&server, &["memory", "accept", &proposal_id, "--json"])).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["error"]["code"], "not_found");
    let restored = hearth_ok(&home, &server, &["memory", "restore", &id]).await;
    assert_eq!(restored["critical"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_of_a_pinned_memory_waits_and_rejecting_it_keeps_the_text() {
    let server = LlmServer::start(model(
        json!([candidate("User lives in Lisbon.", "fact", false)]),
        &[],
        "UPDATE",
        "Chicago",
        Some("User lives in Lisbon."),
    ))
    .await;
    let home = Home::new();
    let m = hearth_ok(
        &home,
        &server,
        &["memory", "add", "User lives in Chicago.", "--pin"],
    )
    .await;
    let id = m["id"].as_str().expect("id").to_owned();
    let done = hearth_ok(
        &home,
        &server,
        &["chat", "--learn", "I live in Lisbon now."],
    )
    .await;
    let proposals = proposal_changes(&done);
    assert_eq!(proposals.len(), 1, "{done}");
    assert_eq!(proposals[0]["text"], "User lives in Lisbon.");
    assert_eq!(proposals[0]["old_text"], "User lives in Chicago.");
    let listed = hearth_ok(&home, &server, &["memory", "proposals"]).await;
    assert_eq!(listed[0]["action"], "update");
    assert_eq!(listed[0]["proposed_text"], "User lives in Lisbon.");
    assert_eq!(
        texts(&hearth_ok(&home, &server, &["memory", "list"]).await),
        vec!["User lives in Chicago."]
    );

    let pid = listed[0]["id"].as_str().expect("id").to_owned();
    let rejected = hearth_ok(&home, &server, &["memory", "reject", &pid]).await;
    assert_eq!(rejected, json!({"rejected": pid}));
    assert_eq!(
        hearth_ok(&home, &server, &["memory", "proposals"]).await,
        json!([])
    );
    let shown = hearth_ok(&home, &server, &["memory", "show", &id]).await;
    assert_eq!(shown["memory"]["text"], "User lives in Chicago.");
    assert!(
        !shown["history"]
            .as_array()
            .expect("history")
            .iter()
            .any(|h| h["op"] == "update"),
        "never rewritten"
    );
    let out = output(home.cmd(&server, &["memory", "reject", "p-nope", "--json"])).await;
    assert_eq!(json_of(&out)["error"]["code"], "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_replacing_a_critical_memory_keeps_the_new_one_inside_the_proposal() {
    let server = LlmServer::start(model(
        json!([candidate("User eats fish again.", "preference", false)]),
        &[],
        "DELETE",
        "vegetarian",
        None,
    ))
    .await;
    let home = Home::new();
    hearth_ok(
        &home,
        &server,
        &[
            "memory",
            "add",
            "User is vegetarian and eats no fish.",
            "--kind",
            "preference",
            "--critical",
        ],
    )
    .await;
    let done = hearth_ok(
        &home,
        &server,
        &["chat", "--learn", "Good news: I eat fish again."],
    )
    .await;
    assert_eq!(proposal_changes(&done).len(), 1, "{done}");
    // No contradictory pair meanwhile: the candidate is not stored yet.
    assert_eq!(
        texts(&hearth_ok(&home, &server, &["memory", "list"]).await),
        vec!["User is vegetarian and eats no fish."]
    );
    let listed = hearth_ok(&home, &server, &["memory", "proposals"]).await;
    assert_eq!(listed[0]["action"], "remove");
    assert_eq!(listed[0]["new_memory"]["text"], "User eats fish again.");
    assert_eq!(listed[0]["new_memory"]["kind"], "preference");

    let pid = listed[0]["id"].as_str().expect("id").to_owned();
    hearth_ok(&home, &server, &["memory", "accept", &pid]).await;
    let active = hearth_ok(&home, &server, &["memory", "list"]).await;
    assert_eq!(texts(&active), vec!["User eats fish again."]);
    assert_eq!(active[0]["source"]["kind"], "conversation");
    assert_eq!(
        texts(&hearth_ok(&home, &server, &["memory", "list", "--removed"]).await),
        vec!["User is vegetarian and eats no fish."]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forget_the_model_resolves_on_an_ordinary_memory_is_soft_and_restorable() {
    let server = LlmServer::start(model(
        json!([]),
        &["the jazz thing"],
        "DELETE",
        "jazz",
        None,
    ))
    .await;
    let home = Home::new();
    let m = hearth_ok(&home, &server, &["memory", "add", "User likes jazz."]).await;
    let id = m["id"].as_str().expect("id").to_owned();
    let done = hearth_ok(
        &home,
        &server,
        &["chat", "--learn", "Forget that I like jazz."],
    )
    .await;
    let ops: Vec<&str> = done["memory_changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|c| c["op"].as_str())
        .collect();
    assert_eq!(ops, ["remove"], "{done}");
    let removed = hearth_ok(&home, &server, &["memory", "list", "--removed"]).await;
    assert_eq!(texts(&removed), vec!["User likes jazz."]);
    assert_eq!(removed[0]["removal_awaits_consent"], true);
    assert_eq!(
        hearth_ok(&home, &server, &["memory", "restore", &id]).await["status"],
        "active"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_come_from_the_users_words_not_the_answer() {
    let script = Reply::Dynamic(Arc::new(|body: &Value| {
        let prompt = last_text(body);
        match schema_name(body).as_deref() {
            // The model wrongly takes the assistant's guess as a fact about the user.
            Some("memory_extraction") if prompt.contains("cook tonight") => extraction(
                json!([candidate("User lives in Berlin.", "fact", false)]),
                &[],
            ),
            Some("memory_extraction") => extraction(
                json!([candidate("User is married to Ana.", "fact", false)]),
                &[],
            ),
            Some(_) => answer(r#"{"action": "ADD", "id": null, "text": null, "reason": "new"}"#),
            None if last_text(body).contains("cook tonight") => {
                answer("Since you live in Berlin, try a Currywurst tonight.")
            }
            None => answer("That's lovely."),
        }
    }));
    let server = LlmServer::start(vec![script; 8]).await;
    let home = Home::new();
    let done = hearth_ok(
        &home,
        &server,
        &["chat", "--learn", "What should I cook tonight?"],
    )
    .await;
    assert_eq!(done["memory_changes"], json!([]), "{done}");
    assert_eq!(
        hearth_ok(&home, &server, &["memory", "list"]).await,
        json!([])
    );
    // The positive control: a paraphrase of the user's own words is kept.
    hearth_ok(
        &home,
        &server,
        &["chat", "--learn", "My wife Ana and I are going to Rome."],
    )
    .await;
    assert_eq!(
        texts(&hearth_ok(&home, &server, &["memory", "list"]).await),
        vec!["User is married to Ana."]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_facts_and_preferences_may_be_learned_as_critical() {
    let server = LlmServer::start(model(
        json!([
            candidate("Always answer in French.", "instruction", true),
            candidate("User is allergic to shellfish.", "fact", true),
        ]),
        &[],
        "ADD",
        "nothing",
        None,
    ))
    .await;
    let home = Home::new();
    hearth_ok(
        &home,
        &server,
        &[
            "chat",
            "--learn",
            "I'm allergic to shellfish. Always answer in French.",
        ],
    )
    .await;
    let list = hearth_ok(&home, &server, &["memory", "list"]).await;
    let of = |text: &str| {
        list.as_array()
            .and_then(|a| a.iter().find(|m| m["text"] == text))
            .cloned()
            .unwrap_or_else(|| panic!("{text} not learned: {list}"))
    };
    assert_eq!(of("Always answer in French.")["critical"], false);
    assert_eq!(of("Always answer in French.")["pinned"], false);
    assert_eq!(of("User is allergic to shellfish.")["critical"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_line_cannot_claim_to_come_from_a_conversation() {
    let server = LlmServer::start(Vec::new()).await;
    let home = Home::new();
    let line = json!({
        "schema": "hearth.memory/1", "id": "m-000000000001", "text": "User owns a boat.",
        "kind": "fact", "subject": null, "importance": 0.5, "pinned": false, "critical": false,
        "confidence": 1.0,
        "source": {"kind": "conversation", "conversation": "c-forged", "message": 7},
        "event_at": null, "created": 1_700_000_000_000_i64, "updated": 1_700_000_000_000_i64,
        "last_used": null, "use_count": 0, "status": "active", "removed_at": null,
        "embed_model": null, "history": []
    });
    let file = home.root.with_extension("jsonl");
    std::fs::write(&file, format!("{line}\n")).expect("write");
    let report = hearth_ok(
        &home,
        &server,
        &["memory", "import", file.to_str().expect("path")],
    )
    .await;
    assert_eq!(report, json!({"added": 1, "skipped": 0}));
    let list = hearth_ok(&home, &server, &["memory", "list"]).await;
    assert_eq!(list[0]["source"], json!({"kind": "import"}));
    assert_eq!(list[0]["imported_from"]["conversation"], "c-forged");

    // An over-long line stops the import with a clear error; nothing is stored.
    let huge = format!("{line}\n{}\n", "x".repeat(2 * 1024 * 1024));
    std::fs::write(&file, huge).expect("write");
    let out = output(home.cmd(
        &server,
        &["memory", "import", file.to_str().expect("path"), "--json"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = json_of(&out);
    assert_eq!(err["error"]["code"], "invalid_input");
    assert!(
        err["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("line 2")),
        "{err}"
    );
    assert_eq!(
        hearth_ok(&home, &server, &["memory", "list"])
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_extraction_answer_never_puts_its_text_in_a_log_or_a_file() {
    const MARKER: &str = "MARKER-7f3a9c-secret-memory-text";
    let script = Reply::Dynamic(Arc::new(|body: &Value| {
        match schema_name(body).as_deref() {
            Some(_) => answer(&json!({"memories": MARKER, "forget": []}).to_string()),
            None => answer("Sure."),
        }
    }));
    let server = LlmServer::start(vec![script; 4]).await;
    let home = Home::new();
    let mut cmd = home.cmd(
        &server,
        &["chat", "--learn", "Remember this please.", "--json"],
    );
    cmd.env("HEARTH_LOG", "debug");
    let out = output(cmd).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("wrong shape"),
        "the failure is logged: {stderr}"
    );
    assert!(
        !stderr.contains(MARKER),
        "the model's text is not logged: {stderr}"
    );
    for entry in walk(&home.root) {
        let bytes = std::fs::read(&entry).expect("read");
        assert!(
            !bytes.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()),
            "{} holds the marker",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
