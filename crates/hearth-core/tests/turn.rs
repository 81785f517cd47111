//! A whole chat turn against rude or unlucky conditions: a provider asking for absurd
//! waits, an event too large to read, a checkpoint write that lands late, a panic inside
//! the turn. What is checked is what the user would see: the error, the requests made, and
//! the answer as stored.

use std::time::Duration;

use hearth_core::chat::{ChatModel, ChatOptions, ModelSlots, Sources};
use hearth_core::conversations::{MessageState, StoredMessage};
use hearth_core::llm::{Protocol, Provider};
use hearth_core::types::Role;
use hearth_core::{Hearth, KeyBackend};
use hearth_testkit::llm_server::*;
use tokio_util::sync::CancellationToken;

mod common;

fn slots(server: &LlmServer) -> ModelSlots {
    ModelSlots::single(ChatModel {
        provider: Provider {
            name: "scripted".into(),
            protocol: Protocol::OpenAiCompatible,
            base_url: server.base_url.clone(),
            api_key: None,
            launch: None,
        },
        model: "gpt-4o-mini".into(),
        context_window: None,
    })
}

fn open(dir: &std::path::Path) -> Hearth {
    let hearth = Hearth::open(&common::options(dir, KeyBackend::File)).expect("open");
    hearth.set_sources(Sources::default());
    hearth
}

fn ask(text: &str) -> ChatOptions {
    ChatOptions {
        message: text.into(),
        ..ChatOptions::default()
    }
}

/// The messages of the one conversation of `hearth`.
fn the_messages(hearth: &Hearth) -> Vec<StoredMessage> {
    let convs = hearth.conversations();
    let list = convs.list().expect("list");
    assert_eq!(list.len(), 1, "one conversation");
    convs.messages(&list[0].id).expect("messages")
}

fn the_answer(hearth: &Hearth) -> StoredMessage {
    let messages = the_messages(hearth);
    assert!(
        messages.iter().all(|m| m.state != MessageState::Streaming),
        "no row is left streaming: {messages:?}"
    );
    messages
        .into_iter()
        .rev()
        .find(|m| m.message.role == Role::Assistant)
        .expect("an answer row")
}

#[tokio::test]
async fn a_rate_limit_asking_an_absurd_wait_ends_the_turn_at_once() {
    for asked in ["inf", "1e20"] {
        let server = LlmServer::start(vec![
            status_with(429, &[("retry-after", asked)], "slow down"),
            stream(text_stream(&["never"], None)),
        ])
        .await;
        let tmp = tempfile::tempdir().expect("tempdir");
        let hearth = open(tmp.path());
        let err = hearth
            .chat(
                &slots(&server),
                ask("hello"),
                &CancellationToken::new(),
                |_| {},
            )
            .await
            .expect_err("rate limited");
        assert_eq!(err.code(), "provider_rate_limited", "{asked}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("the provider asked to wait {asked} seconds")),
            "{err}"
        );
        assert_eq!(server.seen().len(), 1, "{asked}: exactly one request");
        let answer = the_answer(&hearth);
        assert_eq!(answer.state, MessageState::Failed);
        assert_eq!(answer.message.content, "");
    }
}

#[tokio::test]
async fn an_event_too_large_keeps_the_answer_so_far_as_interrupted() {
    let before = text_stream(&["So far, "], None)[..1].to_vec();
    let server = LlmServer::start(vec![Reply::Huge {
        before,
        bytes: 8 * 1024 * 1024,
    }])
    .await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = open(tmp.path());
    let err = hearth
        .chat(
            &slots(&server),
            ask("hello"),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("too large");
    assert_eq!(err.code(), "provider_protocol", "{err}");
    let answer = the_answer(&hearth);
    assert_eq!(answer.state, MessageState::Interrupted);
    assert_eq!(answer.message.content, "So far, ");
    assert_eq!(server.seen().len(), 1);
}

/// A checkpoint write still running when the answer ends must not land after the final
/// write (it would put back an older text and the `streaming` state). Each checkpoint write
/// is held back 3 s before it reaches the database; the answer ends within about 1.6 s.
#[test]
fn a_late_checkpoint_never_truncates_a_finished_answer() {
    if common::rerun_in_child(
        "a_late_checkpoint_never_truncates_a_finished_answer",
        ("HEARTH_TEST_DELAY_AT", "checkpoint:3000"),
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = open(tmp.path());
    let (server, done) = runtime.block_on(async {
        let server = LlmServer::start(vec![Reply::Stream {
            data: text_stream(&["Hello ", "wide ", "world"], None),
            pace: Duration::from_millis(400),
            end: End::Done,
        }])
        .await;
        let done = hearth
            .chat(
                &slots(&server),
                ask("hello"),
                &CancellationToken::new(),
                |_| {},
            )
            .await
            .expect("answer");
        (server, done)
    });
    assert_eq!(done.answer, "Hello wide world");
    // Dropping the runtime waits for every blocking write still running: whatever a
    // checkpoint would do, it has done by now.
    drop(server);
    drop(runtime);
    let answer = the_answer(&hearth);
    assert_eq!(answer.message.content, "Hello wide world");
    assert_eq!(answer.state, MessageState::Complete);
}

/// A panic inside the turn still ends it: the answer is not left `streaming`.
#[test]
fn a_panic_inside_the_turn_marks_the_answer_failed() {
    if common::rerun_in_child(
        "a_panic_inside_the_turn_marks_the_answer_failed",
        ("HEARTH_TEST_PANIC_AT", "turn"),
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = open(tmp.path());
    let joined = runtime.block_on(async {
        let server = LlmServer::start(vec![Reply::Stream {
            data: text_stream(&["Hello ", "world"], None),
            pace: Duration::ZERO,
            end: End::Hang,
        }])
        .await;
        let (h, s) = (hearth.clone(), slots(&server));
        let joined = tokio::spawn(async move {
            h.chat(&s, ask("hello"), &CancellationToken::new(), |_| {})
                .await
        })
        .await;
        drop(server);
        joined
    });
    assert!(
        joined.as_ref().is_err_and(|e| e.is_panic()),
        "the turn panicked"
    );
    drop(runtime);
    let answer = the_answer(&hearth);
    assert_eq!(answer.state, MessageState::Failed);
    assert_eq!(answer.message.content, "Hello ", "what had arrived is kept");
}
