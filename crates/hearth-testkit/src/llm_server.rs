//! A scripted LLM server: a real HTTP server on 127.0.0.1 speaking OpenAI-compatible Chat
//! Completions with SSE streaming. Each test scripts its replies; the server records every
//! request it got (body and headers) and notices when a client hangs up mid-stream.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};

/// How a scripted stream ends.
#[derive(Clone, Copy, Debug)]
pub enum End {
    /// `data: [DONE]` (OpenAI).
    Done,
    /// The body simply ends (Anthropic ends after `message_stop`).
    Close,
    /// The connection is cut without finishing.
    Drop,
    /// Nothing more is sent, ever (the client must cancel).
    Hang,
}

/// One scripted reply.
#[derive(Clone)]
pub enum Reply {
    /// SSE `data:` payloads sent with `pace` between them, then `end`.
    Stream {
        data: Vec<String>,
        pace: Duration,
        end: End,
    },
    /// A plain HTTP response.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A reply computed from the request body.
    Dynamic(Arc<dyn Fn(&Value) -> Reply + Send + Sync>),
    /// SSE `data:` payloads `before`, then one event that never ends: `data: ` and `bytes`
    /// bytes of `a` without a line end, made as they are sent (64 KiB at a time, so the
    /// server holds none of it), then the body ends. [`LlmServer::huge_bytes_sent`] counts
    /// what went out.
    Huge { before: Vec<String>, bytes: usize },
    /// `reply` with these extra response headers (rate-limit headers on a success, …).
    WithHeaders {
        headers: Vec<(String, String)>,
        reply: Box<Reply>,
    },
}

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub body: Value,
    pub raw: Bytes,
    pub authorization: Option<String>,
    pub api_key: Option<String>,
    pub anthropic_version: Option<String>,
    /// When it arrived (to order it against what a client saw, never to time it).
    pub at: std::time::Instant,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
    hung_up: AtomicBool,
    embeddings_down: AtomicBool,
    embedding_requests: AtomicUsize,
    /// Requests `/v1/embeddings` still answers before it goes down (`None`: no limit).
    embeddings_budget: Mutex<Option<usize>>,
    /// Scripted answers of `/v1/embeddings`, used first, in order (only `Reply::Status`).
    embedding_replies: Mutex<VecDeque<Reply>>,
    /// Bytes of [`Reply::Huge`] events handed to the connection so far.
    huge_sent: AtomicUsize,
}

/// The running server; stops when dropped.
pub struct LlmServer {
    pub base_url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LlmServer {
    /// Starts a server that answers with `replies`, in order.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            ..Shared::default()
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/messages", post(chat))
            .route("/v1/models", axum::routing::get(models))
            .route("/api/tags", axum::routing::get(ollama_tags))
            .route("/api/show", post(ollama_show))
            .route("/v1/embeddings", post(embeddings))
            .with_state(shared.clone());
        let (addr, task) = crate::serve(app).await;
        Self {
            base_url: format!("http://{addr}/v1"),
            shared,
            task,
        }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().expect("lock").clone()
    }

    /// From now on `/v1/embeddings` answers 503 (`true`) or works again (`false`).
    pub fn set_embeddings_down(&self, down: bool) {
        self.shared.embeddings_down.store(down, Ordering::SeqCst);
    }

    /// `/v1/embeddings` answers `n` more requests, then 503 until [`Self::set_embeddings_down`]`(false)`.
    pub fn embeddings_fail_after(&self, n: usize) {
        *self.shared.embeddings_budget.lock().expect("lock") = Some(n);
    }

    /// `/v1/embeddings` answers the next requests with these `Reply::Status` replies, in
    /// order, before it embeds as usual again.
    pub fn script_embeddings(&self, replies: Vec<Reply>) {
        self.shared
            .embedding_replies
            .lock()
            .expect("lock")
            .extend(replies);
    }

    /// Bytes of the endless event of a [`Reply::Huge`] handed to the connection so far.
    pub fn huge_bytes_sent(&self) -> usize {
        self.shared.huge_sent.load(Ordering::SeqCst)
    }

    /// How many `/v1/embeddings` requests arrived.
    pub fn embedding_requests(&self) -> usize {
        self.shared.embedding_requests.load(Ordering::SeqCst)
    }

    /// True once a client closed a stream before it ended.
    pub fn client_hung_up(&self) -> bool {
        self.shared.hung_up.load(Ordering::SeqCst)
    }
}

/// Text split into OpenAI chunks, then a usage chunk.
pub fn text_stream(pieces: &[&str], usage: Option<(u64, u64, u64)>) -> Vec<String> {
    let mut out: Vec<String> = pieces
        .iter()
        .map(|p| {
            json!({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]})
                .to_string()
        })
        .collect();
    out.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string());
    if let Some((input, output, cached)) = usage {
        out.push(
            json!({"choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output,
                   "prompt_tokens_details": {"cached_tokens": cached}}})
            .to_string(),
        );
    }
    out
}

/// An OpenAI stream in which the model calls tools: `(id, name, JSON arguments)` each, the
/// arguments sent in two pieces as real servers split them, ending `tool_calls`.
pub fn tool_call_stream(calls: &[(&str, &str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        out.push(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function",
                   "function": {"name": name, "arguments": ""}}]}, "finish_reason": null}]})
            .to_string(),
        );
        let mut cut = args.len() / 2;
        while !args.is_char_boundary(cut) {
            cut -= 1;
        }
        for piece in [&args[..cut], &args[cut..]] {
            out.push(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i,
                       "function": {"arguments": piece}}]}, "finish_reason": null}]})
                .to_string(),
            );
        }
    }
    out.push(
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
    );
    out
}

/// An Anthropic Messages stream of `pieces` of text. `usage` is (input, cache read,
/// cache write, output).
pub fn anthropic_text_stream(pieces: &[&str], usage: (u64, u64, u64, u64)) -> Vec<String> {
    let (input, read, write, output) = usage;
    let mut out = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
               "usage": {"input_tokens": input, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
    ];
    for p in pieces {
        out.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}));
    }
    out.push(json!({"type": "content_block_stop", "index": 0}));
    out.push(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": output}}));
    out.push(json!({"type": "message_stop"}));
    out.into_iter().map(|v| v.to_string()).collect()
}

/// A stream that ends by closing the body (as Anthropic's do).
pub fn closing_stream(data: Vec<String>) -> Reply {
    Reply::Stream {
        data,
        pace: Duration::ZERO,
        end: End::Close,
    }
}

pub fn stream(data: Vec<String>) -> Reply {
    Reply::Stream {
        data,
        pace: Duration::ZERO,
        end: End::Done,
    }
}

/// A plain HTTP response with headers (`retry-after`, `location`, …).
pub fn status_with(code: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Status {
        code,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        body: body.to_owned(),
    }
}

pub fn status(code: u16, body: &str) -> Reply {
    Reply::Status {
        code,
        headers: Vec::new(),
        body: body.to_owned(),
    }
}

struct HangUpGuard {
    shared: Arc<Shared>,
    finished: bool,
}

impl HangUpGuard {
    /// The stream ended as scripted: not a hang-up.
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for HangUpGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.hung_up.store(true, Ordering::SeqCst);
        }
    }
}

/// A fixed model list; the request is recorded like any other.
async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    shared.seen.lock().expect("lock").push(Seen {
        body: Value::Null,
        raw: Bytes::new(),
        authorization: header("authorization"),
        api_key: header("x-api-key"),
        anthropic_version: header("anthropic-version"),
        at: std::time::Instant::now(),
    });
    axum::Json(json!({"object": "list", "data": [{"id": "gpt-4o-mini"}, {"id": "llama3.2"}]}))
        .into_response()
}

/// The embedding of `text` by the model `bow-<dims>`: a bag of words hashed into `dims`
/// buckets (not normalized; clients normalize). Texts sharing words get close vectors.
pub fn bag_of_words(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims.max(1)];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        // FNV-1a, so every run and every process agrees.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.to_lowercase().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let bucket = (h % v.len() as u64) as usize;
        v[bucket] += 1.0;
    }
    if v.iter().all(|x| *x == 0.0) {
        v[0] = 1.0;
    }
    v
}

/// OpenAI-compatible `/v1/embeddings`: model `bow-<dims>` embeds with [`bag_of_words`];
/// any other model is unknown (404, as OpenAI answers).
async fn embeddings(State(shared): State<Arc<Shared>>, raw: Bytes) -> Response {
    shared.embedding_requests.fetch_add(1, Ordering::SeqCst);
    let scripted = shared.embedding_replies.lock().expect("lock").pop_front();
    if let Some(Reply::Status {
        code,
        headers,
        body,
    }) = scripted
    {
        return status_response(code, headers, body);
    }
    {
        let mut budget = shared.embeddings_budget.lock().expect("lock");
        match *budget {
            Some(0) => {
                shared.embeddings_down.store(true, Ordering::SeqCst);
                *budget = None;
            }
            Some(n) => *budget = Some(n - 1),
            None => {}
        }
    }
    if shared.embeddings_down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "embeddings are down").into_response();
    }
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or("");
    let Some(dims) = model
        .strip_prefix("bow-")
        .and_then(|d| d.parse::<usize>().ok())
        .filter(|d| (1..=4096).contains(d))
    else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"message": format!("model {model:?} not found"), "type": "invalid_request_error"}})),
        )
            .into_response();
    };
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().unwrap_or("").to_owned())
            .collect(),
        _ => return (StatusCode::BAD_REQUEST, "input must be text").into_response(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(
            |(i, t)| json!({"object": "embedding", "index": i, "embedding": bag_of_words(t, dims)}),
        )
        .collect();
    axum::Json(json!({"object": "list", "model": model, "data": data})).into_response()
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, raw: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    shared.seen.lock().expect("lock").push(Seen {
        body: body.clone(),
        raw: raw.clone(),
        authorization: header("authorization"),
        api_key: header("x-api-key"),
        anthropic_version: header("anthropic-version"),
        at: std::time::Instant::now(),
    });
    let mut reply = shared.replies.lock().expect("lock").pop_front();
    let mut extra = Vec::new();
    loop {
        match reply {
            Some(Reply::Dynamic(f)) => reply = Some(f(&body)),
            Some(Reply::WithHeaders { headers, reply: r }) => {
                extra.extend(headers);
                reply = Some(*r);
            }
            _ => break,
        }
    }
    let mut response = match reply {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no scripted reply left").into_response(),
        Some(Reply::Status {
            code,
            headers,
            body,
        }) => status_response(code, headers, body),
        Some(Reply::Huge { before, bytes }) => {
            const CHUNK: usize = 64 * 1024;
            let shared = shared.clone();
            let head = before
                .into_iter()
                .map(|d| Bytes::from(format!("data: {d}\n\n")))
                .chain(std::iter::once(Bytes::from_static(b"data: ")));
            let head = futures_util::stream::iter(head.map(Ok::<Bytes, std::io::Error>));
            let body = futures_util::stream::unfold(bytes, move |left| {
                let shared = shared.clone();
                async move {
                    if left == 0 {
                        return None;
                    }
                    let n = left.min(CHUNK);
                    shared.huge_sent.fetch_add(n, Ordering::SeqCst);
                    Some((Ok(Bytes::from(vec![b'a'; n])), left - n))
                }
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(head.chain(body)))
                .expect("response")
        }
        Some(Reply::Stream { data, pace, end }) => {
            let guard = HangUpGuard {
                shared: shared.clone(),
                finished: false,
            };
            let items: VecDeque<String> = data.into();
            let stream = futures_util::stream::unfold(
                (items, guard, end, false),
                move |(mut items, mut guard, end, over)| async move {
                    if over {
                        return None;
                    }
                    if let Some(d) = items.pop_front() {
                        if !pace.is_zero() {
                            tokio::time::sleep(pace).await;
                        }
                        // Anthropic-style payloads carry their event name in "type".
                        let event = serde_json::from_str::<Value>(&d)
                            .ok()
                            .and_then(|v| {
                                v.get("type")
                                    .and_then(Value::as_str)
                                    .map(|t| format!("event: {t}\n"))
                            })
                            .unwrap_or_default();
                        let frame = Bytes::from(format!("{event}data: {d}\n\n"));
                        return Some((
                            Ok::<Bytes, std::io::Error>(frame),
                            (items, guard, end, false),
                        ));
                    }
                    match end {
                        End::Done => {
                            guard.finish();
                            Some((
                                Ok(Bytes::from("data: [DONE]\n\n")),
                                (items, guard, end, true),
                            ))
                        }
                        End::Close => {
                            guard.finish();
                            None
                        }
                        End::Drop => {
                            // Let what was sent reach the client before the connection is cut.
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            guard.finish();
                            Some((
                                Err(std::io::Error::other("scripted drop")),
                                (items, guard, end, true),
                            ))
                        }
                        End::Hang => {
                            std::future::pending::<()>().await;
                            None
                        }
                    }
                },
            );
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .expect("response")
        }
        Some(Reply::Dynamic(_) | Reply::WithHeaders { .. }) => unreachable!("resolved above"),
    };
    for (k, v) in extra {
        if let (Ok(k), Ok(v)) = (
            axum::http::HeaderName::from_bytes(k.as_bytes()),
            axum::http::HeaderValue::from_str(&v),
        ) {
            response.headers_mut().insert(k, v);
        }
    }
    response
}

/// `reply` sent with `headers` as well.
pub fn with_headers(headers: &[(&str, &str)], reply: Reply) -> Reply {
    Reply::WithHeaders {
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        reply: Box::new(reply),
    }
}

fn status_response(code: u16, headers: Vec<(String, String)>, body: String) -> Response {
    let mut r = Response::builder().status(code);
    for (k, v) in headers {
        r = r.header(k, v);
    }
    r.body(Body::from(body)).expect("response")
}

/// The models of the Ollama native API (`/api/tags`), as Ollama lists them.
pub const OLLAMA_MODELS: &[&str] = &["llama3.2:3b", "qwen-long:7b", "mystery:1b"];

async fn ollama_tags() -> Response {
    let models: Vec<Value> = OLLAMA_MODELS
        .iter()
        .map(|m| {
            json!({"name": m, "model": m, "size": 2_019_393_189u64,
                         "details": {"family": "llama", "parameter_size": "3.2B"}})
        })
        .collect();
    axum::Json(json!({ "models": models })).into_response()
}

/// `/api/show`: llama3.2:3b reports a trained length of 131072 and no `num_ctx`;
/// qwen-long:7b sets `num_ctx 16384`; mystery:1b reports nothing; others are 404.
async fn ollama_show(body: axum::Json<Value>) -> Response {
    match body["model"].as_str() {
        Some("llama3.2:3b") => axum::Json(json!({
            "parameters": "stop \"<|eot_id|>\"",
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072}
        }))
        .into_response(),
        Some("qwen-long:7b") => axum::Json(json!({
            "parameters": "num_ctx 16384\ntemperature 0.7",
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}
        }))
        .into_response(),
        Some("mystery:1b") => axum::Json(json!({ "model_info": {} })).into_response(),
        _ => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": "model not found"})),
        )
            .into_response(),
    }
}
