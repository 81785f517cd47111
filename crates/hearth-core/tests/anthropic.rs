//! Anthropic Messages over real HTTP: streaming, cache breakpoints and cache usage, tool use,
//! and failures classified like every other provider.

use std::time::Duration;

use hearth_core::llm::{
    ChatRequest, LlmClient, LlmError, Protocol, Provider, RetryPolicy, Timeouts,
};
use hearth_core::types::{Message, ToolSpec, Usage};
use hearth_testkit::llm_server::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

fn provider(server: &LlmServer) -> Provider {
    Provider {
        name: "Anthropic".into(),
        protocol: Protocol::Anthropic,
        base_url: server.base_url.clone(),
        api_key: Some(Zeroizing::new("sk-ant-test".into())),
        launch: None,
    }
}

fn client() -> LlmClient {
    let retry = RetryPolicy {
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(1),
        max_retries: 3,
    };
    LlmClient::new(retry, Timeouts::default()).expect("client")
}

fn conversation() -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
        messages: vec![
            Message::system("You are Hearth."),
            Message::user("My name is Ada."),
            Message::assistant("Nice to meet you, Ada."),
            Message::user("What is my name?"),
        ],
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn an_answer_streams_with_cache_breakpoints_and_cache_usage() {
    let server = LlmServer::start(vec![closing_stream(anthropic_text_stream(
        &["Your name ", "is Ada."],
        (12, 900, 0, 6),
    ))])
    .await;
    let mut pieces = Vec::new();
    let done = client()
        .stream_chat(
            &provider(&server),
            &conversation(),
            &CancellationToken::new(),
            |e| pieces.push(e),
        )
        .await
        .expect("completion");
    assert_eq!(done.text, "Your name is Ada.");
    assert_eq!(pieces.len(), 2);
    assert_eq!(
        done.usage,
        Some(Usage {
            input_tokens: 912,
            output_tokens: 6,
            cached_input_tokens: 900,
            cache_write_tokens: 0
        })
    );
    assert_eq!(done.finish_reason.as_deref(), Some("end_turn"));
    let seen = &server.seen()[0];
    assert_eq!(seen.api_key.as_deref(), Some("sk-ant-test"));
    assert_eq!(seen.anthropic_version.as_deref(), Some("2023-06-01"));
    assert!(seen.authorization.is_none());
    let body = &seen.body;
    assert_eq!(body["system"][0]["text"], "You are Hearth.");
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    // The end of the history (the assistant's last reply) is a breakpoint; the question is not.
    assert_eq!(
        body["messages"][1]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        body["messages"][2]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        body["messages"][2]["content"][0]["text"],
        "What is my name?"
    );
    assert!(
        body["max_tokens"].as_u64().is_some(),
        "Anthropic requires max_tokens"
    );
}

#[tokio::test]
async fn tool_use_input_is_assembled_from_json_deltas() {
    let data = vec![
        json!({"type":"message_start","message":{"usage":{"input_tokens":30,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"search_files","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": "}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"taxes 2025\"}"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}),
        json!({"type":"message_stop"}),
    ]
    .into_iter()
    .map(|v| v.to_string())
    .collect();
    let server = LlmServer::start(vec![closing_stream(data)]).await;
    let mut req = conversation();
    req.tools.push(ToolSpec {
        name: "search_files".into(),
        description: "Search the user's folders".into(),
        parameters: json!({"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}),
    });
    let done = client()
        .stream_chat(&provider(&server), &req, &CancellationToken::new(), |_| {})
        .await
        .expect("completion");
    assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(done.tool_calls.len(), 1);
    assert_eq!(done.tool_calls[0].name, "search_files");
    assert_eq!(done.tool_calls[0].arguments, "{\"query\": \"taxes 2025\"}");
    let body = &server.seen()[0].body;
    assert_eq!(
        body["tools"][0]["input_schema"]["additionalProperties"],
        false
    );
    assert_eq!(
        body["tools"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn overloaded_is_retried_and_a_bad_key_is_not() {
    let overloaded = vec![
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
            .to_string(),
    ];
    let server = LlmServer::start(vec![
        status(
            529,
            "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}",
        ),
        closing_stream(overloaded),
        closing_stream(anthropic_text_stream(&["ok"], (5, 0, 0, 1))),
        status(
            401,
            "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}}",
        ),
    ])
    .await;
    let done = client()
        .stream_chat(
            &provider(&server),
            &conversation(),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("completion after retries");
    assert_eq!(done.text, "ok");
    assert_eq!(server.seen().len(), 3);
    let err = client()
        .stream_chat(
            &provider(&server),
            &conversation(),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("auth");
    assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{err:?}");
    assert_eq!(server.seen().len(), 4);
}

#[tokio::test]
async fn a_prompt_too_long_is_a_context_length_error() {
    let body = json!({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}});
    let server = LlmServer::start(vec![status(400, &body.to_string())]).await;
    let err = client()
        .stream_chat(
            &provider(&server),
            &conversation(),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("too long");
    assert!(matches!(err, LlmError::ContextLength { .. }), "{err:?}");
}
