//! A provider's OpenAI-compatible embeddings API: `POST {base_url}/embeddings` with
//! `{"model", "input": [...]}` (OpenAI, Ollama, LM Studio, llama.cpp server, vLLM).

use std::time::Duration;

use serde::Deserialize;

use super::Embedder;
use crate::llm::{LlmError, Protocol, Provider};
use crate::{Error, Result};

/// Texts sent in one request; well under every server's limit (OpenAI takes 2,048).
const BATCH: usize = 64;

/// Embeddings from a provider's API. The vectors are normalized here too, whatever the server does.
pub struct ApiEmbedder {
    provider: Provider,
    model: String,
    dimensions: usize,
    http: reqwest::Client,
}

impl std::fmt::Debug for ApiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiEmbedder")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

#[derive(Deserialize)]
struct Reply {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl ApiEmbedder {
    /// Embeds with `model` of an OpenAI-compatible `provider` (base URL with `/v1`); every
    /// vector must have `dimensions` values. Anthropic has no embeddings API.
    pub fn new(provider: Provider, model: impl Into<String>, dimensions: usize) -> Result<Self> {
        if dimensions == 0 {
            return Err(Error::InvalidInput(
                "embedding dimensions must be positive".into(),
            ));
        }
        Self::build(provider, model.into(), dimensions)
    }

    /// Embeds with `model` of `provider`, measuring its dimensions with one short request.
    /// Blocking, like [`Embedder::embed`]. Fails as that request does (unknown model,
    /// wrong key, server down), so a bad choice is refused before it is saved.
    pub fn detect(provider: Provider, model: impl Into<String>) -> Result<Self> {
        let mut probe = Self::build(provider, model.into(), 0)?;
        let dimensions = super::block_on(probe.request(&["Hearth checks the embedding size."]))?
            .pop()
            .map(|v| v.len())
            .unwrap_or(0);
        if dimensions == 0 {
            return Err(LlmError::Protocol {
                provider: probe.provider.name.clone(),
                detail: format!("{} returned an empty embedding", probe.model),
            }
            .into());
        }
        probe.dimensions = dimensions;
        Ok(probe)
    }

    fn build(provider: Provider, model: String, dimensions: usize) -> Result<Self> {
        if provider.protocol != Protocol::OpenAiCompatible {
            return Err(Error::InvalidInput(format!(
                "{} has no OpenAI-compatible embeddings API; choose another provider for embeddings",
                provider.name
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .user_agent(concat!("Hearth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Client(e.to_string()))?;
        Ok(ApiEmbedder {
            provider,
            model,
            dimensions,
            http,
        })
    }

    async fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let name = &self.provider.name;
        let url = format!(
            "{}/embeddings",
            self.provider.base_url.trim_end_matches('/')
        );
        let mut req = self
            .http
            .post(&url)
            .json(&serde_json::json!({ "model": self.model, "input": texts }));
        if let Some(key) = &self.provider.api_key {
            req = req.bearer_auth(key.as_str());
        }
        let response = req.send().await.map_err(|e| LlmError::Unavailable {
            provider: name.clone(),
            detail: e.to_string(),
        })?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let text: String = response
                .text()
                .await
                .unwrap_or_default()
                .chars()
                .take(300)
                .collect();
            let provider = name.clone();
            return Err(match status {
                401 | 403 => LlmError::Auth { provider, status },
                429 => LlmError::RateLimited {
                    provider,
                    retry_after: None,
                },
                408 | 500..=599 => LlmError::Unavailable {
                    provider,
                    detail: format!("HTTP {status}: {text}"),
                },
                _ => LlmError::BadRequest {
                    provider,
                    status,
                    detail: text,
                },
            }
            .into());
        }
        let protocol = |detail: String| -> Error {
            LlmError::Protocol {
                provider: name.clone(),
                detail,
            }
            .into()
        };
        let reply: Reply = response.json().await.map_err(|e| {
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
        let mut vectors = vec![Vec::new(); texts.len()];
        for (position, item) in reply.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(position);
            if i >= texts.len() || !vectors[i].is_empty() {
                return Err(protocol(format!("an embedding has a wrong index ({i})")));
            }
            // 0: being measured (`detect`).
            if self.dimensions != 0 && item.embedding.len() != self.dimensions {
                return Err(protocol(format!(
                    "{} returned {}-dimensional embeddings, not {}",
                    self.model,
                    item.embedding.len(),
                    self.dimensions
                )));
            }
            let mut v = item.embedding;
            super::normalize(&mut v);
            vectors[i] = v;
        }
        Ok(vectors)
    }
}

impl Embedder for ApiEmbedder {
    fn model_id(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        super::block_on(async {
            let mut vectors = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(BATCH) {
                vectors.extend(self.request(chunk).await?);
            }
            tracing::debug!(provider = %self.provider.name, model = %self.model, texts = texts.len(), "embedded via API");
            Ok(vectors)
        })
    }
}
