//! Building the memory block from 10,000 stored memories (target p50 ≤ 10 ms, excluding the
//! query embedding): critical and pinned first, then hybrid candidates (FTS5 + vec0 over
//! 384-d vectors) scored and fitted into 1,000 tokens; and for a request about food, with
//! the safety facts of whoever it involves looked up among 500 other people's allergies.
//! Run with `make bench`.

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_core::memory::block;
use hearth_core::memory::{Actor, Kind, Memories, NewMemory};
use hearth_core::store::{OpenOptions, Store};
use hearth_core::tokens::Encoding;
use hearth_core::{DataDir, KeyBackend};
use rand::{Rng, SeedableRng};

const N: usize = 10_000;
const DIMS: usize = 384;

fn unit(rng: &mut impl Rng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..DIMS).map(|_| rng.random::<f32>() - 0.5).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("d")));
    opts.new_key_backend = KeyBackend::File;
    let store = Store::open(&opts).expect("open");
    let memories = Memories::new(store);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let topics = [
        "Lisbon",
        "cycling",
        "jazz",
        "Python",
        "tea",
        "the dentist",
        "Porto",
        "sourdough",
    ];
    for i in 0..N {
        let kind = Kind::ALL[i % 4];
        // One in twenty is another person's allergy (the safety facts a food request must
        // look through); a few are the user's own.
        let text = if i % 20 == 0 {
            format!("User's colleague Person{i} is allergic to peanuts and carries an EpiPen.")
        } else if i % 1000 == 3 {
            format!("User is allergic to shellfish (noted on day {}).", i % 365)
        } else {
            format!(
                "User note {i}: likes {} and mentioned {} on day {}",
                topics[i % 8],
                topics[(i / 8) % 8],
                i % 365
            )
        };
        let mut new = NewMemory::manual(text, kind);
        new.pinned = i % 1000 == 0;
        new.critical = i % 2500 == 1;
        let m = memories.add(new, Actor::User).expect("add");
        memories
            .set_vector(&m.id, "bench-model", &unit(&mut rng))
            .expect("vector");
    }
    let query = unit(&mut rng);
    let enc = Encoding::O200kBase;
    enc.count("warm up");
    // The chat's memory source searches vectors in process; one-off readers ask vec0.
    let in_process = memories.clone().with_vector_index();
    for (name, memories, request) in [
        (
            "memory_block_from_10k_memories",
            &in_process,
            "Which jazz bars in Lisbon should I try this weekend?",
        ),
        (
            "memory_block_from_10k_memories_vec0",
            &memories,
            "Which jazz bars in Lisbon should I try this weekend?",
        ),
        (
            "memory_block_from_10k_memories_food_request",
            &in_process,
            "Can I make a seafood paella for my wife's birthday dinner?",
        ),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                block::build(memories, request, Some(("bench-model", &query)), 1_000, enc)
                    .expect("block")
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
