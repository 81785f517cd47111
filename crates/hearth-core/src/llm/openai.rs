//! OpenAI-compatible Chat Completions with `stream: true` (OpenAI, Ollama, LM Studio,
//! llama.cpp server, vLLM, OpenRouter).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{self, Next, Sent, looks_like_context_length};
use super::limits::{MAX_ANSWER, MAX_SSE_EVENT};
use super::{Attempt, ChatRequest, Completion, LlmError, Provider, StreamEvent, Timeouts};
use crate::types::{Message, Role, ToolCall, Usage};

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn message_json(m: &Message) -> Value {
    let mut v = json!({ "role": role(m.role), "content": m.content });
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// The request body (public to the crate so context tests can compare bytes).
pub(crate) fn body(request: &ChatRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": request.messages.iter().map(message_json).collect::<Vec<_>>(),
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    if let Some(n) = request.max_output_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some((name, schema)) = &request.json_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": true}
        });
    }
    body
}

/// One try: send, then read the stream to its end.
pub(crate) async fn attempt(
    http: &reqwest::Client,
    timeouts: Timeouts,
    provider: &Provider,
    request: &ChatRequest,
    cancel: &CancellationToken,
    on_event: &mut (impl FnMut(StreamEvent) + Send),
) -> Result<Completion, Attempt> {
    let name = provider.name.clone();
    let url = format!(
        "{}/chat/completions",
        provider.base_url.trim_end_matches('/')
    );
    let req = http::authorized(http, provider, reqwest::Method::POST, &url)
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
    let mut calls: BTreeMap<usize, ToolCall> = BTreeMap::new();
    let mut started = false;
    let mut done = false;
    // Bytes of tool-call arguments so far (counted with the text against MAX_ANSWER).
    let mut arguments = 0usize;
    let finish = |mut out: Completion, calls: BTreeMap<usize, ToolCall>| {
        out.tool_calls = calls.into_values().collect();
        out
    };
    loop {
        let ev = match http::next(&mut events, timeouts, cancel).await {
            Next::Cancelled => {
                out.stopped = true;
                return Ok(finish(out, calls));
            }
            Next::End => break,
            Next::Broken(detail) => {
                return Err(http::broken(&name, detail, started, finish(out, calls)));
            }
            Next::TooLarge => {
                return Err(http::too_large(
                    &name,
                    "one stream event",
                    MAX_SSE_EVENT,
                    started,
                    finish(out, calls),
                ));
            }
            Next::Event(ev) => ev,
        };
        let data = ev.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(e) => {
                return Err(Attempt::Fail(LlmError::Protocol {
                    provider: name,
                    detail: format!("a stream event is not JSON ({e})"),
                }));
            }
        };
        if let Some(err) = chunk.get("error") {
            let detail = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_owned();
            if looks_like_context_length(&detail) {
                return Err(Attempt::Fail(LlmError::ContextLength {
                    model: request.model.clone(),
                    detail,
                }));
            }
            return Err(Attempt::Fail(LlmError::Protocol {
                provider: name,
                detail,
            }));
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            out.usage = Some(Usage {
                input_tokens: n("/prompt_tokens"),
                output_tokens: n("/completion_tokens"),
                cached_input_tokens: n("/prompt_tokens_details/cached_tokens"),
                cache_write_tokens: 0,
            });
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            continue;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            out.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            if out.text.len() + arguments + text.len() > MAX_ANSWER {
                return Err(http::too_large(
                    &name,
                    "the answer",
                    MAX_ANSWER,
                    started,
                    finish(out, calls),
                ));
            }
            started = true;
            out.text.push_str(text);
            on_event(StreamEvent::Text(text.to_owned()));
        }
        for tc in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            started = true;
            let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            let entry = calls.entry(index).or_insert_with(|| ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
            let id = tc.get("id").and_then(Value::as_str);
            let fname = tc.pointer("/function/name").and_then(Value::as_str);
            if let Some(id) = id {
                entry.id = id.to_owned();
            }
            if let Some(f) = fname {
                entry.name.push_str(f);
            }
            if id.is_some() || fname.is_some() {
                on_event(StreamEvent::ToolCallStarted {
                    index,
                    id: entry.id.clone(),
                    name: entry.name.clone(),
                });
            }
            if let Some(args) = tc
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
            {
                if out.text.len() + arguments + args.len() > MAX_ANSWER {
                    return Err(http::too_large(
                        &name,
                        "the answer",
                        MAX_ANSWER,
                        started,
                        finish(out, calls),
                    ));
                }
                arguments += args.len();
                entry.arguments.push_str(args);
                on_event(StreamEvent::ToolCallArguments {
                    index,
                    delta: args.to_owned(),
                });
            }
        }
    }
    if !done && out.finish_reason.is_none() {
        let detail = "the stream ended before the answer was complete".to_owned();
        return Err(http::broken(&name, detail, started, finish(out, calls)));
    }
    Ok(finish(out, calls))
}
