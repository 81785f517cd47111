//! The one hybrid ranker: how a document's evidence from the two sides — its BM25 rank and
//! score among the keyword matches, its rank and cosine among the nearest vectors —
//! becomes one relevance ([`Fusion`]). Memory search and the memory block use it
//! (`memory::rank` adds memory's own rules: subject, context, the block's reserve), and
//! folder search is to use the same, so there is one ranker, not two. It knows nothing of
//! what is ranked. docs/decisions/0008-memory-ranking.md has the numbers that chose it.

/// Words too common to search by (English); a query made only of them searches them all.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she",
    "should", "so", "some", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "to", "try", "up", "us", "was", "we", "were", "what", "when", "where", "which",
    "who", "why", "will", "with", "would", "you", "your",
];

/// The words a keyword query searches for: lowercased, without stopwords (they match
/// everything and rank nothing) unless the text has nothing else, each once, at most 32.
pub fn query_words(text: &str) -> Vec<String> {
    let all: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let content: Vec<&String> = all
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect();
    let chosen: Vec<&String> = if content.is_empty() {
        all.iter().collect()
    } else {
        content
    };
    let mut seen = std::collections::HashSet::new();
    chosen
        .into_iter()
        .filter(|w| seen.insert(w.as_str()))
        .take(32)
        .cloned()
        .collect()
}

/// An FTS5 query matching any of [`query_words`] of `text` (quoted, so no syntax gets
/// through).
pub fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = query_words(text)
        .into_iter()
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// What the two sides found for one document (ranks 0 best).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// Its rank among the keyword matches and its BM25 score (higher is better).
    pub lexical_rank: Option<usize>,
    pub bm25: Option<f64>,
    /// Its rank among the nearest vectors and its cosine similarity to the query.
    pub vector_rank: Option<usize>,
    pub similarity: Option<f64>,
}

/// Reciprocal-rank-fusion constant.
pub const RRF_K: f64 = 60.0;
/// The vector side's weight in reciprocal-rank fusion (BM25's is 1), tuned on LoCoMo
/// conversations 26 and 30 only: recall@10 there was 0.581 at 1.0, 0.592 at 0.5, 0.623 at
/// 0.3, 0.640 at 0.2, 0.636 at 0.15 (Porter-stemmed BM25 alone: 0.613).
pub const VECTOR_WEIGHT: f64 = 0.2;

/// How the two sides' evidence becomes one relevance. `HEARTH_FUSION` overrides it for
/// experiments (`rrf`, or `calibrated` with `key=value` pairs: see [`Fusion::parse`]);
/// `HEARTH_VECTOR_WEIGHT` sets the RRF vector weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank: `1/(k+rank)` from BM25, `w/(k+rank)` from the vector index.
    Rrf { vector_weight: f64 },
    /// Calibrated strengths: lexical `L = bm25/best bm25 of the query` (0–1), semantic
    /// `S = (cosine − floor)/(ceil − floor)` clamped to 0–1, so a close meaning counts with no
    /// word in common; `relevance = max(wl·L, S) + both·min(wl·L, S)`.
    Calibrated {
        floor: f64,
        ceil: f64,
        lexical_weight: f64,
        both: f64,
        /// What one unit of relevance is worth in the block's score ([`Fusion::scale`]).
        scale: f64,
    },
}

impl Fusion {
    /// `rrf`, `rrf:w=0.2`, or `calibrated:floor=0.15,ceil=0.6,wl=1,both=0.5` (missing keys
    /// keep the defaults of [`Fusion::CALIBRATED`]). `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        let mut f = match name.trim() {
            "rrf" => Fusion::Rrf {
                vector_weight: VECTOR_WEIGHT,
            },
            "calibrated" => Self::CALIBRATED,
            _ => return None,
        };
        for pair in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair.split_once('=')?;
            let v: f64 = v.trim().parse().ok().filter(|v: &f64| v.is_finite())?;
            match (&mut f, k.trim()) {
                (Fusion::Rrf { vector_weight }, "w") => *vector_weight = v,
                (Fusion::Calibrated { floor, .. }, "floor") => *floor = v,
                (Fusion::Calibrated { ceil, .. }, "ceil") => *ceil = v,
                (Fusion::Calibrated { lexical_weight, .. }, "wl") => *lexical_weight = v,
                (Fusion::Calibrated { both, .. }, "both") => *both = v,
                (Fusion::Calibrated { scale, .. }, "scale") => *scale = v,
                _ => return None,
            }
        }
        Some(f)
    }

    /// The calibrated fusion's defaults.
    pub const CALIBRATED: Fusion = Fusion::Calibrated {
        floor: 0.15,
        ceil: 0.6,
        lexical_weight: 1.0,
        both: 0.5,
        scale: 1.0,
    };

    /// The fusion in use: `HEARTH_FUSION` when it parses, else the default.
    pub fn current() -> Self {
        static CURRENT: std::sync::OnceLock<Fusion> = std::sync::OnceLock::new();
        *CURRENT.get_or_init(|| {
            if let Some(f) = std::env::var("HEARTH_FUSION")
                .ok()
                .and_then(|s| Fusion::parse(&s))
            {
                return f;
            }
            let vector_weight = std::env::var("HEARTH_VECTOR_WEIGHT")
                .ok()
                .and_then(|w| w.parse().ok())
                .filter(|w: &f64| w.is_finite())
                .unwrap_or(VECTOR_WEIGHT);
            Fusion::Rrf { vector_weight }
        })
    }

    /// One candidate's relevance, given the best BM25 score among this query's matches.
    pub fn relevance(self, c: &Evidence, best_bm25: f64) -> f64 {
        match self {
            Fusion::Rrf { vector_weight } => {
                let lex = c
                    .lexical_rank
                    .map_or(0.0, |r| 1.0 / (RRF_K + r as f64 + 1.0));
                let vec = c
                    .vector_rank
                    .map_or(0.0, |r| vector_weight / (RRF_K + r as f64 + 1.0));
                lex + vec
            }
            Fusion::Calibrated {
                floor,
                ceil,
                lexical_weight,
                both,
                ..
            } => {
                let l = match c.bm25 {
                    Some(b) if best_bm25 > 0.0 => lexical_weight * (b / best_bm25).clamp(0.0, 1.0),
                    _ => 0.0,
                };
                let s = c.similarity.map_or(0.0, |cos| {
                    ((cos - floor) / (ceil - floor).max(1e-6)).clamp(0.0, 1.0)
                });
                l.max(s) + both * l.min(s)
            }
        }
    }

    /// What one unit of relevance is worth in the block's score, beside importance (0–1,
    /// weight 0.3) and recency/frequency: RRF relevances are ~1/60, calibrated ones 0–1.5.
    pub fn scale(self) -> f64 {
        match self {
            Fusion::Rrf { .. } => 30.0,
            Fusion::Calibrated { scale, .. } => scale,
        }
    }
}

/// The indexes of `found` that have `evidence`, strongest first (ties in their order).
pub fn strongest_first<T>(found: &[T], evidence: impl Fn(&T) -> Option<f64>) -> Vec<usize> {
    let mut scored: Vec<(usize, f64)> = found
        .iter()
        .enumerate()
        .filter_map(|(i, c)| evidence(c).map(|e| (i, e)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().map(|(i, _)| i).collect()
}

/// An experiment's setting from the environment variable `name`, if it parses and `valid`
/// accepts it; else `default`.
pub fn experiment<T: std::str::FromStr>(name: &str, valid: impl Fn(&T) -> bool, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|w| w.parse().ok())
        .filter(valid)
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_settings_parse_or_are_refused() {
        assert_eq!(
            Fusion::parse("rrf:w=0.5"),
            Some(Fusion::Rrf { vector_weight: 0.5 })
        );
        assert!(matches!(
            Fusion::parse("calibrated:floor=0.1"),
            Some(Fusion::Calibrated { floor, .. }) if floor == 0.1
        ));
        assert_eq!(Fusion::parse("calibrated:w=1"), None);
        assert_eq!(Fusion::parse("rrf:w=inf"), None);
        assert_eq!(Fusion::parse("magic"), None);
    }

    #[test]
    fn reciprocal_rank_fusion_adds_each_sides_share_by_hand() {
        let f = Fusion::Rrf { vector_weight: 0.2 };
        let both = Evidence {
            lexical_rank: Some(0),
            bm25: Some(3.0),
            vector_rank: Some(4),
            similarity: Some(0.5),
        };
        // 1/(60+1) + 0.2/(60+5)
        let want = 1.0 / 61.0 + 0.2 / 65.0;
        assert!((f.relevance(&both, 3.0) - want).abs() < 1e-12);
        let words_only = Evidence {
            lexical_rank: Some(9),
            bm25: Some(1.0),
            ..Evidence::default()
        };
        assert!((f.relevance(&words_only, 3.0) - 1.0 / 70.0).abs() < 1e-12);
        assert_eq!(f.relevance(&Evidence::default(), 3.0), 0.0);
        // Calibrated: L = 1.5/3 = 0.5, S = (0.5-0.15)/(0.6-0.15) = 0.777…, max + 0.5·min.
        let c = Fusion::CALIBRATED;
        let half = Evidence {
            bm25: Some(1.5),
            similarity: Some(0.5),
            ..Evidence::default()
        };
        let s = (0.5 - 0.15) / (0.6 - 0.15);
        assert!((c.relevance(&half, 3.0) - (s + 0.5 * 0.5)).abs() < 1e-12);
    }

    #[test]
    fn strongest_first_keeps_ties_in_order_and_skips_the_missing() {
        let xs = [Some(0.2), None, Some(0.9), Some(0.2)];
        assert_eq!(strongest_first(&xs, |x| *x), vec![2, 0, 3]);
    }
}
