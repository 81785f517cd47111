//! The in-memory int8 index of chunk vectors against sqlite-vec's exact scan, on the real
//! encrypted store: the same neighbours and the same similarities, and it follows every
//! change another handle makes — vectors appended by an ingest, a file deleted, chunks
//! re-embedded by another model.

mod common;

use common::add_folder;
use hearth_core::folders::search::Filter;
use hearth_core::folders::vectors::{nearest, nearest_exact};
use hearth_core::store::{OpenOptions, Store};
use hearth_core::{DataDir, KeyBackend};
use rusqlite::params;

const DIMS: usize = 64;

fn open(root: &std::path::Path) -> Store {
    let mut opts = OpenOptions::new(DataDir::new(root.join("data")));
    opts.new_key_backend = KeyBackend::File;
    Store::open(&opts).expect("open")
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    /// A unit vector near one of 16 centres (vectors of real text cluster by topic).
    fn vector(&mut self, centres: &[Vec<f32>]) -> Vec<f32> {
        let c = &centres[(self.0 % centres.len() as u64) as usize];
        let mut v: Vec<f32> = c.iter().map(|x| x + 0.6 * self.next()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }
}

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// `files` files of `per_file` chunks each in folder `folder`; returns the chunk ids.
fn add_chunks(
    store: &Store,
    folder: i64,
    first_file: usize,
    files: usize,
    per_file: usize,
) -> Vec<i64> {
    store
        .write_blocking(move |c| {
            let tx = c.transaction()?;
            let mut ids = Vec::new();
            for f in first_file..first_file + files {
                tx.execute(
                    "INSERT INTO folder_files (folder_id, rel_path, status) VALUES (?1, ?2, 'indexed')",
                    params![folder, format!("f{f:05}.txt")],
                )?;
                let file = tx.last_insert_rowid();
                for o in 0..per_file {
                    tx.execute(
                        "INSERT INTO chunks (file_id, ordinal, text, byte_start, byte_end, line_start, line_end, tokens)
                         VALUES (?1, ?2, 'x', 0, 1, 1, 1, 1)",
                        params![file, o as i64],
                    )?;
                    ids.push(tx.last_insert_rowid());
                }
            }
            tx.commit()?;
            Ok(ids)
        })
        .expect("chunks")
}

fn put_vectors(store: &Store, model: &str, rows: Vec<(i64, Vec<f32>)>) {
    let model = model.to_owned();
    store
        .write_blocking(move |c| {
            let tx = c.transaction()?;
            for (id, v) in &rows {
                tx.execute(
                    "INSERT INTO chunk_vectors (chunk_id, model, vector) VALUES (?1, ?2, ?3)
                     ON CONFLICT (chunk_id) DO UPDATE SET model = excluded.model, vector = excluded.vector",
                    params![id, model, blob(v)],
                )?;
            }
            tx.commit()
        })
        .expect("vectors");
}

/// How many of the exact top 10 the index finds, over `queries`, and the largest
/// difference between the two similarities of a chunk both return.
fn agreement(store: &Store, model: &str, queries: &[Vec<f32>]) -> (f64, f64) {
    let mut found = 0;
    let mut worst: f64 = 0.0;
    for q in queries {
        let exact = nearest_exact(store, model, q, 10).expect("exact");
        let ours = nearest(store, model, q, 10, &Filter::default()).expect("index");
        assert_eq!(ours.len(), exact.len());
        for (id, sim) in &exact {
            if let Some((_, s)) = ours.iter().find(|(i, _)| i == id) {
                found += 1;
                worst = worst.max((s - sim).abs());
            }
        }
    }
    (found as f64 / (queries.len() * 10) as f64, worst)
}

#[test]
fn the_index_finds_what_the_exact_scan_finds_and_follows_every_change() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path());
    let folder = add_folder(&store, "/docs");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let centres: Vec<Vec<f32>> = (0..16)
        .map(|_| (0..DIMS).map(|_| rng.next()).collect())
        .collect();
    let ids = add_chunks(&store, folder, 0, 200, 10);
    put_vectors(
        &store,
        "m1",
        ids.iter().map(|id| (*id, rng.vector(&centres))).collect(),
    );
    let queries: Vec<Vec<f32>> = (0..40).map(|_| rng.vector(&centres)).collect();

    let (recall, worst) = agreement(&store, "m1", &queries);
    assert!(recall >= 0.99, "recall@10 against exact {recall}");
    assert!(worst < 1e-5, "similarities are exact, off by {worst}");

    // An ingest appends (another handle on the same file writes them).
    let other = open(tmp.path());
    let more = add_chunks(&other, folder, 200, 50, 10);
    let appended: Vec<(i64, Vec<f32>)> =
        more.iter().map(|id| (*id, rng.vector(&centres))).collect();
    let target = appended[7].1.clone();
    put_vectors(&other, "m1", appended);
    let hit = nearest(&store, "m1", &target, 1, &Filter::default()).expect("nearest");
    assert_eq!(
        hit[0].0, more[7],
        "a vector written by another handle is found"
    );
    assert!((hit[0].1 - 1.0).abs() < 1e-5);
    assert_eq!(agreement(&store, "m1", &queries).0, 1.0);

    // A file deleted: its chunks never come back from the index.
    let gone_file: i64 = other
        .read_blocking(|c| {
            c.query_row("SELECT file_id FROM chunks WHERE id = ?1", [more[7]], |r| {
                r.get(0)
            })
        })
        .expect("file");
    other
        .write_blocking(move |c| c.execute("DELETE FROM folder_files WHERE id = ?1", [gone_file]))
        .expect("delete");
    let hit = nearest(&store, "m1", &target, 20, &Filter::default()).expect("nearest");
    assert!(
        hit.iter().all(|(id, _)| !more[0..10].contains(id)),
        "deleted chunks are gone"
    );
    assert_eq!(agreement(&store, "m1", &queries).0, 1.0);

    // Chunks re-embedded by another model leave m1's results and are m2's.
    let switched: Vec<(i64, Vec<f32>)> = ids[..100]
        .iter()
        .map(|id| (*id, rng.vector(&centres)))
        .collect();
    let probe = switched[3].1.clone();
    put_vectors(&other, "m2", switched);
    let m1 = nearest(&store, "m1", &probe, 50, &Filter::default()).expect("m1");
    assert!(
        m1.iter().all(|(id, _)| !ids[..100].contains(id)),
        "m2's chunks are not m1's"
    );
    let m2 = nearest(&store, "m2", &probe, 1, &Filter::default()).expect("m2");
    assert_eq!(m2[0].0, ids[3]);
    assert_eq!(agreement(&store, "m1", &queries).0, 1.0);
    assert_eq!(agreement(&store, "m2", &queries).0, 1.0);

    // A folder filter: only that folder's chunks.
    let second = add_folder(&other, "/other");
    let theirs = add_chunks(&other, second, 1000, 3, 2);
    put_vectors(
        &other,
        "m1",
        theirs.iter().map(|id| (*id, target.clone())).collect(),
    );
    let filter = Filter {
        folder: Some(second),
        ..Filter::default()
    };
    let only = nearest(&store, "m1", &queries[0], 10, &filter).expect("filtered");
    assert_eq!(only.len(), 6);
    assert!(only.iter().all(|(id, _)| theirs.contains(id)));
}
