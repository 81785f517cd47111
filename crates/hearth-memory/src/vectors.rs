//! Memory vectors: one sqlite-vec table per dimension count, which memories lack a vector
//! from a model, and storing one.
//!
//! Each table is partitioned by who the memory is about: the user (and their household),
//! or another named person ([`Subject::other_person`]). The block asks each partition for
//! its nearest neighbours, so memories about other people — the bulk of a large store —
//! cannot crowd the user's own out of the candidates (10,000 memories: block hit rate
//! 0.61 → see docs/decisions/0008-memory-ranking.md). Tables of the older, unpartitioned
//! layout (`memory_vec_<dims>`) are copied into the new one on the first write.

use rusqlite::{OptionalExtension, params};

use crate::Result;

use super::Memories;
use super::rank::Subject;

/// The prefix of the partitioned vector tables: `memory_vectors_<dims>`.
pub const TABLE_PREFIX: &str = "memory_vectors_";
/// The older, unpartitioned tables (`memory_vec_<dims>`), read until the first write
/// copies them.
const OLD_PREFIX: &str = "memory_vec_";

/// 1 when `text` is about another named person (the partition the block asks separately).
pub fn about_other(text: &str) -> i64 {
    i64::from(Subject::other_person(text).is_some())
}

impl Memories {
    /// Active memories: `(with a vector from model, all)`. (Recently removed ones get
    /// vectors too, so a restore finds them at once, but are not counted.)
    pub fn vector_counts(&self, model: &str) -> Result<(usize, usize)> {
        let model = model.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                "SELECT count(*) FILTER (WHERE embed_model = ?1), count(*)
                   FROM memories WHERE status = 'active'",
                [model],
                |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize)),
            )
        })
    }

    /// Stores a memory's vector (made by `model`).
    pub fn set_vector(&self, id: &str, model: &str, vector: &[f32]) -> Result<()> {
        let (id, model) = (id.to_owned(), model.to_owned());
        let dims = vector.len();
        let blob: Vec<u8> = vector.iter().flat_map(|f| f.to_le_bytes()).collect();
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let row: Option<(i64, String)> = tx
                .query_row("SELECT n, text FROM memories WHERE id = ?1", [&id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            if let Some((n, text)) = row {
                let table = ensure_vec_table(&tx, dims)?;
                drop_vectors(&tx, n)?;
                tx.execute(
                    &format!(
                        "INSERT INTO {table} (rowid, about_other, embedding) VALUES (?1, ?2, ?3)"
                    ),
                    params![n, about_other(&text), blob],
                )?;
                tx.execute(
                    "UPDATE memories SET embed_model = ?1 WHERE n = ?2",
                    params![model, n],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// Embeds up to `limit` memories that have no vector from `embedder`'s model yet;
    /// returns how many. Cheap when there are none.
    pub fn embed_pending(
        &self,
        embedder: &dyn crate::embed::Embedder,
        limit: usize,
    ) -> Result<usize> {
        let pending = self.needing_vectors(embedder.model_id(), limit)?;
        if pending.is_empty() {
            return Ok(0);
        }
        let texts: Vec<&str> = pending.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        for ((id, _), v) in pending.iter().zip(vectors) {
            self.set_vector(id, embedder.model_id(), &v)?;
        }
        Ok(pending.len())
    }

    /// Copies vectors of the older, unpartitioned layout into the partitioned tables (once;
    /// a no-op after). Returns how many tables moved.
    pub fn upgrade_vector_tables(&self) -> Result<usize> {
        let any_old = self.store.read_blocking(|c| {
            c.query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table'
                   AND name GLOB 'memory_vec_[0-9]*' AND name NOT GLOB 'memory_vec_*_*')",
                [],
                |r| r.get::<_, bool>(0),
            )
        })?;
        if !any_old {
            return Ok(0);
        }
        self.store.write_blocking(|c| {
            let tx = c.transaction()?;
            let old: Vec<usize> = vec_tables(&tx)?
                .iter()
                .filter_map(|t| t.strip_prefix(OLD_PREFIX)?.parse().ok())
                .collect();
            for dims in &old {
                ensure_vec_table(&tx, *dims)?;
            }
            tx.commit()?;
            Ok(old.len())
        })
    }

    /// Active memories without a vector from `model` (to embed): ids and texts.
    pub fn needing_vectors(&self, model: &str, limit: usize) -> Result<Vec<(String, String)>> {
        let model = model.to_owned();
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                // Runs before every turn's block: through the index, not a scan of every
                // memory (the `!=` split in two ranges, the planner's choice without it).
                "SELECT id, text, context FROM memories
                  WHERE n IN (SELECT n FROM memories WHERE embed_model IS NULL
                              UNION ALL SELECT n FROM memories WHERE embed_model < ?1
                              UNION ALL SELECT n FROM memories WHERE embed_model > ?1)
                    AND status != 'superseded' ORDER BY n LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![model, limit as i64], |r| {
                let text: String = r.get(1)?;
                let context: Option<String> = r.get(2)?;
                Ok((r.get(0)?, embedding_input(&text, context.as_deref())))
            })?;
            rows.collect()
        })
    }
}

/// What a memory's vector is made from: its own text (its context too only as an
/// experiment, [`super::rank::context_in_vectors`]: then text first, so the embedder's
/// first 256 tokens always hold the memory's own words).
pub fn embedding_input(text: &str, context: Option<&str>) -> String {
    match context {
        Some(c) if super::rank::context_in_vectors() && !c.trim().is_empty() => {
            format!("{text}\n{c}")
        }
        _ => text.to_owned(),
    }
}

/// The vec0 table for vectors of `dims` dimensions, created on first use; an older table of
/// the same dimensions is copied into it (partitioned) and dropped.
pub fn ensure_vec_table(tx: &rusqlite::Transaction<'_>, dims: usize) -> rusqlite::Result<String> {
    let table = format!("{TABLE_PREFIX}{dims}");
    tx.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0 (
             about_other integer partition key,
             embedding float[{dims}] distance_metric=cosine
         )"
    ))?;
    let old = format!("{OLD_PREFIX}{dims}");
    if table_exists(tx, &old)? {
        let rows: Vec<(i64, String, Vec<u8>)> = {
            let mut stmt = tx.prepare(&format!(
                "SELECT v.rowid, m.text, v.embedding FROM {old} v JOIN memories m ON m.n = v.rowid"
            ))?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut insert = tx.prepare(&format!(
            "INSERT INTO {table} (rowid, about_other, embedding) VALUES (?1, ?2, ?3)"
        ))?;
        for (n, text, blob) in &rows {
            insert.execute(params![n, about_other(text), blob])?;
        }
        tx.execute_batch(&format!("DROP TABLE {old}"))?;
        tx.execute(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = ?1",
            [super::vector_index::GENERATION_KEY],
        )?;
        tracing::info!(
            dims,
            vectors = rows.len(),
            "memory vectors moved to the partitioned table"
        );
    }
    Ok(table)
}

/// Whether a table (or virtual table) of that name exists.
pub fn table_exists(c: &rusqlite::Connection, name: &str) -> rusqlite::Result<bool> {
    c.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [name],
        |r| r.get(0),
    )
}

/// The vec0 tables of memory vectors, partitioned and older (`memory_vectors_<dims>`,
/// `memory_vec_<dims>`; not their shadow tables).
pub fn vec_tables(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<Vec<String>> {
    let mut stmt = tx.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table'
           AND (name GLOB 'memory_vectors_*' OR name GLOB 'memory_vec_*')",
    )?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for name in names {
        let name = name?;
        let dims = name
            .strip_prefix(TABLE_PREFIX)
            .or_else(|| name.strip_prefix(OLD_PREFIX))
            .unwrap_or("");
        if !dims.is_empty() && dims.chars().all(|c| c.is_ascii_digit()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// Drops a memory's vectors from every vector table.
pub fn drop_vectors(tx: &rusqlite::Transaction<'_>, n: i64) -> rusqlite::Result<()> {
    for t in vec_tables(tx)? {
        tx.execute(&format!("DELETE FROM {t} WHERE rowid = ?1"), [n])?;
    }
    Ok(())
}
