//! The memory block and memory search on the real model (all-MiniLM-L6-v2) among hundreds
//! of generated memories about other people (issue 10): a memory that shares no word with
//! the request still reaches the block; an exact identifier still wins search; critical
//! and pinned memories are always in, within the budget. Issue 35: a role the request
//! names ("my wife") brings in its person's memories, and another person's memory on the
//! same topic does not pass as the user's or the family's.
//!
//! Needs the model on disk: `scripts/fetch-model.sh`, or `HEARTH_EMBED_MODEL_DIR`.

use std::path::PathBuf;
use std::sync::OnceLock;

use hearth_core::embed::{Embedder, LocalEmbedder, ModelSource};
use hearth_core::memory::block::{self, Mode};
use hearth_core::memory::distractors::distractor_memories;
use hearth_core::memory::{Actor, Kind, Memories, NewMemory};
use hearth_core::store::{OpenOptions, Store};
use hearth_core::tokens::Encoding;
use hearth_core::{DataDir, KeyBackend};

const BUDGET: u32 = 1_000;

fn embedder() -> &'static LocalEmbedder {
    static EMBEDDER: OnceLock<LocalEmbedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        let dir = std::env::var_os("HEARTH_EMBED_MODEL_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".cache/hearth-models/minilm"))
            })
            .expect("HEARTH_EMBED_MODEL_DIR or HOME");
        LocalEmbedder::new(ModelSource::dir(dir))
    })
}

struct World {
    _tmp: tempfile::TempDir,
    memories: Memories,
}

/// A store with `own` (the user's memories, first) and `distractors` generated memories
/// about other people, every one with its vector. Returns the ids of `own` in order.
fn world(own: &[(&str, Kind)], distractors: usize) -> (World, Vec<String>) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("d")));
    opts.new_key_backend = KeyBackend::File;
    let memories = Memories::new(Store::open(&opts).expect("open"));
    let ids = own
        .iter()
        .map(|(text, kind)| {
            memories
                .add(NewMemory::manual(*text, *kind), Actor::User)
                .expect("add")
                .id
        })
        .collect();
    for (kind, text) in distractor_memories(distractors) {
        memories
            .add(NewMemory::manual(text, kind), Actor::Import)
            .expect("add");
    }
    while memories.embed_pending(embedder(), 256).expect("embed") > 0 {}
    (
        World {
            _tmp: tmp,
            memories,
        },
        ids,
    )
}

fn vector(text: &str) -> Vec<f32> {
    embedder()
        .embed(&[text])
        .expect("embed")
        .pop()
        .expect("one")
}

fn block_for(w: &World, request: &str, with_vector: bool) -> block::Block {
    let v = vector(request);
    let model = embedder().model_id().to_owned();
    block::build(
        &w.memories,
        request,
        with_vector.then_some((model.as_str(), v.as_slice())),
        BUDGET,
        Encoding::O200kBase,
    )
    .expect("block")
}

#[test]
fn a_memory_sharing_no_word_with_the_request_reaches_the_block_among_400_distractors() {
    let (w, ids) = world(
        &[
            (
                "User is trying to eat more protein to support climbing.",
                Kind::Preference,
            ),
            (
                "User commutes by e-bike and does not own a car.",
                Kind::Fact,
            ),
            ("User's daughter Lena is six years old.", Kind::Fact),
        ],
        400,
    );
    let request = "Give me a snack idea after training.";
    // Precondition: no word in common, so keywords alone leave it out of the block (the
    // distractors' "training for the Berlin marathon" fill it instead).
    let lexical = w
        .memories
        .search(request, None, Mode::Bm25, 200)
        .expect("search");
    assert!(
        lexical.iter().all(|c| c.id != ids[0]),
        "BM25 must not find it"
    );
    assert!(
        !block_for(&w, request, false).ids.contains(&ids[0]),
        "keywords alone leave it out of the block"
    );
    // Hybrid: its meaning brings it in.
    let hybrid = block_for(&w, request, true);
    assert!(
        hybrid.ids.contains(&ids[0]),
        "the block lacks the protein memory: {}",
        hybrid.text
    );
}

#[test]
fn an_exact_identifier_wins_search_over_memories_close_in_meaning() {
    let mut own: Vec<(String, Kind)> = vec![(
        "The flaky nightly export failure is tracked as ERR-4471.".into(),
        Kind::Fact,
    )];
    for (i, what) in [
        "The nightly export failed again because the disk filled up",
        "The export job is flaky when the warehouse is slow at night",
        "Nightly exports sometimes fail after a schema change",
        "The failing export was retried and succeeded the next morning",
        "ERR-4417 is the ticket for the login timeout",
        "ERR-4470 tracked the broken dashboard colours",
        "The export pipeline's flaky failures worry the on-call engineer",
        "User wants the nightly export failures fixed before the audit",
    ]
    .iter()
    .enumerate()
    {
        own.push((format!("{what} (note {i})."), Kind::Fact));
    }
    let refs: Vec<(&str, Kind)> = own.iter().map(|(t, k)| (t.as_str(), *k)).collect();
    let (w, ids) = world(&refs, 400);
    let request = "Any update on ERR-4471?";
    let v = vector(request);
    let model = embedder().model_id().to_owned();
    let listed = w
        .memories
        .search_listed(request, Some((model.as_str(), v.as_slice())))
        .expect("search");
    assert_eq!(
        listed.first().map(|c| c.id.as_str()),
        Some(ids[0].as_str()),
        "first: {:?}",
        listed.iter().take(3).map(|c| &c.text).collect::<Vec<_>>()
    );
    assert!(block_for(&w, request, true).ids.first() == Some(&ids[0]));
}

#[test]
fn critical_and_pinned_memories_are_always_in_the_block_and_the_budget_holds() {
    let (w, ids) = world(
        &[
            (
                "User is allergic to peanuts and carries an EpiPen.",
                Kind::Fact,
            ),
            ("Answer briefly unless asked for detail.", Kind::Instruction),
            ("User is lactose intolerant.", Kind::Fact),
        ],
        400,
    );
    w.memories.set_critical(&ids[0], true).expect("critical");
    w.memories.set_pinned(&ids[1], true).expect("pin");
    w.memories.set_critical(&ids[2], true).expect("critical");
    // A request about something else entirely, with many matching distractors.
    for request in [
        "Which marathon should my colleague run in the autumn?",
        "hello",
    ] {
        let block = block_for(&w, request, true);
        for id in &ids {
            assert!(block.ids.contains(id), "{request}: {id} missing");
        }
        // Critical first, then pinned, then the rest.
        let mut first_two = block.ids[..2].to_vec();
        first_two.sort();
        let mut critical = vec![ids[0].clone(), ids[2].clone()];
        critical.sort();
        assert_eq!(first_two, critical);
        assert_eq!(block.ids[2], ids[1]);
        let tokens: u32 = block
            .text
            .lines()
            .map(|l| Encoding::O200kBase.count(l) as u32 + 1)
            .sum();
        assert!(tokens <= BUDGET, "{tokens} tokens");
        assert!(block.ids.len() > 10, "the rest of the budget is used");
    }
}

/// Search as the Memory screen lists it, on the real model.
fn listed(w: &World, request: &str) -> Vec<String> {
    let v = vector(request);
    let model = embedder().model_id().to_owned();
    w.memories
        .search_listed(request, Some((model.as_str(), v.as_slice())))
        .expect("search")
        .into_iter()
        .map(|c| c.id)
        .collect()
}

fn rank_of(listed: &[String], id: &str) -> usize {
    listed.iter().position(|i| i == id).unwrap_or(usize::MAX)
}

#[test]
fn a_role_in_the_request_brings_in_its_persons_memory_over_someone_elses_on_the_same_topic() {
    let (w, ids) = world(
        &[
            (
                "User is married to Helena, who teaches chemistry at a secondary school.",
                Kind::Fact,
            ),
            ("Helena is allergic to shellfish.", Kind::Fact),
            (
                "User's neighbour Marta is allergic to shellfish.",
                Kind::Fact,
            ),
            ("User's colleague Rui is allergic to peanuts.", Kind::Fact),
            ("Helena's brother Tiago cannot eat walnuts.", Kind::Fact),
            (
                "User is allergic to tree nuts, especially cashews and walnuts.",
                Kind::Fact,
            ),
        ],
        400,
    );
    let request = "Can I make a seafood paella for my wife's birthday dinner?";
    let block = block_for(&w, request, true);
    assert!(block.ids.contains(&ids[1]), "{}", block.text);
    let found = listed(&w, request);
    assert!(
        rank_of(&found, &ids[1]) < rank_of(&found, &ids[2]),
        "the wife's allergy ranks above the neighbour's: {found:?} {ids:?}"
    );
    // The user's own allergy over the wife's brother's, for a request about the user.
    let found = listed(&w, "Can I have the walnut cake at the office party?");
    assert!(
        rank_of(&found, &ids[5]) < rank_of(&found, &ids[4]),
        "{found:?} {ids:?}"
    );
    // Named by role, the brother-in-law's memory is still his, not the wife's.
    let found = listed(&w, "What can my wife's brother Tiago eat?");
    assert_eq!(found.first(), Some(&ids[4]), "{found:?} {ids:?}");
}

#[test]
fn a_role_stated_in_a_document_names_nobody_and_a_deleted_one_stops_naming() {
    let (w, _) = world(&[("Zoe likes fountain pens.", Kind::Preference)], 0);
    let from_file = hearth_core::memory::NewMemory {
        facets: Default::default(),
        source: hearth_core::memory::Source::File {
            path: "/home/u/notes/novel.md".into(),
        },
        ..NewMemory::manual("User is married to Zoe.", Kind::Fact)
    };
    let file_memory = w.memories.add(from_file, Actor::Assistant).expect("add");
    let people = |w: &World| {
        hearth_core::memory::rank::Subject::of_query_with(
            "Gift for my wife?",
            w.memories.people().expect("people"),
        )
        .weight("Zoe likes fountain pens.")
    };
    assert_eq!(people(&w), 1.0, "a document's words define no role");
    let said = w
        .memories
        .add(
            NewMemory::manual("User is married to Zoe.", Kind::Fact),
            Actor::User,
        )
        .expect("add");
    assert_eq!(people(&w), hearth_core::memory::rank::NAMED_WEIGHT);
    w.memories.delete(&said.id).expect("delete");
    assert_eq!(people(&w), 1.0, "gone with the memory that stated it");
    w.memories.delete(&file_memory.id).expect("delete");
}

#[test]
fn a_safety_fact_leads_the_block_for_a_food_request_that_shares_no_word_with_it() {
    let (w, ids) = world(
        &[
            (
                "User is allergic to tree nuts, especially cashews and walnuts.",
                Kind::Fact,
            ),
            ("User's colleague Rui is allergic to peanuts.", Kind::Fact),
            ("User drinks espresso with no sugar.", Kind::Preference),
        ],
        400,
    );
    let request = "Can I have the baklava they're serving at the office party?";
    // Precondition: no word in common, and this model does not find it close in meaning.
    let v = vector(request);
    let model = embedder().model_id().to_owned();
    let found = w
        .memories
        .search(
            request,
            Some((model.as_str(), v.as_slice())),
            Mode::Hybrid,
            20,
        )
        .expect("search");
    assert_ne!(
        found.first().map(|c| &c.id),
        Some(&ids[0]),
        "search alone does not put it first"
    );
    let block = block_for(&w, request, true);
    assert_eq!(block.ids.first(), Some(&ids[0]), "{}", block.text);
    let safety = w.memories.safety_facts(request).expect("safety");
    assert!(
        safety.iter().all(|c| c.id != ids[1]),
        "a colleague's allergy is not the user's"
    );
    // A request about neither food, health nor travel gets no safety facts pushed in.
    assert!(
        w.memories
            .safety_facts("Draft an email to my boss asking for Friday off.")
            .expect("safety")
            .is_empty()
    );
}

#[test]
fn a_fact_that_stopped_being_true_yields_to_the_current_one_in_the_block_but_stays_in_search() {
    let (w, ids) = world(
        &[
            (
                "User lived in Berlin, in Kreuzberg, until March 2026.",
                Kind::Fact,
            ),
            (
                "User moved to Lisbon in April 2026 and lives in Campo de Ourique.",
                Kind::Fact,
            ),
        ],
        400,
    );
    let (berlin, lisbon) = (&ids[0], &ids[1]);
    let block = block_for(&w, "Where do I live these days?", true);
    let at = |id: &String| block.ids.iter().position(|b| b == id);
    let now = at(lisbon).expect("the current home is in the block");
    if let Some(then) = at(berlin) {
        assert!(now < then, "the current fact first:\n{}", block.text);
        let line = block
            .text
            .lines()
            .find(|l| l.contains("Berlin"))
            .expect("line");
        assert!(line.contains("no longer true"), "{line}");
    }
    // Still found, first, by what the user remembers of it.
    let found = listed(&w, "Kreuzberg Berlin");
    assert_eq!(found.first(), Some(berlin));
    let listed_berlin = w.memories.get(berlin).expect("get").expect("kept");
    assert!(listed_berlin.no_longer_true);
}

#[test]
fn the_users_own_memories_of_a_requests_facet_come_before_other_peoples_on_the_same_words() {
    let (w, ids) = world(
        &[
            (
                "User has been head of operations at a solar start-up called Lumen since January 2026.",
                Kind::Fact,
            ),
            (
                "User's neighbour Bruno is head of operations at a logistics company.",
                Kind::Fact,
            ),
        ],
        400,
    );
    let request = "Write a two-line bio about my job as head of operations.";
    let found = listed(&w, request);
    assert!(
        rank_of(&found, &ids[0]) < rank_of(&found, &ids[1]),
        "{found:?}"
    );
    let block = block_for(&w, request, true);
    assert!(block.ids.contains(&ids[0]), "{}", block.text);
}
