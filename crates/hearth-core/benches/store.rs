//! `vec0` KNN over random 384-d vectors: encrypted vs plaintext, two cache sizes.
//! Run with `make bench`; prints ms per query. CI only compiles it.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hearth_core::store::{OpenOptions, Store};
use hearth_core::{DataDir, KeyBackend};
use rand::{Rng, SeedableRng};
use rusqlite::Connection;

const DIM: usize = 384;

fn vector(rng: &mut impl Rng) -> Vec<u8> {
    (0..DIM)
        .flat_map(|_| rng.random_range(-1.0f32..1.0).to_le_bytes())
        .collect()
}

fn fill(conn: &Connection, n: usize) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS bench_vec USING vec0(embedding float[{DIM}])"
    ))
    .expect("create");
    conn.execute_batch("BEGIN").expect("begin");
    {
        let mut stmt = conn
            .prepare("INSERT INTO bench_vec (rowid, embedding) VALUES (?1, ?2)")
            .expect("prepare");
        for i in 0..n {
            stmt.execute(rusqlite::params![i as i64, vector(&mut rng)])
                .expect("insert");
        }
    }
    conn.execute_batch("COMMIT").expect("commit");
}

fn knn(conn: &Connection, query: &[u8]) -> usize {
    let mut stmt = conn
        .prepare_cached("SELECT rowid, distance FROM bench_vec WHERE embedding MATCH ?1 AND k = 10")
        .expect("prepare");
    let rows = stmt
        .query_map([query], |r| r.get::<_, i64>(0))
        .expect("query");
    rows.count()
}

fn bench_knn(c: &mut Criterion) {
    let mut group = c.benchmark_group("vec0_knn_384d");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let query = vector(&mut rng);
    for n in [10_000usize, 100_000] {
        let tmp = tempfile::tempdir().expect("tempdir");
        // Encrypted: the real store.
        let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("enc")));
        opts.new_key_backend = KeyBackend::File;
        let store = Store::open(&opts).expect("open");
        store
            .write_blocking(|c| {
                fill(c, n);
                Ok(())
            })
            .expect("fill");
        // Plaintext: the same data in an unencrypted SQLite file.
        let plain = Connection::open(tmp.path().join("plain.db")).expect("plain");
        plain
            .execute_batch("PRAGMA journal_mode = WAL")
            .expect("wal");
        fill(&plain, n);
        for cache_kib in [2_000i64, 256_000] {
            let pragma = format!("PRAGMA cache_size = -{cache_kib}");
            store
                .write_blocking(|c| c.execute_batch(&pragma))
                .expect("cache");
            plain.execute_batch(&pragma).expect("cache");
            let label = format!("{n}/cache_{}MiB", cache_kib / 1000);
            group.bench_function(BenchmarkId::new("encrypted", &label), |b| {
                b.iter(|| store.write_blocking(|c| Ok(knn(c, &query))).expect("knn"))
            });
            group.bench_function(BenchmarkId::new("plaintext", &label), |b| {
                b.iter(|| knn(&plain, &query))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_knn);
criterion_main!(benches);
