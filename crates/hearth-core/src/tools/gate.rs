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
    /// Whether "always allow this tool" is offered (never for destructive calls).
    pub offers_always: bool,
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
}

impl std::fmt::Debug for ToolSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSettings")
            .field("enabled", &self.enabled)
            .field("allow_writes", &self.allow_writes)
            .field("consent", &self.consent.is_some())
            .finish_non_exhaustive()
    }
}

/// Consent not answered within 5 minutes is a denial (`HEARTH_CONSENT_TIMEOUT_MS`).
pub const CONSENT_TIMEOUT: Duration = Duration::from_secs(300);
/// One tool call may run 60 s (`HEARTH_TOOL_TIMEOUT_MS`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Model calls in one run (`HEARTH_MAX_ITERATIONS`).
pub const MAX_ITERATIONS: usize = 12;

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
            max_iterations: std::env::var("HEARTH_MAX_ITERATIONS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(MAX_ITERATIONS),
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
/// as `\u{…}` escapes, so an argument cannot hide or reorder what the user reads.
pub fn escape_for_display(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let hidden = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c,
                '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{061C}'
                | '\u{00AD}');
        if hidden {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
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
}
