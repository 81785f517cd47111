//! One `attempt` for every protocol: send the request, read the stream bounded, and hand
//! each event to the protocol's [`Decoder`], which reads it into the shared [`Answer`]
//! (text, tool calls, usage, the byte cap). A stream cut, a cap passed or a cancel keeps
//! what arrived, the same way for every provider.

use std::collections::BTreeMap;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::http::{self, Next, Sent};
use super::limits::{MAX_ANSWER, MAX_SSE_EVENT};
use super::ratelimit::Lane;
use super::{Attempt, ChatRequest, Completion, LlmError, Provider, StreamEvent, Timeouts};
use crate::types::{ToolCall, Usage};

/// Why a decoder stops the stream.
pub enum Stop {
    /// The provider said something Hearth cannot use (not retried).
    Protocol(String),
    /// The prompt does not fit the model.
    ContextLength(String),
    /// The provider broke off mid-answer (overloaded): what arrived is kept.
    Broken(String),
    /// The answer passed [`MAX_ANSWER`].
    TooLarge,
}

/// What a decoder made of one event.
pub enum Step {
    /// Read on.
    More,
    /// The stream says the answer is complete.
    Done,
}

/// The answer so far, whatever the protocol.
#[derive(Default)]
pub struct Answer {
    pub out: Completion,
    pub calls: BTreeMap<usize, ToolCall>,
    /// Bytes of tool-call arguments (counted with the text against [`MAX_ANSWER`]).
    arguments: usize,
    /// Some of the answer arrived (a retry would repeat it).
    pub started: bool,
}

impl Answer {
    /// A piece of the answer's text.
    pub fn text(
        &mut self,
        text: &str,
        on_event: &mut (impl FnMut(StreamEvent) + Send),
    ) -> Result<(), Stop> {
        if text.is_empty() {
            return Ok(());
        }
        self.fits(text.len())?;
        self.started = true;
        self.out.text.push_str(text);
        on_event(StreamEvent::Text(text.to_owned()));
        Ok(())
    }

    /// The tool call at `index` (created when new): the protocol fills in its id and name.
    pub fn call(&mut self, index: usize) -> &mut ToolCall {
        self.started = true;
        self.calls.entry(index).or_insert_with(|| ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        })
    }

    /// Says the call at `index` started (its id and name as known now).
    pub fn announce(&mut self, index: usize, on_event: &mut (impl FnMut(StreamEvent) + Send)) {
        let call = self.call(index);
        let (id, name) = (call.id.clone(), call.name.clone());
        on_event(StreamEvent::ToolCallStarted { index, id, name });
    }

    /// A piece of the arguments of the call at `index` (one that was never started is
    /// dropped when `known_only`).
    pub fn arguments(
        &mut self,
        index: usize,
        part: &str,
        known_only: bool,
        on_event: &mut (impl FnMut(StreamEvent) + Send),
    ) -> Result<(), Stop> {
        self.fits(part.len())?;
        if part.is_empty() || (known_only && !self.calls.contains_key(&index)) {
            return Ok(());
        }
        self.arguments += part.len();
        self.call(index).arguments.push_str(part);
        on_event(StreamEvent::ToolCallArguments {
            index,
            delta: part.to_owned(),
        });
        Ok(())
    }

    fn fits(&self, more: usize) -> Result<(), Stop> {
        if self.out.text.len() + self.arguments + more > MAX_ANSWER {
            Err(Stop::TooLarge)
        } else {
            Ok(())
        }
    }

    fn finish(mut self) -> Completion {
        self.out.tool_calls = self.calls.into_values().collect();
        self.out
    }
}

/// One protocol's side of a streamed chat call.
pub trait Decoder {
    /// Where the request goes, under the provider's base URL.
    fn url(&self, base: &str) -> String;
    /// The request body.
    fn body(&self, request: &ChatRequest) -> Value;
    /// The usage an answer starts with (`None`: only what the stream reports).
    fn initial_usage(&self) -> Option<Usage> {
        None
    }
    /// Reads one event (`event` is its SSE event name, `data` its text, not empty).
    fn event(
        &mut self,
        event: &str,
        data: &str,
        answer: &mut Answer,
        on_event: &mut (impl FnMut(StreamEvent) + Send),
    ) -> Result<Step, Stop>;
    /// Whether a stream that ended without [`Step::Done`] still holds a whole answer.
    fn complete_without_done(&self, _answer: &Answer) -> bool {
        false
    }
}

/// An event's data as JSON.
pub fn parse_json(data: &str) -> Result<Value, Stop> {
    serde_json::from_str(data)
        .map_err(|e| Stop::Protocol(format!("a stream event is not JSON ({e})")))
}

/// How a call goes out: the client, its timeouts, and the provider's rate-limit lane (which
/// learns from the response's headers).
#[derive(Clone, Copy)]
pub struct Wire<'a> {
    pub http: &'a reqwest::Client,
    pub timeouts: Timeouts,
    pub lane: &'a Lane,
}

/// One try: send, then read the stream to its end with `decoder`.
pub async fn attempt(
    mut decoder: impl Decoder,
    wire: Wire<'_>,
    provider: &Provider,
    request: &ChatRequest,
    cancel: &CancellationToken,
    on_event: &mut (impl FnMut(StreamEvent) + Send),
) -> Result<Completion, Attempt> {
    let Wire {
        http: http_client,
        timeouts,
        lane,
    } = wire;
    let name = provider.name.clone();
    let url = decoder.url(provider.base_url.trim_end_matches('/'));
    let req = http::authorized(http_client, provider, reqwest::Method::POST, &url)
        .map_err(Attempt::Fail)?
        .json(&decoder.body(request));
    let response =
        match http::send(req, timeouts, &name, &request.model, cancel, Some(lane)).await? {
            Sent::Cancelled => {
                return Ok(Completion {
                    stopped: true,
                    ..Completion::default()
                });
            }
            Sent::Response(r) => r,
        };
    let mut events = http::events(response);
    let mut answer = Answer::default();
    answer.out.usage = decoder.initial_usage();
    let mut done = false;
    loop {
        let ev = match http::next(&mut events, timeouts, cancel).await {
            Next::Cancelled => {
                answer.out.stopped = true;
                return Ok(answer.finish());
            }
            Next::End => break,
            Next::Broken(detail) => {
                let started = answer.started;
                return Err(http::broken(&name, detail, started, answer.finish()));
            }
            Next::TooLarge => {
                let started = answer.started;
                return Err(http::too_large(
                    &name,
                    "one stream event",
                    MAX_SSE_EVENT,
                    started,
                    answer.finish(),
                ));
            }
            Next::Event(ev) => ev,
        };
        let data = ev.data.trim();
        if data.is_empty() {
            continue;
        }
        match decoder.event(&ev.event, data, &mut answer, on_event) {
            Ok(Step::More) => {}
            Ok(Step::Done) => {
                done = true;
                break;
            }
            Err(stop) => {
                let started = answer.started;
                return Err(match stop {
                    Stop::Protocol(detail) => Attempt::Fail(LlmError::Protocol {
                        provider: name,
                        detail,
                    }),
                    Stop::ContextLength(detail) => Attempt::Fail(LlmError::ContextLength {
                        model: request.model.clone(),
                        detail,
                    }),
                    Stop::Broken(detail) => http::broken(&name, detail, started, answer.finish()),
                    Stop::TooLarge => {
                        http::too_large(&name, "the answer", MAX_ANSWER, started, answer.finish())
                    }
                });
            }
        }
    }
    if !done && !decoder.complete_without_done(&answer) {
        let detail = "the stream ended before the answer was complete".to_owned();
        let started = answer.started;
        return Err(http::broken(&name, detail, started, answer.finish()));
    }
    Ok(answer.finish())
}
