//! The product rules the front ends used to keep, each now decided once in the engine and
//! tested at the façade: an empty message, search limits, the forget range, an unknown
//! grant or MCP server, and which model learns from a turn.

mod common;

use hearth_core::chat::{ChatOptions, Redo};
use hearth_core::folders::search::Mode;
use hearth_core::memory::{Kind, NewMemory};
use hearth_core::providers::{NewProvider, Preset};
use hearth_core::{Hearth, IndexOptions, KeyBackend, ModelChoice, SearchScope};
use hearth_testkit::llm_server::*;
use tokio_util::sync::CancellationToken;

fn open() -> (tempfile::TempDir, Hearth) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = Hearth::open(&common::options(tmp.path(), KeyBackend::File)).expect("open");
    (tmp, hearth)
}

fn provider(hearth: &Hearth, name: &str, server: &LlmServer) {
    hearth
        .providers()
        .add(
            NewProvider {
                name: name.into(),
                preset: Preset::parse("custom").expect("preset"),
                base_url: Some(server.base_url.clone()),
                model: Some(format!("{name}-model")),
                fast_model: None,
                context_window: None,
            },
            None,
        )
        .expect("provider");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_message_is_refused_before_anything_is_stored_or_sent() {
    let (_tmp, hearth) = open();
    let server = LlmServer::start(vec![]).await;
    provider(&hearth, "lab", &server);
    for text in ["", "   ", " \n\t "] {
        for redo in [Redo::No, Redo::EditLast] {
            let options = ChatOptions {
                message: text.into(),
                redo,
                ..ChatOptions::default()
            };
            let err = hearth
                .turn(options, &ModelChoice::default())
                .err()
                .expect("refused");
            assert_eq!(err.code(), "invalid_input", "{text:?}");
        }
    }
    // The same through the lower-level call the turn runs.
    let slots = hearth.providers().for_chat(None, None).expect("slots");
    let err = hearth
        .chat(
            &slots,
            ChatOptions {
                message: "  ".into(),
                ..ChatOptions::default()
            },
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("refused");
    assert_eq!(err.code(), "invalid_input");
    assert!(server.seen().is_empty(), "nothing was sent");
    assert!(
        hearth.conversations().list().expect("list").is_empty(),
        "nothing was stored"
    );
}

#[test]
fn a_search_returns_ten_by_default_and_never_fewer_than_one_or_more_than_fifty() {
    let (tmp, hearth) = open();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    for i in 0..60 {
        std::fs::write(
            docs.join(format!("note{i:02}.txt")),
            format!("note {i}: the brass lantern hangs by the door\n"),
        )
        .expect("write");
    }
    let folders = hearth.folders();
    folders.add(&docs).expect("add");
    // The extraction worker is a Hearth binary: the CLI the workspace build made.
    let exe = std::env::current_exe().expect("test exe");
    let cli = exe
        .parent()
        .and_then(std::path::Path::parent)
        .map(|d| d.join(format!("hearth{}", std::env::consts::EXE_SUFFIX)))
        .expect("target dir");
    assert!(
        cli.exists(),
        "{} is missing: build the workspace first",
        cli.display()
    );
    folders
        .index(
            &IndexOptions {
                wait: true,
                worker: Some(hearth_core::folders::worker::WorkerCommand::program(cli)),
                ..IndexOptions::default()
            },
            &mut |_| {},
        )
        .expect("index");
    for (asked, expected) in [(None, 10), (Some(0), 1), (Some(7), 7), (Some(10_000), 50)] {
        let found = folders
            .search("lantern", asked, Mode::Bm25, &SearchScope::default())
            .expect("search");
        assert_eq!(found.results.len(), expected, "{asked:?}");
    }
    let err = Mode::parse("fuzzy").expect_err("unknown mode");
    assert_eq!(err.code(), "invalid_input");
}

#[test]
fn a_forget_range_must_run_forward_and_not_lie_in_the_future() {
    let (_tmp, hearth) = open();
    let memory = hearth.memory();
    memory
        .add(NewMemory::manual("Plays the cello on Tuesdays", Kind::Fact))
        .expect("add");
    let now = hearth_core::time::now_millis();
    let day = 86_400_000;
    for (from, to) in [
        (now - day, now - 2 * day),
        (now, now),
        (now + day, now + 2 * day),
    ] {
        let err = memory.forget_between(from, to).expect_err("refused");
        assert_eq!(err.code(), "invalid_input", "{from}..{to}");
    }
    for (first, last) in [("2026-05-02", "2026-05-01"), ("2099-01-01", "2099-01-02")] {
        let err = hearth_core::MemoryService::day_range(first, last).expect_err("refused");
        assert_eq!(err.code(), "invalid_input", "{first}..{last}");
    }
    let err = hearth_core::MemoryService::day_range("May 1", "2026-05-02").expect_err("no date");
    assert_eq!(err.code(), "invalid_input");
    assert_eq!(memory.list(&Default::default()).expect("list").len(), 1);
    // A forward range in the past is fine, and takes what was created in it.
    let (from, to) = (now - day, now + day);
    assert_eq!(memory.forget_between(from, to).expect("forget"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_grant_or_mcp_server_is_not_found() {
    let (_tmp, hearth) = open();
    let err = hearth.activity().revoke_grant(4242).expect_err("no grant");
    assert_eq!(err.code(), "not_found");
    let mcp = hearth.mcp();
    assert_eq!(mcp.server("nope").expect_err("none").code(), "not_found");
    assert_eq!(mcp.log("nope").expect_err("none").code(), "not_found");
    assert_eq!(
        mcp.remove("nope").await.expect_err("none").code(),
        "not_found"
    );
    assert_eq!(
        mcp.set_enabled("nope", false)
            .await
            .expect_err("none")
            .code(),
        "not_found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_that_learns_from_a_turn_is_the_one_the_user_chose_for_it() {
    let (_tmp, hearth) = open();
    // The configured provider (listed first) and the one this turn names.
    let configured = LlmServer::start(vec![]).await;
    let chosen = LlmServer::start(vec![
        stream(text_stream(&["Noted: you play the cello."], None)),
        // The learning call: what it gets back does not matter here, only where it went.
        status(400, "{\"error\": {\"message\": \"not today\"}}"),
    ])
    .await;
    provider(&hearth, "a-cloud", &configured);
    provider(&hearth, "b-local", &chosen);
    let turn = hearth
        .turn(
            ChatOptions {
                message: "I play the cello every Tuesday.".into(),
                ..ChatOptions::default()
            },
            &ModelChoice {
                provider: Some("b-local".into()),
                model: None,
            },
        )
        .expect("turn");
    assert_eq!(turn.answering(), ("b-local", "b-local-model"));
    let outcome = turn
        .run(&CancellationToken::new(), |_| {})
        .await
        .expect("answer");
    let job = outcome.learn_job.expect("a learning job");
    let _ = turn.learn_now(job).await;
    assert!(
        configured.seen().is_empty(),
        "the configured provider saw nothing of this turn"
    );
    let seen = chosen.seen();
    assert!(
        seen.len() >= 2,
        "the answer and the learning went to the chosen one: {}",
        seen.len()
    );
    assert!(seen.iter().all(|r| r.body["model"] == "b-local-model"));
}

#[test]
fn no_automatic_update_check_until_the_user_says_yes_then_one_a_day() {
    use hearth_core::UPDATE_CHECK_EVERY_MS as CHECK_EVERY_MS;
    let (_tmp, hearth) = open();
    let updates = hearth.updates();
    let now = 1_800_000_000_000;
    // Not asked yet: nothing reaches the network on its own.
    assert_eq!(updates.settings().expect("settings").check, None);
    assert!(!updates.due(now).expect("due"));
    // The first-run answer "no" keeps it so.
    updates.set_check(false).expect("no");
    assert!(!updates.due(now).expect("due"));
    // "Yes": a check now, then not again within a day, then again.
    let on = updates.set_check(true).expect("yes");
    assert_eq!(on.check, Some(true));
    assert!(updates.due(now).expect("due"));
    updates.record_check(now).expect("record");
    assert_eq!(
        updates.settings().expect("settings").last_checked_at,
        Some(now)
    );
    assert!(!updates.due(now + CHECK_EVERY_MS - 1).expect("due"));
    assert!(updates.due(now + CHECK_EVERY_MS).expect("due"));
    // A clock set back does not stop checks for good.
    assert!(updates.due(now - 1).expect("due"));
    // Turned off in Settings: no more automatic checks, the last time is kept.
    updates.set_check(false).expect("off");
    assert!(!updates.due(now + 2 * CHECK_EVERY_MS).expect("due"));
    assert_eq!(
        updates.settings().expect("settings").last_checked_at,
        Some(now)
    );
}
