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
    /// The model whose answer a cascade replaced (none yet: cascades come next).
    #[serde(default)]
    pub escalated_from: Option<String>,
}

impl Route {
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

/// Whether the router runs (Settings; `hearth providers routing`). On unless turned off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingSettings {
    pub enabled: bool,
}

impl Default for RoutingSettings {
    fn default() -> Self {
        Self { enabled: true }
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
}
