//! A provider's OpenAI-compatible embeddings API: `POST {base_url}/embeddings` with
//! `{"model", "input": [...]}` (OpenAI, Ollama, LM Studio, llama.cpp server, vLLM).

use super::Embedder;
use crate::{Error, Result};
use hearth_llm::{LlmClient, LlmError, Protocol, Provider};

/// Texts sent in one request; well under every server's limit (OpenAI takes 2,048).
const BATCH: usize = 64;

/// Embeddings from a provider's API, sent through the engine's one [`LlmClient`] (same
/// connection pool, retries and failure classes as chat). The vectors are normalized here
/// too, whatever the server does.
pub struct ApiEmbedder {
    client: LlmClient,
    provider: Provider,
    model: String,
    dimensions: usize,
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

impl ApiEmbedder {
    /// Embeds with `model` of an OpenAI-compatible `provider` (base URL with `/v1`) through
    /// `client`; every vector must have `dimensions` values. Anthropic has no embeddings API.
    pub fn new(
        client: &LlmClient,
        provider: Provider,
        model: impl Into<String>,
        dimensions: usize,
    ) -> Result<Self> {
        if dimensions == 0 {
            return Err(Error::InvalidInput(
                "embedding dimensions must be positive".into(),
            ));
        }
        Self::build(client, provider, model.into(), dimensions)
    }

    /// Embeds with `model` of `provider`, measuring its dimensions with one short request.
    /// Blocking, like [`Embedder::embed`]. Fails as that request does (unknown model,
    /// wrong key, server down), so a bad choice is refused before it is saved.
    pub fn detect(
        client: &LlmClient,
        provider: Provider,
        model: impl Into<String>,
    ) -> Result<Self> {
        let mut probe = Self::build(client, provider, model.into(), 0)?;
        let dimensions = probe
            .request(&["Hearth checks the embedding size."])?
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

    fn build(
        client: &LlmClient,
        provider: Provider,
        model: String,
        dimensions: usize,
    ) -> Result<Self> {
        if provider.protocol != Protocol::OpenAiCompatible {
            return Err(Error::InvalidInput(format!(
                "{} has no OpenAI-compatible embeddings API; choose another provider for embeddings",
                provider.name
            )));
        }
        Ok(ApiEmbedder {
            client: client.clone(),
            provider,
            model,
            dimensions,
        })
    }

    /// One batch, blocking: the call runs on the shared network runtime.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let (client, provider, model) = (
            self.client.clone(),
            self.provider.clone(),
            self.model.clone(),
        );
        let owned: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
        let vectors = super::on_network_runtime(async move {
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            client.embed(&provider, &model, &refs).await
        })??;
        vectors
            .into_iter()
            .map(|mut v| {
                // 0: being measured (`detect`).
                if self.dimensions != 0 && v.len() != self.dimensions {
                    return Err(LlmError::Protocol {
                        provider: self.provider.name.clone(),
                        detail: format!(
                            "{} returned {}-dimensional embeddings, not {}",
                            self.model,
                            v.len(),
                            self.dimensions
                        ),
                    }
                    .into());
                }
                super::normalize(&mut v);
                Ok(v)
            })
            .collect()
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
        let mut vectors = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            vectors.extend(self.request(chunk)?);
        }
        tracing::debug!(provider = %self.provider.name, model = %self.model, texts = texts.len(), "embedded via API");
        Ok(vectors)
    }
}
