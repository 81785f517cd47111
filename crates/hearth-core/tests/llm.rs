//! Talking to a provider over real HTTP: streaming, tool-call deltas, usage, retries,
//! failures classified the way a user needs them, and cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth_core::llm::{
    ChatRequest, Completion, LlmClient, LlmError, Protocol, Provider, RetryPolicy, StreamEvent,
    Timeouts,
};
use hearth_core::types::{Message, ToolSpec, Usage};
use hearth_testkit::llm_server::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

fn provider(server: &LlmServer) -> Provider {
    Provider {
        name: "TestProvider".into(),
        protocol: Protocol::OpenAiCompatible,
        base_url: server.base_url.clone(),
        api_key: Some(Zeroizing::new("sk-test-123".into())),
    }
}

fn client(base_delay: Duration) -> LlmClient {
    let retry = RetryPolicy {
        base_delay,
        max_delay: base_delay,
        max_retries: 3,
    };
    LlmClient::new(retry, Timeouts::default()).expect("client")
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "gpt-4o-mini".into(),
        messages: vec![
            Message::system("You are Hearth."),
            Message::user("Say hello"),
        ],
        ..ChatRequest::default()
    }
}

async fn run(
    client: &LlmClient,
    server: &LlmServer,
) -> (Result<Completion, LlmError>, Vec<StreamEvent>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let result = client
        .stream_chat(
            &provider(server),
            &request(),
            &CancellationToken::new(),
            move |e| sink.lock().expect("lock").push(e),
        )
        .await;
    let events = events.lock().expect("lock").clone();
    (result, events)
}

#[tokio::test]
async fn an_answer_streams_piece_by_piece_with_its_usage() {
    let server = LlmServer::start(vec![stream(text_stream(
        &["Hel", "lo", "!"],
        Some((12, 3, 8)),
    ))])
    .await;
    let (result, events) = run(&client(Duration::from_millis(1)), &server).await;
    let done = result.expect("completion");
    assert_eq!(done.text, "Hello!");
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("Hel".into()),
            StreamEvent::Text("lo".into()),
            StreamEvent::Text("!".into())
        ]
    );
    assert_eq!(
        done.usage,
        Some(Usage {
            input_tokens: 12,
            output_tokens: 3,
            cached_input_tokens: 8,
            cache_write_tokens: 0
        })
    );
    assert_eq!(done.finish_reason.as_deref(), Some("stop"));
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(seen[0].body["stream_options"]["include_usage"], true);
    assert_eq!(
        seen[0].body["messages"][1],
        json!({"role": "user", "content": "Say hello"})
    );
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer sk-test-123"));
}

#[tokio::test]
async fn tool_call_arguments_are_assembled_from_their_deltas() {
    let chunks = vec![
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":""}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"notes.md\"}"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ]
    .into_iter()
    .map(|v| v.to_string())
    .collect();
    let server = LlmServer::start(vec![stream(chunks)]).await;
    let mut req = request();
    req.tools.push(ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}),
    });
    let done = client(Duration::from_millis(1))
        .stream_chat(&provider(&server), &req, &CancellationToken::new(), |_| {})
        .await
        .expect("completion");
    assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(done.tool_calls.len(), 1);
    assert_eq!(done.tool_calls[0].id, "call_1");
    assert_eq!(done.tool_calls[0].name, "read_file");
    assert_eq!(done.tool_calls[0].arguments, "{\"path\":\"notes.md\"}");
    assert_eq!(
        server.seen()[0].body["tools"][0]["function"]["name"],
        "read_file"
    );
}

#[tokio::test]
async fn server_errors_are_retried_until_the_answer_comes() {
    let server = LlmServer::start(vec![
        status(500, "upstream exploded"),
        status(503, "overloaded"),
        stream(text_stream(&["fine"], None)),
    ])
    .await;
    let (result, _) = run(&client(Duration::from_millis(1)), &server).await;
    assert_eq!(result.expect("completion").text, "fine");
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn rate_limits_honour_retry_after_over_the_backoff() {
    // A backoff of an hour: the test only finishes if `retry-after: 0` is what is waited.
    let server = LlmServer::start(vec![
        Reply::Status {
            code: 429,
            headers: vec![("retry-after".into(), "0".into())],
            body: "slow down".into(),
        },
        stream(text_stream(&["ok"], None)),
    ])
    .await;
    let (result, _) = run(&client(Duration::from_secs(3600)), &server).await;
    assert_eq!(result.expect("completion").text, "ok");
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn a_bad_api_key_fails_at_once_with_a_clear_message() {
    let server = LlmServer::start(vec![
        status(401, "invalid api key"),
        stream(text_stream(&["never"], None)),
    ])
    .await;
    let (result, events) = run(&client(Duration::from_millis(1)), &server).await;
    let err = result.expect_err("auth error");
    assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("check your API key for TestProvider"),
        "{err}"
    );
    assert_eq!(server.seen().len(), 1, "no retry of an auth failure");
    assert!(events.is_empty());
    assert!(
        !format!("{err:?}").contains("sk-test-123"),
        "the key never appears in errors"
    );
}

#[tokio::test]
async fn a_context_length_error_is_recognised() {
    let body = json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}});
    let server = LlmServer::start(vec![status(400, &body.to_string())]).await;
    let (result, _) = run(&client(Duration::from_millis(1)), &server).await;
    assert!(
        matches!(result, Err(LlmError::ContextLength { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn malformed_sse_is_a_protocol_error_not_a_crash() {
    let server = LlmServer::start(vec![stream(vec!["{not json".into()])]).await;
    let (result, _) = run(&client(Duration::from_millis(1)), &server).await;
    assert!(
        matches!(result, Err(LlmError::Protocol { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_connection_dropped_mid_answer_keeps_what_arrived() {
    let mut data = text_stream(&["The answer ", "is"], None);
    data.truncate(2);
    let server = LlmServer::start(vec![Reply::Stream {
        data,
        pace: Duration::ZERO,
        end: End::Drop,
    }])
    .await;
    let (result, events) = run(&client(Duration::from_millis(1)), &server).await;
    match result {
        Err(LlmError::Interrupted { partial, .. }) => assert_eq!(partial.text, "The answer is"),
        other => panic!("expected Interrupted, got {other:?}"),
    }
    assert_eq!(events.len(), 2);
    assert_eq!(
        server.seen().len(),
        1,
        "a stream that already showed text is not silently retried"
    );
}

#[tokio::test]
async fn a_drop_before_any_text_is_retried() {
    let server = LlmServer::start(vec![
        Reply::Stream {
            data: vec![],
            pace: Duration::ZERO,
            end: End::Drop,
        },
        stream(text_stream(&["second try"], None)),
    ])
    .await;
    let (result, _) = run(&client(Duration::from_millis(1)), &server).await;
    assert_eq!(result.expect("completion").text, "second try");
}

#[tokio::test]
async fn stopping_ends_the_answer_closes_the_connection_and_keeps_the_partial() {
    let data = text_stream(&["Partial "], None)[..1].to_vec();
    let server = LlmServer::start(vec![Reply::Stream {
        data,
        pace: Duration::ZERO,
        end: End::Hang,
    }])
    .await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let done = client(Duration::from_millis(1))
        .stream_chat(&provider(&server), &request(), &cancel, move |_| {
            trigger.cancel()
        })
        .await
        .expect("stopped completion");
    assert!(done.stopped);
    assert_eq!(done.text, "Partial ");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !server.client_hung_up() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never saw the connection close"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
