//! hearth-llm — talking to LLM providers: one shared HTTP client (redirects off, every read
//! bounded), streaming, retries and cancellation. Wire protocols live in submodules
//! (`openai` for OpenAI-compatible Chat Completions: OpenAI, Ollama, LM Studio, llama.cpp
//! server, vLLM, OpenRouter; `anthropic` for Messages). Everything above sees only
//! provider-neutral [`ChatRequest`], [`StreamEvent`] and [`Completion`].
//!
//! **Never depends on** the store, memory, folders or tools (its only Hearth dependency is
//! `hearth-base`): a provider's bytes cannot reach a table or act, they come back as
//! data for the engine to judge. Kept by this crate's `Cargo.toml`.

mod anthropic;
mod decode;
mod error;
mod http;
pub mod limits;
mod openai;
pub mod ratelimit;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

pub use error::LlmError;
pub use http::insecure_host;
pub use ratelimit::Priority;

pub use hearth_base::types;
use hearth_base::types::{Message, ToolCall, ToolSpec, Usage};

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
    /// For a server Hearth runs itself (the built-in model's worker): what starts it, or
    /// finds it running, just before each call — and gives the address and token of this
    /// start. `None` for every server someone else runs.
    pub launch: Option<Arc<dyn Launch>>,
}

/// Starts a provider's server on demand: the built-in model's worker starts on first use,
/// and again after it crashed or unloaded itself when idle. Returns the base URL (with
/// `/v1`) and the bearer token of the running process.
pub trait Launch: Send + Sync {
    fn live(&self) -> BoxFuture<'_, Result<(String, Zeroizing<String>), LlmError>>;
}

/// `provider` ready to call: itself, or with the address and token its launcher gives now.
async fn live(provider: &Provider) -> Result<Cow<'_, Provider>, LlmError> {
    match &provider.launch {
        None => Ok(Cow::Borrowed(provider)),
        Some(launch) => {
            let (base_url, key) = launch.live().await?;
            Ok(Cow::Owned(Provider {
                name: provider.name.clone(),
                protocol: provider.protocol,
                base_url,
                api_key: Some(key),
                launch: None,
            }))
        }
    }
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("protocol", &self.protocol)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("launched", &self.launch.is_some())
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
    /// Whose call this is: in a provider's rate-limit queue the user's turn goes before
    /// background work. Not sent.
    pub priority: Priority,
}

impl ChatRequest {
    /// Tokens the call may use, for the provider's token bucket: the prompt at about four
    /// characters a token, plus the output limit (which providers count up front).
    pub fn estimated_tokens(&self) -> u64 {
        let chars: usize = self
            .messages
            .iter()
            .map(|m| {
                m.content.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>()
            })
            .sum::<usize>()
            + self
                .tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
                .sum::<usize>();
        (chars / 4) as u64 + u64::from(self.max_output_tokens.unwrap_or(0))
    }
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
    /// The call waits in the provider's rate-limit queue for about `seconds` (said once per
    /// wait, before anything is sent).
    Waiting { seconds: u64 },
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
    /// Each provider's rate-limit lane, shared by every clone of this client.
    limits: Arc<ratelimit::RateLimits>,
}

/// Whether a failed attempt may be retried, and after how long at the least.
pub enum Attempt {
    Retry {
        error: LlmError,
        after: Option<Duration>,
    },
    Fail(LlmError),
}

impl LlmClient {
    /// A client with the given retry policy and timeouts. It never follows redirects: a
    /// provider that answers 3xx fails with `provider_redirect` (a key or a prompt is never
    /// sent on to wherever the redirect points).
    pub fn new(retry: RetryPolicy, timeouts: Timeouts) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("Hearth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Client(e.to_string()))?;
        Ok(Self {
            http,
            retry,
            timeouts,
            limits: Arc::default(),
        })
    }

    /// A JSON body of at most `limit` bytes, read from a successful response.
    async fn json_body(
        &self,
        provider: &Provider,
        response: reqwest::Response,
        what: &'static str,
        limit: usize,
    ) -> Result<serde_json::Value, LlmError> {
        let bytes = match http::read_body(response, limit, self.timeouts.idle).await {
            Ok(b) => b,
            Err(http::BodyFault::TooLarge) => {
                return Err(LlmError::TooLarge {
                    provider: provider.name.clone(),
                    what,
                    limit,
                    partial: None,
                });
            }
            Err(http::BodyFault::Broken(detail)) => {
                return Err(LlmError::Unavailable {
                    provider: provider.name.clone(),
                    detail,
                });
            }
        };
        serde_json::from_slice(&bytes).map_err(|e| LlmError::Protocol {
            provider: provider.name.clone(),
            detail: format!("{what} is not JSON ({e})"),
        })
    }

    /// The models the provider offers (`GET /models`), to test a connection and pick one.
    pub async fn list_models(&self, provider: &Provider) -> Result<Vec<String>, LlmError> {
        let live = live(provider).await?;
        let provider = live.as_ref();
        let url = format!("{}/models", provider.base_url.trim_end_matches('/'));
        let req = http::authorized(&self.http, provider, reqwest::Method::GET, &url)?;
        let body = self.listing(provider, req, "the model list").await?;
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

    /// Sends `req` (never cancelled) and reads its JSON body, bounded like a listing;
    /// `what` names it in errors.
    async fn listing(
        &self,
        provider: &Provider,
        req: reqwest::RequestBuilder,
        what: &'static str,
    ) -> Result<serde_json::Value, LlmError> {
        let never = CancellationToken::new();
        let response = match http::send(req, self.timeouts, &provider.name, "", &never, None).await
        {
            Ok(http::Sent::Response(r)) => r,
            Ok(http::Sent::Cancelled) => return Ok(serde_json::Value::Null),
            Err(Attempt::Retry { error, .. }) | Err(Attempt::Fail(error)) => return Err(error),
        };
        self.json_body(provider, response, what, limits::MAX_LISTING_BODY)
            .await
    }

    /// Token counts of `texts` in the model's own tokenizer, from a server that offers
    /// `POST {base}/tokenize` with `{"texts": [...]}` → `{"counts": [...]}` (the built-in
    /// model's worker). At most [`limits::MAX_COUNT_TEXTS`] texts per call; a reply that
    /// does not give one count per text is refused.
    pub async fn count_tokens(
        &self,
        provider: &Provider,
        texts: &[String],
    ) -> Result<Vec<u32>, LlmError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let live = live(provider).await?;
        let provider = live.as_ref();
        let url = format!("{}/tokenize", provider.base_url.trim_end_matches('/'));
        let req = http::authorized(&self.http, provider, reqwest::Method::POST, &url)?
            .json(&serde_json::json!({ "texts": texts }));
        let body = self.listing(provider, req, "the token counts").await?;
        let counts: Vec<u32> = body["counts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_u64().and_then(|c| u32::try_from(c).ok()))
            .collect();
        if counts.len() != texts.len() {
            return Err(LlmError::Protocol {
                provider: provider.name.clone(),
                detail: "the token counts do not match the texts".into(),
            });
        }
        Ok(counts)
    }

    /// The models of an Ollama server with their context windows: the list from
    /// `GET /api/tags`, each window from `POST /api/show` (`model_info.<arch>.context_length`).
    /// `provider.base_url` is the OpenAI-compatible one (`…/v1`); the native API is at its
    /// root. Models whose details cannot be read are listed without a window, and so are
    /// those past [`limits::MAX_SHOWN_MODELS`]; at most [`limits::SHOW_CONCURRENCY`]
    /// `/api/show` requests run at once.
    pub async fn ollama_models(
        &self,
        provider: &Provider,
    ) -> Result<Vec<(String, Option<u32>)>, LlmError> {
        let root = ollama_root(&provider.base_url);
        let tags = self
            .listing(
                provider,
                self.http.get(format!("{root}/api/tags")),
                "the model list",
            )
            .await?;
        let names: Vec<String> = tags["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["name"].as_str().or_else(|| m["model"].as_str()))
            .map(str::to_owned)
            .collect();
        // Collected first: a stream over a closure taking `&String` would make this future
        // not `Send` for every lifetime, which the desktop shell's commands need.
        let shows: Vec<_> = names
            .iter()
            .take(limits::MAX_SHOWN_MODELS)
            .map(|name| {
                let req = self
                    .http
                    .post(format!("{root}/api/show"))
                    .timeout(Duration::from_secs(10))
                    .json(&serde_json::json!({ "model": name }));
                async move {
                    let response = req.send().await.ok()?.error_for_status().ok()?;
                    let body = http::read_body(
                        response,
                        limits::MAX_LISTING_BODY,
                        Duration::from_secs(10),
                    )
                    .await
                    .ok()?;
                    context_length(&serde_json::from_slice(&body).ok()?)
                }
            })
            .collect();
        let mut windows: Vec<Option<u32>> = futures_util::stream::iter(shows)
            .buffered(limits::SHOW_CONCURRENCY)
            .collect()
            .await;
        windows.resize(names.len(), None);
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
                let body = http::read_body(response, limits::MAX_LISTING_BODY, within)
                    .await
                    .ok()?;
                let body: serde_json::Value = serde_json::from_slice(&body).ok()?;
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
        let mut waited = Duration::ZERO;
        let launched = provider;
        let lane = self.limits.lane(&provider.name, &provider.base_url);
        let mut ticket = lane.ticket(request.priority);
        let tokens = request.estimated_tokens();
        let stopped = || Completion {
            stopped: true,
            ..Completion::default()
        };
        loop {
            // In the provider's queue: waits while its limits (as it last said them) are used
            // up, behind calls that came first (the user's turn before background work).
            let said = |wait: Duration| {
                on_event(StreamEvent::Waiting {
                    seconds: wait.as_secs_f64().ceil() as u64,
                })
            };
            let permit = match ticket.admit(tokens, cancel, said).await {
                ratelimit::Admission::Go(permit) => permit,
                ratelimit::Admission::Cancelled => return Ok(stopped()),
                ratelimit::Admission::TooLong(wait) => {
                    return Err(LlmError::RateLimited {
                        provider: provider.name.clone(),
                        retry_after: Some(wait),
                        asked: None,
                    });
                }
            };
            // A launched server is looked up again on each try: one that crashed starts anew.
            let live = live(launched).await?;
            let provider = live.as_ref();
            let wire = decode::Wire {
                http: &self.http,
                timeouts: self.timeouts,
                lane: &lane,
            };
            let attempt = match provider.protocol {
                Protocol::OpenAiCompatible => {
                    decode::attempt(
                        openai::OpenAi,
                        wire,
                        provider,
                        request,
                        cancel,
                        &mut on_event,
                    )
                    .await
                }
                Protocol::Anthropic => {
                    let decoder = anthropic::Anthropic;
                    decode::attempt(decoder, wire, provider, request, cancel, &mut on_event).await
                }
            };
            drop(permit);
            match attempt {
                Ok(done) => return Ok(done),
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry { error, after }) => {
                    let limited = matches!(error, LlmError::RateLimited { .. });
                    let wait =
                        http::retry_wait(&mut delays, &mut waited, &provider.name, error, after)?;
                    if limited {
                        // The whole lane waits (the calls behind this one would get 429s
                        // too); this call keeps its place at the head.
                        lane.block_for(wait);
                        continue;
                    }
                    ticket.hold();
                    tokio::select! {
                        _ = cancel.cancelled() => return Ok(stopped()),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }

    /// Embeds `texts` with `model` of an OpenAI-compatible `provider`
    /// (`POST {base_url}/embeddings`): one vector per text, in order, as the server sent
    /// them (not normalised). The same client, retries and failure classes as chat; the
    /// reply is read up to [`limits::MAX_EMBEDDINGS_BODY`].
    pub async fn embed(
        &self,
        provider: &Provider,
        model: &str,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut delays = self.retry.delays();
        let mut waited = Duration::ZERO;
        let never = CancellationToken::new();
        loop {
            match self.embed_attempt(provider, model, texts).await {
                Ok(vectors) => return Ok(vectors),
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry { error, after }) => {
                    http::pause(
                        &mut delays,
                        &mut waited,
                        &provider.name,
                        error,
                        after,
                        &never,
                    )
                    .await?;
                }
            }
        }
    }

    async fn embed_attempt(
        &self,
        provider: &Provider,
        model: &str,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, Attempt> {
        #[derive(serde::Deserialize)]
        struct Reply {
            data: Vec<Item>,
        }
        #[derive(serde::Deserialize)]
        struct Item {
            index: Option<usize>,
            embedding: Vec<f32>,
        }
        let name = &provider.name;
        let protocol = |detail: String| {
            Attempt::Fail(LlmError::Protocol {
                provider: name.clone(),
                detail,
            })
        };
        let url = format!("{}/embeddings", provider.base_url.trim_end_matches('/'));
        let req = http::authorized(&self.http, provider, reqwest::Method::POST, &url)
            .map_err(Attempt::Fail)?
            .json(&serde_json::json!({ "model": model, "input": texts }));
        let never = CancellationToken::new();
        let response = match http::send(req, self.timeouts, name, model, &never, None).await? {
            http::Sent::Response(r) => r,
            http::Sent::Cancelled => return Err(protocol("cancelled".into())),
        };
        let limit = limits::MAX_EMBEDDINGS_BODY;
        let bytes = match http::read_body(response, limit, self.timeouts.idle).await {
            Ok(b) => b,
            Err(http::BodyFault::TooLarge) => {
                return Err(http::too_large(
                    name,
                    "the embeddings reply",
                    limit,
                    false,
                    Completion::default(),
                ));
            }
            Err(http::BodyFault::Broken(detail)) => {
                return Err(http::broken(name, detail, false, Completion::default()));
            }
        };
        let reply: Reply = serde_json::from_slice(&bytes).map_err(|e| {
            protocol(format!(
                "the embeddings reply is not what was expected ({e})"
            ))
        })?;
        if reply.data.len() != texts.len() {
            return Err(protocol(format!(
                "{} embeddings for {} texts",
                reply.data.len(),
                texts.len()
            )));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (position, item) in reply.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(position);
            match vectors.get_mut(i) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => return Err(protocol(format!("an embedding has a wrong index ({i})"))),
            }
        }
        Ok(vectors.into_iter().flatten().collect())
    }
}

/// A model on a provider, for one slot.
#[derive(Debug, Clone)]
pub struct ChatModel {
    pub provider: Provider,
    pub model: String,
    /// The advertised context window, when known better than the built-in table.
    pub context_window: Option<u32>,
}

/// The models a turn uses: `main` answers; `fast` writes summaries (and later extracts
/// memories). With one model configured, both slots hold it. `fallback`, set only when the
/// user enabled it, answers when the main model fails before saying anything.
#[derive(Debug, Clone)]
pub struct ModelSlots {
    pub main: ChatModel,
    pub fast: ChatModel,
    pub fallback: Option<ChatModel>,
}

impl ModelSlots {
    /// Whether the fast slot holds another model than the main one (the router, and the
    /// user, then have a choice to make).
    pub fn fast_is_distinct(&self) -> bool {
        self.fast.provider.name != self.main.provider.name
            || self.fast.provider.base_url != self.main.provider.base_url
            || self.fast.model != self.main.model
    }

    /// Both slots filled by one model, no fallback.
    pub fn single(model: ChatModel) -> Self {
        Self {
            fast: model.clone(),
            main: model,
            fallback: None,
        }
    }
}
