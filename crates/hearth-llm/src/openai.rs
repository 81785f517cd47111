//! OpenAI-compatible Chat Completions with `stream: true` (OpenAI, Ollama, LM Studio,
//! llama.cpp server, vLLM, OpenRouter).

use serde_json::{Value, json};

use super::decode::{Answer, Decoder, Step, Stop, parse_json};
use super::http::looks_like_context_length;
use super::{ChatRequest, StreamEvent};
use crate::types::{Message, Role, Usage};

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
pub fn body(request: &ChatRequest) -> Value {
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

/// The Chat Completions stream (`data: {…}` chunks, then `data: [DONE]`).
pub struct OpenAi;

impl Decoder for OpenAi {
    fn url(&self, base: &str) -> String {
        format!("{base}/chat/completions")
    }

    fn body(&self, request: &ChatRequest) -> Value {
        body(request)
    }

    fn event(
        &mut self,
        _event: &str,
        data: &str,
        answer: &mut Answer,
        on_event: &mut (impl FnMut(StreamEvent) + Send),
    ) -> Result<Step, Stop> {
        if data == "[DONE]" {
            return Ok(Step::Done);
        }
        let chunk = parse_json(data)?;
        if let Some(err) = chunk.get("error") {
            let detail = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_owned();
            return Err(if looks_like_context_length(&detail) {
                Stop::ContextLength(detail)
            } else {
                Stop::Protocol(detail)
            });
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            answer.out.usage = Some(Usage {
                input_tokens: n("/prompt_tokens"),
                output_tokens: n("/completion_tokens"),
                cached_input_tokens: n("/prompt_tokens_details/cached_tokens"),
                cache_write_tokens: 0,
            });
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(Step::More);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            answer.out.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(Step::More);
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            answer.text(text, on_event)?;
        }
        for tc in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            let id = tc.get("id").and_then(Value::as_str);
            let fname = tc.pointer("/function/name").and_then(Value::as_str);
            let call = answer.call(index);
            if let Some(id) = id {
                call.id = id.to_owned();
            }
            if let Some(f) = fname {
                call.name.push_str(f);
            }
            if id.is_some() || fname.is_some() {
                answer.announce(index, on_event);
            }
            if let Some(args) = tc.pointer("/function/arguments").and_then(Value::as_str) {
                answer.arguments(index, args, false, on_event)?;
            }
        }
        Ok(Step::More)
    }

    /// A stream that stops after a `finish_reason` without `[DONE]` (some servers) is whole.
    fn complete_without_done(&self, answer: &Answer) -> bool {
        answer.out.finish_reason.is_some()
    }
}
