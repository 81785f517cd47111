//! Token counting with the model's own encoding.
//!
//! GPT-4o-class models (gpt-4o, gpt-4.1, gpt-5, o1/o3/o4) use `o200k_base`; GPT-4 and
//! GPT-3.5 use `cl100k_base`. For other models (Llama, Qwen, Mistral, Claude …) we have no
//! exact tokenizer here, so we count with `o200k_base` and add a safety margin
//! ([`ESTIMATE_MARGIN`]): BPE vocabularies of that size tokenise prose within about ±15% of
//! each other, and code and CJK are counted as tokens, never as characters/4. Encoders load
//! once per process.

use tiktoken_rs::CoreBPE;

/// Factor applied to `o200k_base` counts for models without a known tokenizer, chosen so
/// budgets err on the side of fitting.
pub const ESTIMATE_MARGIN: f64 = 1.15;

/// How tokens are counted for a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Exact: `o200k_base`.
    O200kBase,
    /// Exact: `cl100k_base`.
    Cl100kBase,
    /// `o200k_base` × [`ESTIMATE_MARGIN`], rounded up.
    Estimated,
}

impl Encoding {
    /// The encoding for a model name (provider prefixes like `openai/` are ignored).
    pub fn for_model(model: &str) -> Self {
        let m = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let starts = |p: &str| m.starts_with(p);
        if starts("gpt-4o")
            || starts("gpt-4.1")
            || starts("gpt-4.5")
            || starts("gpt-5")
            || starts("o1")
            || starts("o3")
            || starts("o4")
            || starts("chatgpt-4o")
            || starts("gpt-oss")
        {
            Encoding::O200kBase
        } else if starts("gpt-4")
            || starts("gpt-3.5")
            || starts("text-embedding-3")
            || starts("text-embedding-ada")
        {
            Encoding::Cl100kBase
        } else {
            Encoding::Estimated
        }
    }

    /// Whether counts are exact for the model.
    pub fn is_exact(self) -> bool {
        self != Encoding::Estimated
    }

    fn bpe(self) -> &'static CoreBPE {
        match self {
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Encoding::O200kBase | Encoding::Estimated => tiktoken_rs::o200k_base_singleton(),
        }
    }

    /// Tokens in `text` (special-token strings in user text count as ordinary text).
    pub fn count(self, text: &str) -> usize {
        let n = self.bpe().encode_ordinary(text).len();
        match self {
            Encoding::Estimated => (n as f64 * ESTIMATE_MARGIN).ceil() as usize,
            _ => n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_get_their_own_encoding() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("openai/gpt-4.1"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4-turbo"), Encoding::Cl100kBase);
        assert_eq!(Encoding::for_model("llama3.2:3b"), Encoding::Estimated);
    }

    #[test]
    fn counts_match_the_reference_tokenizers() {
        // Reference counts from OpenAI's tiktoken.
        assert_eq!(Encoding::Cl100kBase.count("hello world"), 2);
        assert_eq!(Encoding::O200kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count(""), 0);
    }

    #[test]
    fn code_and_cjk_are_not_counted_as_characters_over_four() {
        let cjk = "東京都の天気は明日晴れるでしょう。週末は雨が降るかもしれません。";
        let chars_over_4 = cjk.chars().count() / 4;
        assert!(
            Encoding::O200kBase.count(cjk) > chars_over_4 * 2,
            "CJK is token-dense"
        );
        let estimated = Encoding::Estimated.count(cjk);
        assert!(estimated >= Encoding::O200kBase.count(cjk));
    }
}
