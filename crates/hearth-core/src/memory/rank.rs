//! The hybrid ranker's parts, shared by the memory block and memory search (and next by
//! folder search): how the two sides' evidence becomes one relevance ([`Fusion`]), who a
//! memory is about ([`Subject`]), and the block's per-side reserve, so that neither side
//! starves the other. ARCHITECTURE.md, "Memory ranking", has the numbers that chose them.

use super::block::{CANDIDATES, Candidate};

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
    pub(super) fn relevance(self, c: &Candidate, best_bm25: f64) -> f64 {
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
    pub(super) fn scale(self) -> f64 {
        match self {
            Fusion::Rrf { .. } => 30.0,
            Fusion::Calibrated { scale, .. } => scale,
        }
    }
}

/// Subject awareness: a request in the first person is about the user's life. A memory
/// extraction wrote about someone else by name — "User's colleague Dmitri has a beagle" —
/// is worth less to it unless the request names that person or that relation ("my
/// colleague", "Dmitri"). The user's household (partner, children, parents, siblings) is
/// the user's life and is never discounted; nor is a memory about a role without a name
/// ("User's manager is Priya" is a fact about the user's work).
#[derive(Debug, Clone)]
pub struct Subject {
    words: std::collections::HashSet<String>,
    weight: f64,
    named: f64,
}

/// What a memory about a person the request names is worth beside one that is not (a
/// request about Caroline: what Caroline said, "User's colleague Caroline …"). Chosen on
/// LoCoMo's tuning conversations: see ARCHITECTURE.md. `HEARTH_NAMED_WEIGHT` overrides it.
pub const NAMED_WEIGHT: f64 = 1.5;

/// What a memory about another named person is worth to a request that does not name them
/// (chosen on the profile set: see ARCHITECTURE.md). `HEARTH_SUBJECT_WEIGHT` overrides it
/// for experiments (1 turns the rule off).
pub const OTHER_PERSON_WEIGHT: f64 = 0.4;

const HOUSEHOLD: &[&str] = &[
    "partner",
    "wife",
    "husband",
    "spouse",
    "fiancé",
    "fiancée",
    "fiance",
    "fiancee",
    "boyfriend",
    "girlfriend",
    "daughter",
    "son",
    "child",
    "children",
    "kid",
    "kids",
    "baby",
    "mother",
    "mum",
    "mom",
    "father",
    "dad",
    "parents",
    "brother",
    "sister",
    "stepson",
    "stepdaughter",
    "grandmother",
    "grandfather",
    "grandma",
    "grandpa",
];

const NOT_RELATION: &[&str] = &[
    "is", "was", "are", "were", "has", "had", "have", "does", "did", "likes", "lives", "works",
    "prefers", "wants", "and", "or", "who", "which", "the", "a", "an", "of", "in", "on", "at",
    "to", "for", "with", "from", "by", "not", "never", "always",
];

/// Words that leave a household relation one ("older brother", "little sister").
const HOUSEHOLD_MODIFIERS: &[&str] = &[
    "older", "younger", "elder", "little", "big", "baby", "twin", "eldest", "youngest",
];

/// The user's own household: one household word, perhaps with a modifier. Not someone
/// else's ("landlady's son", "team lead's partner") nor a compound ("climbing partner",
/// "business partner").
fn is_household(relation: &str) -> bool {
    let mut words = relation.split(' ').filter(|w| !w.is_empty()).peekable();
    while words
        .peek()
        .is_some_and(|w| HOUSEHOLD_MODIFIERS.contains(w))
    {
        words.next();
    }
    match (words.next(), words.next()) {
        (Some(head), None) => HOUSEHOLD.contains(&head),
        _ => false,
    }
}

impl Subject {
    /// The request's words (lower case), to see whom it names.
    pub fn of_query(query: &str) -> Self {
        static WEIGHT: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
        let weight = *WEIGHT.get_or_init(|| {
            experiment(
                "HEARTH_SUBJECT_WEIGHT",
                |w: &f64| w.is_finite() && (0.0..=1.0).contains(w),
                OTHER_PERSON_WEIGHT,
            )
        });
        static NAMED: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
        let named = *NAMED.get_or_init(|| {
            experiment(
                "HEARTH_NAMED_WEIGHT",
                |w: &f64| w.is_finite() && (1.0..=10.0).contains(w),
                NAMED_WEIGHT,
            )
        });
        Subject {
            named,
            words: query
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect(),
            weight,
        }
    }

    /// The relation and the name of the other person a memory is about, if it is written
    /// as "User's <relation> <Name> …" with a relation outside the household.
    pub fn other_person(text: &str) -> Option<(&str, &str)> {
        let rest = text.strip_prefix("User's ")?;
        let mut relation_end = 0;
        for (i, word) in rest.split(' ').enumerate() {
            if word.starts_with(|c: char| c.is_uppercase()) {
                if i == 0 {
                    return None;
                }
                let relation = rest[..relation_end].trim_end();
                if is_household(relation) {
                    return None;
                }
                let name = word.trim_end_matches(|c: char| !c.is_alphanumeric());
                return Some((relation, name));
            }
            // A relation is a few lower-case nouns ("old schoolmate"); a verb or a function
            // word means the sentence is about the role ("User's manager is Priya").
            if i >= 3
                || NOT_RELATION.contains(&word)
                || !word
                    .chars()
                    .all(|c| c.is_lowercase() || c == '-' || c == '\'')
            {
                return None;
            }
            relation_end += word.len() + 1;
        }
        None
    }

    /// The speaker of a memory written as a transcript line ("Caroline: I went …"): one
    /// or two capitalised words before a colon at its start.
    pub fn speaker(text: &str) -> Option<&str> {
        let (label, rest) = text.split_once(':')?;
        let words: Vec<&str> = label.split(' ').collect();
        let named = (1..=2).contains(&words.len())
            && words.iter().all(|w| {
                w.starts_with(|c: char| c.is_uppercase())
                    && w.chars()
                        .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
            });
        (named && rest.starts_with(' ') && label != "User").then_some(label)
    }

    /// Whether the request names `person` (every word of the name).
    fn names(&self, person: &str) -> bool {
        person
            .split(' ')
            .all(|w| self.words.contains(&w.to_lowercase()))
    }

    /// [`NAMED_WEIGHT`] for a memory about someone the request names; the discount for a
    /// memory about another person the request does not name; else 1.
    pub fn weight(&self, text: &str) -> f64 {
        if let Some(person) = Self::other_person(text)
            .map(|(_, name)| name)
            .or_else(|| Self::speaker(text))
            && self.names(person)
        {
            return self.named;
        }
        match Self::other_person(text) {
            Some((relation, name))
                if !self.words.contains(&name.to_lowercase())
                    && !relation
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|w| w.len() >= 3 && self.words.contains(&w.to_lowercase())) =>
            {
                self.weight
            }
            _ => 1.0,
        }
    }
}

/// How many candidates each side offers the block (the union is up to twice this).
/// Among 10,000 memories mostly about other people, 50 a side were all theirs.
/// `HEARTH_BLOCK_POOL` overrides it for experiments.
pub const BLOCK_POOL: usize = 100;

pub(super) fn block_pool() -> usize {
    static POOL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *POOL.get_or_init(|| {
        experiment(
            "HEARTH_BLOCK_POOL",
            |w| (CANDIDATES..=2_000).contains(w),
            BLOCK_POOL,
        )
    })
}

/// The weight of a memory's context beside its own text in BM25 (FTS5 column weights).
/// `HEARTH_CONTEXT_WEIGHT` overrides it for experiments.
pub const CONTEXT_WEIGHT: f64 = 0.5;

/// FTS5's rank function for memories: BM25 with the columns' weights (text, context).
pub(super) fn bm25_weights() -> &'static str {
    static W: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    W.get_or_init(|| {
        let w = experiment(
            "HEARTH_CONTEXT_WEIGHT",
            |w: &f64| w.is_finite() && (0.0..=10.0).contains(w),
            CONTEXT_WEIGHT,
        );
        format!("bm25(1.0, {w})")
    })
}

/// Whether a memory's vector is made from its context too (`HEARTH_CONTEXT_VECTORS=0`
/// turns it off for experiments).
pub(super) fn context_in_vectors() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| experiment("HEARTH_CONTEXT_VECTORS", |_: &u8| true, 1) != 0)
}

/// An experiment's setting from the environment variable `name`, if it parses and `valid`
/// accepts it; else `default`.
fn experiment<T: std::str::FromStr>(name: &str, valid: impl Fn(&T) -> bool, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|w| w.parse().ok())
        .filter(valid)
        .unwrap_or(default)
}

/// The indexes of `found` that have `evidence`, strongest first (ties in their order).
pub(super) fn strongest_first(
    found: &[Candidate],
    evidence: impl Fn(&Candidate) -> Option<f64>,
) -> Vec<usize> {
    let mut scored: Vec<(usize, f64)> = found
        .iter()
        .enumerate()
        .filter_map(|(i, c)| evidence(c).map(|e| (i, e)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().map(|(i, _)| i).collect()
}

/// How many of each side's best candidates (closest in meaning; best by words) go into
/// the block before the fused order fills the rest, so neither side starves the other.
/// `HEARTH_BLOCK_RESERVE` overrides it for experiments (0 turns it off).
pub const BLOCK_RESERVE: usize = 20;

pub(super) fn block_reserve() -> usize {
    static RESERVE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *RESERVE.get_or_init(|| experiment("HEARTH_BLOCK_RESERVE", |w| *w <= CANDIDATES, BLOCK_RESERVE))
}

/// Moves the `n` closest in meaning and the `n` best by words (discounted like the fused
/// relevance, see [`Subject`]) to the front, each group keeping the score order.
pub(super) fn reserve_each_side(rest: &mut Vec<Candidate>, n: usize) {
    if n == 0 {
        return;
    }
    // Each side's ranks are on the discounted evidence already (`block::rank_discounted`).
    let mut by_meaning: Vec<(usize, usize)> = rest
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.vector_rank.map(|r| (i, r)))
        .collect();
    by_meaning.sort_by_key(|(_, r)| *r);
    let mut by_words: Vec<(usize, usize)> = rest
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.lexical_rank.map(|r| (i, r)))
        .collect();
    by_words.sort_by_key(|(_, r)| *r);
    let mut front = vec![false; rest.len()];
    for (i, _) in by_meaning.iter().take(n) {
        front[*i] = true;
    }
    for (i, _) in by_words.iter().take(n) {
        front[*i] = true;
    }
    let (mut first, mut later) = (Vec::new(), Vec::new());
    for (i, c) in rest.drain(..).enumerate() {
        if front[i] {
            first.push(c)
        } else {
            later.push(c)
        }
    }
    first.extend(later);
    *rest = first;
}
