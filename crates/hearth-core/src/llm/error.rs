//! How a provider call can fail, classified so the caller knows what to do (000:202).

use std::time::Duration;

use super::Completion;

/// A failed provider call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// 401/403: retrying will not help.
    #[error("{provider} rejected the request ({status}): check your API key for {provider}")]
    Auth { provider: String, status: u16 },

    /// 429 after the retries allowed.
    #[error("{provider} is rate-limiting requests; try again later")]
    RateLimited {
        provider: String,
        retry_after: Option<Duration>,
    },

    /// Could not connect, timed out, or 5xx, after the retries allowed.
    #[error("{provider} is unreachable or failing: {detail}")]
    Unavailable { provider: String, detail: String },

    /// The prompt does not fit the model's context window.
    #[error("the conversation is too long for {model}: {detail}")]
    ContextLength { model: String, detail: String },

    /// The provider refused the request as malformed (a bug or an unsupported option).
    #[error("{provider} refused the request ({status}): {detail}")]
    BadRequest {
        provider: String,
        status: u16,
        detail: String,
    },

    /// The provider's reply could not be understood.
    #[error("{provider} sent a reply Hearth could not read: {detail}")]
    Protocol { provider: String, detail: String },

    /// The stream broke after the answer had started; `partial` holds what arrived.
    #[error("the connection to {provider} broke mid-answer: {detail}")]
    Interrupted {
        provider: String,
        detail: String,
        partial: Box<Completion>,
    },

    /// The HTTP client could not be set up.
    #[error("could not set up the HTTP client: {0}")]
    Client(String),
}

impl LlmError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Auth { .. } => "provider_auth",
            LlmError::RateLimited { .. } => "provider_rate_limited",
            LlmError::Unavailable { .. } => "provider_unavailable",
            LlmError::ContextLength { .. } => "context_length",
            LlmError::BadRequest { .. } => "provider_bad_request",
            LlmError::Protocol { .. } => "provider_protocol",
            LlmError::Interrupted { .. } => "provider_interrupted",
            LlmError::Client(_) => "internal",
        }
    }
}
