//! Chunk vectors: the chunks that lack a vector from the model in use get one, in batches
//! after their file is keyword-searchable (so a folder is searchable within seconds, and its
//! vectors follow at the embedder's speed); and the vector side of search.
//!
//! A vector is stored with its model's name; search only ever compares a query with
//! vectors of the model that embedded the query. A chunk's vector goes with the chunk
//! (`ON DELETE CASCADE`), and a renamed file or one whose bytes did not change keeps its
//! chunks, so it keeps its vectors.

use rusqlite::params;

use crate::Result;
use crate::embed::Embedder;
use crate::store::Store;

/// What a chunk is embedded from: its heading path (the section says what it is about)
/// and its text.
pub fn embedding_input(heading: Option<&str>, text: &str) -> String {
    match heading {
        Some(h) if !h.trim().is_empty() => format!("{h}\n{text}"),
        _ => text.to_owned(),
    }
}

/// `(chunks with a vector from model, all chunks)`.
pub fn counts(store: &Store, model: &str) -> Result<(u64, u64)> {
    let model = model.to_owned();
    store.read_blocking(move |c| {
        c.query_row(
            "SELECT (SELECT count(*) FROM chunk_vectors WHERE model = ?1), (SELECT count(*) FROM chunks)",
            [model],
            |r| Ok((r.get::<_, i64>(0)?.max(0) as u64, r.get::<_, i64>(1)?.max(0) as u64)),
        )
    })
}

/// Whether any chunk has a vector from `model` (asked on every search and chat turn: one
/// index probe, not a count).
pub fn any(store: &Store, model: &str) -> Result<bool> {
    let model = model.to_owned();
    store.read_blocking(move |c| {
        c.query_row(
            "SELECT EXISTS (SELECT 1 FROM chunk_vectors WHERE model = ?1)",
            [model],
            |r| r.get(0),
        )
    })
}

/// Chunks of folder `folder` with a vector from `model`.
pub fn embedded_in_folder(store: &Store, folder: i64, model: &str) -> Result<u64> {
    let model = model.to_owned();
    store
        .read_blocking(move |c| {
            c.query_row(
                "SELECT count(*) FROM chunk_vectors v JOIN chunks ch ON ch.id = v.chunk_id
                   JOIN folder_files f ON f.id = ch.file_id
                  WHERE f.folder_id = ?1 AND v.model = ?2",
                params![folder, model],
                |r| r.get::<_, i64>(0),
            )
        })
        .map(|n| n.max(0) as u64)
}

/// Embeds up to `limit` chunks without a vector from `embedder`'s model; returns how many
/// got one. A chunk deleted meanwhile (its file changed) is skipped, not an error.
pub fn embed_pending(store: &Store, embedder: &dyn Embedder, limit: usize) -> Result<usize> {
    let model = embedder.model_id().to_owned();
    let m = model.clone();
    let pending: Vec<(i64, Option<String>, String)> = store.read_blocking(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT ch.id, ch.heading, ch.text FROM chunks ch
               LEFT JOIN chunk_vectors v ON v.chunk_id = ch.id
              WHERE v.chunk_id IS NULL OR v.model != ?1
              ORDER BY ch.id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![m, limit as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        rows.collect()
    })?;
    if pending.is_empty() {
        return Ok(0);
    }
    let inputs: Vec<String> = pending
        .iter()
        .map(|(_, h, t)| embedding_input(h.as_deref(), t))
        .collect();
    let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&refs)?;
    let rows: Vec<(i64, Vec<u8>)> = pending
        .iter()
        .zip(vectors)
        .map(|((id, _, _), v)| (*id, v.iter().flat_map(|f| f.to_le_bytes()).collect()))
        .collect();
    let n = rows.len();
    store.write_blocking(move |c| {
        let tx = c.transaction()?;
        {
            let mut put = tx.prepare_cached(
                "INSERT INTO chunk_vectors (chunk_id, model, vector)
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)
                 ON CONFLICT (chunk_id) DO UPDATE SET model = excluded.model, vector = excluded.vector",
            )?;
            for (id, blob) in &rows {
                put.execute(params![id, model, blob])?;
            }
        }
        tx.commit()
    })?;
    Ok(n)
}

/// The `k` chunks nearest to `query` among those with a vector from `model` (of folder
/// `folder` when given): `(chunk id, cosine similarity)`, nearest first. Candidates come
/// from the store's in-memory int8 copy ([`super::vector_index`]); each similarity is exact.
pub fn nearest(
    store: &Store,
    model: &str,
    query: &[f32],
    k: usize,
    filter: &super::search::Filter,
) -> Result<Vec<(i64, f64)>> {
    let (folder, ext, since) = filter.values();
    let filtered = filter != &super::search::Filter::default();
    let model = model.to_owned();
    let query = query.to_vec();
    let index = store.shared::<super::vector_index::ChunkIndex>();
    store.read_blocking(move |c| {
        let allowed: Option<Vec<i64>> = if filtered {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT ch.id FROM chunks ch JOIN folder_files f ON f.id = ch.file_id
                  WHERE {} ORDER BY ch.id",
                super::search::Filter::sql(1)
            ))?;
            let rows = stmt.query_map(params![folder, ext, since], |r| r.get(0))?;
            Some(rows.collect::<rusqlite::Result<_>>()?)
        } else {
            None
        };
        index.nearest(c, &model, &query, k, allowed.as_deref())
    })
}

/// The bytes the in-memory copy of chunk vectors holds in this process (0 before a search).
pub fn index_bytes(store: &Store) -> usize {
    store.shared::<super::vector_index::ChunkIndex>().bytes()
}

/// The exact nearest chunks by sqlite-vec's scalar cosine over every vector (what the
/// in-memory index is measured against).
pub fn nearest_exact(
    store: &Store,
    model: &str,
    query: &[f32],
    k: usize,
) -> Result<Vec<(i64, f64)>> {
    let blob: Vec<u8> = query.iter().flat_map(|f| f.to_le_bytes()).collect();
    let model = model.to_owned();
    store.read_blocking(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT v.chunk_id, vec_distance_cosine(v.vector, ?1) AS d FROM chunk_vectors v
              WHERE v.model = ?2 AND length(v.vector) = length(?1)
              ORDER BY d LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![blob, model, k as i64], |r| {
            Ok((r.get::<_, i64>(0)?, 1.0 - r.get::<_, f64>(1)?))
        })?;
        rows.collect()
    })
}
