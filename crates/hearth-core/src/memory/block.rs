//! Retrieval: hybrid search over memories (FTS5 BM25 + vec0 cosine, fused by reciprocal
//! rank) and the "Known about the user" block that goes into every prompt.
//!
//! The block: critical and pinned memories first and always (within the budget, with a
//! warning when they alone approach it), then the rest by relevance to the message plus
//! importance and recency/frequency, until the budget (default ≤ 1,000 tokens, 003:248).
//! Only candidates are scored (the top of each index plus the always-in set), so the block
//! costs the same with 10 or 10,000 memories.

use std::collections::HashMap;

use rusqlite::params;

use super::{Kind, Memories, fts_query};
use crate::Result;
use crate::context::MemorySource;
use crate::embed::EmbedderSlot;
use crate::time::{Millis, now_millis};
use crate::tokens::Encoding;

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
    fn relevance(self, c: &Candidate, best_bm25: f64) -> f64 {
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
    fn scale(self) -> f64 {
        match self {
            Fusion::Rrf { .. } => 30.0,
            Fusion::Calibrated { .. } => 1.0,
        }
    }
}

/// The least cosine similarity for which a memory found only by meaning is listed in a
/// search the user reads; below it the vector index's nearest neighbours are mostly
/// unrelated (the memory block, which ranks rather than lists, keeps them all).
pub const SEARCH_MIN_SIMILARITY: f64 = 0.3;

/// How many memories a search the user reads lists at most.
pub const LISTED: usize = 200;

/// How many candidates each index offers.
pub const CANDIDATES: usize = 50;

/// How to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Bm25,
    Vector,
    Hybrid,
}

/// A memory found by a search, with what the block needs to rank and render it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: String,
    pub text: String,
    pub kind: Kind,
    pub pinned: bool,
    pub critical: bool,
    pub importance: f64,
    pub event_at: Option<Millis>,
    pub updated: Millis,
    pub last_used: Option<Millis>,
    pub use_count: u32,
    /// Fused relevance to the query (0 when it was not found by either index).
    pub relevance: f64,
    /// Found by its words (the full-text index).
    pub lexical: bool,
    /// Its rank among the full-text matches (0 best) and its BM25 score (higher is better).
    pub lexical_rank: Option<usize>,
    pub bm25: Option<f64>,
    /// Its rank among the vector index's nearest neighbours (0 best) and its cosine
    /// similarity to the query vector.
    pub vector_rank: Option<usize>,
    pub similarity: Option<f64>,
    /// 1, or less for a memory about another person the query does not name ([`Subject`]).
    pub subject_weight: f64,
}

const CANDIDATE_COLUMNS: &str = "m.n, m.id, m.text, m.kind, m.pinned, m.critical, m.importance, m.event_at, m.updated_at, m.last_used_at, m.use_count";

fn row_to_candidate(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, Candidate)> {
    Ok((
        r.get(0)?,
        Candidate {
            id: r.get(1)?,
            text: r.get(2)?,
            kind: Kind::parse(&r.get::<_, String>(3)?).unwrap_or(Kind::Fact),
            pinned: r.get(4)?,
            critical: r.get(5)?,
            importance: r.get(6)?,
            event_at: r.get(7)?,
            updated: r.get(8)?,
            last_used: r.get(9)?,
            use_count: r.get(10)?,
            relevance: 0.0,
            lexical: false,
            lexical_rank: None,
            bm25: None,
            vector_rank: None,
            similarity: None,
            subject_weight: 1.0,
        },
    ))
}

impl Memories {
    /// Active memories ranked for `query`: BM25, vector (needs `vector` from `model`), or
    /// both fused by reciprocal rank. Best first, at most `k`.
    pub fn search(
        &self,
        query: &str,
        vector: Option<(&str, &[f32])>,
        mode: Mode,
        k: usize,
    ) -> Result<Vec<Candidate>> {
        let fts = if mode == Mode::Vector {
            None
        } else {
            fts_query(query)
        };
        let vec = if mode == Mode::Bm25 {
            None
        } else {
            vector.map(|(m, v)| {
                (
                    m.to_owned(),
                    v.len(),
                    v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>(),
                )
            })
        };
        let pool = k.max(CANDIDATES);
        let mut ranked = self.store().read_blocking(move |c| {
            let mut found: HashMap<i64, Candidate> = HashMap::new();
            if let Some(q) = fts {
                let mut stmt = c.prepare(&format!(
                    "SELECT {CANDIDATE_COLUMNS}, bm25(memories_fts) AS score FROM memories_fts f
                     JOIN memories m ON m.n = f.rowid
                     WHERE memories_fts MATCH ?1 AND m.status = 'active' ORDER BY score LIMIT ?2"
                ))?;
                let rows = stmt.query_map(params![q, pool as i64], |r| {
                    Ok((row_to_candidate(r)?, r.get::<_, f64>(11)?))
                })?;
                for (rank, row) in rows.enumerate() {
                    let ((n, cand), score) = row?;
                    let c = found.entry(n).or_insert(cand);
                    c.lexical = true;
                    c.lexical_rank = Some(rank);
                    // FTS5's bm25() is negative, lower is better.
                    c.bm25 = Some(-score);
                }
            }
            if let Some((model, dims, blob)) = vec {
                let table = format!("memory_vec_{dims}");
                let exists: bool = c.query_row(
                    "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?1)",
                    [&table],
                    |r| r.get(0),
                )?;
                if exists {
                    // vec0 cannot filter by status or model, so ask for more and filter.
                    let mut stmt = c.prepare(&format!(
                        "SELECT {CANDIDATE_COLUMNS}, v.distance FROM (SELECT rowid, distance FROM {table}
                            WHERE embedding MATCH ?1 AND k = ?2) v
                         JOIN memories m ON m.n = v.rowid
                         WHERE m.status = 'active' AND m.embed_model = ?3 ORDER BY v.distance"
                    ))?;
                    let rows = stmt.query_map(params![blob, (pool * 2) as i64, model], |r| {
                        Ok((row_to_candidate(r)?, r.get::<_, f64>(11)?))
                    })?;
                    for (rank, row) in rows.take(pool).enumerate() {
                        let ((n, cand), distance) = row?;
                        let c = found.entry(n).or_insert(cand);
                        c.vector_rank = Some(rank);
                        // vec0's cosine distance is 1 − cosine similarity.
                        c.similarity = Some(1.0 - distance);
                    }
                }
            }
            Ok(found.into_values().collect::<Vec<_>>())
        })?;
        let fusion = Fusion::current();
        let best_bm25 = ranked.iter().filter_map(|c| c.bm25).fold(0.0_f64, f64::max);
        let subject = Subject::of_query(query);
        for c in &mut ranked {
            c.subject_weight = subject.weight(&c.text);
            c.relevance = fusion.relevance(c, best_bm25) * c.subject_weight;
        }
        // Ties (e.g. cosines all under the calibrated floor) fall back to the raw evidence.
        ranked.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then_with(|| {
                    b.similarity
                        .unwrap_or(-1.0)
                        .total_cmp(&a.similarity.unwrap_or(-1.0))
                })
                .then_with(|| b.bm25.unwrap_or(0.0).total_cmp(&a.bm25.unwrap_or(0.0)))
                .then_with(|| b.updated.cmp(&a.updated))
        });
        ranked.truncate(k);
        Ok(ranked)
    }

    /// The search the user reads (the Memory screen, `memory list --query`): hybrid, best
    /// first, listing what matches by its words or is close in meaning — not every
    /// nearest neighbour the vector index returns.
    pub fn search_listed(
        &self,
        query: &str,
        vector: Option<(&str, &[f32])>,
    ) -> Result<Vec<Candidate>> {
        let mut found = self.search(query, vector, Mode::Hybrid, LISTED)?;
        found.retain(|c| c.lexical || c.similarity.is_some_and(|s| s >= SEARCH_MIN_SIMILARITY));
        Ok(found)
    }

    /// Critical and pinned active memories (critical first).
    pub fn always_in(&self) -> Result<Vec<Candidate>> {
        self.store().read_blocking(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {CANDIDATE_COLUMNS} FROM memories m
                 WHERE m.status = 'active' AND (m.critical = 1 OR m.pinned = 1)
                 ORDER BY m.critical DESC, m.importance DESC, m.updated_at DESC"
            ))?;
            let rows = stmt.query_map([], row_to_candidate)?;
            rows.map(|r| r.map(|(_, c)| c)).collect()
        })
    }

    /// The most important recent memories, for messages that match nothing.
    fn background(&self, limit: usize) -> Result<Vec<Candidate>> {
        self.store().read_blocking(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {CANDIDATE_COLUMNS} FROM memories m WHERE m.status = 'active'
                 ORDER BY m.importance DESC, coalesce(m.last_used_at, m.updated_at) DESC LIMIT ?1"
            ))?;
            let rows = stmt.query_map([limit as i64], row_to_candidate)?;
            rows.map(|r| r.map(|(_, c)| c)).collect()
        })
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
}

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

impl Subject {
    /// The request's words (lower case), to see whom it names.
    pub fn of_query(query: &str) -> Self {
        static WEIGHT: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
        let weight = *WEIGHT.get_or_init(|| {
            std::env::var("HEARTH_SUBJECT_WEIGHT")
                .ok()
                .and_then(|w| w.parse().ok())
                .filter(|w: &f64| w.is_finite() && (0.0..=1.0).contains(w))
                .unwrap_or(OTHER_PERSON_WEIGHT)
        });
        Subject {
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
                let head = relation.rsplit(' ').next().unwrap_or(relation);
                if HOUSEHOLD.contains(&head) {
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

    /// 1, or the discount for a memory about another person the request does not name.
    pub fn weight(&self, text: &str) -> f64 {
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

/// A memory's line in the block.
pub fn render(c: &Candidate) -> String {
    let text = c.text.replace('\n', " ");
    let tag = if c.critical {
        "critical".to_owned()
    } else {
        match (c.kind, c.event_at) {
            (Kind::Episode, Some(at)) => {
                let date = jiff::Timestamp::from_millisecond(at)
                    .map(|t| t.strftime("%Y-%m-%d").to_string())
                    .unwrap_or_default();
                format!("episode, {date}")
            }
            (kind, _) => kind.as_str().to_owned(),
        }
    };
    format!("- ({tag}) {text}")
}

/// Relevance + importance + recency/frequency.
fn score(c: &Candidate, now: Millis) -> f64 {
    const DAY: f64 = 86_400_000.0;
    let age_days = (now - c.last_used.unwrap_or(c.updated)).max(0) as f64 / DAY;
    let recency = (-age_days / 30.0).exp();
    let frequency = (1.0 + f64::from(c.use_count)).ln() / 10f64.ln();
    // Relevance dominates: one top rank in both indexes is worth ~0.033 before scaling.
    c.relevance * Fusion::current().scale()
        + 0.3 * c.importance
        + 0.1 * recency
        + 0.05 * frequency.min(1.0)
}

/// How many of each side's best candidates (closest in meaning; best by words) go into
/// the block before the fused order fills the rest, so neither side starves the other.
/// `HEARTH_BLOCK_RESERVE` overrides it for experiments (0 turns it off).
pub const BLOCK_RESERVE: usize = 20;

/// How many candidates each side offers the block (the union is up to twice this).
/// Among 10,000 memories mostly about other people, 50 a side were all theirs.
/// `HEARTH_BLOCK_POOL` overrides it for experiments.
pub const BLOCK_POOL: usize = 100;

fn block_pool() -> usize {
    static POOL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *POOL.get_or_init(|| {
        std::env::var("HEARTH_BLOCK_POOL")
            .ok()
            .and_then(|w| w.parse().ok())
            .filter(|w: &usize| (CANDIDATES..=2_000).contains(w))
            .unwrap_or(BLOCK_POOL)
    })
}

fn block_reserve() -> usize {
    static RESERVE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *RESERVE.get_or_init(|| {
        std::env::var("HEARTH_BLOCK_RESERVE")
            .ok()
            .and_then(|w| w.parse().ok())
            .filter(|w: &usize| *w <= CANDIDATES)
            .unwrap_or(BLOCK_RESERVE)
    })
}

/// Moves the `n` closest in meaning and the `n` best by words (discounted like the fused
/// relevance, see [`Subject`]) to the front, each group keeping the score order.
fn reserve_each_side(rest: &mut Vec<Candidate>, n: usize) {
    if n == 0 {
        return;
    }
    let mut by_meaning: Vec<(usize, f64)> = rest
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.similarity.map(|s| (i, s * c.subject_weight)))
        .collect();
    by_meaning.sort_by(|a, b| b.1.total_cmp(&a.1));
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

/// The block and what went into it.
#[derive(Debug, Clone, Default)]
pub struct Block {
    pub text: String,
    pub ids: Vec<String>,
    /// Tokens the critical and pinned memories alone take.
    pub always_tokens: u32,
    /// They alone passed 80% of the budget (the UI warns).
    pub always_near_budget: bool,
}

/// Builds the block for `message` within `budget` tokens. `query_vector` is the message's
/// embedding from `model`, when an embedder is available.
pub fn build(
    memories: &Memories,
    message: &str,
    query_vector: Option<(&str, &[f32])>,
    budget: u32,
    encoding: Encoding,
) -> Result<Block> {
    let now = now_millis();
    let always = memories.always_in()?;
    // The whole union of both sides' candidates: truncating it by fused relevance first
    // would let a side with many weak matches starve the other.
    let mut rest = memories.search(message, query_vector, Mode::Hybrid, block_pool())?;
    if rest.len() < 10 {
        rest.extend(memories.background(20)?);
    }
    rest.retain(|c| !c.pinned && !c.critical);
    rest.sort_by(|a, b| score(b, now).total_cmp(&score(a, now)));
    reserve_each_side(&mut rest, block_reserve());
    let mut block = Block::default();
    let mut used = 0u32;
    let mut lines = Vec::new();
    for (i, c) in always.iter().chain(rest.iter()).enumerate() {
        if block.ids.contains(&c.id) {
            continue;
        }
        let line = render(c);
        let cost = encoding.count(&line) as u32 + 1;
        if i < always.len() {
            block.always_tokens += cost;
        }
        if used + cost > budget {
            if i < always.len() {
                continue;
            }
            break;
        }
        used += cost;
        lines.push(line);
        block.ids.push(c.id.clone());
    }
    block.always_near_budget = f64::from(block.always_tokens) > 0.8 * f64::from(budget);
    if block.always_near_budget {
        tracing::warn!(
            tokens = block.always_tokens,
            budget,
            "pinned and critical memories alone approach the memory budget"
        );
    }
    block.text = lines.join("\n");
    Ok(block)
}

/// The engine's memory zone: reads the store, embeds the message if it can, updates
/// last-used counters. Honours the "memory off" setting.
pub struct MemoryBlockSource {
    memories: Memories,
    embedder: EmbedderSlot,
}

impl MemoryBlockSource {
    /// Reads `memories`, embedding with whatever `embedder` holds at each turn.
    pub fn new(memories: Memories, embedder: EmbedderSlot) -> Self {
        Self { memories, embedder }
    }
}

impl MemorySource for MemoryBlockSource {
    fn memory_block(
        &self,
        message: &str,
        budget: u32,
        encoding: Encoding,
    ) -> Result<Option<String>> {
        if !super::settings(self.memories.store())?.enabled || !self.memories.any_active()? {
            return Ok(None);
        }
        let embedder = self.embedder.get();
        if let Some(e) = &embedder
            && let Err(err) = self.memories.embed_pending(e.as_ref(), 64)
        {
            tracing::warn!(error = %err, "could not embed new memories");
        }
        let vector = embedder.as_ref().and_then(|e| match e.embed(&[message]) {
            Ok(mut v) => v.pop().map(|v| (e.model_id().to_owned(), v)),
            Err(err) => {
                tracing::warn!(error = %err, "no query embedding; memory search is keyword-only");
                None
            }
        });
        let block = build(
            &self.memories,
            message,
            vector.as_ref().map(|(m, v)| (m.as_str(), v.as_slice())),
            budget,
            encoding,
        )?;
        if block.ids.is_empty() {
            return Ok(None);
        }
        self.memories.touch(block.ids)?;
        Ok(Some(block.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_about_another_named_person_is_discounted_unless_the_request_names_them() {
        assert_eq!(
            Subject::other_person("User's colleague Dmitri has a beagle named Biscuit."),
            Some(("colleague", "Dmitri"))
        );
        assert_eq!(
            Subject::other_person("User's old schoolmate Ines works as a chef."),
            Some(("old schoolmate", "Ines"))
        );
        // The household, a role without a name and the user's own facts are not discounted.
        for text in [
            "User's daughter Lena is six years old.",
            "User's brother Marco lives in Toronto.",
            "User's manager is Priya, who prefers updates in writing.",
            "User has a border collie named Pixel.",
            "Lena attends Riverside Primary.",
        ] {
            assert_eq!(Subject::other_person(text), None, "{text}");
        }
        let about_me = Subject::of_query("How often should I brush my dog?");
        let dmitri = "User's colleague Dmitri has a beagle named Biscuit.";
        assert!(about_me.weight(dmitri) < 1.0);
        assert_eq!(
            about_me.weight("User has a border collie named Pixel."),
            1.0
        );
        assert_eq!(
            Subject::of_query("Does Dmitri's dog shed?").weight(dmitri),
            1.0
        );
        assert_eq!(
            Subject::of_query("What dog does my colleague have?").weight(dmitri),
            1.0
        );
    }

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
}
