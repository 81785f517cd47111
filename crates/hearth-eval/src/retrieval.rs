//! `hearth eval retrieval --locomo PATH`: retrieval over watched folders measured on labels
//! no one here wrote. Each LoCoMo session becomes a Markdown file (`conv-26/session_03.md`:
//! a date heading, then one turn per line as `Speaker: text`, photo captions included);
//! each conversation's folder is watched and indexed **through the real pipeline** (walk,
//! extraction worker, chunking, keyword index, embedding) in a store of its own; then every
//! question of categories 1–4 with evidence is searched in its conversation's folder by
//! bm25, vector and hybrid search. A retrieved chunk is relevant when its line range covers
//! the line of one of the question's evidence turns.
//!
//! Metrics ([`score`]), per question then averaged: nDCG@10 (binary gains; the ideal ranks
//! every chunk of the folder that covers an evidence line first), Recall@5/10/20 (the share
//! of the question's evidence turns covered by the top k) and MRR@10. Conversations 26 and
//! 30 are the tuning split (fusion is tuned there only); the other eight are reported.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;

use hearth_base::paths::DataDir;
use hearth_base::{Error, Result};
use hearth_core::{EmbeddingChoice, Hearth, IndexOptions, LocalModel, SearchScope};
use hearth_folders::index::Progress;
use hearth_folders::search::Mode;
use hearth_folders::worker::WorkerCommand;
use hearth_store::key::KeyBackend;
use hearth_store::{OpenOptions, Store};

use crate::locomo::{Conversation, TUNING};

/// How many chunks each search returns (the deepest metric is Recall@20).
pub const DEPTH: usize = 20;

/// One question's scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    #[serde(rename = "ndcg@10")]
    pub ndcg_at_10: f64,
    #[serde(rename = "recall@5")]
    pub recall_at_5: f64,
    #[serde(rename = "recall@10")]
    pub recall_at_10: f64,
    #[serde(rename = "recall@20")]
    pub recall_at_20: f64,
    #[serde(rename = "mrr@10")]
    pub mrr_at_10: f64,
}

impl Metrics {
    fn add(&mut self, o: &Metrics) {
        self.ndcg_at_10 += o.ndcg_at_10;
        self.recall_at_5 += o.recall_at_5;
        self.recall_at_10 += o.recall_at_10;
        self.recall_at_20 += o.recall_at_20;
        self.mrr_at_10 += o.mrr_at_10;
    }

    fn divided(&self, n: usize) -> Metrics {
        let n = n.max(1) as f64;
        Metrics {
            ndcg_at_10: self.ndcg_at_10 / n,
            recall_at_5: self.recall_at_5 / n,
            recall_at_10: self.recall_at_10 / n,
            recall_at_20: self.recall_at_20 / n,
            mrr_at_10: self.mrr_at_10 / n,
        }
    }
}

/// Scores one question. `ranked[i]` holds the indexes of the evidence turns the i-th
/// retrieved chunk covers (empty: not relevant); `evidence` is how many evidence turns the
/// question has; `relevant` how many chunks of its folder cover at least one of them.
pub fn score(ranked: &[Vec<usize>], evidence: usize, relevant: usize) -> Metrics {
    let covered = |k: usize| {
        let mut seen: Vec<usize> = ranked.iter().take(k).flatten().copied().collect();
        seen.sort_unstable();
        seen.dedup();
        if evidence == 0 {
            0.0
        } else {
            seen.len() as f64 / evidence as f64
        }
    };
    let gain = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, e)| !e.is_empty())
        .map(|(i, _)| gain(i))
        .sum();
    let ideal: f64 = (0..relevant.min(10)).map(gain).sum();
    Metrics {
        ndcg_at_10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
        recall_at_5: covered(5),
        recall_at_10: covered(10),
        recall_at_20: covered(20),
        mrr_at_10: ranked
            .iter()
            .take(10)
            .position(|e| !e.is_empty())
            .map_or(0.0, |r| 1.0 / (r as f64 + 1.0)),
    }
}

/// One table: questions per split, and per split and mode the mean metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Table {
    /// `tuning`, `reported`, `all` → questions.
    pub n_queries: BTreeMap<&'static str, usize>,
    /// split → mode → metrics.
    #[serde(flatten)]
    pub splits: BTreeMap<&'static str, BTreeMap<&'static str, Metrics>>,
}

/// What `hearth eval retrieval --locomo` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetrievalReport {
    /// The embedding model of the vectors; `None`: keywords only.
    pub model: Option<String>,
    /// Session files written and indexed, and the chunks they became.
    pub files: u64,
    pub chunks: u64,
    /// All categories together.
    #[serde(flatten)]
    pub overall: Table,
    /// `"1"`…`"4"` → the same table for that category's questions.
    pub categories: BTreeMap<String, Table>,
}

/// How the evaluation runs.
#[derive(Debug, Clone, Default)]
pub struct RetrievalOptions {
    /// The local model to embed with (its files must be on this computer); `None`: the
    /// default one. Not on this computer: keywords only.
    pub model: Option<LocalModel>,
    /// The extraction worker (this binary by default).
    pub worker: Option<WorkerCommand>,
}

/// Where each evidence turn is: `D3:5` → (session number, 1-based line).
type Lines = HashMap<String, (u32, u32)>;

/// The session number of a dialogue id (`D3:5` → 3).
fn session_of(dia: &str) -> Option<u32> {
    dia.trim_start_matches('D').split(':').next()?.parse().ok()
}

/// The file of session `n`.
fn session_file(n: u32) -> String {
    format!("session_{n:02}.md")
}

/// The session number of a file [`session_file`] named (`session_03.md` → 3).
fn session_of_file(name: &str) -> Option<u32> {
    name.strip_prefix("session_")?
        .strip_suffix(".md")?
        .parse()
        .ok()
}

/// Writes conversation `conv`'s sessions into `dir`, returning where each turn's line is.
pub fn write_sessions(conv: &Conversation, dir: &Path) -> Result<Lines> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut files: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut lines = Lines::new();
    for (dia, text, _) in &conv.turns {
        let Some(n) = session_of(dia) else { continue };
        let body = files.entry(n).or_insert_with(|| {
            let date = conv.session_dates.get(&n).map_or("", String::as_str);
            vec![
                format!("# Session {n}: {date}").trim_end().to_owned(),
                String::new(),
            ]
        });
        // One turn per line, whatever the text holds.
        body.push(text.split_whitespace().collect::<Vec<_>>().join(" "));
        lines.insert(dia.clone(), (n, body.len() as u32));
    }
    for (n, body) in files {
        let path = dir.join(session_file(n));
        let mut text = body.join("\n");
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    }
    Ok(lines)
}

/// Runs the evaluation in `work` (a private temporary folder the caller removes). `on`
/// hears each conversation's indexing progress.
pub fn retrieval_locomo(
    conversations: &[Conversation],
    work: &Path,
    options: &RetrievalOptions,
    on: &mut dyn FnMut(&str, &Progress),
) -> Result<RetrievalReport> {
    // (conversation, mode, category) → (questions, summed metrics)
    let mut acc: BTreeMap<(String, &'static str, u8), (usize, Metrics)> = BTreeMap::new();
    let mut model = None;
    let (mut files, mut chunks) = (0, 0);
    for conv in conversations {
        let dir = work.join("sessions").join(format!("conv-{}", conv.id));
        let lines = write_sessions(conv, &dir)?;
        let mut opts = OpenOptions::new(DataDir::new(work.join(format!("home-{}", conv.id))));
        opts.new_key_backend = KeyBackend::File;
        let hearth = Hearth::open_oneshot(&opts)?;
        if let Some(m) = options.model {
            hearth.set_embedding(EmbeddingChoice::Local { model: m })?;
        }
        let folders = hearth.folders();
        let (folder, _) = folders.add(&dir)?;
        let index = IndexOptions {
            wait: true,
            wait_vectors: true,
            worker: options.worker.clone(),
            ..IndexOptions::default()
        };
        let summary = folders.index(&index, &mut |p| on(&conv.id, p))?;
        // Searched as the app searches: by the in-memory keyword index (FTS5 with
        // HEARTH_KEYWORD_ENGINE=fts5, to compare the two).
        if std::env::var("HEARTH_KEYWORD_ENGINE").as_deref() != Ok("fts5") {
            folders.warm_search()?;
        }
        files += summary.files.indexed;
        chunks += summary.chunks;
        let embedder = hearth.embedder();
        model = embedder.as_ref().map(|e| e.model_id().to_owned());
        let modes: &[Mode] = if embedder.is_some() && summary.vectors == "complete" {
            &[Mode::Bm25, Mode::Vector, Mode::Hybrid]
        } else {
            &[Mode::Bm25]
        };
        // Every chunk of the folder: (session, lines) — the ideal ranking's relevant set.
        let root = PathBuf::from(&folder.path);
        let of_path = |path: &str| -> Option<u32> {
            session_of_file(Path::new(path).strip_prefix(&root).ok()?.to_str()?)
        };
        // The folder's chunks, read beside the engine (the same file, the same key).
        let all_chunks: Vec<(u32, u32, u32)> = Store::open(&opts)?
            .read_blocking({
                let id = folder.id;
                move |c| {
                    let mut stmt = c.prepare(
                        "SELECT f.rel_path, ch.line_start, ch.line_end FROM chunks ch
                           JOIN folder_files f ON f.id = ch.file_id WHERE f.folder_id = ?1",
                    )?;
                    let rows = stmt.query_map([id], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                        ))
                    })?;
                    rows.collect::<rusqlite::Result<Vec<_>>>()
                }
            })?
            .into_iter()
            .filter_map(|(rel, a, b)| {
                Some((
                    session_of_file(&rel)?,
                    u32::try_from(a).ok()?,
                    u32::try_from(b).ok()?,
                ))
            })
            .collect();
        let scope = SearchScope {
            folder: Some(&dir),
            ..SearchScope::default()
        };
        for (question, category, evidence) in &conv.questions {
            let at: Vec<(u32, u32)> = evidence
                .iter()
                .filter_map(|d| lines.get(d))
                .copied()
                .collect();
            if at.is_empty() {
                continue;
            }
            let covers = |session: u32, a: u32, b: u32| -> Vec<usize> {
                at.iter()
                    .enumerate()
                    .filter(|(_, (n, l))| *n == session && (a..=b).contains(l))
                    .map(|(i, _)| i)
                    .collect()
            };
            let relevant = all_chunks
                .iter()
                .filter(|(n, a, b)| !covers(*n, *a, *b).is_empty())
                .count();
            for mode in modes {
                let found = folders.search(question, Some(DEPTH), *mode, &scope)?;
                let ranked: Vec<Vec<usize>> = found
                    .results
                    .iter()
                    .map(|h| {
                        of_path(&h.path)
                            .map(|n| covers(n, h.line_start, h.line_end))
                            .unwrap_or_default()
                    })
                    .collect();
                let s = score(&ranked, at.len(), relevant);
                let a = acc
                    .entry((conv.id.clone(), mode.as_str(), *category))
                    .or_default();
                a.0 += 1;
                a.1.add(&s);
            }
        }
    }
    let table = |category: Option<u8>| {
        let mut t = Table::default();
        for split in ["tuning", "reported", "all"] {
            let in_split = |id: &str| match split {
                "tuning" => TUNING.contains(&id),
                "reported" => !TUNING.contains(&id),
                _ => true,
            };
            for mode in ["bm25", "vector", "hybrid"] {
                let (mut n, mut sum) = (0, Metrics::default());
                for ((id, m, c), (k, s)) in &acc {
                    if *m == mode && in_split(id) && category.is_none_or(|x| x == *c) {
                        n += k;
                        sum.add(s);
                    }
                }
                if n == 0 {
                    continue;
                }
                t.n_queries.insert(split, n);
                t.splits
                    .entry(split)
                    .or_default()
                    .insert(mode, sum.divided(n));
            }
        }
        t
    };
    Ok(RetrievalReport {
        model,
        files,
        chunks,
        overall: table(None),
        categories: (1..=4u8)
            .map(|c| (c.to_string(), table(Some(c))))
            .filter(|(_, t)| !t.n_queries.is_empty())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn metrics_match_values_computed_by_hand() {
        // Two evidence turns (0, 1); three chunks of the folder cover one of them.
        // Ranks: 1 nothing, 2 covers turn 1, 3 nothing, 4 covers turns 0 and 1.
        let ranked = vec![vec![], vec![1], vec![], vec![0, 1]];
        let m = score(&ranked, 2, 3);
        // DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3) + 1/log2(4).
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let ideal = 1.0 + 1.0 / 3f64.log2() + 0.5;
        assert!(close(m.ndcg_at_10, dcg / ideal), "{m:?}");
        assert!((m.ndcg_at_10 - 0.4982).abs() < 1e-4, "{}", m.ndcg_at_10);
        assert!(close(m.recall_at_5, 1.0));
        assert!(close(m.mrr_at_10, 0.5));
        // Only the first turn found, at rank 7: R@5 = 0, R@10 = 0.5, MRR = 1/7.
        let mut late = vec![vec![]; 6];
        late.push(vec![0]);
        let m = score(&late, 2, 2);
        assert!(close(m.recall_at_5, 0.0) && close(m.recall_at_10, 0.5));
        assert!(close(m.recall_at_20, 0.5));
        assert!(close(m.mrr_at_10, 1.0 / 7.0));
        // Rank 7 gains 1/log2(7 + 1) = 1/3; the ideal holds two relevant chunks.
        assert!(close(m.ndcg_at_10, (1.0 / 3.0) / (1.0 + 1.0 / 3f64.log2())));
        // Found at rank 12: only Recall@20 sees it.
        let mut deep = vec![vec![]; 11];
        deep.push(vec![0]);
        let m = score(&deep, 1, 1);
        assert_eq!(
            m,
            Metrics {
                recall_at_20: 1.0,
                ..Metrics::default()
            }
        );
        // A perfect ranking scores 1 everywhere.
        let m = score(&[vec![0], vec![1]], 2, 2);
        assert!(close(m.ndcg_at_10, 1.0) && close(m.recall_at_5, 1.0) && close(m.mrr_at_10, 1.0));
    }

    #[test]
    fn sessions_are_written_one_turn_a_line_under_a_date_heading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conv = Conversation {
            id: "1".into(),
            turns: vec![
                ("D1:1".into(), "Ann: hi\nthere".into(), None),
                ("D1:2".into(), "Bob: hello".into(), None),
                (
                    "D2:1".into(),
                    "Ann: back [shares a photo: a dog]".into(),
                    None,
                ),
            ],
            questions: vec![],
            session_dates: [(1, "1:56 pm on 8 May, 2023".to_owned())].into(),
        };
        let lines = write_sessions(&conv, dir.path()).expect("write");
        let one = std::fs::read_to_string(dir.path().join("session_01.md")).expect("read");
        assert_eq!(
            one,
            "# Session 1: 1:56 pm on 8 May, 2023\n\nAnn: hi there\nBob: hello\n"
        );
        let two = std::fs::read_to_string(dir.path().join("session_02.md")).expect("read");
        assert_eq!(two, "# Session 2:\n\nAnn: back [shares a photo: a dog]\n");
        assert_eq!(lines["D1:2"], (1, 4));
        assert_eq!(session_of_file(&session_file(3)), Some(3));
        assert_eq!(session_of_file("notes.md"), None);
        assert_eq!(lines["D2:1"], (2, 3));
    }
}
