//! Chat: conversations, messages, a turn's events and what it cost.

use serde::Serialize;
use ts_rs::TS;

/// Whether chat can start, and with what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatStatusDto {
    pub ready: bool,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// The fast model, when it is another model than the main one (the composer then
    /// offers a choice of model per message).
    pub fast_model: Option<String>,
    /// What to do when not ready.
    pub hint: Option<String>,
}

/// A conversation in the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ConversationDto {
    pub id: String,
    pub title: String,
    #[ts(type = "number")]
    pub updated_at: i64,
    pub messages: u32,
}

/// A stored message; `role` is user|assistant, `state` complete|streaming|stopped|interrupted|failed.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct MessageDto {
    #[ts(type = "number")]
    pub id: i64,
    pub role: String,
    pub content: String,
    pub state: String,
    /// For an answer: the model, tokens, cost and context of its turn.
    pub turn: Option<TurnInfoDto>,
    /// For an answer: the passages of watched folders it was given, `[1]` first (those whose
    /// file's text is gone since are not listed).
    pub sources: Vec<super::SourceDto>,
    /// For an answer: the tool calls of its turn, in order.
    pub tool_calls: Vec<ToolCallDto>,
}

/// A tool call of a turn, as the chat shows it inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ToolCallDto {
    /// The model's id for the call.
    pub call_id: String,
    pub tool: String,
    /// `built_in` or `mcp:<server>`.
    pub origin: String,
    /// `read`, `write` or `destructive`.
    pub risk: String,
    /// The complete arguments, pretty-printed, hidden characters escaped.
    pub arguments: String,
    /// `allowed`, `denied` or `invalid`.
    pub decision: String,
    /// `user`, `grant`, `auto`, `allow_writes`, `policy_no_tty` or `timeout`.
    pub decided_by: String,
    /// Untrusted content earlier in the turn made the gate ask.
    pub escalated: bool,
    /// `ok`, `error`, `not_run`, `timeout` or `cancelled`.
    pub result_status: String,
    /// The whole result (or why the call did not run), hidden characters escaped.
    pub result: String,
}

fn word<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl From<&hearth_core::CallRecord> for ToolCallDto {
    fn from(c: &hearth_core::CallRecord) -> Self {
        Self {
            call_id: c.id.clone(),
            tool: c.tool.clone(),
            origin: c.origin.label(),
            risk: c.risk.as_str().to_owned(),
            arguments: c.arguments_for_display(),
            decision: word(&c.decision),
            decided_by: word(&c.decided_by),
            escalated: c.escalated,
            result_status: word(&c.result_status),
            result: c.result_for_display(),
        }
    }
}

/// The model asked for a tool in a running turn; the gate is checking it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatToolStartedEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub call_id: String,
    pub tool: String,
}

/// Cascade: the fast model's answer failed a check; the strong model answers again and its
/// text follows as `chat_token` events (the streamed text so far is set aside).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatEscalatingEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    /// The fast model.
    pub from: String,
    /// The strong model that answers again.
    pub to: String,
    /// "strong — escalated: the fast answer was cut off".
    pub text: String,
}

/// The turn's next call waits about `seconds` for the provider's rate limit (the answer
/// follows by itself; Stop ends the wait).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatWaitingEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub provider: String,
    #[ts(type = "number")]
    pub seconds: u64,
}

/// A tool call of a running turn ended (decided, and run or not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatToolEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub call: ToolCallDto,
}

/// Tokens per zone of the prompt a turn sent (the context inspector).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ZonesDto {
    /// Persona, rules and tool catalog (the stable prefix).
    pub system: u32,
    /// What Hearth knows about the user.
    pub memory: u32,
    /// The rolling summary of older turns.
    pub summary: u32,
    /// Earlier turns kept verbatim.
    pub history: u32,
    /// Retrieved passages for this turn.
    pub retrieved: u32,
    /// The message being answered.
    pub current: u32,
    /// Held back for the answer.
    pub output_reserve: u32,
    /// What the prompt may use in all (effective window minus the output reserve).
    pub input_budget: u32,
    /// The model's advertised context window.
    pub window: u32,
    /// The tools offered to the model (their definitions).
    pub tools: u32,
    /// Earlier messages left out to fit (covered by the summary when there is one).
    pub dropped: u32,
}

impl From<hearth_core::ZoneTokens> for ZonesDto {
    fn from(z: hearth_core::ZoneTokens) -> Self {
        Self {
            system: z.system,
            memory: z.memory,
            summary: z.summary,
            history: z.history,
            retrieved: z.retrieved,
            current: z.current,
            output_reserve: z.output_reserve,
            input_budget: z.input_budget,
            window: z.window,
            tools: z.tools,
            dropped: z.dropped,
        }
    }
}

impl From<hearth_core::TurnInfo> for TurnInfoDto {
    fn from(t: hearth_core::TurnInfo) -> Self {
        Self {
            provider: t.provider,
            model: t.model,
            input_tokens: t.usage.input_tokens,
            output_tokens: t.usage.output_tokens,
            cached_input_tokens: t.usage.cached_input_tokens,
            cost_usd: t.cost_usd,
            zones: Some(t.zones.into()),
            fallback_from: t.fallback_from,
            tools_left_out: t.tools_left_out,
            stop_reason: t.stop_reason,
            route: t
                .route
                .filter(hearth_core::Route::shown)
                .map(RouteDto::from),
            first_answer: t.first_answer,
            over_budget: t.over_budget,
            cached: t.cached,
            cached_from: t.cached_from,
        }
    }
}

impl From<hearth_core::Route> for RouteDto {
    fn from(r: hearth_core::Route) -> Self {
        Self {
            tier: r.tier.as_str().to_owned(),
            text: r.describe(),
            escalated_from: r.escalated_from,
        }
    }
}

/// Which model tier answered and why (shown under the answer).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RouteDto {
    /// `fast` or `strong`.
    pub tier: String,
    /// The tier and the reason in words: "fast — a short lookup".
    pub text: String,
    /// The model whose answer a cascade replaced.
    pub escalated_from: Option<String>,
}

/// What one answer cost and what its prompt held.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct TurnInfoDto {
    pub provider: String,
    pub model: String,
    #[ts(type = "number")]
    pub input_tokens: u64,
    #[ts(type = "number")]
    pub output_tokens: u64,
    #[ts(type = "number")]
    pub cached_input_tokens: u64,
    /// USD; 0 on a local server, `null` when the price is unknown.
    pub cost_usd: Option<f64>,
    pub zones: Option<ZonesDto>,
    /// Set when the main model failed and the enabled fallback answered: the main model's name.
    pub fallback_from: Option<String>,
    /// Tools the model's window had no room for in this turn.
    pub tools_left_out: Vec<String>,
    /// Why the run ended: `answer`, `cap`, `cancelled` or `timeout` (`null` for answers
    /// stored before it was kept).
    pub stop_reason: Option<String>,
    /// Which tier answered and why; `null` when there was no choice (one model) or for
    /// answers from before routing.
    pub route: Option<RouteDto>,
    /// The fast model's answer a cascade replaced with this one (shown under it).
    pub first_answer: Option<String>,
    /// The user sent this message over a spending cap.
    pub over_budget: bool,
    /// The answer came from the response cache: no model was called.
    pub cached: bool,
    /// The semantic cache answered: the question its saved reply was given to.
    pub cached_from: Option<String>,
}

/// A turn that started; its answer arrives as `chat_token` events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SendResultDto {
    #[ts(type = "number")]
    pub turn_id: u64,
}

/// A piece of a streaming answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatTokenEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub text: String,
}

/// A turn that finished (completely or stopped by the user).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ChatDoneEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub conversation_id: Option<String>,
    pub answer: String,
    pub stopped: bool,
    #[ts(type = "number")]
    pub input_tokens: u64,
    #[ts(type = "number")]
    pub output_tokens: u64,
    /// The stored answer (`null` in a temporary chat).
    #[ts(type = "number | null")]
    pub message_id: Option<i64>,
    pub turn: TurnInfoDto,
    /// The passages of watched folders the answer was given, `[1]` first.
    pub sources: Vec<super::SourceDto>,
    /// The tool calls of the turn, in order.
    pub tool_calls: Vec<ToolCallDto>,
    /// Why the run ended: `answer`, `cap`, `cancelled`, `timeout` or `budget`.
    pub stop_reason: String,
    /// A spending cap at or past 80 % after this turn (the one closest to full).
    pub budget: Option<super::StandingDto>,
}

/// A turn that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChatFailedEvent {
    #[ts(type = "number")]
    pub turn_id: u64,
    pub code: String,
    pub message: String,
}

/// Asks the main window to show a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct OpenConversationEvent {
    pub conversation_id: String,
}
