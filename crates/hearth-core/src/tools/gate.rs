//! The consent gate: who may let a call run.
//!
//! `read` runs (unless it can send data out: issue 13's open-world tools ask); `write` asks
//! unless the user granted it — and asks even then once untrusted text (a tool's output, a
//! file's content) entered the turn (*escalated*); `destructive` always asks. Asking goes to
//! the front end's [`Consent`] surface; with none (no terminal, no window) the call is
//! denied (`policy_no_tty`), and with no answer in time it is denied (`timeout`). A denial
//! is not a failure: the model is told, with the user's reason, and the turn goes on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::{Origin, Risk};

/// What the model asked to run, as the user is shown it.
#[derive(Debug, Clone, Serialize)]
pub struct ConsentRequest {
    /// The model's id for the call.
    pub call_id: String,
    pub tool: String,
    pub origin: Origin,
    pub risk: Risk,
    /// The complete arguments, pretty-printed, with control, ANSI, bidi and zero-width
    /// characters escaped ([`escape_for_display`]).
    pub arguments: String,
    /// What the call would do: the files a delete removes, a diff, the new file's size.
    pub preview: Option<String>,
    /// Why the gate asks.
    pub reason: String,
    /// The untrusted content that preceded this request in the turn, when escalated.
    pub escalated_by: Option<String>,
    /// Whether "always allow this tool" is offered (never for destructive calls, nor in a
    /// temporary chat, which stores nothing).
    pub offers_always: bool,
    /// Whether "allow for this conversation" is offered (never for destructive calls; in a
    /// temporary chat it lasts for the rest of the chat's run and is never stored).
    pub offers_conversation: bool,
}

impl ConsentRequest {
    /// SHA-256 (hex) over the question as shown, canonical JSON: the consent window sends it
    /// back with its answer, so an answer applies only to the exact question the user saw.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let v = serde_json::to_value(self).unwrap_or_default();
        hex::encode(Sha256::digest(
            crate::tools::mcp::canonical_json(&v).as_bytes(),
        ))
    }
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    AllowOnce,
    /// Allow this tool for the rest of the conversation.
    AllowConversation,
    /// Always allow this tool (refused for destructive tools: treated as once).
    AllowAlways,
    /// Deny, with the reason passed back to the model.
    Deny(Option<String>),
    /// No one can answer here (no terminal, EOF): denied by policy.
    NoSurface,
}

/// A front end's consent surface: the CLI's terminal prompt, the app's consent window.
pub trait Consent: Send + Sync {
    /// Shows `request` and waits for the user's answer.
    fn ask<'a>(
        &'a self,
        request: &'a ConsentRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;
}

/// An act that lowers caution without being a tool call — an MCP server added (it starts a
/// program), tools approved or their server's labels accepted, a lower tier set. Lowering
/// caution needs the consent surface (issue 31): the user confirms it in the app's consent
/// window or on the terminal, never in the main window alone.
#[derive(Debug, Clone)]
pub struct Act {
    /// What would be done, as the question's title: "add the MCP server notes".
    pub what: String,
    pub origin: Origin,
    /// Why it is asked.
    pub reason: String,
    /// What exactly: the command and arguments, the tools and their claims (shown whole).
    pub details: String,
}

/// Asks `surface` to confirm `act`: allowed (once, or any lasting answer, which an act
/// never stores) is `Ok`; a denial, no one to ask or no answer in time is `NotConfirmed`.
pub async fn confirm(surface: &dyn Consent, act: &Act) -> crate::Result<()> {
    let request = ConsentRequest {
        call_id: "confirm".into(),
        tool: escape_for_display(&act.what),
        origin: act.origin.clone(),
        // Shown as what it can lead to; never offered "always".
        risk: Risk::Destructive,
        arguments: escape_for_display(&act.details),
        preview: None,
        reason: act.reason.clone(),
        escalated_by: None,
        offers_always: false,
        offers_conversation: false,
    };
    match tokio::time::timeout(
        env_ms("HEARTH_CONSENT_TIMEOUT_MS", CONSENT_TIMEOUT),
        surface.ask(&request),
    )
    .await
    {
        Ok(Answer::AllowOnce | Answer::AllowConversation | Answer::AllowAlways) => Ok(()),
        Ok(Answer::Deny(_)) => Err(crate::Error::NotConfirmed(format!(
            "you did not allow this: {}",
            act.what
        ))),
        Ok(Answer::NoSurface) => Err(crate::Error::NotConfirmed(format!(
            "{} needs your confirmation: run on a terminal and answer y, or pass --yes",
            act.what
        ))),
        Err(_) => Err(crate::Error::NotConfirmed(format!(
            "{} was not confirmed in time",
            act.what
        ))),
    }
}

/// The surface of a front end whose user confirmed ahead (`--yes` on a scripted command
/// line): it allows the act it is given. Never a surface for tool calls.
pub struct ConfirmedAhead;

impl Consent for ConfirmedAhead {
    fn ask<'a>(
        &'a self,
        _request: &'a ConsentRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async { Answer::AllowOnce })
    }
}

/// How tools run in a turn.
#[derive(Clone)]
pub struct ToolSettings {
    /// Built-in tools offered to the model (`hearth chat --no-tools` turns them off).
    pub enabled: bool,
    /// Approve non-escalated `write` calls without asking (`--allow-writes`); never a
    /// destructive or escalated one.
    pub allow_writes: bool,
    /// Where consent is asked; `None`: no one can be asked, so every ask is denied.
    pub consent: Option<Arc<dyn Consent>>,
    /// How long an ask waits before it is denied.
    pub consent_timeout: Duration,
    /// How long one call may run.
    pub call_timeout: Duration,
    /// Model calls in one run (each may request tools) before the final answer is forced.
    pub max_iterations: usize,
    /// How long a run's tool steps may take, not counting the time waiting for consent;
    /// then the final answer is forced (`stop_reason: timeout`).
    pub run_timeout: Duration,
    /// Tokens (input + output, every model call of the run) after which no more tools are
    /// offered and the final answer is forced (`stop_reason: cap`).
    pub max_run_tokens: u64,
    /// USD the run's model calls may cost (when the price is known) before the final
    /// answer is forced (`stop_reason: cap`).
    pub max_run_cost_usd: f64,
    /// The extraction worker `read_file` uses for PDFs, DOCX and web pages (`None`: this
    /// binary with the worker argument, as the indexer does).
    pub worker: Option<crate::folders::worker::WorkerCommand>,
    /// Tools from outside (MCP servers', issue 13), offered beside the built-ins when
    /// `enabled`; they go through the same gate.
    pub external: Vec<Arc<dyn super::external::ExternalTool>>,
}

impl std::fmt::Debug for ToolSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSettings")
            .field("enabled", &self.enabled)
            .field("allow_writes", &self.allow_writes)
            .field("consent", &self.consent.is_some())
            .field("external", &self.external.len())
            .finish_non_exhaustive()
    }
}

/// Consent not answered within 5 minutes is a denial (`HEARTH_CONSENT_TIMEOUT_MS`).
pub const CONSENT_TIMEOUT: Duration = Duration::from_secs(300);
/// One tool call may run 60 s (`HEARTH_TOOL_TIMEOUT_MS`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// A run's tool steps may take 5 minutes, consent waits excluded (`HEARTH_RUN_TIMEOUT_MS`).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// Model calls in one run (`HEARTH_MAX_ITERATIONS`).
pub const MAX_ITERATIONS: usize = 12;
/// Tokens one run may use across its model calls (`HEARTH_RUN_MAX_TOKENS`).
pub const MAX_RUN_TOKENS: u64 = 400_000;
/// What one run's model calls may cost, in USD (`HEARTH_RUN_MAX_COST_USD`).
pub const MAX_RUN_COST_USD: f64 = 1.0;

fn env_ms(name: &str, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(default, Duration::from_millis)
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self::off()
    }
}

impl ToolSettings {
    /// Tools on, with the limits from the environment (tests shorten them) or their
    /// defaults.
    pub fn new(consent: Option<Arc<dyn Consent>>) -> Self {
        Self {
            enabled: true,
            allow_writes: false,
            consent,
            consent_timeout: env_ms("HEARTH_CONSENT_TIMEOUT_MS", CONSENT_TIMEOUT),
            call_timeout: env_ms("HEARTH_TOOL_TIMEOUT_MS", CALL_TIMEOUT),
            run_timeout: env_ms("HEARTH_RUN_TIMEOUT_MS", RUN_TIMEOUT),
            max_iterations: std::env::var("HEARTH_MAX_ITERATIONS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(MAX_ITERATIONS),
            max_run_tokens: std::env::var("HEARTH_RUN_MAX_TOKENS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(MAX_RUN_TOKENS),
            max_run_cost_usd: std::env::var("HEARTH_RUN_MAX_COST_USD")
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|n| n.is_finite() && *n > 0.0)
                .unwrap_or(MAX_RUN_COST_USD),
            worker: None,
            external: Vec::new(),
        }
    }

    /// No tools offered.
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::new(None)
        }
    }
}

/// `text` safe to show in a terminal or a dialog: control characters (but newline and
/// tab), ANSI escape sequences, bidirectional overrides and zero-width characters are shown
/// as `\u{…}` escapes, so an argument cannot hide or reorder what the user reads
/// ([`crate::display::escape`]).
pub fn escape_for_display(text: &str) -> String {
    crate::display::escape(text)
}

/// A question waiting for the user at a front end's consent surface.
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    /// The question's id (what the answer names).
    pub id: u64,
    /// [`ConsentRequest::digest`] of the question: the answer names it too.
    pub hash: String,
    pub request: ConsentRequest,
}

/// What hears a change of the open questions.
type OnChange = Box<dyn Fn(&[Pending]) + Send + Sync>;

type Waiting =
    std::collections::BTreeMap<u64, (ConsentRequest, tokio::sync::oneshot::Sender<Answer>)>;

/// The consent surface of a front end that shows questions in a window of its own (the
/// app): each question waits here until [`ConsentQueue::answer`] names it; `on_change`
/// hears each time the set of open questions changes (to bring the window forward, or
/// hide it). A question the run stopped waiting for (timeout, the user's stop) leaves the
/// queue by itself.
pub struct ConsentQueue {
    waiting: std::sync::Mutex<Waiting>,
    next: std::sync::atomic::AtomicU64,
    on_change: OnChange,
}

impl ConsentQueue {
    pub fn new(on_change: impl Fn(&[Pending]) + Send + Sync + 'static) -> Self {
        Self {
            waiting: std::sync::Mutex::new(Waiting::new()),
            next: std::sync::atomic::AtomicU64::new(1),
            on_change: Box::new(on_change),
        }
    }

    /// The open questions, oldest first.
    pub fn pending(&self) -> Vec<Pending> {
        self.waiting
            .lock()
            .map(|w| {
                w.iter()
                    .map(|(id, (request, _))| Pending {
                        id: *id,
                        hash: request.digest(),
                        request: request.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Answers question `id` whose digest is `hash` (the question the user was shown);
    /// false when it is no longer open, or is not that question. "Always" for a
    /// destructive call counts as once (the gate never stores such a grant either).
    pub fn answer(&self, id: u64, hash: &str, answer: Answer) -> bool {
        let entry = self.waiting.lock().ok().and_then(|mut w| {
            let shown = w.get(&id).is_some_and(|(r, _)| r.digest() == hash);
            if shown { w.remove(&id) } else { None }
        });
        let Some((request, tx)) = entry else {
            return false;
        };
        let answer = match answer {
            Answer::AllowAlways if !request.offers_always => Answer::AllowOnce,
            Answer::AllowConversation if !request.offers_conversation => Answer::AllowOnce,
            a => a,
        };
        let sent = tx.send(answer).is_ok();
        self.changed();
        sent
    }

    /// Denies every open question (the consent window was closed).
    pub fn deny_all(&self) -> usize {
        let all: Vec<_> = match self.waiting.lock() {
            Ok(mut w) => std::mem::take(&mut *w).into_values().collect(),
            Err(_) => Vec::new(),
        };
        let n = all.len();
        for (_, tx) in all {
            let _ = tx.send(Answer::Deny(Some(
                "the user closed the consent window".into(),
            )));
        }
        if n > 0 {
            self.changed();
        }
        n
    }

    fn changed(&self) {
        (self.on_change)(&self.pending());
    }

    fn forget(&self, id: u64) {
        let removed = self.waiting.lock().ok().and_then(|mut w| w.remove(&id));
        if removed.is_some() {
            self.changed();
        }
    }
}

/// Takes a question out of the queue when its asker stops waiting.
struct Asked<'a> {
    queue: &'a ConsentQueue,
    id: u64,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.queue.forget(self.id);
    }
}

impl Consent for ConsentQueue {
    fn ask<'a>(
        &'a self,
        request: &'a ConsentRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (tx, rx) = tokio::sync::oneshot::channel();
            match self.waiting.lock() {
                Ok(mut w) => w.insert(id, (request.clone(), tx)),
                Err(_) => return Answer::NoSurface,
            };
            let _asked = Asked { queue: self, id };
            self.changed();
            rx.await.unwrap_or(Answer::NoSurface)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_shown_escaped() {
        let shown = escape_for_display("a\u{1b}[31mred\u{202e}txt.exe\u{200b}\nnext\tline");
        assert_eq!(
            shown,
            "a\\u{001b}[31mred\\u{202e}txt.exe\\u{200b}\nnext\tline"
        );
        assert_eq!(escape_for_display("Zoë's café 東京"), "Zoë's café 東京");
    }

    fn request(offers_always: bool) -> ConsentRequest {
        ConsentRequest {
            call_id: "c1".into(),
            tool: "delete_file".into(),
            origin: super::super::Origin::BuiltIn,
            risk: super::super::Risk::Destructive,
            arguments: "{}".into(),
            preview: None,
            reason: "r".into(),
            escalated_by: None,
            offers_always,
            offers_conversation: offers_always,
        }
    }

    #[tokio::test]
    async fn a_queued_question_waits_for_its_answer_and_leaves_when_its_asker_stops() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let queue = std::sync::Arc::new(ConsentQueue::new(move |p: &[Pending]| {
            log.lock().expect("lock").push(p.len());
        }));
        let req = request(false);
        let asking = {
            let (queue, req) = (queue.clone(), req.clone());
            tokio::spawn(async move { queue.ask(&req).await })
        };
        while queue.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        let (id, hash) = (queue.pending()[0].id, queue.pending()[0].hash.clone());
        assert!(
            !queue.answer(id + 100, &hash, Answer::AllowOnce),
            "no such question"
        );
        // An answer for another question than the one shown (its hash) is no answer.
        let mut other = req.clone();
        other.arguments.push_str(" (another call)");
        assert!(!queue.answer(id, &other.digest(), Answer::AllowOnce));
        assert_eq!(queue.pending().len(), 1, "still waiting");
        // "Always" for a question that does not offer it is only once.
        assert!(queue.answer(id, &hash, Answer::AllowAlways));
        assert_eq!(asking.await.expect("join"), Answer::AllowOnce);
        assert!(queue.pending().is_empty());
        assert!(
            !queue.answer(id, &hash, Answer::AllowOnce),
            "answered once only"
        );

        // The asker gives up (a timeout): the question is gone from the queue.
        let gave_up =
            tokio::time::timeout(std::time::Duration::from_millis(20), queue.ask(&req)).await;
        assert!(gave_up.is_err());
        assert!(queue.pending().is_empty());
        assert_eq!(seen.lock().expect("lock").last(), Some(&0));

        // Closing the window denies what is open.
        let asking = {
            let (queue, req) = (queue.clone(), req.clone());
            tokio::spawn(async move { queue.ask(&req).await })
        };
        while queue.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(queue.deny_all(), 1);
        assert!(matches!(asking.await.expect("join"), Answer::Deny(Some(_))));
    }
}
