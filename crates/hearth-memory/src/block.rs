//! Retrieval: hybrid search over memories (FTS5 BM25 + vec0 cosine, fused by reciprocal
//! rank) and the "Known about the user" block that goes into every prompt.
//!
//! The block: critical and pinned memories first and always (within the budget, with a
//! warning when they alone approach it), then the rest by relevance to the message plus
//! importance and recency/frequency, until the budget (default ≤ 1,000 tokens, 003:248).
//! Only candidates are scored (the top of each index plus the always-in set), so the block
//! costs the same with 10 or 10,000 memories.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::facets::{self, Facets, OWN_SAFETY_SQL};
pub use super::rank::{
    BLOCK_POOL, BLOCK_RESERVE, CONTEXT_WEIGHT, Fusion, NAMED_WEIGHT, OTHER_PERSON_WEIGHT, RRF_K,
    Subject, VECTOR_WEIGHT,
};
use super::rank::{block_pool, block_reserve, bm25_weights, reserve_each_side};
use super::vectors::{TABLE_PREFIX, table_exists};
use super::{Kind, Memories, fts_query};
use crate::Result;
use crate::embed::EmbedderSlot;
use crate::time::{Millis, now_millis};
use crate::tokens::Encoding;
use hearth_text::rank::strongest_first;

/// Something the user keeps about themselves, rendered into the prompt's memory zone.
pub trait MemorySource: Send + Sync {
    /// The memory block for a message, at most `budget` tokens counted with `encoding`;
    /// critical and pinned memories first and always. `None` when there is nothing to say.
    fn memory_block(
        &self,
        message: &str,
        budget: u32,
        encoding: Encoding,
    ) -> crate::Result<Option<BlockParts>>;
}

/// A message's memory block in two parts, by how often they change: the prompt keeps
/// what is stable in its cacheable prefix and what was chosen for this message after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockParts {
    /// The critical and pinned memories: the same lines every turn until one of them
    /// changes (ordered by criticality, importance and last edit, never by the message).
    pub core: String,
    /// The memories chosen for this message by relevance, importance and recency.
    pub relevant: String,
}

/// The least cosine similarity for which a memory found only by meaning is listed in a
/// search the user reads; below it the vector index's nearest neighbours are mostly
/// unrelated (the memory block, which ranks rather than lists, keeps them all).
pub const SEARCH_MIN_SIMILARITY: f64 = 0.3;

/// How many memories a search the user reads lists at most.
pub const LISTED: usize = 200;

/// How many candidates each index offers.
pub const CANDIDATES: usize = 50;

/// How many safety facts a block carries at most (they come before the rest).
pub const SAFETY_FACTS: usize = 12;

/// How many safety facts of other people a request names are looked at.
const SAFETY_SCAN: usize = 500;

/// How many of the user's own current memories of the request's facets the block keeps
/// room for before anything else competes (after the safety facts).
pub const FACET_RESERVE: usize = 6;

/// What a memory that is no longer true weighs in the block beside a current one.
pub const PAST_WEIGHT: f64 = 0.5;

/// What a memory that is no longer true weighs in a search beside a current one
/// (`HEARTH_SEARCH_PAST_WEIGHT` overrides it for experiments).
pub const SEARCH_PAST_WEIGHT: f64 = 0.75;

/// What the user's own memory that shares a facet with the request weighs in a search
/// beside one that does not (`HEARTH_FACET_BOOST` overrides it for experiments).
pub const FACET_BOOST: f64 = 1.25;

fn search_past_weight() -> f64 {
    static W: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        hearth_text::rank::experiment(
            "HEARTH_SEARCH_PAST_WEIGHT",
            |w: &f64| (0.0..=1.0).contains(w),
            SEARCH_PAST_WEIGHT,
        )
    })
}

fn facet_boost() -> f64 {
    static W: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        hearth_text::rank::experiment(
            "HEARTH_FACET_BOOST",
            |w: &f64| (1.0..=4.0).contains(w),
            FACET_BOOST,
        )
    })
}

fn facet_reserve() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        hearth_text::rank::experiment("HEARTH_FACET_RESERVE", |n: &usize| *n <= 40, FACET_RESERVE)
    })
}

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
    /// Its rank among the full-text matches (0 best; by BM25 discounted by subject, see
    /// [`Subject`]) and its BM25 score (higher is better).
    pub lexical_rank: Option<usize>,
    pub bm25: Option<f64>,
    /// Its rank among the vector index's nearest neighbours (0 best; by cosine discounted
    /// by subject) and its cosine similarity to the query vector.
    pub vector_rank: Option<usize>,
    pub similarity: Option<f64>,
    /// 1, or less for a memory about another person the query does not name ([`Subject`]).
    pub subject_weight: f64,
    /// The parts of life it touches and its marks ([`Facets`]).
    pub facets: Facets,
}

impl Candidate {
    /// What the two sides found for it, for the ranker.
    pub fn evidence(&self) -> hearth_text::rank::Evidence {
        hearth_text::rank::Evidence {
            lexical_rank: self.lexical_rank,
            bm25: self.bm25,
            vector_rank: self.vector_rank,
            similarity: self.similarity,
        }
    }
}

const CANDIDATE_COLUMNS: &str = "m.n, m.id, m.text, m.kind, m.pinned, m.critical, m.importance, m.event_at, m.updated_at, m.last_used_at, m.use_count, m.facets";

fn row_to_candidate(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, Candidate)> {
    let text: String = r.get(2)?;
    let kind: String = r.get(3)?;
    let facets = super::stored_facets(r.get(11)?, &text, &kind);
    Ok((
        r.get(0)?,
        Candidate {
            id: r.get(1)?,
            text,
            kind: Kind::parse(&kind).unwrap_or(Kind::Fact),
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
            facets,
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
        self.search_pooled(query, vector, mode, k.max(CANDIDATES), k)
    }

    /// [`Memories::search`] with each side offering `pool` candidates, the best `keep` of
    /// their union kept.
    fn search_pooled(
        &self,
        query: &str,
        vector: Option<(&str, &[f32])>,
        mode: Mode,
        pool: usize,
        keep: usize,
    ) -> Result<Vec<Candidate>> {
        let words = mode != Mode::Vector;
        let owned_query = query.to_owned();
        let people_cache = self.people.clone();
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
        let index = self.vector_index.clone();
        let (mut ranked, people) = self.store().read_blocking(move |c| {
            let people = people_cache.get(c)?;
            let mut found: HashMap<i64, Candidate> = HashMap::new();
            // The people a role in the request names are searched by name too ("my wife"
            // finds what is known of Helena): as words of the query, so a person's memory
            // that shares the request's words ranks first among theirs (as candidates found
            // by name alone they ranked by meaning only: extended set at 400, block hit rate
            // 0.900 against 0.933, R@5 0.450 against 0.650).
            let named = people.named_in(&owned_query);
            let fts = words
                .then(|| fts_query(&format!("{owned_query} {}", named.join(" "))))
                .flatten();
            if let Some(q) = fts {
                // Rank inside FTS5 first and look up only the best rows: joining every
                // match (thousands for a common word) cost more than the rest of the block.
                // Removed memories stay in the index, so the window widens until `pool`
                // active ones are found or the matches run out.
                // The context column counts less than the memory's own words (FTS5's
                // rank function with column weights, set for this query).
                let mut matches = c.prepare_cached(
                    "SELECT rowid, -rank FROM memories_fts
                     WHERE memories_fts MATCH ?1 AND rank MATCH ?3 ORDER BY rank LIMIT ?2",
                )?;
                let weights = bm25_weights();
                let mut active = c.prepare_cached(&format!(
                    "SELECT {CANDIDATE_COLUMNS} FROM memories m WHERE m.n = ?1 AND m.status = 'active'"
                ))?;
                let mut window = pool * 2;
                loop {
                    let rows: Vec<(i64, f64)> = matches
                        .query_map(params![q, window as i64, weights], |r| {
                            Ok((r.get(0)?, r.get(1)?))
                        })?
                        .collect::<rusqlite::Result<_>>()?;
                    let exhausted = rows.len() < window;
                    found.clear();
                    let mut rank = 0;
                    for (n, score) in rows {
                        if rank == pool {
                            break;
                        }
                        if let Some((n, mut cand)) =
                            active.query_row(params![n], row_to_candidate).optional()?
                        {
                            cand.lexical = true;
                            cand.lexical_rank = Some(rank);
                            cand.bm25 = Some(score);
                            found.insert(n, cand);
                            rank += 1;
                        }
                    }
                    if rank == pool || exhausted {
                        break;
                    }
                    window *= 4;
                }
            }
            if let Some((model, dims, blob)) = vec {
                let mut near: Vec<((i64, Candidate), f64)> = Vec::new();
                let table = format!("{TABLE_PREFIX}{dims}");
                let partitioned = table_exists(c, &table)?;
                // vec0 cannot filter by status or model, so each side asks for more and
                // filters.
                let in_process = match (&index, vector) {
                    (Some(index), Some((_, query))) if partitioned => {
                        index.nearest(c, &table, dims, query, pool * 2)?
                    }
                    _ => None,
                };
                if let Some(sides) = in_process {
                    let mut stmt = c.prepare_cached(&format!(
                        "SELECT {CANDIDATE_COLUMNS} FROM memories m
                         WHERE m.n = ?1 AND m.status = 'active' AND m.embed_model = ?2"
                    ))?;
                    for side in sides {
                        let mut taken = 0;
                        for (n, distance) in side {
                            if taken == pool {
                                break;
                            }
                            if let Some(row) = stmt
                                .query_row(params![n, model], row_to_candidate)
                                .optional()?
                            {
                                near.push((row, distance));
                                taken += 1;
                            }
                        }
                    }
                } else {
                    // Each partition (memories about the user; about other named people)
                    // offers its own nearest neighbours, ranked together by distance.
                    let old = format!("memory_vec_{dims}");
                    let (table, partitions): (String, &[&str]) = if partitioned {
                        (table, &["AND about_other = 0", "AND about_other = 1"])
                    } else if table_exists(c, &old)? {
                        (old, &[""])
                    } else {
                        (table, &[])
                    };
                    for partition in partitions {
                        let mut stmt = c.prepare_cached(&format!(
                            "SELECT {CANDIDATE_COLUMNS}, v.distance FROM (SELECT rowid, distance FROM {table}
                                WHERE embedding MATCH ?1 AND k = ?2 {partition}) v
                             JOIN memories m ON m.n = v.rowid
                             WHERE m.status = 'active' AND m.embed_model = ?3 ORDER BY v.distance"
                        ))?;
                        let rows = stmt.query_map(params![blob, (pool * 2) as i64, model], |r| {
                            Ok((row_to_candidate(r)?, r.get::<_, f64>(12)?))
                        })?;
                        for row in rows.take(pool) {
                            near.push(row?);
                        }
                    }
                }
                near.sort_by(|a, b| a.1.total_cmp(&b.1));
                for (rank, ((n, cand), distance)) in near.into_iter().enumerate() {
                    let c = found.entry(n).or_insert(cand);
                    c.vector_rank = Some(rank);
                    // vec0's cosine distance is 1 − cosine similarity.
                    c.similarity = Some(1.0 - distance);
                }
            }
            Ok((found.into_values().collect::<Vec<_>>(), people))
        })?;
        let fusion = super::rank::fusion_for(query);
        let best_bm25 = ranked.iter().filter_map(|c| c.bm25).fold(0.0_f64, f64::max);
        let subject = Subject::of_query_with(query, people);
        for c in &mut ranked {
            c.subject_weight = subject.weight(&c.text);
        }
        rank_discounted(&mut ranked);
        let asked = facets::of_request(query);
        let (past, boost) = (search_past_weight(), facet_boost());
        for c in &mut ranked {
            c.relevance = fusion.relevance(&c.evidence(), best_bm25) * c.subject_weight;
            // What is true now before what was; the user's own memories of the parts of
            // life the request is about before other memories on the same words.
            if c.facets.has(Facets::PAST) {
                c.relevance *= past;
            } else if !c.facets.has(Facets::OTHER) && c.facets.shares_topic(asked) {
                c.relevance *= boost;
            }
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
        ranked.truncate(keep);
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

    /// The safety facts (allergies, intolerances, medication, conditions) of the user and of
    /// the people `request` involves, when it touches food, health or travel; at most
    /// [`SAFETY_FACTS`], the user's own first. Empty for any other request.
    pub fn safety_facts(&self, request: &str) -> Result<Vec<Candidate>> {
        if super::safety::touches(request).is_empty() {
            return Ok(Vec::new());
        }
        let people_cache = self.people.clone();
        let request = request.to_owned();
        self.store().read_blocking(move |c| {
            let people = people_cache.get(c)?;
            // The user's own, the household's and anyone's led by their name (an index
            // holds them: a few, however many memories there are) …
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {CANDIDATE_COLUMNS} FROM memories m INDEXED BY memories_own_safety
                 WHERE m.status = 'active' AND {OWN_SAFETY_SQL}"
            ))?;
            let mut rows: Vec<(i64, Candidate)> = stmt
                .query_map([], row_to_candidate)?
                .collect::<rusqlite::Result<_>>()?;
            // … and another person's only when the request names them ("What can Marta
            // eat?"): found by their name among the safety facts.
            let names = super::safety::names_in(&request, &people);
            if let Some(q) = fts_query(&names.join(" ")) {
                let mut stmt = c.prepare_cached(&format!(
                    "SELECT {CANDIDATE_COLUMNS} FROM memories_fts f JOIN memories m ON m.n = f.rowid
                     WHERE memories_fts MATCH ?1 AND m.status = 'active'
                       AND (m.facets & {safety}) != 0 AND (m.facets & {other}) != 0 LIMIT ?2",
                    safety = Facets::SAFETY,
                    other = Facets::OTHER,
                ))?;
                let named = stmt.query_map(params![q, SAFETY_SCAN as i64], row_to_candidate)?;
                for row in named {
                    rows.push(row?);
                }
            }
            let mut found = Vec::new();
            for (_, cand) in rows {
                if super::safety::is_safety_fact(&cand.text)
                    && super::safety::involves(&request, &people, &cand.text)
                {
                    found.push(cand);
                }
            }
            // The user's own first ("User is …", not "User's cousin …"), then the people
            // the request involves, by importance.
            let own = |c: &Candidate| {
                c.text.starts_with("User ")
                    || (c.text.starts_with("User's ") && Subject::other_person(&c.text).is_none())
            };
            found.sort_by(|a, b| {
                own(b)
                    .cmp(&own(a))
                    .then(b.importance.total_cmp(&a.importance))
            });
            found.truncate(SAFETY_FACTS);
            Ok(found)
        })
    }

    /// Critical and pinned active memories (critical first).
    pub fn always_in(&self) -> Result<Vec<Candidate>> {
        self.store().read_blocking(|c| {
            let mut stmt = c.prepare(&format!(
                // Named: without statistics the planner takes the status index and reads
                // every active memory (a third of the block's time at 10,000).
                "SELECT {CANDIDATE_COLUMNS} FROM memories m INDEXED BY memories_always_in
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

/// Moves up to `n` of the user's own current memories that share a facet with the request
/// to the front — those most about the request's facets first ([`facets::strength`]), then
/// in the current order — keeping the order of the rest.
pub fn reserve_facets(rest: &mut Vec<Candidate>, request: Facets, n: usize) {
    if n == 0 || request.0 & Facets::TOPICS == 0 {
        return;
    }
    let own_now: Vec<usize> = rest
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.text.starts_with("User")
                && c.subject_weight >= 1.0
                && !c.facets.has(Facets::OTHER | Facets::PAST)
                && c.facets.shares_topic(request)
        })
        .map(|(i, _)| i)
        .collect();
    // Each facet of the request in turn offers its next strongest memory, so a request
    // about travel and home at the weekend gets its travel facts as well as its home ones.
    let lists: Vec<Vec<usize>> = Facets::NAMES
        .iter()
        .filter(|(bit, _)| request.has(*bit))
        .map(|(bit, _)| {
            let one = Facets(*bit);
            let mut of: Vec<(usize, usize)> = own_now
                .iter()
                .filter(|i| rest[**i].facets.has(*bit))
                .map(|i| (*i, facets::strength(&rest[*i].text, one)))
                .collect();
            // Stable: equal strength keeps the score order.
            of.sort_by_key(|b| std::cmp::Reverse(b.1));
            of.into_iter().map(|(i, _)| i).collect()
        })
        .collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut depth = 0;
    while chosen.len() < n && lists.iter().any(|l| depth < l.len()) {
        for l in &lists {
            if chosen.len() < n
                && let Some(i) = l.get(depth)
                && !chosen.contains(i)
            {
                chosen.push(*i);
            }
        }
        depth += 1;
    }
    let mut first = Vec::with_capacity(chosen.len());
    let mut slots: Vec<Option<Candidate>> = rest.drain(..).map(Some).collect();
    for i in &chosen {
        if let Some(c) = slots[*i].take() {
            first.push(c);
        }
    }
    first.extend(slots.into_iter().flatten());
    *rest = first;
}

/// Each side's ranks over its evidence discounted by subject: a memory about someone else
/// the request does not name ranks behind the user's own that are nearly as close.
fn rank_discounted(found: &mut [Candidate]) {
    let by_words = strongest_first(found, |c| c.bm25.map(|b| b * c.subject_weight));
    for (rank, i) in by_words.into_iter().enumerate() {
        found[i].lexical_rank = Some(rank);
    }
    let by_meaning = strongest_first(found, |c| c.similarity.map(|s| s * c.subject_weight));
    for (rank, i) in by_meaning.into_iter().enumerate() {
        found[i].vector_rank = Some(rank);
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
    // Said of the older of two facts, so the model answers from the current one.
    let tag = if c.facets.has(Facets::PAST) {
        format!("{tag}, no longer true")
    } else {
        tag
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
    let s = c.relevance * Fusion::current().scale()
        + 0.3 * c.importance
        + 0.1 * recency
        + 0.05 * frequency.min(1.0);
    // What was true and no longer is yields to what is.
    if c.facets.has(Facets::PAST) {
        s * PAST_WEIGHT
    } else {
        s
    }
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
    /// How many of the block's first lines are critical or pinned (the stable core).
    pub core_lines: usize,
}

impl Block {
    /// The block split into its stable core and the lines chosen for the message.
    pub fn parts(&self) -> BlockParts {
        let lines: Vec<&str> = if self.text.is_empty() {
            Vec::new()
        } else {
            self.text.split('\n').collect()
        };
        let cut = self.core_lines.min(lines.len());
        BlockParts {
            core: lines[..cut].join("\n"),
            relevant: lines[cut..].join("\n"),
        }
    }
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
    let mut rest = memories.search_pooled(
        message,
        query_vector,
        Mode::Hybrid,
        block_pool(),
        usize::MAX,
    )?;
    if rest.len() < 10 {
        rest.extend(memories.background(20)?);
    }
    rest.retain(|c| !c.pinned && !c.critical);
    rest.sort_by(|a, b| score(b, now).total_cmp(&score(a, now)));
    reserve_each_side(&mut rest, block_reserve());
    // Room for the user's own current memories of the parts of life the request is about
    // ("a bio for my company's website": their job now) before anything else competes.
    reserve_facets(&mut rest, facets::of_request(message), facet_reserve());
    // Safety facts of whoever the request involves go first when it touches food, health or
    // travel, whatever words they share with it.
    let mut safety = memories.safety_facts(message)?;
    if !safety.is_empty() {
        safety.retain(|c| !c.pinned && !c.critical);
        rest.retain(|c| !safety.iter().any(|s| s.id == c.id));
        safety.append(&mut rest);
        rest = safety;
    }
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
        if i < always.len() {
            block.core_lines += 1;
        }
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
    ) -> Result<Option<BlockParts>> {
        if !super::settings(self.memories.store())?.enabled || !self.memories.any_active()? {
            return Ok(None);
        }
        let embedder = self.embedder.get();
        if let Some(e) = &embedder
            && let Err(err) = self.memories.embed_pending(e.as_ref(), 64)
        {
            tracing::warn!(error = %err, "could not embed new memories");
        }
        let said = super::phrasing::as_memories_say(message);
        let vector = embedder.as_ref().and_then(|e| match e.embed_query(&said) {
            Ok(v) => Some((e.model_id().to_owned(), v)),
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
        let parts = block.parts();
        self.memories.touch(block.ids)?;
        Ok(Some(parts))
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
        // Someone else's household and compounds are other people.
        for (text, relation) in [
            (
                "User's landlady's son Bruno has a dachshund.",
                "landlady's son",
            ),
            (
                "User's climbing partner Zara takes an inhaler.",
                "climbing partner",
            ),
            (
                "User's team lead's partner Wen volunteers.",
                "team lead's partner",
            ),
        ] {
            assert_eq!(Subject::other_person(text).map(|o| o.0), Some(relation));
        }
        // The household, a role without a name and the user's own facts are not discounted.
        for text in [
            "User's older brother Marco is a pilot.",
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
        // Named, a memory about them counts more than one about nobody in particular.
        assert_eq!(
            Subject::of_query("Does Dmitri's dog shed?").weight(dmitri),
            NAMED_WEIGHT
        );
        assert_eq!(
            Subject::of_query("What dog does my colleague have?").weight(dmitri),
            1.0
        );
    }

    #[test]
    fn a_transcript_line_is_about_its_speaker_and_counts_more_when_the_request_names_them() {
        assert_eq!(
            Subject::speaker("Caroline: I went to a support group."),
            Some("Caroline")
        );
        assert_eq!(
            Subject::speaker("Mary Ann: we moved in May."),
            Some("Mary Ann")
        );
        for text in [
            "User: prefers tea",
            "the plan: leave at 8",
            "Caroline said: hello",
            "Meeting at 10:30",
            "Caroline:no space",
        ] {
            assert_eq!(Subject::speaker(text), None, "{text}");
        }
        let q = Subject::of_query("What did Caroline research?");
        assert_eq!(
            q.weight("Caroline: Researching adoption agencies."),
            NAMED_WEIGHT
        );
        assert_eq!(q.weight("Melanie: I painted a lake."), 1.0);
        assert_eq!(
            Subject::of_query("What did Mary research?").weight("Mary Ann: I looked at schools."),
            1.0,
            "every word of the name"
        );
    }
}
