//! Anthropic Messages with streaming, tool use and prompt-cache breakpoints.
//!
//! `cache_control` marks the end of the stable prefix (system prompt and tool catalog) and
//! the end of the history, so a follow-up turn reads both from Anthropic's prompt cache.

use serde_json::{Value, json};

use super::decode::{Answer, Decoder, Step, Stop, parse_json};
use super::http::looks_like_context_length;
use super::{ChatRequest, StreamEvent};
use crate::types::{Message, Role, Usage};

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
pub fn body(request: &ChatRequest) -> Value {
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

/// The Messages stream (`message_start`, content blocks, `message_delta`, `message_stop`).
pub struct Anthropic;

impl Decoder for Anthropic {
    fn url(&self, base: &str) -> String {
        format!("{base}/messages")
    }

    fn body(&self, request: &ChatRequest) -> Value {
        body(request)
    }

    /// Anthropic reports usage at the start and the end; an answer always carries it.
    fn initial_usage(&self) -> Option<Usage> {
        Some(Usage::default())
    }

    fn event(
        &mut self,
        event: &str,
        data: &str,
        answer: &mut Answer,
        on_event: &mut (impl FnMut(StreamEvent) + Send),
    ) -> Result<Step, Stop> {
        let data = parse_json(data)?;
        let n = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        match data["type"].as_str().unwrap_or(event) {
            "message_start" => {
                let cached = n(&data, "/message/usage/cache_read_input_tokens");
                let written = n(&data, "/message/usage/cache_creation_input_tokens");
                answer.out.usage = Some(Usage {
                    input_tokens: n(&data, "/message/usage/input_tokens") + cached + written,
                    output_tokens: n(&data, "/message/usage/output_tokens"),
                    cached_input_tokens: cached,
                    cache_write_tokens: written,
                });
            }
            "content_block_start" => {
                let index = n(&data, "/index") as usize;
                if data.pointer("/content_block/type").and_then(Value::as_str) == Some("tool_use") {
                    let field = |p: &str| {
                        data.pointer(p)
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned()
                    };
                    let call = answer.call(index);
                    call.id = field("/content_block/id");
                    call.name = field("/content_block/name");
                    call.arguments.clear();
                    answer.announce(index, on_event);
                }
            }
            "content_block_delta" => {
                let index = n(&data, "/index") as usize;
                match data.pointer("/delta/type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = data.pointer("/delta/text").and_then(Value::as_str) {
                            answer.text(t, on_event)?;
                        }
                    }
                    Some("input_json_delta") => {
                        let part = data
                            .pointer("/delta/partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        answer.arguments(index, part, true, on_event)?;
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    answer.out.finish_reason = Some(if r == "tool_use" {
                        "tool_calls".into()
                    } else {
                        r.to_owned()
                    });
                }
                if data.pointer("/usage/output_tokens").is_some()
                    && let Some(usage) = answer.out.usage.as_mut()
                {
                    usage.output_tokens = n(&data, "/usage/output_tokens");
                }
            }
            "message_stop" => return Ok(Step::Done),
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
                return Err(if looks_like_context_length(&detail) {
                    Stop::ContextLength(detail)
                } else if kind == "overloaded_error" || kind == "api_error" {
                    Stop::Broken(detail)
                } else {
                    Stop::Protocol(detail)
                });
            }
            _ => {}
        }
        Ok(Step::More)
    }
}
