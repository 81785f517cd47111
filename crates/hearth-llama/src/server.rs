//! The worker's HTTP face on 127.0.0.1: the OpenAI-compatible subset Hearth's client speaks
//! (`POST /v1/chat/completions`, streamed or whole; `GET /v1/models`) and `POST
//! /v1/tokenize` for token counts in the model's own tokenizer. Every request must carry the
//! bearer token the parent gave at start (compared in constant time): another program on
//! the machine, or a web page aiming at loopback, gets 401 and no model.

use std::convert::Infallible;
use std::sync::{Arc, mpsc};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Json, Request as HttpRequest, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, Stream, StreamExt};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::engine::{Finish, Job, ModelInfo, Piece, Request};
use crate::template::{ChatTemplate, TemplateMessage};
use crate::toolcall::{self, Call, Format, Holdback};

/// The largest request body: a long conversation with its tools is well under this.
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// The most output tokens one request may ask for.
pub const MAX_OUTPUT: u32 = 8192;

/// The most texts one `/v1/tokenize` call may count.
pub const MAX_COUNT_TEXTS: usize = 4096;

/// What the handlers share.
pub struct Shared {
    pub token: Zeroizing<String>,
    pub name: String,
    pub info: ModelInfo,
    pub template: ChatTemplate,
    /// How the model writes tool calls (from its template); `None`: it is offered none.
    pub format: Format,
    pub engine: std::sync::Mutex<mpsc::Sender<Request>>,
}

/// The routes, behind the token check.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/tokenize", post(tokenize))
        .route("/health", get(|| async { "ok" }))
        .layer(middleware::from_fn_with_state(shared.clone(), authorize))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(shared)
}

fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": kind}});
    (status, Json(body)).into_response()
}

async fn authorize(State(shared): State<Arc<Shared>>, req: HttpRequest, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let ok: bool = given.as_bytes().ct_eq(shared.token.as_bytes()).into();
    if !ok {
        return error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "this worker answers only the Hearth process that started it",
        );
    }
    next.run(req).await
}

async fn models(State(shared): State<Arc<Shared>>) -> Response {
    Json(json!({
        "object": "list",
        "data": [{
            "id": shared.name,
            "object": "model",
            "owned_by": "hearth",
            "context_window": shared.info.n_ctx,
            "n_ctx_train": shared.info.n_ctx_train,
            "architecture": shared.info.architecture,
            "tools": shared.format != Format::None,
        }]
    }))
    .into_response()
}

async fn tokenize(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    let Some(texts) = body["texts"].as_array() else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "texts must be an array of strings",
        );
    };
    if texts.len() > MAX_COUNT_TEXTS {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "too many texts in one call",
        );
    }
    let texts: Vec<String> = texts
        .iter()
        .map(|t| t.as_str().unwrap_or_default().to_owned())
        .collect();
    let (reply, rx) = tokio::sync::oneshot::channel();
    if send(&shared, Request::Count { texts, reply }).is_err() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "the engine stopped",
        );
    }
    match rx.await {
        Ok(counts) => Json(json!({ "counts": counts })).into_response(),
        Err(_) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "the engine stopped",
        ),
    }
}

fn send(shared: &Shared, request: Request) -> Result<(), ()> {
    let sender = shared.engine.lock().map_err(|_| ())?;
    sender.send(request).map_err(|_| ())
}

/// Text of an OpenAI `content`: a string, or the text parts of an array.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The template's messages from an OpenAI `messages` array.
fn messages(body: &Value) -> Result<Vec<TemplateMessage>, String> {
    let Some(list) = body["messages"].as_array() else {
        return Err("messages must be an array".into());
    };
    list.iter()
        .map(|m| {
            let role = m["role"].as_str().ok_or("a message has no role")?;
            let tool_calls = m["tool_calls"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| {
                            // Templates expect the arguments as an object.
                            let mut c = c.clone();
                            if let Some(a) = c["function"]["arguments"].as_str() {
                                c["function"]["arguments"] =
                                    serde_json::from_str(a).unwrap_or(Value::String(a.to_owned()));
                            }
                            c
                        })
                        .collect()
                })
                .unwrap_or_default();
            Ok(TemplateMessage {
                role: role.to_owned(),
                content: content_text(&m["content"]),
                tool_calls,
                tool_call_id: m["tool_call_id"].as_str().map(str::to_owned),
                name: m["name"].as_str().map(str::to_owned),
            })
        })
        .collect()
}

/// Items an array of a schema may hold when the schema sets no bound.
pub const SCHEMA_MAX_ITEMS: u64 = 4;
/// Characters a string of a schema may hold when the schema sets no bound (a memory is one
/// short sentence).
pub const SCHEMA_MAX_LENGTH: u64 = 160;

/// Bounds every array and string of `schema` that has none, so that the grammar itself
/// ends the answer: a small model that repeats itself cannot run to `max_tokens` and be cut
/// off mid-JSON.
pub fn bound_schema(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let types: Vec<String> = match map.get("type") {
                Some(Value::String(t)) => vec![t.clone()],
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            let is = |t: &str| types.iter().any(|x| x == t);
            if (is("array") || map.contains_key("items")) && !map.contains_key("maxItems") {
                map.insert("maxItems".into(), json!(SCHEMA_MAX_ITEMS));
            }
            if is("string") && !map.contains_key("maxLength") && !map.contains_key("enum") {
                map.insert("maxLength".into(), json!(SCHEMA_MAX_LENGTH));
            }
            for v in map.values_mut() {
                bound_schema(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_schema),
        _ => {}
    }
}

/// The grammar a `response_format` asks for.
fn grammar(body: &Value) -> Result<Option<String>, String> {
    let format = &body["response_format"];
    let mut schema = match format["type"].as_str() {
        Some("json_schema") => format["json_schema"]["schema"].clone(),
        Some("json_object") => json!({}),
        _ => return Ok(None),
    };
    bound_schema(&mut schema);
    let text = serde_json::to_string(&schema).map_err(|e| e.to_string())?;
    llama_cpp_2::json_schema_to_grammar(&text)
        .map(|g| Some(compact(&g)))
        .map_err(|e| format!("the JSON schema cannot be turned into a grammar: {e}"))
}

/// The grammar with JSON's optional whitespace cut to one space: llama.cpp's allows newlines
/// and indentation, which small models spend tokens on (a third of an answer, on a CPU).
fn compact(grammar: &str) -> String {
    grammar
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("space ::=") {
                "space ::= | \" \""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn usage(f: &Finish) -> Value {
    json!({
        "prompt_tokens": f.prompt_tokens,
        "completion_tokens": f.completion_tokens,
        "total_tokens": f.prompt_tokens.saturating_add(f.completion_tokens),
        "prompt_tokens_details": { "cached_tokens": f.cached_tokens },
    })
}

async fn chat(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, "invalid_request_error", m);
    let msgs = match messages(&body) {
        Ok(m) => m,
        Err(e) => return bad(e),
    };
    let tools: Vec<Value> = body["tools"].as_array().cloned().unwrap_or_default();
    // Calls are read in the model's format only when it was offered tools.
    let format = if tools.is_empty() {
        Format::None
    } else {
        shared.format
    };
    let prompt = match shared.template.render(&msgs, &tools) {
        Ok(p) => p,
        Err(e) => return bad(e.to_string()),
    };
    let grammar = match grammar(&body) {
        Ok(g) => g,
        Err(e) => return bad(e),
    };
    let max_tokens = body["max_completion_tokens"]
        .as_u64()
        .or_else(|| body["max_tokens"].as_u64())
        .map_or(MAX_OUTPUT, |n| {
            u32::try_from(n).unwrap_or(MAX_OUTPUT).min(MAX_OUTPUT)
        })
        .max(1);
    #[allow(clippy::cast_possible_truncation)]
    let temperature = body["temperature"]
        .as_f64()
        .map_or(0.7, |t| t.clamp(0.0, 2.0) as f32);
    let (out, mut rx) = tokio::sync::mpsc::channel(256);
    let job = Job {
        prompt,
        max_tokens,
        temperature,
        grammar,
        out,
    };
    if send(&shared, Request::Generate(job)).is_err() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "the engine stopped",
        );
    }
    // The first piece decides the status: a prompt that cannot run is an error response.
    let first = match rx.recv().await {
        Some(Piece::Failed(e)) => {
            return error(StatusCode::BAD_REQUEST, "invalid_request_error", e);
        }
        Some(p) => p,
        None => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "the engine stopped",
            );
        }
    };
    let id = format!("chatcmpl-{}", now_s());
    let name = shared.name.clone();
    if body["stream"].as_bool() != Some(true) {
        let mut text = String::new();
        let mut piece = Some(first);
        let id_base = id.clone();
        let finish = loop {
            match piece {
                Some(Piece::Text(t)) => text.push_str(&t),
                Some(Piece::Done(f)) => break f,
                Some(Piece::Failed(e)) => {
                    return error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", e);
                }
                None => {
                    return error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "server_error",
                        "the engine stopped",
                    );
                }
            }
            piece = rx.recv().await;
        };
        let (content, calls) = toolcall::parse(format, &text);
        let (message, reason) = if calls.is_empty() {
            (
                json!({"role": "assistant", "content": text}),
                finish_reason(&finish),
            )
        } else {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, c)| call_json(&id_base, i, c, false))
                .collect();
            (
                json!({"role": "assistant", "content": content, "tool_calls": calls}),
                "tool_calls",
            )
        };
        return Json(json!({
            "id": id, "object": "chat.completion", "created": now_s(), "model": name,
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": usage(&finish),
        }))
        .into_response();
    }
    let pieces = stream::once(async move { Some(first) })
        .chain(stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|p| (Some(p), rx))
        }))
        .filter_map(|p| async move { p });
    Sse::new(events(pieces, id, name, format)).into_response()
}

/// One call in the OpenAI shape; `streamed` adds the delta's `index`.
fn call_json(id: &str, i: usize, call: &Call, streamed: bool) -> Value {
    let mut v = json!({
        "id": format!("call_{}_{i}", id.trim_start_matches("chatcmpl-")),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    });
    if streamed {
        v["index"] = json!(i);
    }
    v
}

fn finish_reason(f: &Finish) -> &'static str {
    match f.reason {
        "length" => "length",
        _ => "stop",
    }
}

fn events(
    pieces: impl Stream<Item = Piece> + Send + 'static,
    id: String,
    model: String,
    format: Format,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let created = now_s();
    let call_id = id.clone();
    let chunk = move |delta: Value, finish: Option<&str>| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut first = true;
    let mut text_delta = move |t: String| {
        let delta = if first {
            json!({"role": "assistant", "content": t})
        } else {
            json!({"content": t})
        };
        first = false;
        delta
    };
    let mut holdback = Some(Holdback::new(format));
    pieces
        .flat_map(move |p| {
            let out: Vec<Value> = match p {
                Piece::Text(t) => {
                    let shown = holdback.as_mut().map(|h| h.push(&t)).unwrap_or_default();
                    if shown.is_empty() {
                        Vec::new()
                    } else {
                        vec![chunk(text_delta(shown), None)]
                    }
                }
                Piece::Done(f) => {
                    let (rest, calls) = holdback.take().map(Holdback::finish).unwrap_or_default();
                    let mut out = Vec::new();
                    if !rest.is_empty() {
                        out.push(chunk(text_delta(rest), None));
                    }
                    let reason = if calls.is_empty() {
                        finish_reason(&f)
                    } else {
                        let list: Vec<Value> = calls
                            .iter()
                            .enumerate()
                            .map(|(i, c)| call_json(&call_id, i, c, true))
                            .collect();
                        out.push(chunk(json!({"tool_calls": list}), None));
                        "tool_calls"
                    };
                    let mut last = chunk(json!({}), Some(reason));
                    let mut tail = last.clone();
                    tail["choices"] = json!([]);
                    tail["usage"] = usage(&f);
                    last["usage"] = Value::Null;
                    out.extend([last, tail]);
                    out
                }
                Piece::Failed(e) => vec![json!({"error": {"message": e, "type": "server_error"}})],
            };
            stream::iter(out)
        })
        .map(|v| Ok(Event::default().data(v.to_string())))
        .chain(stream::once(async { Ok(Event::default().data("[DONE]")) }))
}
