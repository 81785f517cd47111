//! Changing the embedding model: every memory is re-embedded by a durable job, a batch at a
//! time with progress events; a provider that fails midway keeps what was done and loses
//! nothing; the job resumes; search works throughout.

use hearth_core::embed::EmbeddingChoice;
use hearth_core::memory::block::Mode;
use hearth_core::memory::{Actor, Kind, Memories, NewMemory};
use hearth_core::providers::{NewProvider, Preset, Providers};
use hearth_core::{Event, Hearth, KeyBackend};
use hearth_testkit::llm_server::*;

mod common;

fn progress(rx: &mut tokio::sync::broadcast::Receiver<Event>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        if let Event::EmbeddingProgress { done, total, .. } = e {
            out.push((done, total));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_change_re_embeds_in_batches_survives_a_failure_and_resumes() {
    let server = LlmServer::start(vec![]).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = common::options(tmp.path(), KeyBackend::File);
    let base_url = server.base_url.clone();
    let (hearth, mut rx, job) = tokio::task::spawn_blocking(move || {
        let hearth = Hearth::open(&opts).expect("open");
        Providers::new(hearth.store().clone())
            .add(
                NewProvider {
                    name: "lab".into(),
                    preset: Preset::parse("custom").expect("preset"),
                    base_url: Some(base_url),
                    model: Some("gpt-4o-mini".into()),
                    fast_model: None,
                    context_window: None,
                },
                None,
            )
            .expect("provider");
        let memories = Memories::new(hearth.store().clone());
        for i in 0..70 {
            let text = if i == 42 {
                "Plays the cello on Tuesdays".to_owned()
            } else {
                format!("Fact number {i} about the garden")
            };
            memories
                .add(NewMemory::manual(text, Kind::Fact), Actor::User)
                .expect("add");
        }
        let rx = hearth.subscribe();
        let job = hearth
            .set_embedding(EmbeddingChoice::parse("lab:bow-64").expect("choice"))
            .expect("set");
        (hearth, rx, job)
    })
    .await
    .expect("join");
    let job = job.expect("70 memories to embed: a job");
    let status = hearth.embedding_status().expect("status");
    assert_eq!(status.model.as_deref(), Some("bow-64"));
    assert_eq!(status.dimensions, Some(64));
    assert_eq!((status.embedded, status.memories), (0, 70));

    // The provider answers one batch of 32, then fails.
    server.embeddings_fail_after(1);
    let failed = hearth.jobs().run_job(job).await;
    let err = failed.expect_err("the provider went down midway");
    assert_eq!(err.code(), "provider_unavailable");
    assert_eq!(
        progress(&mut rx),
        [(0, 70), (32, 70)],
        "the start, one batch, then the failure"
    );
    let status = hearth.embedding_status().expect("status");
    assert_eq!(
        (status.embedded, status.memories),
        (32, 70),
        "the done batch is kept"
    );

    // Nothing lost: every memory is there, and found by keyword meanwhile.
    let memories = Memories::new(hearth.store().clone());
    let found = memories
        .search("cello", None, Mode::Bm25, 5)
        .expect("search");
    assert_eq!(found[0].text, "Plays the cello on Tuesdays");
    assert_eq!(memories.vector_counts("bow-64").expect("counts"), (32, 70));

    // Back up: the failed job is retried later; running every runnable job (as the app
    // does at start) finishes the rest once its retry time comes. Here a fresh job.
    server.set_embeddings_down(false);
    let h = hearth.clone();
    let job = tokio::task::spawn_blocking(move || {
        h.set_embedding(EmbeddingChoice::parse("lab:bow-64").expect("choice"))
    })
    .await
    .expect("join")
    .expect("set again")
    .expect("38 left: a job");
    let n = hearth.jobs().run_job(job).await.expect("reembed");
    assert_eq!(
        n,
        Some(hearth_core::JobResult::Embedded(38)),
        "only the ones without a vector"
    );
    assert_eq!(progress(&mut rx), [(32, 70), (64, 70), (70, 70), (70, 70)]);
    let status = hearth.embedding_status().expect("status");
    assert_eq!((status.embedded, status.memories), (70, 70));

    // The vectors are the provider's: a vector query finds the cello memory first.
    let query = bag_of_words("plays cello on tuesdays", 64);
    let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
    let query: Vec<f32> = query.iter().map(|x| x / norm).collect();
    let found = memories
        .search("", Some(("bow-64", &query)), Mode::Vector, 3)
        .expect("vector search");
    assert_eq!(found[0].text, "Plays the cello on Tuesdays");

    // Memories added later (by the CLI, an import) are indexed by `embed_pending`, which
    // the app runs when the store changes; with nothing new it does nothing.
    for text in ["Grows tomatoes", "Reads on trains", "Swims in the sea"] {
        memories
            .add(NewMemory::manual(text, Kind::Fact), Actor::User)
            .expect("add");
    }
    let h = hearth.clone();
    let n = tokio::task::spawn_blocking(move || h.embed_pending())
        .await
        .expect("join")
        .expect("embed pending");
    assert_eq!(n, 3);
    assert_eq!(progress(&mut rx), [(73, 73)]);
    let h = hearth.clone();
    let n = tokio::task::spawn_blocking(move || h.embed_pending())
        .await
        .expect("join")
        .expect("embed pending");
    assert_eq!(n, 0);
    assert!(
        progress(&mut rx).is_empty(),
        "no events when there is nothing to do"
    );

    // Off: no embedder, nothing queued; the vectors stay for when it comes back.
    let h = hearth.clone();
    let job = tokio::task::spawn_blocking(move || h.set_embedding(EmbeddingChoice::Off))
        .await
        .expect("join")
        .expect("off");
    assert_eq!(job, None);
    assert!(hearth.embedder().is_none());
    assert_eq!(memories.vector_counts("bow-64").expect("counts"), (73, 73));
    assert_eq!(
        hearth.embed_pending().expect("nothing without an embedder"),
        0
    );
}

/// The local model leaves the app's memory after the idle-unload time without use (the idle
/// check does this every few seconds), and the next search loads it again and finds the same.
#[test]
fn the_local_model_is_dropped_when_idle_and_the_next_search_loads_it_again() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = Hearth::open(&common::options(tmp.path(), KeyBackend::File)).expect("open");
    let memory = hearth.memory();
    memory
        .add(NewMemory::manual("Plays the cello on Tuesdays", Kind::Fact))
        .expect("add");
    let search = |q: &str| {
        memory
            .list(&hearth_core::memory::Filter {
                query: Some(q.into()),
                ..Default::default()
            })
            .expect("search")
            .into_iter()
            .map(|m| m.text)
            .collect::<Vec<_>>()
    };
    let status = hearth.embedding_status().expect("status");
    assert_eq!(
        status.model.as_deref(),
        Some("all-MiniLM-L6-v2"),
        "{status:?}"
    );
    assert!(!status.loaded, "nothing loads the model at open");

    let first = search("which instrument do I play");
    assert!(hearth.embedding_status().expect("status").loaded);
    assert!(
        !hearth.release_idle_memory(std::time::Duration::from_secs(3600)),
        "just used: it stays"
    );
    assert!(hearth.embedding_status().expect("status").loaded);

    assert!(hearth.release_idle_memory(std::time::Duration::ZERO));
    assert!(!hearth.embedding_status().expect("status").loaded);
    assert_eq!(search("which instrument do I play"), first);
    assert!(hearth.embedding_status().expect("status").loaded);
}
