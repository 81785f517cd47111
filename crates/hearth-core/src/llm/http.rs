//! What every wire protocol shares: sending with timeouts and cancellation, classifying
//! HTTP failures, and reading SSE events one at a time.

use std::time::Duration;

use eventsource_stream::{Event, Eventsource};
use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::{Attempt, Completion, LlmError, Timeouts};

/// The outcome of sending a request.
pub(crate) enum Sent {
    Response(reqwest::Response),
    Cancelled,
}

/// Sends `req`; connection failures and failing statuses become [`Attempt`]s.
pub(crate) async fn send(
    req: reqwest::RequestBuilder,
    timeouts: Timeouts,
    provider: &str,
    model: &str,
    cancel: &CancellationToken,
) -> Result<Sent, Attempt> {
    let response = tokio::select! {
        _ = cancel.cancelled() => return Ok(Sent::Cancelled),
        r = tokio::time::timeout(timeouts.idle, req.send()) => r,
    };
    let unavailable = |detail: String| Attempt::Retry {
        error: LlmError::Unavailable {
            provider: provider.to_owned(),
            detail,
        },
        after: None,
    };
    let response = match response {
        Err(_) => return Err(unavailable("no response in time".into())),
        Ok(Err(e)) => return Err(unavailable(e.to_string())),
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(Sent::Response(response));
    }
    let after = retry_after(response.headers());
    let text = response.text().await.unwrap_or_default();
    let code = status.as_u16();
    let provider = provider.to_owned();
    Err(match code {
        401 | 403 => Attempt::Fail(LlmError::Auth {
            provider,
            status: code,
        }),
        429 => Attempt::Retry {
            error: LlmError::RateLimited {
                provider,
                retry_after: after,
            },
            after,
        },
        408 | 500..=599 => Attempt::Retry {
            error: LlmError::Unavailable {
                provider,
                detail: format!("HTTP {code}: {}", short(&text)),
            },
            after,
        },
        _ if looks_like_context_length(&text) => Attempt::Fail(LlmError::ContextLength {
            model: model.to_owned(),
            detail: short(&text),
        }),
        _ => Attempt::Fail(LlmError::BadRequest {
            provider,
            status: code,
            detail: short(&text),
        }),
    })
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// Whether an error text says the prompt is too long for the model.
pub(crate) fn looks_like_context_length(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context window",
        "too many tokens",
        "prompt is too long",
    ]
    .iter()
    .any(|p| b.contains(p))
}

/// At most 300 characters of a provider's error text.
pub(crate) fn short(s: &str) -> String {
    s.chars().take(300).collect()
}

/// One step of reading a stream.
pub(crate) enum Next {
    Event(Event),
    /// The body ended.
    End,
    /// The body broke or went silent.
    Broken(String),
    Cancelled,
}

/// The SSE events of a response.
pub(crate) fn events(
    response: reqwest::Response,
) -> impl Stream<Item = Result<Event, String>> + Unpin {
    Box::pin(
        response
            .bytes_stream()
            .eventsource()
            .map(|r| r.map_err(|e| e.to_string())),
    )
}

/// The next event, or why there is none.
pub(crate) async fn next(
    events: &mut (impl Stream<Item = Result<Event, String>> + Unpin),
    timeouts: Timeouts,
    cancel: &CancellationToken,
) -> Next {
    tokio::select! {
        _ = cancel.cancelled() => Next::Cancelled,
        n = tokio::time::timeout(timeouts.idle, events.next()) => match n {
            Err(_) => Next::Broken("the stream went silent".into()),
            Ok(None) => Next::End,
            Ok(Some(Err(e))) => Next::Broken(e),
            Ok(Some(Ok(ev))) => Next::Event(ev),
        },
    }
}

/// A broken stream: retried if nothing reached the user yet, else reported with the partial.
pub(crate) fn broken(
    provider: &str,
    detail: String,
    started: bool,
    partial: Completion,
) -> Attempt {
    if started {
        Attempt::Fail(LlmError::Interrupted {
            provider: provider.to_owned(),
            detail,
            partial: Box::new(partial),
        })
    } else {
        Attempt::Retry {
            error: LlmError::Unavailable {
                provider: provider.to_owned(),
                detail,
            },
            after: None,
        }
    }
}
