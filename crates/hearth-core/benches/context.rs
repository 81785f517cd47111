//! Context assembly for a 200-turn conversation with 50 memory items and 10 retrieved
//! chunks (target p50 ≤ 25 ms): the assembler alone, and the whole path a turn takes before
//! the request — reading the conversation from the encrypted store, then assembling.
//! Run with `make bench`.

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_core::context::{self, MemoryParts, Parts, Passage};
use hearth_core::conversations::{Conversations, MessageState};
use hearth_core::store::{OpenOptions, Store};
use hearth_core::tokens::Encoding;
use hearth_core::types::{Message, Role};
use hearth_core::{DataDir, KeyBackend};

const TURNS: usize = 200;

fn turn_text(i: usize, role: &str) -> String {
    format!(
        "{role} turn {i}: we talked about the trip to Porto, the budget spreadsheet and whether \
         the train leaves at 9:40 or 10:15; also a snippet `let total = items.iter().sum::<u32>();` \
         and a note in Japanese 明日は晴れるでしょう. "
    )
    .repeat(2)
}

fn memory_block() -> MemoryParts {
    MemoryParts {
        core: "- (critical) allergic to peanuts\n- (fact) the user's name is Ada".into(),
        relevant: (0..50)
            .map(|i| format!("- (fact) The user's item {i}: prefers window seats, tea without sugar, meetings after 10.\n"))
            .collect(),
    }
}

fn passages() -> Vec<Passage> {
    (0..10)
        .map(|i| Passage {
            source: format!("Documents/notes/trip-{i}.md"),
            text: format!("Chunk {i}. ").repeat(2)
                + &"The itinerary lists the hotel on Rua das Flores, check-in after 15:00, and a dinner reservation. ".repeat(12),
            chunk_id: Some(i),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let enc = Encoding::O200kBase;
    let history: Vec<(Message, u32)> = (0..TURNS * 2)
        .map(|i| {
            let m = if i % 2 == 0 {
                Message::user(turn_text(i / 2, "user"))
            } else {
                Message::assistant(turn_text(i / 2, "assistant"))
            };
            let t = enc.count(&m.content) as u32;
            (m, t)
        })
        .collect();
    let memory = memory_block();
    let passages = passages();
    let current = Message::user("So which train should I take, and is the hotel booked?");
    let parts = Parts {
        tools: 0,
        system: hearth_core::chat::SYSTEM_PROMPT,
        memory: Some(&memory),
        summary: Some(
            "Open tasks: book the train. Decisions: Porto in May. Preferences: short answers.",
        ),
        history: &history,
        retrieved: &passages,
        tool_schemas: None,
        current: &current,
    };
    enc.count("warm up");
    let mut group = c.benchmark_group("context_200_turns_50_memories_10_chunks");
    for window in [8_192u32, 128_000] {
        group.bench_function(format!("assemble_window_{window}"), |b| {
            b.iter(|| context::assemble(parts, enc, window).expect("fits"))
        });
    }

    // The whole path: the conversation read from the encrypted store, then assembled.
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("d")));
    opts.new_key_backend = KeyBackend::File;
    let store = Store::open(&opts).expect("open");
    let convs = Conversations::new(store);
    let id = convs.create("bench").expect("create");
    for (m, _) in &history {
        convs
            .append(&id, m, enc, MessageState::Complete, None)
            .expect("append");
    }
    group.bench_function("load_from_store_and_assemble_window_128000", |b| {
        b.iter(|| {
            let stored = convs.messages(&id).expect("messages");
            let history: Vec<(Message, u32)> = stored
                .into_iter()
                .filter(|m| matches!(m.message.role, Role::User | Role::Assistant))
                .map(|m| (m.message, m.tokens))
                .collect();
            context::assemble(
                Parts {
                    history: &history,
                    ..parts
                },
                enc,
                128_000,
            )
            .expect("fits")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
