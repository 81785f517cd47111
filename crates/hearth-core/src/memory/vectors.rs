//! Memory vectors: one sqlite-vec table per dimension count, which memories lack a vector
//! from a model, and storing one.

use rusqlite::{OptionalExtension, params};

use crate::Result;

use super::Memories;

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
            let n: Option<i64> = tx
                .query_row("SELECT n FROM memories WHERE id = ?1", [&id], |r| r.get(0))
                .optional()?;
            if let Some(n) = n {
                let table = ensure_vec_table(&tx, dims)?;
                drop_vectors(&tx, n)?;
                tx.execute(
                    &format!("INSERT INTO {table} (rowid, embedding) VALUES (?1, ?2)"),
                    params![n, blob],
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

    /// Active memories without a vector from `model` (to embed): ids and texts.
    pub fn needing_vectors(&self, model: &str, limit: usize) -> Result<Vec<(String, String)>> {
        let model = model.to_owned();
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT id, text FROM memories WHERE status != 'superseded'
                   AND (embed_model IS NULL OR embed_model != ?1) ORDER BY n LIMIT ?2",
            )?;
            let rows =
                stmt.query_map(params![model, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
    }
}

/// The vec0 table for vectors of `dims` dimensions, created on first use.
pub(crate) fn ensure_vec_table(
    tx: &rusqlite::Transaction<'_>,
    dims: usize,
) -> rusqlite::Result<String> {
    let table = format!("memory_vec_{dims}");
    tx.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0 (embedding float[{dims}] distance_metric=cosine)"
    ))?;
    Ok(table)
}

/// The vec0 tables of memory vectors (`memory_vec_<dims>`, not their shadow tables).
pub(super) fn vec_tables(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<Vec<String>> {
    let mut stmt = tx.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'memory_vec_*'",
    )?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for name in names {
        let name = name?;
        let dims = name.trim_start_matches("memory_vec_");
        if !dims.is_empty() && dims.chars().all(|c| c.is_ascii_digit()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// Drops a memory's vectors from every vector table.
pub(super) fn drop_vectors(tx: &rusqlite::Transaction<'_>, n: i64) -> rusqlite::Result<()> {
    for t in vec_tables(tx)? {
        tx.execute(&format!("DELETE FROM {t} WHERE rowid = ?1"), [n])?;
    }
    Ok(())
}
