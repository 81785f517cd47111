//! Talking to LLM providers: one shared HTTP client, streaming, retries and cancellation.
//!
//! Wire protocols live in submodules (`openai` for OpenAI-compatible Chat Completions:
//! OpenAI, Ollama, LM Studio, llama.cpp server, vLLM, OpenRouter). Everything above this
//! module sees only provider-neutral [`ChatRequest`], [`StreamEvent`] and [`Completion`].

mod anthropic;
mod error;
mod http;
mod openai;

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

pub use error::LlmError;

use crate::types::{Message, ToolCall, ToolSpec, Usage};

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI Chat Completions: OpenAI, Ollama, LM Studio, llama.cpp, vLLM, OpenRouter.
    #[default]
    OpenAiCompatible,
    /// Anthropic Messages.
    Anthropic,
}

/// A configured provider endpoint.
#[derive(Clone)]
pub struct Provider {
    /// A name for people and logs ("OpenAI", "Ollama", …).
    pub name: String,
    pub protocol: Protocol,
    /// Base URL including `/v1`, as the OpenAI SDKs take it.
    pub base_url: String,
    /// The API key, if the server needs one. Never logged.
    pub api_key: Option<Zeroizing<String>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("protocol", &self.protocol)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

/// The root of an Ollama server from its OpenAI-compatible base URL (`…/v1` dropped).
pub fn ollama_root(base_url: &str) -> &str {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed)
}

/// Ollama's runtime context when a model sets no `num_ctx` (OLLAMA_CONTEXT_LENGTH default).
pub const OLLAMA_DEFAULT_CONTEXT: u32 = 4_096;

/// The context window an Ollama `/api/show` answer implies: the model's `num_ctx`
/// parameter if it sets one, else its trained `model_info.<arch>.context_length` capped at
/// [`OLLAMA_DEFAULT_CONTEXT`] — Ollama's OpenAI endpoint silently cuts prompts longer than
/// its runtime context, so claiming the trained window would lose the oldest turns without
/// an error. Users who raised the server's context set the window in the model table.
fn context_length(show: &serde_json::Value) -> Option<u32> {
    let num_ctx = show["parameters"].as_str().and_then(|p| {
        p.lines().find_map(|l| {
            let mut parts = l.split_whitespace();
            (parts.next() == Some("num_ctx"))
                .then(|| parts.next()?.parse::<u32>().ok())
                .flatten()
        })
    });
    let trained = show["model_info"].as_object().and_then(|info| {
        info.iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| v.as_u64())
            .and_then(|v| u32::try_from(v).ok())
    });
    num_ctx.or(trained.map(|t| t.min(OLLAMA_DEFAULT_CONTEXT)))
}

/// One request to a chat model.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Ask for JSON matching this schema (`name`, JSON Schema): OpenAI-compatible servers
    /// get `response_format: json_schema` (Ollama, LM Studio, llama.cpp and vLLM honour it);
    /// Anthropic gets the schema in the prompt. Callers still validate what comes back.
    pub json_schema: Option<(String, serde_json::Value)>,
}

/// Something that arrived on the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// More answer text.
    Text(String),
    /// The model started a tool call.
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    /// More of a tool call's JSON arguments.
    ToolCallArguments { index: usize, delta: String },
}

/// What a call produced (whole, stopped by the user, or up to where it broke).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// As the provider said: `stop`, `length`, `tool_calls`, …
    pub finish_reason: Option<String>,
    /// True when the user cancelled before the model finished.
    pub stopped: bool,
}

/// Retries of transient failures: exponential backoff with jitter; `retry-after` wins.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub max_retries: usize,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retries: 4,
        }
    }
}

impl RetryPolicy {
    fn delays(&self) -> impl Iterator<Item = Duration> {
        ExponentialBuilder::default()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_retries)
            .with_jitter()
            .build()
    }
}

/// Timeouts of a provider call.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    /// Longest wait for the next piece of a stream (models can think a while).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(120),
        }
    }
}

/// The one HTTP client for all providers; cheap to clone.
#[derive(Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    retry: RetryPolicy,
    timeouts: Timeouts,
}

/// Whether a failed attempt may be retried, and after how long at the least.
pub(crate) enum Attempt {
    Retry {
        error: LlmError,
        after: Option<Duration>,
    },
    Fail(LlmError),
}

impl LlmClient {
    /// A client with the given retry policy and timeouts.
    pub fn new(retry: RetryPolicy, timeouts: Timeouts) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .user_agent(concat!("Hearth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Client(e.to_string()))?;
        Ok(Self {
            http,
            retry,
            timeouts,
        })
    }

    /// The models the provider offers (`GET /models`), to test a connection and pick one.
    pub async fn list_models(&self, provider: &Provider) -> Result<Vec<String>, LlmError> {
        let url = format!("{}/models", provider.base_url.trim_end_matches('/'));
        let mut req = self.http.get(&url);
        if let Some(key) = &provider.api_key {
            req = match provider.protocol {
                Protocol::OpenAiCompatible => req.bearer_auth(key.as_str()),
                Protocol::Anthropic => req.header("x-api-key", key.as_str()),
            };
        }
        if provider.protocol == Protocol::Anthropic {
            req = req.header("anthropic-version", anthropic::API_VERSION);
        }
        let never = CancellationToken::new();
        let response = match http::send(req, self.timeouts, &provider.name, "", &never).await {
            Ok(http::Sent::Response(r)) => r,
            Ok(http::Sent::Cancelled) => return Ok(Vec::new()),
            Err(Attempt::Retry { error, .. }) | Err(Attempt::Fail(error)) => return Err(error),
        };
        let body: serde_json::Value = response.json().await.map_err(|e| LlmError::Protocol {
            provider: provider.name.clone(),
            detail: format!("the model list is not JSON ({e})"),
        })?;
        let models = body["data"]
            .as_array()
            .or_else(|| body["models"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|m| {
                m["id"]
                    .as_str()
                    .or_else(|| m["name"].as_str())
                    .map(str::to_owned)
            })
            .collect();
        Ok(models)
    }

    /// The models of an Ollama server with their context windows: the list from
    /// `GET /api/tags`, each window from `POST /api/show` (`model_info.<arch>.context_length`).
    /// `provider.base_url` is the OpenAI-compatible one (`…/v1`); the native API is at its
    /// root. Models whose details cannot be read are listed without a window.
    pub async fn ollama_models(
        &self,
        provider: &Provider,
    ) -> Result<Vec<(String, Option<u32>)>, LlmError> {
        let root = ollama_root(&provider.base_url);
        let protocol_error = |detail: String| LlmError::Protocol {
            provider: provider.name.clone(),
            detail,
        };
        let never = CancellationToken::new();
        let response = match http::send(
            self.http.get(format!("{root}/api/tags")),
            self.timeouts,
            &provider.name,
            "",
            &never,
        )
        .await
        {
            Ok(http::Sent::Response(r)) => r,
            Ok(http::Sent::Cancelled) => return Ok(Vec::new()),
            Err(Attempt::Retry { error, .. }) | Err(Attempt::Fail(error)) => return Err(error),
        };
        let tags: serde_json::Value = response
            .json()
            .await
            .map_err(|e| protocol_error(format!("the model list is not JSON ({e})")))?;
        let names: Vec<String> = tags["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["name"].as_str().or_else(|| m["model"].as_str()))
            .map(str::to_owned)
            .collect();
        let shows = names.iter().map(|name| {
            let req = self
                .http
                .post(format!("{root}/api/show"))
                .timeout(Duration::from_secs(10))
                .json(&serde_json::json!({ "model": name }));
            async move {
                let body: serde_json::Value = req
                    .send()
                    .await
                    .ok()?
                    .error_for_status()
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                context_length(&body)
            }
        });
        let windows = futures_util::future::join_all(shows).await;
        Ok(names.into_iter().zip(windows).collect())
    }

    /// Which of `candidates` (base URLs ending in `/v1`) answer `GET /models` within
    /// `within`, with the models each offers. Probed all at once.
    pub async fn probe(
        &self,
        candidates: &[String],
        within: Duration,
    ) -> Vec<(String, Vec<String>)> {
        let probes = candidates.iter().map(|base| {
            let req = self
                .http
                .get(format!("{}/models", base.trim_end_matches('/')))
                .timeout(within);
            async move {
                let response = req.send().await.ok()?.error_for_status().ok()?;
                let body: serde_json::Value = response.json().await.ok()?;
                let models = body["data"]
                    .as_array()
                    .or_else(|| body["models"].as_array())?
                    .iter()
                    .filter_map(|m| m["id"].as_str().or_else(|| m["name"].as_str()))
                    .map(str::to_owned)
                    .collect();
                Some((base.clone(), models))
            }
        });
        futures_util::future::join_all(probes)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Streams a chat completion, calling `on_event` for each piece as it arrives.
    ///
    /// Transient failures before the first piece are retried; after it, a broken stream is
    /// [`LlmError::Interrupted`] with what had arrived. Cancelling `cancel` ends the call
    /// before the next piece, closes the connection and returns the partial answer with
    /// `stopped: true`.
    pub async fn stream_chat(
        &self,
        provider: &Provider,
        request: &ChatRequest,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(StreamEvent) + Send,
    ) -> Result<Completion, LlmError> {
        let mut delays = self.retry.delays();
        loop {
            let (http, t) = (&self.http, self.timeouts);
            let attempt = match provider.protocol {
                Protocol::OpenAiCompatible => {
                    openai::attempt(http, t, provider, request, cancel, &mut on_event).await
                }
                Protocol::Anthropic => {
                    anthropic::attempt(http, t, provider, request, cancel, &mut on_event).await
                }
            };
            match attempt {
                Ok(done) => return Ok(done),
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry { error, after }) => {
                    let Some(backoff) = delays.next() else {
                        return Err(error);
                    };
                    let wait = after.unwrap_or(backoff);
                    tracing::info!(provider = %provider.name, code = error.code(), wait_ms = wait.as_millis() as u64, "retrying provider call");
                    tokio::select! {
                        _ = cancel.cancelled() => return Ok(Completion { stopped: true, ..Completion::default() }),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }
}
