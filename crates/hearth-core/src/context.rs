//! The one place that turns conversation state into a provider-neutral prompt, inside a
//! token budget.
//!
//! This first version has three zones, in cache-friendly order: the stable system prefix,
//! history (verbatim turns, oldest dropped first when over budget), and the current message
//! last. Output tokens are reserved before anything else. Memory, retrieved context and the
//! rolling summary are later zones (issues 3–5).

use serde::Serialize;

use crate::tokens::Encoding;
use crate::types::Message;

/// Fraction of the advertised window we plan to use (000:332–373).
pub const EFFECTIVE_FRACTION: f64 = 0.86;
/// Output reserve cap; small windows reserve a quarter instead.
pub const OUTPUT_RESERVE: u32 = 4_000;
/// Introduces the rolling summary in the prompt.
pub const SUMMARY_HEADER: &str =
    "Summary of the earlier conversation (older turns are not shown verbatim):";
/// Compaction starts when history passes this fraction of the effective window (003:331).
pub const SOFT_LIMIT_FRACTION: f64 = 0.5;
/// Messages always kept verbatim at compaction: the last three exchanges (003:300).
pub const KEEP_VERBATIM: usize = 6;
/// Per-message framing tokens (role markers) that providers add.
pub const MESSAGE_OVERHEAD: u32 = 4;

/// The advertised context window of a model, from a built-in table; unknown models get a
/// conservative 8K.
pub fn context_window(model: &str) -> u32 {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let table: &[(&str, u32)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5", 16_385),
        ("claude", 200_000),
    ];
    table
        .iter()
        .find(|(prefix, _)| m.starts_with(prefix))
        .map(|(_, w)| *w)
        .unwrap_or(8_192)
}

/// Tokens per zone of an assembled prompt (the context inspector).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ZoneTokens {
    pub system: u32,
    pub summary: u32,
    pub history: u32,
    pub current: u32,
    pub output_reserve: u32,
    /// What the prompt may use in all (effective window minus output reserve).
    pub input_budget: u32,
}

/// A prompt ready for a provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    pub messages: Vec<Message>,
    pub zones: ZoneTokens,
    /// History messages left out (oldest first) to fit.
    pub dropped: usize,
}

/// The effective window: the part of the advertised window we plan to use.
pub fn effective_window(window: u32) -> u32 {
    (f64::from(window) * EFFECTIVE_FRACTION) as u32
}

/// Builds the prompt: `system`, the rolling `summary` if any, as much `history` as fits
/// (newest kept), then `current`. `history` carries each message's stored token count.
pub fn assemble(
    system: &str,
    summary: Option<&str>,
    history: &[(Message, u32)],
    current: &Message,
    encoding: Encoding,
    window: u32,
) -> Result<Assembled, String> {
    let effective = effective_window(window);
    let output_reserve = OUTPUT_RESERVE.min(effective / 4);
    let input_budget = effective - output_reserve;
    let system_tokens = encoding.count(system) as u32 + MESSAGE_OVERHEAD;
    let current_tokens = encoding.count(&current.content) as u32 + MESSAGE_OVERHEAD;
    let summary_message = summary.map(|s| Message::system(format!("{SUMMARY_HEADER}\n{s}")));
    let summary_tokens = summary_message
        .as_ref()
        .map(|m| encoding.count(&m.content) as u32 + MESSAGE_OVERHEAD)
        .unwrap_or(0);
    let fixed = system_tokens + summary_tokens + current_tokens;
    if fixed > input_budget {
        return Err(format!(
            "the message needs about {current_tokens} tokens, more than the {input_budget} this model can take"
        ));
    }
    let mut room = input_budget - fixed;
    let mut kept = Vec::new();
    let mut history_tokens = 0;
    for (message, tokens) in history.iter().rev() {
        let cost = tokens + MESSAGE_OVERHEAD;
        if cost > room {
            break;
        }
        room -= cost;
        history_tokens += cost;
        kept.push(message.clone());
    }
    let dropped = history.len() - kept.len();
    kept.reverse();
    let mut messages = Vec::with_capacity(kept.len() + 2);
    messages.push(Message::system(system));
    messages.extend(summary_message);
    messages.extend(kept);
    messages.push(current.clone());
    Ok(Assembled {
        messages,
        zones: ZoneTokens {
            system: system_tokens,
            summary: summary_tokens,
            history: history_tokens,
            current: current_tokens,
            output_reserve,
            input_budget,
        },
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_history_is_cut_oldest_first_and_the_prompt_fits() {
        let enc = Encoding::O200kBase;
        let history: Vec<(Message, u32)> = (0..400)
            .map(|i| {
                let m = Message::user(format!("turn {i}: {}", "words and more words ".repeat(20)));
                let t = enc.count(&m.content) as u32;
                (m, t)
            })
            .collect();
        let current = Message::user("what did I say last?");
        let a = assemble("You are Hearth.", None, &history, &current, enc, 4_096).expect("fits");
        let total: u32 = a
            .messages
            .iter()
            .map(|m| enc.count(&m.content) as u32 + MESSAGE_OVERHEAD)
            .sum();
        assert!(
            total <= a.zones.input_budget,
            "{total} > {}",
            a.zones.input_budget
        );
        assert_eq!(
            a.messages.first(),
            Some(&Message::system("You are Hearth."))
        );
        assert_eq!(a.messages.last(), Some(&current));
        assert!(a.dropped > 0);
        // The newest history survives, the oldest goes.
        assert!(
            a.messages[a.messages.len() - 2]
                .content
                .starts_with("turn 399:")
        );
        assert!(!a.messages.iter().any(|m| m.content.starts_with("turn 0:")));
    }

    #[test]
    fn output_is_reserved_first_even_for_small_windows() {
        let a = assemble(
            "s",
            None,
            &[],
            &Message::user("hi"),
            Encoding::O200kBase,
            4_096,
        )
        .expect("fits");
        assert_eq!(a.zones.output_reserve, 880);
        assert_eq!(a.zones.input_budget, 3_522 - 880);
        let big = assemble(
            "s",
            None,
            &[],
            &Message::user("hi"),
            Encoding::O200kBase,
            128_000,
        )
        .expect("fits");
        assert_eq!(big.zones.output_reserve, OUTPUT_RESERVE);
    }
}
