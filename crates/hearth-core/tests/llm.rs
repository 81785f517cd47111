//! Talking to a provider over real HTTP: streaming, tool-call deltas, usage, retries,
//! failures classified the way a user needs them, and cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth_core::llm::{
    ChatRequest, Completion, LlmClient, LlmError, Priority, Protocol, Provider, RetryPolicy,
    StreamEvent, Timeouts,
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
        launch: None,
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

#[tokio::test]
async fn a_redirect_is_never_followed_and_names_where_it_pointed() {
    let elsewhere = LlmServer::start(vec![stream(text_stream(&["stolen"], None))]).await;
    let target = format!("{}/chat/completions", elsewhere.base_url);
    let server = LlmServer::start(vec![status_with(307, &[("location", &target)], "")]).await;
    let (result, events) = run(&client(Duration::from_millis(1)), &server).await;
    let err = result.expect_err("a redirect fails");
    assert_eq!(err.code(), "provider_redirect", "{err}");
    assert!(err.to_string().contains(&target), "{err}");
    assert!(events.is_empty());
    assert_eq!(server.seen().len(), 1, "a redirect is not retried");
    assert_eq!(
        elsewhere.seen().len(),
        0,
        "the prompt and key never reach the redirect's target"
    );
}

#[tokio::test]
async fn a_redirect_location_is_bounded_and_cleaned() {
    let long = format!("https://elsewhere.example/{}", "x".repeat(5_000));
    let server = LlmServer::start(vec![status_with(302, &[("location", &long)], "")]).await;
    let err = run(&client(Duration::from_millis(1)), &server)
        .await
        .0
        .expect_err("a redirect fails");
    assert_eq!(err.code(), "provider_redirect");
    assert!(
        err.to_string().contains("https://elsewhere.example/xxx"),
        "{err}"
    );
    assert!(err.to_string().len() < 600, "bounded: {err}");
}

#[tokio::test]
async fn an_unusable_retry_after_fails_at_once_naming_the_wait_asked() {
    for asked in [
        "inf",
        "1e20",
        "-5",
        "NaN",
        "soon",
        "99999999999999999999999999",
    ] {
        let server = LlmServer::start(vec![
            status_with(429, &[("retry-after", asked)], "slow down"),
            stream(text_stream(&["never"], None)),
        ])
        .await;
        // A backoff of an hour: the test only ends because nothing is waited for.
        let (result, events) = run(&client(Duration::from_secs(3600)), &server).await;
        let err = result.expect_err("rate limited");
        assert_eq!(err.code(), "provider_rate_limited", "{asked}: {err}");
        let message = err.to_string();
        assert!(
            message.contains("the provider asked to wait") && message.contains(asked),
            "{asked}: {err}"
        );
        assert_eq!(server.seen().len(), 1, "{asked}: one request, no retry");
        assert!(events.is_empty());
    }
}

#[tokio::test]
async fn a_huge_stream_event_stops_the_reader_at_the_limit_and_keeps_the_partial() {
    const HUGE: usize = 64 * 1024 * 1024;
    let before = text_stream(&["The answer is "], None)[..1].to_vec();
    let server = LlmServer::start(vec![Reply::Huge {
        before,
        bytes: HUGE,
    }])
    .await;
    let (result, events) = run(&client(Duration::from_millis(1)), &server).await;
    let err = result.expect_err("too large");
    assert_eq!(err.code(), "provider_protocol", "{err}");
    assert!(err.to_string().contains("larger than 1 MiB"), "{err}");
    assert_eq!(
        err.partial().map(|p| p.text.as_str()),
        Some("The answer is "),
        "the text before it is kept"
    );
    assert_eq!(events, vec![StreamEvent::Text("The answer is ".into())]);
    assert_eq!(server.seen().len(), 1, "not retried");
    assert!(
        server.huge_bytes_sent() < HUGE / 4,
        "the reader stopped near the limit: {} bytes were sent",
        server.huge_bytes_sent()
    );
}

#[tokio::test]
async fn a_huge_event_before_any_text_fails_without_a_partial() {
    let server = LlmServer::start(vec![Reply::Huge {
        before: Vec::new(),
        bytes: 2 * 1024 * 1024,
    }])
    .await;
    let err = run(&client(Duration::from_millis(1)), &server)
        .await
        .0
        .expect_err("too large");
    assert_eq!(err.code(), "provider_protocol");
    assert!(err.partial().is_none());
    assert_eq!(server.seen().len(), 1, "not retried");
}

#[tokio::test]
async fn embeddings_share_the_retries_of_chat() {
    let server = LlmServer::start(Vec::new()).await;
    server.script_embeddings(vec![status_with(429, &[("retry-after", "0")], "slow down")]);
    // A backoff of an hour: only `retry-after: 0` lets the test finish.
    let vectors = client(Duration::from_secs(3600))
        .embed(&provider(&server), "bow-8", &["red apples", "green pears"])
        .await
        .expect("vectors after one retry");
    assert_eq!(server.embedding_requests(), 2, "retried once");
    assert_eq!(
        vectors,
        vec![
            bag_of_words("red apples", 8),
            bag_of_words("green pears", 8)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_embedder_retries_a_rate_limit_like_chat() {
    use hearth_core::embed::{ApiEmbedder, Embedder};
    let server = LlmServer::start(Vec::new()).await;
    server.script_embeddings(vec![status_with(429, &[("retry-after", "0")], "slow down")]);
    let embedder = ApiEmbedder::new(
        &client(Duration::from_secs(3600)),
        provider(&server),
        "bow-8",
        8,
    )
    .expect("embedder");
    let vectors = tokio::task::spawn_blocking(move || embedder.embed(&["red apples"]))
        .await
        .expect("join")
        .expect("vectors");
    assert_eq!(vectors.len(), 1);
    assert_eq!(server.embedding_requests(), 2, "retried once");
}

#[tokio::test]
async fn an_embeddings_rate_limit_with_an_unusable_wait_fails_at_once() {
    let server = LlmServer::start(Vec::new()).await;
    server.script_embeddings(vec![status_with(
        429,
        &[("retry-after", "inf")],
        "slow down",
    )]);
    let err = client(Duration::from_secs(3600))
        .embed(&provider(&server), "bow-8", &["red apples"])
        .await
        .expect_err("rate limited");
    assert_eq!(err.code(), "provider_rate_limited");
    assert_eq!(server.embedding_requests(), 1);
}

// ----- Client-side rate limits: the order the server sees, never durations. -----

/// A reply that echoes the request's last user message, with `headers`.
fn echo(headers: &'static [(&'static str, &'static str)]) -> Reply {
    Reply::Dynamic(Arc::new(move |body: &serde_json::Value| {
        let said = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_owned();
        with_headers(headers, stream(text_stream(&[&said], None)))
    }))
}

fn asking(text: &str, priority: Priority) -> ChatRequest {
    ChatRequest {
        model: "gpt-4o-mini".into(),
        messages: vec![Message::user(text)],
        priority,
        ..ChatRequest::default()
    }
}

async fn ask(client: &LlmClient, server: &LlmServer, request: ChatRequest) -> String {
    let done = client
        .stream_chat(
            &provider(server),
            &request,
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("answered");
    done.text
}

/// The user messages the server got, in the order it got them.
fn order(server: &LlmServer) -> Vec<String> {
    server
        .seen()
        .iter()
        .map(|s| {
            s.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// One request per window (the window resets 150 ms after each answer).
const ONE_AT_A_TIME: &[(&str, &str)] = &[
    ("x-ratelimit-limit-requests", "1"),
    ("x-ratelimit-remaining-requests", "0"),
    ("x-ratelimit-reset-requests", "150ms"),
];

#[tokio::test]
async fn calls_past_the_providers_limits_queue_and_all_complete_in_the_order_they_came() {
    let started = std::time::Instant::now();
    // The first answer says the request bucket is empty; the next call is refused once
    // with a 429 (retry-after 1 s, and the bucket still empty); then every call goes.
    let server = LlmServer::start(vec![
        echo(ONE_AT_A_TIME),
        status_with(
            429,
            &[
                ("retry-after", "1"),
                ("x-ratelimit-limit-requests", "1"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "1s"),
            ],
            r#"{"error":{"message":"Rate limit reached for requests"}}"#,
        ),
        echo(ONE_AT_A_TIME),
        echo(ONE_AT_A_TIME),
        echo(ONE_AT_A_TIME),
        echo(ONE_AT_A_TIME),
    ])
    .await;
    let client = client(Duration::from_millis(200));
    assert_eq!(
        ask(&client, &server, asking("one", Priority::User)).await,
        "one"
    );
    // Four calls at once (each takes its place in the queue when first polled, in this
    // order); none fails, and the server sees them one after another in that order.
    let (two, three, four, five) = tokio::join!(
        ask(&client, &server, asking("two", Priority::User)),
        ask(&client, &server, asking("three", Priority::User)),
        ask(&client, &server, asking("four", Priority::User)),
        ask(&client, &server, asking("five", Priority::User)),
    );
    assert_eq!([two, three, four, five], ["two", "three", "four", "five"]);
    assert_eq!(
        order(&server),
        ["one", "two", "two", "three", "four", "five"],
        "the 429ed call went again first, the others waited behind it"
    );
    // The timeline, for the record (not asserted: durations swing).
    for (i, (seen, text)) in server.seen().iter().zip(order(&server)).enumerate() {
        println!(
            "timeline {i}: {:>5} ms  {text}",
            seen.at.duration_since(started).as_millis()
        );
    }
}

#[tokio::test]
async fn a_call_larger_than_the_token_bucket_goes_through_alone() {
    // A token bucket of 50 (full again at once): a call of ~400 tokens never fits. It still
    // goes, alone: the small call queued behind it reaches the server only after the large
    // one's answer has ended.
    const SMALL_BUCKET: &[(&str, &str)] = &[
        ("x-ratelimit-limit-tokens", "50"),
        ("x-ratelimit-remaining-tokens", "50"),
        ("x-ratelimit-reset-tokens", "0s"),
    ];
    let slow = Reply::WithHeaders {
        headers: SMALL_BUCKET
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        reply: Box::new(Reply::Stream {
            data: text_stream(&["a ", "long ", "answer"], None),
            pace: Duration::from_millis(60),
            end: End::Done,
        }),
    };
    let server = LlmServer::start(vec![echo(SMALL_BUCKET), slow, echo(SMALL_BUCKET)]).await;
    let client = client(Duration::from_millis(10));
    assert_eq!(
        ask(&client, &server, asking("hi", Priority::User)).await,
        "hi"
    );
    let large = format!("summarise this: {}", "word ".repeat(320));
    let large_done = Arc::new(Mutex::new(None));
    let mark = large_done.clone();
    let (long_answer, small) = tokio::join!(
        async {
            let text = ask(&client, &server, asking(&large, Priority::User)).await;
            *mark.lock().expect("lock") = Some(std::time::Instant::now());
            text
        },
        ask(&client, &server, asking("small", Priority::User)),
    );
    assert_eq!(long_answer, "a long answer");
    assert_eq!(small, "small");
    assert_eq!(order(&server), ["hi", large.as_str(), "small"]);
    let large_done = large_done.lock().expect("lock").expect("large call done");
    assert!(
        server.seen()[2].at >= large_done,
        "the small call was sent only once the large one was done"
    );
}

#[tokio::test]
async fn background_work_waits_behind_the_users_turn() {
    let server = LlmServer::start(vec![
        echo(ONE_AT_A_TIME),
        echo(ONE_AT_A_TIME),
        echo(ONE_AT_A_TIME),
        echo(ONE_AT_A_TIME),
    ])
    .await;
    let client = client(Duration::from_millis(10));
    assert_eq!(
        ask(&client, &server, asking("first", Priority::User)).await,
        "first"
    );
    // Learning queues first, then two user messages: both go before it.
    let (learned, asked, again) = tokio::join!(
        ask(
            &client,
            &server,
            asking("learn memories", Priority::Background)
        ),
        ask(&client, &server, asking("user question", Priority::User)),
        ask(&client, &server, asking("user follow-up", Priority::User)),
    );
    assert_eq!(
        [learned.as_str(), asked.as_str(), again.as_str()],
        ["learn memories", "user question", "user follow-up"]
    );
    assert_eq!(
        order(&server),
        ["first", "user question", "user follow-up", "learn memories"]
    );
}

#[tokio::test]
async fn a_limit_that_resets_too_far_away_fails_at_once_and_stop_ends_a_wait() {
    const DAILY: &[(&str, &str)] = &[
        ("x-ratelimit-limit-requests", "200"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", "7h12m"),
    ];
    let server = LlmServer::start(vec![echo(DAILY), echo(DAILY)]).await;
    let client = client(Duration::from_millis(10));
    assert_eq!(
        ask(&client, &server, asking("one", Priority::User)).await,
        "one"
    );
    let err = client
        .stream_chat(
            &provider(&server),
            &asking("two", Priority::User),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("a seven-hour wait is not queued");
    assert_eq!(err.code(), "provider_rate_limited");
    assert!(
        err.to_string().contains("its limits reset in 7 h 11 min")
            || err.to_string().contains("its limits reset in 7 h 12 min"),
        "{err}"
    );
    assert_eq!(order(&server), ["one"], "nothing was sent");

    // A minute's wait is queued; Stop ends it at once, and nothing is sent.
    const MINUTE: &[(&str, &str)] = &[
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", "60s"),
    ];
    let server = LlmServer::start(vec![echo(MINUTE), echo(MINUTE)]).await;
    assert_eq!(
        ask(&client, &server, asking("one", Priority::User)).await,
        "one"
    );
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let (to, two) = (provider(&server), asking("two", Priority::User));
    let (done, ()) = tokio::join!(client.stream_chat(&to, &two, &cancel, |_| {}), async move {
        tokio::task::yield_now().await;
        stop.cancel();
    },);
    let done = done.expect("a stopped wait is not an error");
    assert!(done.stopped && done.text.is_empty());
    assert_eq!(order(&server), ["one"], "nothing was sent");
}
