//! Client-side rate limits, one lane per provider: a request bucket and a token bucket
//! learned from what the provider says (`x-ratelimit-*` from OpenAI-compatible servers,
//! `anthropic-ratelimit-*` from Anthropic) and from its 429s. A call that would find the
//! provider out of requests or tokens waits in the lane's queue instead of failing.
//!
//! - **Order.** Calls leave the queue one at a time, in the order they arrived, except that
//!   the user's own turn ([`Priority::User`]) goes before background work (learning,
//!   compaction); a call that is retried keeps its place at the head.
//! - **No deadlock.** A call larger than the whole token bucket could never fit: it waits
//!   for a full bucket and an idle lane, then goes alone (the provider decides; nothing else
//!   is sent until it is done).
//! - **Bounded.** A wait longer than [`MAX_QUEUE_WAIT`] (a daily limit, a reset far away)
//!   fails at once with `provider_rate_limited`; Stop ends a wait at once.
//! - **Nothing learned, nothing held.** A provider that sends no rate-limit headers and no
//!   429 is never held back, and every header value is parsed defensively (a missing,
//!   negative, huge or garbled one is ignored).
//!
//! Written here rather than with a rate-limiting crate: those enforce a quota the client
//! chooses, while these buckets are whatever the provider last said they are.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The longest a call waits in a lane's queue for the provider's limits to reset.
pub const MAX_QUEUE_WAIT: Duration = Duration::from_secs(120);

/// The furthest reset a header is believed about (anything later is ignored).
const MAX_RESET: Duration = Duration::from_secs(7 * 24 * 3600);

/// Whose call it is: the user's own turn goes before background work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// A message the user is waiting for (a turn, its tool loop, a regeneration).
    #[default]
    User,
    /// Work no one is waiting for: learning memories, compaction, summaries.
    Background,
}

/// One limit as the provider last described it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bucket {
    limit: Option<u64>,
    remaining: Option<u64>,
    reset_at: Option<Instant>,
}

impl Bucket {
    /// Past its reset the bucket is full again (or unknown, when its size never was said).
    fn refresh(&mut self, now: Instant) {
        if self.reset_at.is_some_and(|r| r <= now) {
            self.remaining = self.limit;
            self.reset_at = None;
        }
    }

    fn observe(&mut self, said: Said, now: Instant) {
        if said.limit.is_some() {
            self.limit = said.limit;
        }
        if let Some(remaining) = said.remaining {
            self.remaining = Some(remaining);
            self.reset_at = said.reset.map(|d| now + d);
        }
    }

    fn take(&mut self, n: u64) {
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(n);
        }
    }
}

/// What one response's headers said about one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Said {
    limit: Option<u64>,
    remaining: Option<u64>,
    reset: Option<Duration>,
}

#[derive(Debug, Default)]
struct LaneState {
    next_ticket: u64,
    queue: BTreeSet<(Priority, u64)>,
    in_flight: usize,
    /// A call larger than the token bucket is in flight: nothing else goes.
    alone: bool,
    requests: Bucket,
    tokens: Bucket,
    /// After a 429: nothing is sent before this.
    blocked_until: Option<Instant>,
}

/// Why a call may not go yet: until a time, or until something changes in the lane.
type Wait = Option<Instant>;

impl LaneState {
    fn try_admit(&mut self, key: (Priority, u64), tokens: u64, now: Instant) -> Result<bool, Wait> {
        self.requests.refresh(now);
        self.tokens.refresh(now);
        if let Some(until) = self.blocked_until {
            if until > now {
                return Err(Some(until));
            }
            self.blocked_until = None;
        }
        if self.queue.first() != Some(&key) || self.alone {
            return Err(None);
        }
        if self.requests.remaining == Some(0) {
            match self.requests.reset_at {
                Some(reset) => return Err(Some(reset)),
                // Used up, and when it refills is not known yet: the call in flight's
                // answer will say.
                None if self.in_flight > 0 => return Err(None),
                None => {}
            }
        }
        let mut alone = false;
        if self
            .tokens
            .remaining
            .is_some_and(|remaining| tokens > remaining)
        {
            let larger_than_bucket = self.tokens.limit.is_some_and(|l| tokens > l);
            match self.tokens.reset_at {
                // Not full yet: wait for the reset (a call that fits, and one that never
                // will, alike).
                Some(reset) => return Err(Some(reset)),
                None if larger_than_bucket && self.in_flight > 0 => return Err(None),
                None => alone = larger_than_bucket,
            }
        }
        self.queue.remove(&key);
        self.in_flight += 1;
        self.alone = alone;
        self.requests.take(1);
        self.tokens.take(tokens);
        Ok(alone)
    }
}

/// One provider's queue and buckets.
#[derive(Debug, Default)]
pub struct Lane {
    name: String,
    state: Mutex<LaneState>,
    changed: Notify,
}

impl Lane {
    fn state(&self) -> MutexGuard<'_, LaneState> {
        // The state stays consistent across every early return; a panic elsewhere while
        // holding it leaves nothing half-written worth refusing.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place in the queue, taken now (the order calls arrive in is the order they go).
    pub fn ticket(self: &Arc<Self>, priority: Priority) -> Ticket {
        let mut s = self.state();
        let key = (priority, s.next_ticket);
        s.next_ticket += 1;
        s.queue.insert(key);
        Ticket {
            lane: self.clone(),
            key,
            queued: true,
        }
    }

    /// Learns the buckets from a response's headers (any status).
    pub fn observe(&self, headers: &HeaderMap) {
        let (requests, tokens) = read_headers(headers, jiff::Timestamp::now());
        if requests == Said::default() && tokens == Said::default() {
            return;
        }
        let now = Instant::now();
        {
            let mut s = self.state();
            s.requests.observe(requests, now);
            s.tokens.observe(tokens, now);
        }
        self.changed.notify_waiters();
    }

    /// After a 429: nothing more is sent for `wait`.
    pub fn block_for(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut s = self.state();
        if s.blocked_until.is_none_or(|b| b < until) {
            s.blocked_until = Some(until);
        }
    }
}

/// How a wait in the queue ended.
pub enum Admission {
    /// The call may go; the lane counts it in flight until the permit is dropped.
    Go(Permit),
    /// The user stopped while the call was waiting.
    Cancelled,
    /// The provider's limits reset further away than [`MAX_QUEUE_WAIT`].
    TooLong(Duration),
}

/// A call's place in its lane's queue.
pub struct Ticket {
    lane: Arc<Lane>,
    key: (Priority, u64),
    queued: bool,
}

impl Ticket {
    /// Back in the queue at its old place after a failed try (its number is older than
    /// those of the calls that came later), holding them while it waits to try again.
    pub fn hold(&mut self) {
        if !self.queued {
            self.lane.state().queue.insert(self.key);
            self.queued = true;
        }
    }

    /// Waits for the call's turn: it is at the head of the queue and the provider's
    /// buckets (as last said) have room for one request of `tokens` tokens.
    /// `waiting` hears, once, how long the call will wait when that is a second or more.
    pub async fn admit(
        &mut self,
        tokens: u64,
        cancel: &CancellationToken,
        mut waiting: impl FnMut(Duration),
    ) -> Admission {
        self.hold();
        let deadline = Instant::now() + MAX_QUEUE_WAIT;
        let mut said = false;
        loop {
            let changed = self.lane.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = Instant::now();
            let decision = self.lane.state().try_admit(self.key, tokens, now);
            let until = match decision {
                Ok(alone) => {
                    self.queued = false;
                    self.lane.changed.notify_waiters();
                    return Admission::Go(Permit {
                        lane: self.lane.clone(),
                        alone,
                    });
                }
                Err(until) => until,
            };
            if let Some(until) = until {
                if until > deadline {
                    return Admission::TooLong(until - now);
                }
                if !said {
                    said = true;
                    let wait = until - now;
                    tracing::info!(
                        provider = %self.lane.name,
                        wait_ms = wait.as_millis() as u64,
                        "waiting for the provider's rate limit"
                    );
                    if wait >= Duration::from_secs(1) {
                        waiting(wait);
                    }
                }
            }
            let sleep_until = until.unwrap_or(deadline).min(deadline);
            tokio::select! {
                _ = cancel.cancelled() => return Admission::Cancelled,
                _ = &mut changed => {}
                _ = tokio::time::sleep_until(sleep_until) => {
                    if until.is_none() && Instant::now() >= deadline {
                        return Admission::TooLong(MAX_QUEUE_WAIT);
                    }
                }
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.queued {
            self.lane.state().queue.remove(&self.key);
            self.lane.changed.notify_waiters();
        }
    }
}

/// A call in flight; dropping it lets the next one go.
pub struct Permit {
    lane: Arc<Lane>,
    alone: bool,
}

impl Drop for Permit {
    fn drop(&mut self) {
        {
            let mut s = self.lane.state();
            s.in_flight = s.in_flight.saturating_sub(1);
            if self.alone {
                s.alone = false;
            }
        }
        self.lane.changed.notify_waiters();
    }
}

/// Every provider's lane, keyed by where its calls go (base URL and key owner alike share
/// one provider's limits).
#[derive(Debug, Default)]
pub struct RateLimits {
    lanes: Mutex<HashMap<String, Arc<Lane>>>,
}

impl RateLimits {
    /// The lane of calls to `base_url` (named `name` in logs).
    pub fn lane(&self, name: &str, base_url: &str) -> Arc<Lane> {
        let key = base_url.trim_end_matches('/').to_ascii_lowercase();
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        lanes
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Lane {
                    name: name.to_owned(),
                    ..Lane::default()
                })
            })
            .clone()
    }
}

/// The request and token buckets a response's headers describe, OpenAI's or Anthropic's.
fn read_headers(headers: &HeaderMap, now: jiff::Timestamp) -> (Said, Said) {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let number = |name: &str| text(name).and_then(|v| v.parse::<u64>().ok());
    let openai = |what: &str| Said {
        limit: number(&format!("x-ratelimit-limit-{what}")),
        remaining: number(&format!("x-ratelimit-remaining-{what}")),
        reset: text(&format!("x-ratelimit-reset-{what}")).and_then(parse_go_duration),
    };
    let anthropic = |what: &str| Said {
        limit: number(&format!("anthropic-ratelimit-{what}-limit")),
        remaining: number(&format!("anthropic-ratelimit-{what}-remaining")),
        reset: text(&format!("anthropic-ratelimit-{what}-reset"))
            .and_then(|v| parse_reset_time(v, now)),
    };
    let pick = |a: Said, b: Said| if a.remaining.is_some() { a } else { b };
    let requests = pick(openai("requests"), anthropic("requests"));
    // Anthropic counts input and output apart when it does not give one total; the input
    // bucket is the one a long prompt runs out of.
    let tokens = pick(
        openai("tokens"),
        pick(anthropic("tokens"), anthropic("input-tokens")),
    );
    (requests, tokens)
}

/// OpenAI's reset times: Go-style durations such as `1s`, `6m0s`, `20ms`, `1h2m3.5s`.
fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut total = 0.0_f64;
    let mut rest = text.trim();
    if rest.is_empty() || rest.len() > 32 {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * scale;
    }
    bounded(total)
}

/// Anthropic's reset times: an RFC 3339 instant.
fn parse_reset_time(text: &str, now: jiff::Timestamp) -> Option<Duration> {
    let at: jiff::Timestamp = text.parse().ok()?;
    bounded(at.duration_since(now).as_secs_f64().max(0.0))
}

fn bounded(secs: f64) -> Option<Duration> {
    (secs.is_finite() && (0.0..=MAX_RESET.as_secs_f64()).contains(&secs))
        .then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    #[test]
    fn go_durations_parse_and_garbage_does_not() {
        let ms = |t: &str| parse_go_duration(t).map(|d| d.as_millis());
        assert_eq!(ms("1s"), Some(1000));
        assert_eq!(ms("6m0s"), Some(360_000));
        assert_eq!(ms("20ms"), Some(20));
        assert_eq!(ms("1h2m3.5s"), Some(3_723_500));
        assert_eq!(ms("0s"), Some(0));
        for bad in [
            "",
            "s",
            "5",
            "5x",
            "-1s",
            "1e400s",
            "NaNs",
            "99999999h",
            "1..2s",
            "🙂",
        ] {
            assert_eq!(ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn both_providers_headers_are_read_and_hostile_values_ignored() {
        let now = jiff::Timestamp::from_second(1_800_000_000).expect("time");
        let (r, t) = read_headers(
            &headers(&[
                ("x-ratelimit-limit-requests", "500"),
                ("x-ratelimit-remaining-requests", "499"),
                ("x-ratelimit-reset-requests", "120ms"),
                ("x-ratelimit-limit-tokens", "30000"),
                ("x-ratelimit-remaining-tokens", "29000"),
                ("x-ratelimit-reset-tokens", "2s"),
            ]),
            now,
        );
        assert_eq!(
            (r.limit, r.remaining, r.reset),
            (Some(500), Some(499), Some(Duration::from_millis(120)))
        );
        assert_eq!(
            (t.limit, t.remaining, t.reset),
            (Some(30000), Some(29000), Some(Duration::from_secs(2)))
        );
        let (r, t) = read_headers(
            &headers(&[
                ("anthropic-ratelimit-requests-limit", "50"),
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "2027-01-15T08:00:30Z"),
                ("anthropic-ratelimit-input-tokens-limit", "40000"),
                ("anthropic-ratelimit-input-tokens-remaining", "12"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2000-01-01T00:00:00Z",
                ),
            ]),
            now,
        );
        assert_eq!(
            (r.limit, r.remaining, r.reset),
            (Some(50), Some(0), Some(Duration::from_secs(30)))
        );
        // A reset in the past is "now".
        assert_eq!(
            (t.limit, t.remaining, t.reset),
            (Some(40000), Some(12), Some(Duration::ZERO))
        );
        let (r, t) = read_headers(
            &headers(&[
                ("x-ratelimit-limit-requests", "-5"),
                ("x-ratelimit-remaining-requests", "99999999999999999999999"),
                ("x-ratelimit-reset-requests", "forever"),
                ("anthropic-ratelimit-tokens-remaining", "3"),
                ("anthropic-ratelimit-tokens-reset", "9999-12-31T23:59:59Z"),
            ]),
            now,
        );
        assert_eq!(r, Said::default());
        assert_eq!((t.remaining, t.reset), (Some(3), None));
    }

    #[test]
    fn an_empty_bucket_holds_the_head_until_its_reset_and_a_larger_call_goes_alone() {
        let now = Instant::now();
        let mut s = LaneState::default();
        let first = (Priority::Background, 0);
        let second = (Priority::User, 1);
        s.queue.insert(first);
        s.queue.insert(second);
        // The user's call is ahead of background work that arrived first.
        assert_eq!(s.try_admit(first, 10, now), Err(None));
        s.requests.observe(
            Said {
                limit: Some(3),
                remaining: Some(0),
                reset: Some(Duration::from_secs(1)),
            },
            now,
        );
        assert_eq!(
            s.try_admit(second, 10, now),
            Err(Some(now + Duration::from_secs(1)))
        );
        let later = now + Duration::from_secs(2);
        assert_eq!(s.try_admit(second, 10, later), Ok(false));
        assert_eq!(s.requests.remaining, Some(2));
        // A token bucket of 100 with 100 left; a call of 500 can never fit: it goes alone
        // once nothing else is in flight, and nothing follows it until it is done.
        s.tokens.observe(
            Said {
                limit: Some(100),
                remaining: Some(100),
                reset: None,
            },
            later,
        );
        assert_eq!(s.try_admit(first, 500, later), Err(None), "one in flight");
        s.in_flight = 0;
        assert_eq!(s.try_admit(first, 500, later), Ok(true));
        s.queue.insert((Priority::User, 2));
        assert_eq!(s.try_admit((Priority::User, 2), 1, later), Err(None));
    }
}
