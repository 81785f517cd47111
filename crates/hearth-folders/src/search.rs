//! Search over the chunks of watched folders. Keyword search is BM25 over each chunk's
//! text and heading path (the heading at half weight): by the in-memory index
//! (`super::lexical`) once this process has built it, else by FTS5 inside SQLite with
//! `ORDER BY rank LIMIT` so only the best rows are joined. Vector search is the in-memory
//! int8 index with exact rescoring (`super::vector_index`); hybrid fuses both through
//! `crate::rank`, and until a folder's chunks have vectors it is keyword search and says
//! so. Results carry where the passage is (path, heading, line range, page), a snippet
//! and a chunk id, by which the chat cites it.

use rusqlite::params;
use serde::Serialize;

use crate::Result;
use crate::store::Store;

/// How deep each side looks before fusion (SPEC §9: at least 20).
pub const CANDIDATES: usize = 40;

/// The FTS5 rank function for chunks: the text counts fully, the heading path at half.
const BM25_WEIGHTS: &str = "bm25(1.0, 0.5)";

/// A search mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Hybrid,
    Bm25,
    Vector,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::Bm25 => "bm25",
            Mode::Vector => "vector",
        }
    }

    /// The mode a user named (`hybrid`, `bm25`, `vector`); another name is `invalid_input`.
    pub fn parse(s: &str) -> Result<Mode> {
        Ok(match s {
            "hybrid" => Mode::Hybrid,
            "bm25" => Mode::Bm25,
            "vector" => Mode::Vector,
            _ => {
                return Err(crate::Error::InvalidInput(format!(
                    "unknown search mode {s:?} (hybrid, bm25 or vector)"
                )));
            }
        })
    }
}

/// One passage found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// 1-based.
    pub rank: usize,
    pub score: f64,
    pub chunk_id: i64,
    /// The file, absolute.
    pub path: String,
    /// The watched folder it is in.
    pub folder: String,
    pub heading: Option<String>,
    pub line_start: u32,
    pub line_end: u32,
    pub page: Option<u32>,
    /// The passage around the words that matched (at most ~40 words).
    pub snippet: String,
}

/// Where a passage is, as people read it: `page 3`, `line 7` or `lines 7-12`.
pub fn place(page: Option<u32>, line_start: u32, line_end: u32) -> String {
    match page {
        Some(p) => format!("page {p}"),
        None if line_start == line_end => format!("line {line_start}"),
        None => format!("lines {line_start}-{line_end}"),
    }
}

impl Hit {
    /// Where the passage is, as people read it (`page 3`, `lines 7-12`).
    pub fn place(&self) -> String {
        place(self.page, self.line_start, self.line_end)
    }

    /// A hit (rank and score 0) for chunk `id` of file `rel` in folder `root`, at
    /// `(line_start, line_end, page)` as stored.
    fn of(
        id: i64,
        root: String,
        rel: &str,
        heading: Option<String>,
        (line_start, line_end, page): (i64, i64, Option<i64>),
        snippet: String,
    ) -> Hit {
        Hit {
            rank: 0,
            score: 0.0,
            chunk_id: id,
            path: std::path::Path::new(&root)
                .join(rel)
                .to_string_lossy()
                .into_owned(),
            folder: root,
            heading,
            line_start: u32::try_from(line_start).unwrap_or(0),
            line_end: u32::try_from(line_end).unwrap_or(0),
            page: page.and_then(|p| u32::try_from(p).ok()),
            snippet,
        }
    }
}

/// What a search returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// The mode that ran (hybrid falls back to bm25 when there are no vectors).
    pub mode: Mode,
    pub warning: Option<String>,
    pub results: Vec<Hit>,
}

/// Which chunks a search looks at: those of one folder, of one file type, of files
/// modified since a time — or all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub folder: Option<i64>,
    /// A file extension, without the dot, any case (`md`, `pdf`).
    pub extension: Option<String>,
    /// Files modified at or after this time (ms since the epoch).
    pub modified_since: Option<crate::time::Millis>,
}

impl Filter {
    /// The SQL condition on `folder_files f` for parameters `?{n}`, `?{n+1}`, `?{n+2}`.
    pub fn sql(n: usize) -> String {
        format!(
            "(?{n} IS NULL OR f.folder_id = ?{n}) AND (?{a} IS NULL OR lower(f.rel_path) LIKE '%.' || lower(?{a})) AND (?{b} IS NULL OR f.mtime >= ?{b})",
            a = n + 1,
            b = n + 2
        )
    }

    pub fn values(&self) -> (Option<i64>, Option<String>, Option<i64>) {
        let ext = self
            .extension
            .as_deref()
            .map(|e| e.trim_start_matches('.').replace(['%', '_'], ""))
            .filter(|e| !e.is_empty());
        (self.folder, ext, self.modified_since)
    }
}

/// Keyword (BM25) search over the indexed chunks `filter` lets through.
pub fn keyword(store: &Store, text: &str, k: usize, filter: &Filter) -> Result<Vec<Hit>> {
    let (ranked, _) = keyword_ranked(store, text, k, filter)?;
    let scores: std::collections::HashMap<i64, f64> = ranked.iter().copied().collect();
    let mut found = details(
        store,
        ranked.iter().map(|(id, _)| *id).collect(),
        Some(text),
    )?;
    Ok(ranked
        .iter()
        .filter_map(|(id, _)| found.remove(id))
        .enumerate()
        .map(|(i, h)| Hit {
            rank: i + 1,
            score: scores.get(&h.chunk_id).copied().unwrap_or(0.0),
            ..h
        })
        .collect())
}

/// The `k` best chunks by BM25 with their scores (higher is better), and which engine
/// ranked them: the in-memory index when this process has built one and the filter is
/// at most a folder, else FTS5 (`super::lexical`).
pub fn keyword_ranked(
    store: &Store,
    text: &str,
    k: usize,
    filter: &Filter,
) -> Result<(Vec<(i64, f64)>, super::lexical::Engine)> {
    let (folder, ext, since) = filter.values();
    let Some(q) = crate::rank::fts_query(text) else {
        return Ok((Vec::new(), super::lexical::Engine::Fts5));
    };
    let k = k.clamp(1, 200);
    let memory = store.shared::<super::lexical::LexicalIndex>();
    let text = text.to_owned();
    let (found, wanted_memory) = store.read_blocking(move |c| {
        let in_memory = ext.is_none() && since.is_none();
        if in_memory
            && memory.is_built()
            && let Some(hits) = memory.search(c, &text, k, folder)
        {
            return Ok(((hits, super::lexical::Engine::Memory), false));
        }
        // FTS5 is the outer loop and consumes `ORDER BY rank`, so the LIMIT stops the
        // joins after the best rows.
        let mut stmt = c.prepare_cached(&format!(
            "SELECT chunks_fts.rowid, -rank
               FROM chunks_fts
               JOIN chunks ch ON ch.id = chunks_fts.rowid
               JOIN folder_files f ON f.id = ch.file_id
              WHERE chunks_fts MATCH ?1 AND rank MATCH ?3 AND {}
              ORDER BY rank LIMIT ?2",
            Filter::sql(4)
        ))?;
        let rows = stmt.query_map(
            params![q, k as i64, BM25_WEIGHTS, folder, ext, since],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?)),
        )?;
        Ok((
            (
                rows.collect::<rusqlite::Result<Vec<_>>>()?,
                super::lexical::Engine::Fts5,
            ),
            in_memory,
        ))
    })?;
    if wanted_memory {
        super::lexical::rebuild_in_background(store);
    }
    Ok(found)
}

/// How chunk results are fused: calibrated strengths (`crate::rank::Fusion::Calibrated`:
/// BM25 over the query's best, cosine mapped from 0.2–0.7 onto 0–1, the stronger side plus
/// half the weaker), tuned on LoCoMo conversations 26 and 30 only (`hearth eval retrieval`,
/// nDCG@10 there: BM25 alone 0.726; RRF with vector weight 0.5 0.656, 0.2 0.692; calibrated
/// 0.15–0.6 0.736, 0.2–0.7 0.742, 0.25–0.8 0.740, 0.3–0.7 0.736; with the weaker side at 1
/// or 0.25, 0.727 and 0.726). Unlike rank fusion, a chunk whose only evidence is a weak
/// nearest neighbour (cosine under 0.2) scores nothing, so it cannot push a keyword match
/// down (docs/decisions/0011-folder-search-calibrated-fusion.md).
pub const CHUNK_FUSION: crate::rank::Fusion = crate::rank::Fusion::Calibrated {
    floor: 0.2,
    ceil: 0.7,
    lexical_weight: 1.0,
    both: 0.5,
    scale: 1.0,
};

/// The fusion of chunk results: [`CHUNK_FUSION`], or for experiments (the eval's tuning
/// split) `HEARTH_CHUNK_FUSION` (`rrf:w=…` or `calibrated:…`, as
/// [`crate::rank::Fusion::parse`] reads them).
pub fn fusion() -> crate::rank::Fusion {
    std::env::var("HEARTH_CHUNK_FUSION")
        .ok()
        .and_then(|s| crate::rank::Fusion::parse(&s))
        .unwrap_or(CHUNK_FUSION)
}

/// Where chunks `ids` are, each with a snippet: the passage around the words of `query`
/// that matched (`lexical::snippet`), or its first words when it has none of them (or no
/// query is given).
fn details(
    store: &Store,
    ids: Vec<i64>,
    query: Option<&str>,
) -> Result<std::collections::HashMap<i64, Hit>> {
    let query = query.map(str::to_owned);
    store.read_blocking(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT ch.text, ch.heading, ch.line_start, ch.line_end, ch.page, d.path, f.rel_path
               FROM chunks ch JOIN folder_files f ON f.id = ch.file_id
               JOIN folders d ON d.id = f.folder_id WHERE ch.id = ?1",
        )?;
        let mut out = std::collections::HashMap::new();
        for id in ids {
            let row = stmt.query_row([id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                ))
            });
            let (text, heading, ls, le, page, root, rel) = match row {
                Ok(r) => r,
                Err(rusqlite::Error::QueryReturnedNoRows) => continue,
                Err(e) => return Err(e),
            };
            let matched = query
                .as_deref()
                .and_then(|q| super::lexical::snippet(&text, q));
            let snippet = matched.unwrap_or_else(|| {
                let words: Vec<&str> = text.split_whitespace().take(40).collect();
                let mut snippet = words.join(" ");
                if text.split_whitespace().nth(40).is_some() {
                    snippet.push('…');
                }
                snippet
            });
            out.insert(
                id,
                Hit::of(id, root, &rel, heading, (ls, le, page), snippet),
            );
        }
        Ok(out)
    })
}

/// Vector search: the `k` chunks nearest to the query's vector, score = cosine similarity.
pub fn vector(
    store: &Store,
    model: &str,
    query: &[f32],
    k: usize,
    filter: &Filter,
) -> Result<Vec<Hit>> {
    let near = super::vectors::nearest(store, model, query, k.clamp(1, 200), filter)?;
    let mut found = details(store, near.iter().map(|(id, _)| *id).collect(), None)?;
    Ok(near
        .iter()
        .filter_map(|(id, sim)| found.remove(id).map(|h| (h, *sim)))
        .enumerate()
        .map(|(i, (h, sim))| Hit {
            rank: i + 1,
            score: sim,
            ..h
        })
        .collect())
}

/// Hybrid search: [`CANDIDATES`] from each side, fused by the one ranker (`crate::rank`).
/// A chunk without a vector is still found by its words.
pub fn hybrid(
    store: &Store,
    text: &str,
    model: &str,
    query: &[f32],
    k: usize,
    filter: &Filter,
) -> Result<Vec<Hit>> {
    hybrid_with_floor(store, text, model, query, k, filter, None)
}

/// [`hybrid`], leaving out chunks found only by their vector with a cosine similarity
/// under `min_similarity` (the chat's passages: a weak nearest neighbour is noise).
pub fn hybrid_with_floor(
    store: &Store,
    text: &str,
    model: &str,
    query: &[f32],
    k: usize,
    filter: &Filter,
    min_similarity: Option<f64>,
) -> Result<Vec<Hit>> {
    use crate::rank::Evidence;
    let k = k.clamp(1, 200);
    let depth = k.max(CANDIDATES);
    let (lexical, _) = keyword_ranked(store, text, depth, filter)?;
    let near = super::vectors::nearest(store, model, query, depth, filter)?;
    let mut evidence: std::collections::HashMap<i64, Evidence> = std::collections::HashMap::new();
    for (i, (id, score)) in lexical.iter().enumerate() {
        let e = evidence.entry(*id).or_default();
        e.lexical_rank = Some(i);
        e.bm25 = Some(*score);
    }
    for (i, (id, sim)) in near.iter().enumerate() {
        let e = evidence.entry(*id).or_default();
        e.vector_rank = Some(i);
        e.similarity = Some(*sim);
    }
    if let Some(floor) = min_similarity {
        evidence
            .retain(|_, e| e.lexical_rank.is_some() || e.similarity.is_some_and(|s| s >= floor));
    }
    let best_bm25 = lexical.first().map_or(0.0, |(_, score)| *score);
    let fusion = fusion();
    let mut ranked: Vec<(i64, f64)> = evidence
        .iter()
        .map(|(id, e)| (*id, fusion.relevance(e, best_bm25)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    // Snippets only for what is shown: a passage around the query's words when it has
    // any of them, else its first words.
    let mut by_id = details(
        store,
        ranked.iter().map(|(id, _)| *id).collect(),
        Some(text),
    )?;
    Ok(ranked
        .into_iter()
        .filter_map(|(id, score)| by_id.remove(&id).map(|h| (h, score)))
        .enumerate()
        .map(|(i, (h, score))| Hit {
            rank: i + 1,
            score,
            ..h
        })
        .collect())
}

/// The text of chunks `ids`.
pub fn texts(store: &Store, ids: Vec<i64>) -> Result<std::collections::HashMap<i64, String>> {
    store.read_blocking(move |c| {
        let mut stmt = c.prepare_cached("SELECT text FROM chunks WHERE id = ?1")?;
        let mut out = std::collections::HashMap::new();
        for id in ids {
            match stmt.query_row([id], |r| r.get::<_, String>(0)) {
                Ok(t) => {
                    out.insert(id, t);
                }
                Err(rusqlite::Error::QueryReturnedNoRows) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    })
}
