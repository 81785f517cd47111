//! The in-memory keyword index of chunks (tantivy in RAM) on the real encrypted store: it
//! ranks as FTS5 does on distinctive queries, it follows every change another handle
//! makes (files added, deleted, a chunk id reused with new text), it falls back to FTS5
//! when it falls too far behind and is rebuilt by the next warm-up, and it writes no file.

mod common;

use common::add_folder;
use hearth_core::KeyBackend;
use hearth_core::folders::lexical::{self, Engine, MAX_REPLAY};
use hearth_core::folders::search::{Filter, keyword_ranked};
use hearth_core::store::Store;
use rusqlite::params;

fn open(root: &std::path::Path) -> Store {
    Store::open(&common::options(root, KeyBackend::File)).expect("open")
}

/// One file `name` in `folder` with one chunk per text; returns the chunk ids.
fn add_file(store: &Store, folder: i64, name: &str, texts: &[String]) -> Vec<i64> {
    let name = name.to_owned();
    let texts = texts.to_vec();
    store
        .write_blocking(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO folder_files (folder_id, rel_path, status) VALUES (?1, ?2, 'indexed')",
                params![folder, name],
            )?;
            let file = tx.last_insert_rowid();
            let mut ids = Vec::new();
            for (o, t) in texts.iter().enumerate() {
                tx.execute(
                    "INSERT INTO chunks (file_id, ordinal, text, heading, byte_start, byte_end, line_start, line_end, tokens)
                     VALUES (?1, ?2, ?3, 'Notes', 0, 1, 1, 1, 1)",
                    params![file, o as i64, t],
                )?;
                ids.push(tx.last_insert_rowid());
            }
            tx.commit()?;
            Ok(ids)
        })
        .expect("chunks")
}

fn delete_file(store: &Store, name: &str) {
    let name = name.to_owned();
    store
        .write_blocking(move |c| c.execute("DELETE FROM folder_files WHERE rel_path = ?1", [name]))
        .expect("delete");
}

/// Filler text: words from a small vocabulary, so common words match many chunks.
fn filler(i: usize) -> String {
    const WORDS: &[&str] = &[
        "garden", "kitchen", "letter", "window", "river", "market", "winter", "station", "bridge",
        "doctor", "school", "holiday", "engine", "morning", "village", "summer",
    ];
    (0..40)
        .map(|j| WORDS[(i * 7 + j * 13 + j / 3) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn top(store: &Store, q: &str, folder: Option<i64>) -> (Vec<i64>, Engine) {
    let filter = Filter {
        folder,
        ..Filter::default()
    };
    let (hits, engine) = keyword_ranked(store, q, 10, &filter).expect("search");
    (hits.into_iter().map(|(id, _)| id).collect(), engine)
}

/// The data folder's files, by name.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = common::files_under(dir);
    files.sort();
    files
}

#[test]
fn the_memory_index_ranks_as_fts5_and_follows_every_change() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = open(tmp.path());
    let a = add_folder(&store, "/a");
    let b = add_folder(&store, "/b");
    for f in 0..30 {
        let texts: Vec<String> = (0..10).map(|i| filler(f * 10 + i)).collect();
        add_file(
            &store,
            if f % 2 == 0 { a } else { b },
            &format!("f{f}.txt"),
            &texts,
        );
    }
    let boiler = add_file(
        &store,
        a,
        "boiler.md",
        &[format!(
            "{} the boiler shows error E1234 after the service",
            filler(1)
        )],
    )[0];
    let quokka = add_file(
        &store,
        b,
        "quokka.md",
        &[format!("{} a quokka visited the garden at dawn", filler(2))],
    )[0];

    // Before a warm-up, keyword search is FTS5's (a one-shot command never builds).
    let (fts_boiler, engine) = top(&store, "boiler error E1234", None);
    assert_eq!(engine, Engine::Fts5);
    assert_eq!(fts_boiler.first(), Some(&boiler));
    let (fts_quokka, _) = top(&store, "quokka garden", None);

    let before = files_under(tmp.path());
    lexical::warm(&store).expect("warm");
    let (docs, bytes) = lexical::usage(&store);
    assert_eq!(docs, 302, "every chunk is in the copy");
    assert!(bytes > 0);
    assert_eq!(
        files_under(tmp.path()),
        before,
        "the copy lives in memory only: no file appears beside the database"
    );

    // The same best chunk as FTS5 for distinctive queries; common words rank too.
    let (mem_boiler, engine) = top(&store, "boiler error E1234", None);
    assert_eq!(engine, Engine::Memory);
    assert_eq!(mem_boiler.first(), Some(&boiler));
    let (mem_quokka, _) = top(&store, "quokka garden", None);
    assert_eq!(mem_quokka.first(), fts_quokka.first());
    assert_eq!(mem_quokka.first(), Some(&quokka));
    let (common, _) = top(&store, "kitchen river", None);
    assert_eq!(common.len(), 10, "common words still fill the top ten");
    // Stemming: the plural finds the singular, as FTS5's porter tokenizer does.
    assert_eq!(top(&store, "quokkas", None).0.first(), Some(&quokka));

    // The folder filter applies in memory.
    let (in_b, engine) = top(&store, "boiler E1234 quokka", Some(b));
    assert_eq!(engine, Engine::Memory);
    assert_eq!(in_b.first(), Some(&quokka));
    assert!(
        !in_b.contains(&boiler),
        "a chunk of another folder is not served"
    );

    // Another handle (another process, as the indexer) changes the store: the copy follows.
    let other = open(tmp.path());
    delete_file(&other, "boiler.md");
    let wombat = add_file(
        &other,
        a,
        "wombat.md",
        &["a wombat dug under the fence".into()],
    )[0];
    let (after, engine) = top(&store, "boiler error E1234", None);
    assert_eq!(engine, Engine::Memory);
    assert!(!after.contains(&boiler), "a deleted file's chunk is gone");
    assert_eq!(top(&store, "wombat fence", None).0.first(), Some(&wombat));

    // The newest chunk deleted and its id reused with other text: the old words go.
    delete_file(&other, "wombat.md");
    let reused = add_file(
        &other,
        a,
        "koala.md",
        &["a koala slept in the eucalyptus".into()],
    )[0];
    assert_eq!(reused, wombat, "precondition: SQLite reused the chunk id");
    assert!(top(&store, "wombat fence", None).0.is_empty());
    assert_eq!(
        top(&store, "koala eucalyptus", None).0.first(),
        Some(&reused)
    );

    // Too far behind: the copy is dropped (FTS5 answers, correctly), and rebuilt by the
    // next warm-up with everything in it.
    let many: Vec<String> = (0..MAX_REPLAY + 1)
        .map(|i| format!("platypus number {i}"))
        .collect();
    add_file(&other, b, "many.txt", &many);
    let (hits, engine) = top(&store, "platypus", None);
    assert_eq!(engine, Engine::Fts5);
    assert_eq!(hits.len(), 10);
    lexical::warm(&store).expect("rebuild");
    let (hits, engine) = top(&store, "platypus", None);
    assert_eq!(engine, Engine::Memory);
    assert_eq!(hits.len(), 10);
    assert_eq!(lexical::usage(&store).0, 302 - 1 + 1 + MAX_REPLAY + 1);
}
