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

    /// 429 after the retries allowed, or a 429 asking for a wait Hearth does not do
    /// (`asked`: what the provider asked for, e.g. "inf seconds").
    #[error(
        "{provider} is rate-limiting requests{}; try again later",
        asked_text(asked, retry_after)
    )]
    RateLimited {
        provider: String,
        retry_after: Option<Duration>,
        asked: Option<String>,
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

    /// The provider sent more than Hearth reads (one stream event, a whole answer, a model
    /// list, an embeddings reply); reading stopped at the limit. `partial` holds the answer
    /// that had arrived when some text had.
    #[error(
        "{provider} sent a reply Hearth could not read: {what} is larger than {} (the rest was not read)",
        size_text(*limit)
    )]
    TooLarge {
        provider: String,
        what: &'static str,
        limit: usize,
        partial: Option<Box<Completion>>,
    },

    /// The provider answered with a redirect (3xx); provider calls never follow one.
    #[error(
        "{provider} answered with a redirect ({status}) to {}; Hearth does not follow redirects for provider calls: set the provider's URL to the address it should use",
        location.as_deref().unwrap_or("no address (no Location header)")
    )]
    Redirect {
        provider: String,
        status: u16,
        /// The `Location` header, bounded and without control characters.
        location: Option<String>,
    },

    /// An API key would travel over plain http to a host that is not this computer.
    #[error(
        "refusing to send the API key for provider {provider} over plain http to {host}; use https"
    )]
    Insecure { provider: String, host: String },

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

fn asked_text(asked: &Option<String>, retry_after: &Option<Duration>) -> String {
    match (asked, retry_after) {
        (Some(a), _) => format!(
            ": the provider asked to wait {a}, and Hearth waits at most {} s",
            super::limits::MAX_RETRY_WAIT.as_secs()
        ),
        (None, Some(wait)) if *wait > super::ratelimit::MAX_QUEUE_WAIT => {
            format!(": its limits reset in {}", wait_text(*wait))
        }
        (None, _) => String::new(),
    }
}

/// A wait for people: "45 s", "12 min", "7 h 12 min".
fn wait_text(wait: Duration) -> String {
    let secs = wait.as_secs();
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs.div_ceil(60)),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600) / 60),
    }
}

/// `n` bytes for people: "64 KiB", "1 MiB".
pub fn size_text(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
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
            LlmError::Protocol { .. } | LlmError::TooLarge { .. } => "provider_protocol",
            LlmError::Redirect { .. } => "provider_redirect",
            LlmError::Insecure { .. } => "provider_insecure",
            LlmError::Interrupted { .. } => "provider_interrupted",
            LlmError::Client(_) => "internal",
        }
    }

    /// What had arrived of the answer when the call failed after text reached the user
    /// (the turn keeps it, marked interrupted).
    pub fn partial(&self) -> Option<&Completion> {
        match self {
            LlmError::Interrupted { partial, .. } => Some(partial),
            LlmError::TooLarge {
                partial: Some(p), ..
            } => Some(p),
            _ => None,
        }
    }
}

impl From<LlmError> for hearth_base::Error {
    fn from(e: LlmError) -> Self {
        hearth_base::Error::Service(hearth_base::ServiceError::new(e.code(), e))
    }
}
