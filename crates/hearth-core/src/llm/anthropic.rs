//! Anthropic Messages with streaming, tool use and prompt-cache breakpoints.
//!
//! `cache_control` marks the end of the stable prefix (system prompt and tool catalog) and
//! the end of the history, so a follow-up turn reads both from Anthropic's prompt cache.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{self, Next, Sent, looks_like_context_length};
use super::limits::{MAX_ANSWER, MAX_SSE_EVENT};
use super::{Attempt, ChatRequest, Completion, LlmError, Provider, StreamEvent, Timeouts};
use crate::types::{Message, Role, ToolCall, Usage};

/// The API version Hearth speaks.
pub const API_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4_096;

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn content_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = Vec::new();
    match m.role {
        Role::Tool => blocks.push(json!({
            "type": "tool_result",
            "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        })),
        _ => {
            if !m.content.is_empty() {
                blocks.push(json!({"type": "text", "text": m.content}));
            }
            for c in &m.tool_calls {
                let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                blocks
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
        }
    }
    blocks
}

/// The request body.
pub(crate) fn body(request: &ChatRequest) -> Value {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut messages: Vec<Value> = request
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            let role = if m.role == Role::Assistant {
                "assistant"
            } else {
                "user"
            };
            json!({"role": role, "content": content_blocks(m)})
        })
        .collect();
    // Breakpoint at the end of the history: everything before the current message.
    if messages.len() >= 2 {
        let i = messages.len() - 2;
        if let Some(last) = messages[i]["content"]
            .as_array_mut()
            .and_then(|b| b.last_mut())
        {
            last["cache_control"] = ephemeral();
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "stream": true,
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] =
            json!([{"type": "text", "text": system.join("\n\n"), "cache_control": ephemeral()}]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = json!(tools);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// One try: send, then read the stream to its end.
pub(crate) async fn attempt(
    http_client: &reqwest::Client,
    timeouts: Timeouts,
    provider: &Provider,
    request: &ChatRequest,
    cancel: &CancellationToken,
    on_event: &mut (impl FnMut(StreamEvent) + Send),
) -> Result<Completion, Attempt> {
    let name = provider.name.clone();
    let url = format!("{}/messages", provider.base_url.trim_end_matches('/'));
    let req = http::authorized(http_client, provider, reqwest::Method::POST, &url)
        .map_err(Attempt::Fail)?
        .json(&body(request));
    let response = match http::send(req, timeouts, &name, &request.model, cancel).await? {
        Sent::Cancelled => {
            return Ok(Completion {
                stopped: true,
                ..Completion::default()
            });
        }
        Sent::Response(r) => r,
    };
    let mut events = http::events(response);
    let mut out = Completion::default();
    let mut usage = Usage::default();
    let mut calls: BTreeMap<usize, ToolCall> = BTreeMap::new();
    let (mut started, mut done) = (false, false);
    // Bytes of tool-call arguments so far (counted with the text against MAX_ANSWER).
    let mut arguments = 0usize;
    let finish = |mut out: Completion, calls: BTreeMap<usize, ToolCall>, usage: Usage| {
        out.tool_calls = calls.into_values().collect();
        out.usage = Some(usage);
        out
    };
    loop {
        let ev = match http::next(&mut events, timeouts, cancel).await {
            Next::Cancelled => {
                out.stopped = true;
                return Ok(finish(out, calls, usage));
            }
            Next::End => break,
            Next::Broken(detail) => {
                return Err(http::broken(
                    &name,
                    detail,
                    started,
                    finish(out, calls, usage),
                ));
            }
            Next::TooLarge => {
                return Err(http::too_large(
                    &name,
                    "one stream event",
                    MAX_SSE_EVENT,
                    started,
                    finish(out, calls, usage),
                ));
            }
            Next::Event(ev) => ev,
        };
        if ev.data.trim().is_empty() {
            continue;
        }
        let data: Value = match serde_json::from_str(&ev.data) {
            Ok(v) => v,
            Err(e) => {
                return Err(Attempt::Fail(LlmError::Protocol {
                    provider: name,
                    detail: format!("a stream event is not JSON ({e})"),
                }));
            }
        };
        let n = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        match data["type"].as_str().unwrap_or(ev.event.as_str()) {
            "message_start" => {
                let cached = n(&data, "/message/usage/cache_read_input_tokens");
                let written = n(&data, "/message/usage/cache_creation_input_tokens");
                usage.input_tokens = n(&data, "/message/usage/input_tokens") + cached + written;
                usage.cached_input_tokens = cached;
                usage.cache_write_tokens = written;
                usage.output_tokens = n(&data, "/message/usage/output_tokens");
            }
            "content_block_start" => {
                let index = n(&data, "/index") as usize;
                if data.pointer("/content_block/type").and_then(Value::as_str) == Some("tool_use") {
                    started = true;
                    let id = data
                        .pointer("/content_block/id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let tool = data
                        .pointer("/content_block/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    calls.insert(
                        index,
                        ToolCall {
                            id: id.clone(),
                            name: tool.clone(),
                            arguments: String::new(),
                        },
                    );
                    on_event(StreamEvent::ToolCallStarted {
                        index,
                        id,
                        name: tool,
                    });
                }
            }
            "content_block_delta" => {
                let index = n(&data, "/index") as usize;
                match data.pointer("/delta/type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = data
                            .pointer("/delta/text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            if out.text.len() + arguments + t.len() > MAX_ANSWER {
                                return Err(http::too_large(
                                    &name,
                                    "the answer",
                                    MAX_ANSWER,
                                    started,
                                    finish(out, calls, usage),
                                ));
                            }
                            started = true;
                            out.text.push_str(t);
                            on_event(StreamEvent::Text(t.to_owned()));
                        }
                    }
                    Some("input_json_delta") => {
                        let part = data
                            .pointer("/delta/partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        if out.text.len() + arguments + part.len() > MAX_ANSWER {
                            return Err(http::too_large(
                                &name,
                                "the answer",
                                MAX_ANSWER,
                                started,
                                finish(out, calls, usage),
                            ));
                        }
                        if let Some(call) = calls.get_mut(&index).filter(|_| !part.is_empty()) {
                            arguments += part.len();
                            call.arguments.push_str(part);
                            on_event(StreamEvent::ToolCallArguments {
                                index,
                                delta: part.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.finish_reason = Some(if r == "tool_use" {
                        "tool_calls".into()
                    } else {
                        r.to_owned()
                    });
                }
                if data.pointer("/usage/output_tokens").is_some() {
                    usage.output_tokens = n(&data, "/usage/output_tokens");
                }
            }
            "message_stop" => {
                done = true;
                break;
            }
            "error" => {
                let detail = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned();
                let kind = data
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if looks_like_context_length(&detail) {
                    return Err(Attempt::Fail(LlmError::ContextLength {
                        model: request.model.clone(),
                        detail,
                    }));
                }
                if kind == "overloaded_error" || kind == "api_error" {
                    return Err(http::broken(
                        &name,
                        detail,
                        started,
                        finish(out, calls, usage),
                    ));
                }
                return Err(Attempt::Fail(LlmError::Protocol {
                    provider: name,
                    detail,
                }));
            }
            _ => {}
        }
    }
    if !done {
        let detail = "the stream ended before the answer was complete".to_owned();
        return Err(http::broken(
            &name,
            detail,
            started,
            finish(out, calls, usage),
        ));
    }
    Ok(finish(out, calls, usage))
}
