//! The memory block's nearest-neighbour search in process: a copy of one vector table
//! (`memory_vectors_<dims>`) as one matrix, scored against the request by one matrix-vector
//! product (candle's optimised kernels) instead of vec0's scalar cosine over every row.
//! From 10,000 memories that was most of the block's time (see
//! docs/decisions/0010-memory-block-latency.md).
//!
//! The copy is valid while the database's vector generation (a `meta` row that triggers on
//! `memories.embed_model` and on deleting a memory move; migration 0014) is the one it was
//! read at, so a vector written by any process — the app, the CLI, a job — is seen at the
//! next search. Only long-lived readers hold one (the chat's memory source, the
//! evaluations); everything else asks vec0.

use std::sync::Mutex;

use candle_core::{Device, Tensor};
use rusqlite::Connection;

/// The `meta` key of the vector generation.
pub const GENERATION_KEY: &str = "memory_vectors_generation";

/// One table's vectors, L2-normalised, and who each memory is about.
struct Loaded {
    table: String,
    generation: String,
    rows: Vec<i64>,
    about_other: Vec<bool>,
    matrix: Tensor,
}

/// A copy of one vector table, reloaded when the generation moves.
#[derive(Default)]
pub struct VectorIndex {
    loaded: Mutex<Option<Loaded>>,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex").finish_non_exhaustive()
    }
}

/// Nearest rows of one partition: `(memories.n, cosine distance)`, nearest first.
pub type Near = Vec<(i64, f64)>;

impl VectorIndex {
    /// The `k` nearest rows of each partition of `table` — about the user, about other
    /// people — by cosine distance to `query`. `None` when the matrix product fails (the
    /// caller asks vec0 instead).
    pub fn nearest(
        &self,
        c: &Connection,
        table: &str,
        dims: usize,
        query: &[f32],
        k: usize,
    ) -> rusqlite::Result<Option<[Near; 2]>> {
        let generation = crate::store::meta_value(c, GENERATION_KEY)?.unwrap_or_default();
        let mut guard = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = guard
            .as_ref()
            .is_some_and(|l| l.table == table && l.generation == generation);
        if !fresh {
            *guard = None;
            match load(c, table, dims, generation)? {
                Some(l) => *guard = Some(l),
                None => return Ok(None),
            }
        }
        let Some(l) = guard.as_ref() else {
            return Ok(None);
        };
        let Some(similarities) = similarities(&l.matrix, query) else {
            return Ok(None);
        };
        let mut sides: [Vec<(usize, f32)>; 2] = [Vec::new(), Vec::new()];
        for (i, s) in similarities.into_iter().enumerate() {
            sides[usize::from(l.about_other[i])].push((i, s));
        }
        Ok(Some(sides.map(|mut side| {
            let by_similarity = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1);
            if side.len() > k {
                side.select_nth_unstable_by(k, by_similarity);
                side.truncate(k);
            }
            side.sort_by(by_similarity);
            side.into_iter()
                .map(|(i, s)| (l.rows[i], 1.0 - f64::from(s)))
                .collect()
        })))
    }
}

/// Reads `table` into a normalised matrix (`None` when it is empty or the matrix cannot be
/// made).
fn load(
    c: &Connection,
    table: &str,
    dims: usize,
    generation: String,
) -> rusqlite::Result<Option<Loaded>> {
    let mut stmt = c.prepare(&format!(
        "SELECT rowid, about_other, embedding FROM {table}"
    ))?;
    let mut rows = Vec::new();
    let mut about_other = Vec::new();
    let mut data: Vec<f32> = Vec::new();
    let mut q = stmt.query([])?;
    while let Some(r) = q.next()? {
        let blob: Vec<u8> = r.get(2)?;
        if blob.len() != dims * 4 {
            continue;
        }
        let start = data.len();
        data.extend(
            blob.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        let norm = data[start..].iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 && norm.is_finite() {
            data[start..].iter_mut().for_each(|x| *x /= norm);
        } else {
            data[start..].iter_mut().for_each(|x| *x = 0.0);
        }
        rows.push(r.get(0)?);
        about_other.push(r.get::<_, i64>(1)? != 0);
    }
    if rows.is_empty() {
        return Ok(None);
    }
    match Tensor::from_vec(data, (rows.len(), dims), &Device::Cpu) {
        Ok(matrix) => Ok(Some(Loaded {
            table: table.to_owned(),
            generation,
            rows,
            about_other,
            matrix,
        })),
        Err(e) => {
            tracing::warn!(error = %e, "could not hold the memory vectors in process");
            Ok(None)
        }
    }
}

/// Cosine similarity of every row of `matrix` (normalised) to `query`.
fn similarities(matrix: &Tensor, query: &[f32]) -> Option<Vec<f32>> {
    let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
    let scale = if norm > 0.0 && norm.is_finite() {
        1.0 / norm
    } else {
        0.0
    };
    let q: Vec<f32> = query.iter().map(|x| x * scale).collect();
    let q = Tensor::from_vec(q, (query.len(), 1), &Device::Cpu).ok()?;
    let product = matrix.matmul(&q).and_then(|p| p.flatten_all());
    match product.and_then(|p| p.to_vec1::<f32>()) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(error = %e, "in-process vector search failed; asking vec0");
            None
        }
    }
}
