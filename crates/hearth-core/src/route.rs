//! The router: which tier answers a request — `fast` (the cheap model) or `strong` (the
//! main one) — by transparent rules (seed `000`:3095–3113), decided before the call from
//! what the turn carries: the message, passages from the user's folders or an attached
//! file, its length. Each decision says why, in words a person reads on the answer
//! ("fast — a short lookup"; "strong — it reads your files").
//!
//! The rules lean strong: a request is sent to the fast model only when something marks it
//! as simple (short, and no cue of work the small model does badly). A wrong "fast" costs
//! an answer's quality, a wrong "strong" only money; the labelled set
//! (`tests/data/routing/requests.tsv`, written before these rules) holds the floors: at
//! most 10 % of strong-labelled requests go fast, at least 60 % of fast-labelled ones do.

use serde::{Deserialize, Serialize};

/// A tier of models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The cheap, quick model (the fast slot).
    Fast,
    /// The main model.
    Strong,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Fast => "fast",
            Tier::Strong => "strong",
        }
    }

    /// `fast` or `strong`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fast" => Some(Tier::Fast),
            "strong" => Some(Tier::Strong),
            _ => None,
        }
    }
}

/// Why the router chose a tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The user chose the tier for this message.
    Chosen,
    /// Routing is off: the main model answers everything.
    RoutingOff,
    /// No fast model is set: the main model answers.
    NoFastModel,
    /// The turn carries passages from the user's files or an attached file.
    ReadsFiles,
    /// The message is long (pasted text).
    LongInput,
    /// The message has code or asks for it.
    Code,
    /// The message asks for reasoning, a plan, a comparison, writing or care.
    HardTask,
    /// A greeting, a thank-you: conversation.
    ChitChat,
    /// A short question or conversion.
    ShortLookup,
    /// Nothing marked it as simple: the safe default.
    NotSimple,
    /// The user asked for another answer (Regenerate).
    AskedAgain,
    /// Cascade: the fast model's answer was empty.
    EscalatedEmpty,
    /// Cascade: the fast model's answer stopped at its length limit.
    EscalatedCutOff,
    /// Cascade: the fast model refused.
    EscalatedRefusal,
    /// Cascade: JSON was asked for and the fast answer held none.
    EscalatedInvalidJson,
    /// Cascade: the fast model could not form a tool call.
    EscalatedBadToolCall,
}

impl Reason {
    /// The words shown after the tier on an answer.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::Chosen => "you chose it for this message",
            Reason::RoutingOff => "routing is off",
            Reason::NoFastModel => "no fast model is set",
            Reason::ReadsFiles => "it reads your files",
            Reason::LongInput => "a long message",
            Reason::Code => "code",
            Reason::HardTask => "it asks for reasoning, planning or writing",
            Reason::ChitChat => "conversation",
            Reason::ShortLookup => "a short lookup",
            Reason::NotSimple => "nothing marked it as simple",
            Reason::AskedAgain => "you asked for another answer",
            Reason::EscalatedEmpty => "escalated: the fast answer was empty",
            Reason::EscalatedCutOff => "escalated: the fast answer was cut off",
            Reason::EscalatedRefusal => "escalated: the fast model refused",
            Reason::EscalatedInvalidJson => "escalated: the fast answer was not the JSON asked for",
            Reason::EscalatedBadToolCall => "escalated: the fast model could not form a tool call",
        }
    }
}

/// What the router knows of a turn before the call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    /// The user's message.
    pub message: &'a str,
    /// Passages from the user's folders the turn carries.
    pub passages: usize,
    /// Files the user attached to the message.
    pub attachments: usize,
}

/// A routing decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub tier: Tier,
    pub reason: Reason,
}

impl Decision {
    /// "fast — a short lookup".
    pub fn describe(self) -> String {
        format!("{} — {}", self.tier.as_str(), self.reason.describe())
    }
}

/// The user's choice of tier for one message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TierChoice {
    /// The router decides.
    #[default]
    Auto,
    Fast,
    Strong,
}

impl TierChoice {
    /// `auto`, `fast` or `strong`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "fast" => Some(Self::Fast),
            "strong" => Some(Self::Strong),
            _ => None,
        }
    }
}

/// Which model answered and why, stored with the answer and shown on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub tier: Tier,
    pub reason: Reason,
    /// The model whose answer a cascade replaced.
    #[serde(default)]
    pub escalated_from: Option<String>,
}

impl Route {
    /// The route of the main model's answer that replaced `from`'s, for `reason`.
    pub fn escalated(reason: Reason, from: &str) -> Self {
        Self {
            tier: Tier::Strong,
            reason,
            escalated_from: Some(from.to_owned()),
        }
    }

    /// Whether an answer shows its route: only when there was a choice to make (with one
    /// model, "strong — no fast model is set" would say nothing to the user).
    pub fn shown(&self) -> bool {
        self.reason != Reason::NoFastModel
    }

    /// "fast — a short lookup".
    pub fn describe(&self) -> String {
        Decision {
            tier: self.tier,
            reason: self.reason,
        }
        .describe()
    }
}

/// Whether the router runs (Settings; `hearth providers routing`): on unless turned off.
/// The cascade — answer fast, escalate when a check fails — is off unless turned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingSettings {
    pub enabled: bool,
    #[serde(default)]
    pub cascade: bool,
}

impl Default for RoutingSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            cascade: false,
        }
    }
}

/// The settings key of [`RoutingSettings`].
pub const ROUTING_SETTING: &str = "routing";

/// The decision for a message: the user's choice when they made one, else the rules
/// when routing is on and a fast model distinct from the main one is set.
pub fn decide(
    choice: TierChoice,
    request: Request<'_>,
    enabled: bool,
    fast_distinct: bool,
) -> Decision {
    let decision = |tier, reason| Decision { tier, reason };
    match choice {
        TierChoice::Strong => decision(Tier::Strong, Reason::Chosen),
        TierChoice::Fast if fast_distinct => decision(Tier::Fast, Reason::Chosen),
        TierChoice::Fast => decision(Tier::Strong, Reason::NoFastModel),
        TierChoice::Auto if !enabled => decision(Tier::Strong, Reason::RoutingOff),
        TierChoice::Auto => route(request, fast_distinct),
    }
}

/// The passage budget of the look for passages a fast-routed message makes.
pub const PASSAGE_PROBE_TOKENS: u32 = 2_000;

/// Words over which a message counts as long input (~2,000 tokens of pasted text).
pub const LONG_WORDS: usize = 1_500;

/// Words up to which a message with no cue counts as short.
pub const SHORT_WORDS: usize = 16;

/// Cues of work a small model does badly (seed `000`:3101: "prove", "derive", "explain
/// why", "step by step", "analyze", "plan" …), matched as whole words or phrases.
const HARD_CUES: &[&str] = &[
    "plan",
    "planning",
    "compare",
    "comparison",
    "versus",
    "vs",
    "explain",
    "why",
    "step by step",
    "analyse",
    "analyze",
    "analysis",
    "prove",
    "derive",
    "design",
    "draft",
    "review",
    "summarise",
    "summarize",
    "summary",
    "pros and cons",
    "weigh",
    "evaluate",
    "optimise",
    "optimize",
    "reconcile",
    "strategy",
    "negotiate",
    "negotiation",
    "proofread",
    "figure out",
    "think through",
    "walk me through",
    "help me prepare",
    "help me decide",
    "what am i missing",
    "cover letter",
    "essay",
    "story",
    "poem",
    "calculate",
    "meal plan",
    "itinerary",
    "according to",
];

/// Verbs of writing that make a long answer ("write", "create") — hard unless the thing to
/// write is small ("write a haiku" is still writing; "write down" is not).
const WRITING: &[&str] = &["write", "create", "compose", "generate", "build"];

/// Words that say the message is about code.
const CODE_WORDS: &[&str] = &[
    "code",
    "function",
    "script",
    "debug",
    "refactor",
    "compile",
    "compiler",
    "regex",
    "sql",
    "python",
    "javascript",
    "typescript",
    "rust",
    "bash",
    "java",
    "react",
    "api",
    "bug",
    "stack trace",
    "exception",
];

/// Greetings and thanks.
const CHIT_CHAT: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank you",
    "good morning",
    "good evening",
    "good night",
    "how are you",
    "cheers",
    "bye",
];

/// The tier for `request`, by the rules; `fast_available` is whether a fast model is set.
pub fn route(request: Request<'_>, fast_available: bool) -> Decision {
    let decide = |tier, reason| Decision { tier, reason };
    if !fast_available {
        return decide(Tier::Strong, Reason::NoFastModel);
    }
    if request.passages > 0 || request.attachments > 0 {
        return decide(Tier::Strong, Reason::ReadsFiles);
    }
    let words = words_of(request.message);
    if words.len() > LONG_WORDS {
        return decide(Tier::Strong, Reason::LongInput);
    }
    if looks_like_code(request.message, &words) {
        return decide(Tier::Strong, Reason::Code);
    }
    if HARD_CUES.iter().any(|cue| has_phrase(&words, cue))
        || WRITING.iter().any(|w| has_phrase(&words, w))
    {
        return decide(Tier::Strong, Reason::HardTask);
    }
    if words.len() <= 6 && CHIT_CHAT.iter().any(|c| has_phrase(&words, c)) {
        return decide(Tier::Fast, Reason::ChitChat);
    }
    if words.len() <= SHORT_WORDS {
        return decide(Tier::Fast, Reason::ShortLookup);
    }
    decide(Tier::Strong, Reason::NotSimple)
}

/// What a cascade checks of the fast model's answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct FastAnswer<'a> {
    /// The user's message.
    pub message: &'a str,
    /// The answer's text.
    pub answer: &'a str,
    /// The answer stopped at the model's length limit.
    pub cut_off: bool,
    /// A tool call the model sent was malformed or named no tool, and no later call of
    /// the same tool ran.
    pub bad_tool_call: bool,
}

/// The check a fast answer fails, as the reason of the strong answer that replaces it
/// (`None`: the fast answer stands). The façade never escalates a turn in which a write
/// or destructive tool ran or was asked for, nor one the user stopped.
pub fn check(fast: FastAnswer<'_>) -> Option<Reason> {
    if fast.bad_tool_call {
        return Some(Reason::EscalatedBadToolCall);
    }
    if fast.cut_off {
        return Some(Reason::EscalatedCutOff);
    }
    if fast.answer.trim().is_empty() {
        return Some(Reason::EscalatedEmpty);
    }
    if refuses(fast.answer) {
        return Some(Reason::EscalatedRefusal);
    }
    if asks_for_json(fast.message) && !holds_json(fast.answer) {
        return Some(Reason::EscalatedInvalidJson);
    }
    None
}

/// How a refusal opens (seen in the first sentence only, lower case, straight quotes).
const REFUSALS: &[&str] = &[
    "i can't help",
    "i cannot help",
    "i can't assist",
    "i cannot assist",
    "i can't do that",
    "i cannot do that",
    "i can't provide",
    "i cannot provide",
    "i can't answer",
    "i cannot answer",
    "i'm unable to",
    "i am unable to",
    "i'm not able to",
    "i am not able to",
    "i won't be able to",
    "i'm sorry, but i can",
    "sorry, i can't",
    "as an ai",
];

/// Whether the answer opens with a refusal.
fn refuses(answer: &str) -> bool {
    let opening: String = answer
        .trim_start()
        .chars()
        .take(200)
        .collect::<String>()
        .to_lowercase()
        .replace('\u{2019}', "'");
    let first = opening
        .split_inclusive(['.', '!', '?', '\n'])
        .next()
        .unwrap_or("");
    REFUSALS.iter().any(|r| first.contains(r))
}

/// Phrases that ask for the answer in JSON (not a question about JSON).
const JSON_ASKS: &[&str] = &[
    "as json",
    "in json",
    "into json",
    "json format",
    "json object",
    "json array",
    "json list",
    "json only",
    "valid json",
    "return json",
    "output json",
    "only json",
];

/// Whether the message asks for the answer in JSON.
pub fn asks_for_json(message: &str) -> bool {
    let words = words_of(message);
    JSON_ASKS.iter().any(|p| has_phrase(&words, p))
}

/// Whether the answer is, or holds in a fenced block, a JSON object or array.
fn holds_json(answer: &str) -> bool {
    let parses = |text: &str| {
        matches!(
            serde_json::from_str::<serde_json::Value>(text.trim()),
            Ok(serde_json::Value::Object(_) | serde_json::Value::Array(_))
        )
    };
    if parses(answer) {
        return true;
    }
    // ```json … ``` (the fence's language tag is the rest of its first line).
    let mut parts = answer.split("```");
    parts.next();
    while let Some(block) = parts.next() {
        let body = block.split_once('\n').map_or(block, |(_, rest)| rest);
        if parses(body) {
            return true;
        }
        parts.next();
    }
    false
}

/// The message's words, lower case, split on anything not a letter, digit or apostrophe.
fn words_of(message: &str) -> Vec<String> {
    message
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('\u{2019}', "'"))
        .collect()
}

/// Whether `phrase` (one or more words) occurs in `words` as whole words.
fn has_phrase(words: &[String], phrase: &str) -> bool {
    let parts: Vec<&str> = phrase.split(' ').collect();
    words
        .windows(parts.len())
        .any(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
}

/// Code in the message (a backtick span, a line of symbols) or words about code.
fn looks_like_code(message: &str, words: &[String]) -> bool {
    if message.contains('`') {
        return true;
    }
    // Symbols that prose rarely has: `=>`, `();`, `{ … }`, `::`, `!=`.
    const SYMBOLS: &[&str] = &["=>", "();", "::", "!=", "==", "&&", "||", "{\n", "};"];
    if SYMBOLS.iter().any(|s| message.contains(s)) {
        return true;
    }
    let upper_sql = ["SELECT ", "INSERT INTO", "UPDATE ", "CREATE TABLE"];
    if upper_sql.iter().any(|s| message.contains(s)) {
        return true;
    }
    CODE_WORDS.iter().any(|w| has_phrase(words, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(message: &str) -> (Tier, Reason) {
        let d = route(
            Request {
                message,
                ..Request::default()
            },
            true,
        );
        (d.tier, d.reason)
    }

    #[test]
    fn each_rule_says_why() {
        assert_eq!(tier("Thanks!"), (Tier::Fast, Reason::ChitChat));
        assert_eq!(
            tier("Convert 5 miles to kilometres."),
            (Tier::Fast, Reason::ShortLookup)
        );
        assert_eq!(
            tier("Explain why the sky is blue."),
            (Tier::Strong, Reason::HardTask)
        );
        assert_eq!(
            tier("What's wrong with `x += 1`?"),
            (Tier::Strong, Reason::Code)
        );
        let long = "word ".repeat(LONG_WORDS + 1);
        assert_eq!(tier(&long), (Tier::Strong, Reason::LongInput));
        let with_files = Request {
            message: "What's the total?",
            passages: 2,
            attachments: 0,
        };
        assert_eq!(route(with_files, true).reason, Reason::ReadsFiles);
        assert_eq!(
            route(with_files, false),
            Decision {
                tier: Tier::Strong,
                reason: Reason::NoFastModel
            }
        );
        // A long message with no cue is not simple.
        assert_eq!(
            tier(
                "I have been thinking about the situation with my neighbour and the noise at night and I do not know what to do about it anymore"
            ),
            (Tier::Strong, Reason::NotSimple)
        );
        // Whole words only: "explanation" is not a cue by itself, "planet" is not "plan".
        assert_eq!(
            tier("Which planet is closest to the sun?"),
            (Tier::Fast, Reason::ShortLookup)
        );
        assert_eq!(
            Decision {
                tier: Tier::Fast,
                reason: Reason::ShortLookup
            }
            .describe(),
            "fast — a short lookup"
        );
    }

    #[test]
    fn a_cascade_escalates_on_each_failing_check_and_only_then() {
        let fast = |message, answer| FastAnswer {
            message,
            answer,
            ..FastAnswer::default()
        };
        let ok = fast("What's the capital of Peru?", "Lima.");
        assert_eq!(check(ok), None);
        assert_eq!(
            check(FastAnswer { cut_off: true, ..ok }),
            Some(Reason::EscalatedCutOff)
        );
        assert_eq!(
            check(FastAnswer {
                bad_tool_call: true,
                ..ok
            }),
            Some(Reason::EscalatedBadToolCall)
        );
        assert_eq!(check(fast("Hi", "  \n")), Some(Reason::EscalatedEmpty));
        assert_eq!(
            check(fast("Who wrote it?", "I\u{2019}m sorry, but I can\u{2019}t help with that.")),
            Some(Reason::EscalatedRefusal)
        );
        // A refusal is how the answer opens, not a phrase later on.
        assert_eq!(
            check(fast(
                "Any tips?",
                "Drink water. If it gets worse, I can't help more than a doctor would."
            )),
            None
        );
        let asks = "List three colours as JSON.";
        assert!(asks_for_json(asks));
        assert!(!asks_for_json("What is JSON?"));
        assert_eq!(
            check(fast(asks, "Red, green and blue.")),
            Some(Reason::EscalatedInvalidJson)
        );
        assert_eq!(
            check(fast(asks, "{\"colours\": [\"red\", \"green\"")),
            Some(Reason::EscalatedInvalidJson)
        );
        assert_eq!(check(fast(asks, "[\"red\", \"green\", \"blue\"]")), None);
        assert_eq!(
            check(fast(asks, "Here:\n```json\n{\"colours\": [\"red\"]}\n```")),
            None
        );
        assert_eq!(
            Route {
                tier: Tier::Strong,
                reason: Reason::EscalatedCutOff,
                escalated_from: Some("small".into())
            }
            .describe(),
            "strong — escalated: the fast answer was cut off"
        );
    }
}
