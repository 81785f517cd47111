//! What a call costs: a built-in table of list prices (USD per million tokens), by model
//! name prefix. Local servers cost nothing; unknown hosted models have no price (the ledger
//! keeps NULL rather than a guess).

use crate::types::Usage;

/// Prices of one model, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Input read from the provider's prompt cache.
    pub cached_input: f64,
    /// Input written to the provider's prompt cache.
    pub cache_write: f64,
}

const fn p(input: f64, output: f64, cached_input: f64, cache_write: f64) -> Price {
    Price {
        input,
        output,
        cached_input,
        cache_write,
    }
}

/// Built-in list prices by model name prefix; longest prefixes first, so `gpt-4o-mini`
/// wins over `gpt-4o`. The user's model table ([`crate::models`]) overrides these.
pub const TABLE: &[(&str, Price)] = &[
    ("gpt-4.1-nano", p(0.10, 0.40, 0.025, 0.10)),
    ("gpt-4.1-mini", p(0.40, 1.60, 0.10, 0.40)),
    ("gpt-4.1", p(2.00, 8.00, 0.50, 2.00)),
    ("gpt-4o-mini", p(0.15, 0.60, 0.075, 0.15)),
    ("gpt-4o", p(2.50, 10.00, 1.25, 2.50)),
    ("claude-haiku-4", p(1.00, 5.00, 0.10, 1.25)),
    ("claude-3-5-haiku", p(0.80, 4.00, 0.08, 1.00)),
    ("claude-sonnet-4", p(3.00, 15.00, 0.30, 3.75)),
    ("claude-3-7-sonnet", p(3.00, 15.00, 0.30, 3.75)),
    ("claude-opus-4", p(15.00, 75.00, 1.50, 18.75)),
];

/// The price of `model` (provider prefixes like `openai/` are ignored).
pub fn price(model: &str) -> Option<Price> {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    TABLE
        .iter()
        .find(|(prefix, _)| m.starts_with(prefix))
        .map(|(_, price)| *price)
}

/// What `usage` cost with `price`. `usage.input_tokens` includes cached and cache-written
/// tokens, which are charged at their own rates.
pub fn cost(price: Price, usage: Usage) -> f64 {
    let plain = usage
        .input_tokens
        .saturating_sub(usage.cached_input_tokens)
        .saturating_sub(usage.cache_write_tokens);
    (plain as f64 * price.input
        + usage.cached_input_tokens as f64 * price.cached_input
        + usage.cache_write_tokens as f64 * price.cache_write
        + usage.output_tokens as f64 * price.output)
        / 1_000_000.0
}

/// True for a server on this computer (its calls cost nothing).
pub fn is_local(base_url: &str) -> bool {
    ["://127.0.0.1", "://localhost", "://[::1]"]
        .iter()
        .any(|h| base_url.contains(h))
}

/// The cost of a call to `model` on a server at `base_url`: zero for a local server,
/// `None` for a hosted model without a known price.
pub fn call_cost(base_url: &str, model: &str, usage: Usage) -> Option<f64> {
    if is_local(base_url) {
        return Some(0.0);
    }
    price(model).map(|p| cost(p, usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_tokens_are_charged_at_the_cache_rate() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 800_000,
            cache_write_tokens: 0,
        };
        let c = cost(price("gpt-4o-mini").expect("known"), usage);
        // 200k × 0.15 + 800k × 0.075 + 100k × 0.60, per million
        assert!((c - (0.03 + 0.06 + 0.06)).abs() < 1e-9, "{c}");
        assert_eq!(price("openai/gpt-4o").map(|p| p.input), Some(2.50));
        assert_eq!(price("llama3.2"), None);
    }

    #[test]
    fn local_servers_cost_nothing_and_unknown_models_have_no_price() {
        let u = Usage {
            input_tokens: 10,
            output_tokens: 10,
            ..Usage::default()
        };
        assert_eq!(
            call_cost("http://127.0.0.1:11434/v1", "llama3.2", u),
            Some(0.0)
        );
        assert_eq!(
            call_cost("https://example.invalid/v1", "mystery-model", u),
            None
        );
    }
}
