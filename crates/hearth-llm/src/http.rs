//! What every wire protocol shares: building requests (keys only over https or to this
//! computer), sending with timeouts and cancellation, classifying HTTP failures, reading
//! bodies and SSE events within [`limits`](super::limits).

use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::limits::{MAX_ERROR_BODY, MAX_LOCATION_SHOWN, MAX_RETRY_WAIT, MAX_SSE_EVENT};
use super::ratelimit::Lane;
use super::{Attempt, Completion, LlmError, Protocol, Provider, Timeouts};

/// Whether a URL's host (as `Url::host_str` gives it: IPv6 in brackets, IPv4 normalised to
/// dotted quads) is this computer: 127.0.0.0/8, ::1 (also IPv4-mapped) or `localhost`.
pub fn is_loopback(host: &str) -> bool {
    use std::net::{Ipv4Addr, Ipv6Addr};
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(|a| {
            a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        });
    }
    if let Ok(v4) = host.parse::<Ipv4Addr>() {
        return v4.is_loopback();
    }
    let domain = host.strip_suffix('.').unwrap_or(host);
    domain.eq_ignore_ascii_case("localhost")
}

/// The host, when a secret sent to `url` would cross the network in clear: plain
/// `http://` to a host that is not this computer. Unparsable URLs are left to the client
/// (which refuses them without connecting).
pub fn insecure_host(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    let host = url.host_str()?;
    (!is_loopback(host)).then(|| host.to_owned())
}

/// A request to `url` of `provider`, carrying its key (and Anthropic's version header).
/// Refuses, before anything is sent, to put a key on plain http to another computer.
pub fn authorized(
    http: &reqwest::Client,
    provider: &Provider,
    method: reqwest::Method,
    url: &str,
) -> Result<reqwest::RequestBuilder, LlmError> {
    let mut req = http.request(method, url);
    if let Some(key) = &provider.api_key {
        if let Some(host) = insecure_host(url) {
            return Err(LlmError::Insecure {
                provider: provider.name.clone(),
                host,
            });
        }
        req = match provider.protocol {
            Protocol::OpenAiCompatible => req.bearer_auth(key.as_str()),
            Protocol::Anthropic => req.header("x-api-key", key.as_str()),
        };
    }
    if provider.protocol == Protocol::Anthropic {
        req = req.header("anthropic-version", super::anthropic::API_VERSION);
    }
    Ok(req)
}

/// The outcome of sending a request.
pub enum Sent {
    Response(reqwest::Response),
    Cancelled,
}

/// Sends `req`; connection failures and failing statuses become [`Attempt`]s. The
/// response's rate-limit headers (any status) teach `lane` the provider's buckets.
pub async fn send(
    req: reqwest::RequestBuilder,
    timeouts: Timeouts,
    provider: &str,
    model: &str,
    cancel: &CancellationToken,
    lane: Option<&Lane>,
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
    if let Some(lane) = lane {
        lane.observe(response.headers());
    }
    let status = response.status();
    if status.is_success() {
        return Ok(Sent::Response(response));
    }
    let code = status.as_u16();
    let provider = provider.to_owned();
    if status.is_redirection() {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|v| shown(&String::from_utf8_lossy(v.as_bytes()), MAX_LOCATION_SHOWN));
        return Err(Attempt::Fail(LlmError::Redirect {
            provider,
            status: code,
            location,
        }));
    }
    let after = retry_after(response.headers(), jiff::Timestamp::now());
    let body = read_prefix(response, MAX_ERROR_BODY, timeouts.idle).await;
    let text = String::from_utf8_lossy(&body);
    Err(match code {
        401 | 403 => Attempt::Fail(LlmError::Auth {
            provider,
            status: code,
        }),
        429 => match after {
            RetryAfter::Refused(asked) => Attempt::Fail(LlmError::RateLimited {
                provider,
                retry_after: None,
                asked: Some(asked),
            }),
            RetryAfter::Wait(wait) => Attempt::Retry {
                error: LlmError::RateLimited {
                    provider,
                    retry_after: Some(wait),
                    asked: None,
                },
                after: Some(wait),
            },
            RetryAfter::Unset => Attempt::Retry {
                error: LlmError::RateLimited {
                    provider,
                    retry_after: None,
                    asked: None,
                },
                after: None,
            },
        },
        // A server that is down may say when to come back; an unusable answer to that
        // leaves the backoff in charge.
        408 | 500..=599 => Attempt::Retry {
            error: LlmError::Unavailable {
                provider,
                detail: format!("HTTP {code}: {}", short(&text)),
            },
            after: match after {
                RetryAfter::Wait(w) => Some(w),
                _ => None,
            },
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

/// What a `Retry-After` header asks.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryAfter {
    /// No header.
    Unset,
    /// A wait Hearth honours (0..=[`MAX_RETRY_WAIT`]).
    Wait(Duration),
    /// Anything else (too long, negative, not a number, not a date): not waited for; the
    /// text says what was asked, for the error message.
    Refused(String),
}

fn retry_after(headers: &reqwest::header::HeaderMap, now: jiff::Timestamp) -> RetryAfter {
    match headers.get(reqwest::header::RETRY_AFTER) {
        None => RetryAfter::Unset,
        Some(v) => parse_retry_after(&String::from_utf8_lossy(v.as_bytes()), now),
    }
}

/// Reads `Retry-After` as seconds (`delta-seconds`, tolerating fractions) or an HTTP date.
/// Never panics, whatever the text: `inf`, `NaN`, `1e20`, `-5` and huge integers are all
/// [`RetryAfter::Refused`].
pub fn parse_retry_after(value: &str, now: jiff::Timestamp) -> RetryAfter {
    let v = value.trim();
    let max = MAX_RETRY_WAIT.as_secs_f64();
    if let Ok(secs) = v.parse::<f64>() {
        return if secs.is_finite() && (0.0..=max).contains(&secs) {
            RetryAfter::Wait(Duration::from_secs_f64(secs))
        } else {
            RetryAfter::Refused(format!("{} seconds", shown(v, 40)))
        };
    }
    if let Ok(at) = jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(v) {
        let secs = at.duration_since(now).as_secs_f64();
        return if secs <= 0.0 {
            RetryAfter::Wait(Duration::ZERO)
        } else if secs <= max {
            RetryAfter::Wait(Duration::from_secs_f64(secs))
        } else {
            RetryAfter::Refused(format!("until {} ({secs:.0} seconds)", shown(v, 40)))
        };
    }
    RetryAfter::Refused(format!("{:?}", shown(v, 40)))
}

/// `s` without control characters, cut to `max` characters (an ellipsis marks the cut).
pub fn shown(s: &str, max: usize) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= max {
        clean
    } else {
        let mut cut: String = clean.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

/// At most `limit` bytes of a body, for an error message; a body that breaks or goes
/// silent gives what had arrived. The rest is never read.
pub async fn read_prefix(response: reqwest::Response, limit: usize, idle: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunks = response.bytes_stream();
    while out.len() < limit {
        match tokio::time::timeout(idle, chunks.next()).await {
            Ok(Some(Ok(chunk))) => {
                let room = limit - out.len();
                out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            _ => break,
        }
    }
    out
}

/// Why a body could not be read whole.
pub enum BodyFault {
    /// It is longer than the limit (nothing past the limit was read).
    TooLarge,
    /// It broke or went silent.
    Broken(String),
}

/// A whole body of at most `limit` bytes. A longer one (by its `Content-Length` or as it
/// arrives) is refused without reading further.
pub async fn read_body(
    response: reqwest::Response,
    limit: usize,
    idle: Duration,
) -> Result<Vec<u8>, BodyFault> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(BodyFault::TooLarge);
    }
    let mut out = Vec::new();
    let mut chunks = response.bytes_stream();
    loop {
        match tokio::time::timeout(idle, chunks.next()).await {
            Err(_) => return Err(BodyFault::Broken("the reply went silent".into())),
            Ok(None) => return Ok(out),
            Ok(Some(Err(e))) => return Err(BodyFault::Broken(e.to_string())),
            Ok(Some(Ok(chunk))) => {
                if out.len() + chunk.len() > limit {
                    return Err(BodyFault::TooLarge);
                }
                out.extend_from_slice(&chunk);
            }
        }
    }
}

/// Whether an error text says the prompt is too long for the model.
pub fn looks_like_context_length(body: &str) -> bool {
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
pub fn short(s: &str) -> String {
    s.chars().take(300).collect()
}

/// One step of reading a stream.
pub enum Next {
    Event(Event),
    /// The body ended.
    End,
    /// The body broke or went silent.
    Broken(String),
    /// An event is larger than [`MAX_SSE_EVENT`]; reading stopped.
    TooLarge,
    Cancelled,
}

/// Why the byte stream under the SSE parser stopped.
#[derive(Debug)]
pub enum Fault {
    Broken(String),
    TooLarge,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Broken(e) => f.write_str(e),
            Fault::TooLarge => write!(f, "a stream event is larger than {MAX_SSE_EVENT} bytes"),
        }
    }
}

/// Counts the bytes of the SSE event being received (everything since the last blank
/// line), across chunks. Line ends are `\n`, `\r\n` or `\r`.
#[derive(Debug, Default)]
pub struct EventSizer {
    in_event: usize,
    at_line_start: bool,
    after_cr: bool,
}

impl EventSizer {
    /// Feeds a chunk; false once the event being received passes `limit` bytes.
    pub fn feed(&mut self, chunk: &[u8], limit: usize) -> bool {
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.at_line_start {
                        // A blank line: the event ends.
                        self.in_event = 0;
                    }
                    self.at_line_start = true;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    self.at_line_start = false;
                    self.after_cr = false;
                    self.in_event += 1;
                    if self.in_event > limit {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// The SSE events of a response, no one of them larger than [`MAX_SSE_EVENT`].
pub fn events(response: reqwest::Response) -> impl Stream<Item = Result<Event, Fault>> + Unpin {
    let mut sizer = EventSizer {
        at_line_start: true,
        ..EventSizer::default()
    };
    let bytes = response.bytes_stream().map(move |chunk| match chunk {
        Ok(b) if sizer.feed(&b, MAX_SSE_EVENT) => Ok(b),
        Ok(_) => Err(Fault::TooLarge),
        Err(e) => Err(Fault::Broken(e.to_string())),
    });
    Box::pin(bytes.eventsource().map(|r| {
        r.map_err(|e| match e {
            EventStreamError::Transport(f) => f,
            other => Fault::Broken(other.to_string()),
        })
    }))
}

/// The next event, or why there is none.
pub async fn next(
    events: &mut (impl Stream<Item = Result<Event, Fault>> + Unpin),
    timeouts: Timeouts,
    cancel: &CancellationToken,
) -> Next {
    tokio::select! {
        _ = cancel.cancelled() => Next::Cancelled,
        n = tokio::time::timeout(timeouts.idle, events.next()) => match n {
            Err(_) => Next::Broken("the stream went silent".into()),
            Ok(None) => Next::End,
            Ok(Some(Err(Fault::Broken(e)))) => Next::Broken(e),
            Ok(Some(Err(Fault::TooLarge))) => Next::TooLarge,
            Ok(Some(Ok(ev))) => Next::Event(ev),
        },
    }
}

/// A broken stream: retried if nothing reached the user yet, else reported with the partial.
pub fn broken(provider: &str, detail: String, started: bool, partial: Completion) -> Attempt {
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

/// A reply larger than Hearth reads: never retried; the partial answer is kept if text
/// had reached the user.
pub fn too_large(
    provider: &str,
    what: &'static str,
    limit: usize,
    started: bool,
    partial: Completion,
) -> Attempt {
    Attempt::Fail(LlmError::TooLarge {
        provider: provider.to_owned(),
        what,
        limit,
        partial: started.then(|| Box::new(partial)),
    })
}

/// Waits before another try of a call. `Ok(true)`: try again; `Ok(false)`: cancelled
/// meanwhile; `Err`: no try is left (retries used up, or the waits of this call would pass
/// [`MAX_RETRY_WAIT`] in total).
/// How long to wait before the next try of a failed call (`after`, the server's
/// `Retry-After`, wins over the backoff), or the error when the retries or the total wait
/// allowed ([`MAX_RETRY_WAIT`]) are used up.
pub fn retry_wait(
    delays: &mut impl Iterator<Item = Duration>,
    waited: &mut Duration,
    provider: &str,
    error: LlmError,
    after: Option<Duration>,
) -> Result<Duration, LlmError> {
    let Some(backoff) = delays.next() else {
        return Err(error);
    };
    let wait = after.unwrap_or(backoff);
    if *waited + wait > MAX_RETRY_WAIT {
        return Err(error);
    }
    *waited += wait;
    tracing::info!(provider = %provider, code = error.code(), wait_ms = wait.as_millis() as u64, "retrying provider call");
    Ok(wait)
}

/// Waits [`retry_wait`] before the next try; `Ok(false)` when the user stopped meanwhile.
pub async fn pause(
    delays: &mut impl Iterator<Item = Duration>,
    waited: &mut Duration,
    provider: &str,
    error: LlmError,
    after: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<bool, LlmError> {
    let wait = retry_wait(delays, waited, provider, error, after)?;
    tokio::select! {
        _ = cancel.cancelled() => Ok(false),
        _ = tokio::time::sleep(wait) => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_of(url: &str) -> Option<String> {
        insecure_host(url)
    }

    #[test]
    fn loopback_hosts_are_this_computer_and_others_are_not() {
        for ok in [
            "http://127.0.0.1:11434/v1",
            "http://127.1.2.3/v1",
            "http://localhost:1234/v1",
            "http://LOCALHOST./v1",
            "http://[::1]:8080/v1",
            "http://[::ffff:127.0.0.1]/v1",
            "https://api.openai.com/v1",
            "https://192.168.1.5/v1",
        ] {
            assert_eq!(host_of(ok), None, "{ok}");
        }
        for (bad, host) in [
            ("http://192.168.1.5:11434/v1", "192.168.1.5"),
            ("http://api.openai.com/v1", "api.openai.com"),
            ("http://10.0.0.2/v1", "10.0.0.2"),
            ("http://[fe80::1]/v1", "[fe80::1]"),
            ("http://localhost.example.com/v1", "localhost.example.com"),
            ("http://0.0.0.0:8080/v1", "0.0.0.0"),
            ("http://128.0.0.1/v1", "128.0.0.1"),
        ] {
            assert_eq!(host_of(bad).as_deref(), Some(host), "{bad}");
        }
    }

    fn provider(url: &str, key: Option<&str>) -> Provider {
        Provider {
            name: "LAN".into(),
            protocol: Protocol::OpenAiCompatible,
            base_url: url.into(),
            api_key: key.map(|k| zeroize::Zeroizing::new(k.to_owned())),
            launch: None,
        }
    }

    #[test]
    fn a_key_is_refused_on_plain_http_to_another_computer_before_anything_is_sent() {
        let http = reqwest::Client::new();
        let url = "http://192.168.1.5:11434/v1/chat/completions";
        let err = authorized(
            &http,
            &provider(url, Some("sk-1")),
            reqwest::Method::POST,
            url,
        )
        .expect_err("refused");
        assert_eq!(err.code(), "provider_insecure");
        assert_eq!(
            err.to_string(),
            "refusing to send the API key for provider LAN over plain http to 192.168.1.5; use https"
        );
        // Keyless, the same LAN server is fine (an Ollama on another machine).
        let req = authorized(&http, &provider(url, None), reqwest::Method::POST, url)
            .expect("allowed")
            .build()
            .expect("request");
        assert!(req.headers().get("authorization").is_none());
        // With a key over https, or over http to this computer, it is sent.
        for url in [
            "https://192.168.1.5/v1/models",
            "http://127.0.0.1:9/v1/models",
        ] {
            let req = authorized(
                &http,
                &provider(url, Some("sk-1")),
                reqwest::Method::GET,
                url,
            )
            .expect("allowed")
            .build()
            .expect("request");
            assert_eq!(
                req.headers()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok()),
                Some("Bearer sk-1")
            );
        }
    }

    #[test]
    fn retry_after_never_panics_and_refuses_what_it_will_not_wait() {
        let now = jiff::Timestamp::from_second(1_700_000_000).expect("timestamp");
        assert_eq!(
            parse_retry_after("0", now),
            RetryAfter::Wait(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after(" 2.5 ", now),
            RetryAfter::Wait(Duration::from_millis(2500))
        );
        assert_eq!(
            parse_retry_after("60", now),
            RetryAfter::Wait(Duration::from_secs(60))
        );
        for v in [
            "inf",
            "-inf",
            "infinity",
            "NaN",
            "1e20",
            "-5",
            "61",
            "99999999999999999999999999999999999999",
            "soon",
            "",
            "\u{7}\u{1b}[31m",
        ] {
            match parse_retry_after(v, now) {
                RetryAfter::Refused(asked) => {
                    assert!(!asked.chars().any(char::is_control), "{asked:?}")
                }
                other => panic!("{v:?} gave {other:?}"),
            }
        }
        match parse_retry_after("inf", now) {
            RetryAfter::Refused(a) => assert_eq!(a, "inf seconds"),
            other => panic!("{other:?}"),
        }
        // HTTP dates: the delta decides, by the same rule.
        let at = |secs: i64| {
            jiff::fmt::rfc2822::DateTimePrinter::new()
                .timestamp_to_rfc9110_string(
                    &jiff::Timestamp::from_second(1_700_000_000 + secs).expect("ts"),
                )
                .expect("date")
        };
        assert_eq!(
            parse_retry_after(&at(30), now),
            RetryAfter::Wait(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after(&at(-30), now),
            RetryAfter::Wait(Duration::ZERO)
        );
        assert!(matches!(
            parse_retry_after(&at(3600), now),
            RetryAfter::Refused(_)
        ));
    }

    #[test]
    fn an_event_is_measured_between_blank_lines_across_chunks() {
        let mut s = EventSizer {
            at_line_start: true,
            ..EventSizer::default()
        };
        assert!(s.feed(b"data: 12345\n\n", 11));
        assert!(s.feed(b"data: 1234", 11));
        assert!(!s.feed(b"56", 11), "12 bytes in one event");
        let mut s = EventSizer {
            at_line_start: true,
            ..EventSizer::default()
        };
        // Many small events, CRLF line ends: never too large.
        for _ in 0..1000 {
            assert!(s.feed(b"data: 12345\r\n\r\n", 11));
        }
        // One event of several lines adds up.
        assert!(s.feed(b"data: 1\r\ndata: 2\r\n", 16));
        assert!(!s.feed(b"data: 3\r\n", 16));
    }

    #[test]
    fn locations_are_bounded_and_without_control_characters() {
        assert_eq!(shown("https://a.example/\r\nx", 200), "https://a.example/x");
        let long = "h".repeat(500);
        assert_eq!(shown(&long, 200).chars().count(), 201);
    }
}
