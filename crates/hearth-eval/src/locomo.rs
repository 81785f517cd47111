//! Retrieval evaluation on LoCoMo (`hearth eval memory --locomo PATH`): one store per
//! conversation, each turn an episode memory dated by its session, with the turns around it
//! as its context (`Memory::context`); for every question of
//! categories 1–4 with evidence, the top turns by BM25, vector and hybrid search are
//! compared with the evidence: recall@5, recall@10 (fraction of the question's evidence
//! turns found, averaged over questions) and MRR@10. Conversations 26 and 30 are the tuning
//! set; the others are reported, and all ten together.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use hearth_base::paths::DataDir;
use hearth_base::{Error, Result};
use hearth_embed::Embedder;
use hearth_memory::block::Mode;
use hearth_memory::{Actor, Kind, Memories, NewMemory};
use hearth_store::key::KeyBackend;
use hearth_store::{OpenOptions, Store};

/// Conversations used to tune ranking (never reported as results).
pub const TUNING: &[&str] = &["26", "30"];

/// One conversation of the dataset.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub id: String,
    /// (dialogue id like `D1:3`, text, session time in ms)
    pub turns: Vec<(String, String, Option<i64>)>,
    /// (question, category, evidence dialogue ids)
    pub questions: Vec<(String, u8, Vec<String>)>,
    /// Each session's date and time as the data set writes it (`1:56 pm on 8 May, 2023`).
    pub session_dates: BTreeMap<u32, String>,
}

/// A line of the results table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// `tuning` (26, 30), `reported` (the other eight) or `all`.
    pub set: String,
    /// `bm25`, `vector` or `hybrid`.
    pub mode: String,
    /// `None` for all categories.
    pub category: Option<u8>,
    pub questions: usize,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr_at_10: f64,
}

/// Normalizes an evidence id: `D8:6`, `D:11:26` → `D11:26`, `D30:05` → `D30:5`; `None` when
/// it names no turn.
pub fn normalize_evidence(raw: &str) -> Option<String> {
    let s = raw.trim().trim_start_matches('D').trim_start_matches(':');
    let (session, turn) = s.split_once(':')?;
    let session: u32 = session.trim().parse().ok()?;
    let turn: u32 = turn.trim().parse().ok()?;
    Some(format!("D{session}:{turn}"))
}

/// Splits a raw evidence entry that may hold several ids (`D8:6; D9:17`).
fn evidence_ids(raw: &str) -> Vec<String> {
    raw.split([';', ',', ' '])
        .filter(|s| !s.trim().is_empty())
        .filter_map(normalize_evidence)
        .collect()
}

fn session_time(text: &str) -> Option<i64> {
    // "1:56 pm on 8 May, 2023"
    let t = jiff::civil::DateTime::strptime("%I:%M %p on %d %B, %Y", text.trim()).ok()?;
    t.to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp().as_millisecond())
}

fn parse_conversation(id: &str, v: &Value) -> Conversation {
    let mut turns = Vec::new();
    let mut session_dates = BTreeMap::new();
    for n in 1.. {
        let Some(session) = v.get(format!("session_{n}")).and_then(Value::as_array) else {
            if n > 60 {
                break;
            }
            continue;
        };
        let date = v
            .get(format!("session_{n}_date_time"))
            .and_then(Value::as_str);
        if let Some(d) = date {
            session_dates.insert(n, d.trim().to_owned());
        }
        let at = date.and_then(session_time);
        for t in session {
            let (Some(dia), Some(speaker)) = (t["dia_id"].as_str(), t["speaker"].as_str()) else {
                continue;
            };
            let mut text = format!("{speaker}: {}", t["text"].as_str().unwrap_or(""));
            if let Some(caption) = t["blip_caption"].as_str() {
                text.push_str(&format!(" [shares a photo: {caption}]"));
            }
            if let Some(d) = normalize_evidence(dia) {
                turns.push((d, text, at));
            }
        }
    }
    let known: std::collections::HashSet<&str> = turns.iter().map(|(d, _, _)| d.as_str()).collect();
    let questions = v["qa"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|q| {
            let category = q["category"].as_u64()? as u8;
            if !(1..=4).contains(&category) {
                return None;
            }
            let mut evidence: Vec<String> = q["evidence"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .flat_map(evidence_ids)
                .filter(|e| known.contains(e.as_str()))
                .collect();
            evidence.sort();
            evidence.dedup();
            (!evidence.is_empty()).then(|| {
                (
                    q["question"].as_str().unwrap_or("").to_owned(),
                    category,
                    evidence,
                )
            })
        })
        .collect();
    Conversation {
        id: id.to_owned(),
        turns,
        questions,
        session_dates,
    }
}

/// The most bytes one entry of the LoCoMo zip may inflate to (the real conversations are
/// under 1 MiB each); a larger entry (a zip bomb) is refused with a clear error.
pub const MAX_ENTRY_BYTES: u64 = 64 * 1024 * 1024;

/// Reads the ten conversations from `locomo10.zip` (or a folder of `<id>.json` files).
pub fn load(path: &Path) -> Result<Vec<Conversation>> {
    let mut out = Vec::new();
    let bad = |e: String| Error::InvalidInput(format!("{}: {e}", path.display()));
    if path.is_dir() {
        for entry in std::fs::read_dir(path).map_err(|e| Error::io(path, e))? {
            let p = entry.map_err(|e| Error::io(path, e))?.path();
            if p.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
                let v: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
                let id = p
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("")
                    .to_owned();
                out.push(parse_conversation(&id, &v));
            }
        }
    } else {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
        for i in 0..zip.len() {
            let mut f = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
            let name = f.name().map_err(|e| bad(e.to_string()))?.into_owned();
            if !name.ends_with(".json") {
                continue;
            }
            // A zip bomb stops at the limit: never more than MAX_ENTRY_BYTES + 1 are inflated.
            let mut bytes = Vec::new();
            f.by_ref()
                .take(MAX_ENTRY_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| bad(format!("{name}: {e}")))?;
            if bytes.len() as u64 > MAX_ENTRY_BYTES {
                return Err(bad(format!(
                    "{name} inflates to more than {} MiB; this is not the LoCoMo data set",
                    MAX_ENTRY_BYTES / (1024 * 1024)
                )));
            }
            let text = String::from_utf8(bytes).map_err(|e| bad(format!("{name}: {e}")))?;
            let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("{name}: {e}")))?;
            let id = Path::new(&name)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("")
                .to_owned();
            out.push(parse_conversation(&id, &v));
        }
    }
    if out.is_empty() {
        return Err(bad("no conversations found".into()));
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// A turn's context: the turns before and after it in its session (what it answers, and
/// what answers it), as a conversation imported turn by turn keeps it.
fn context(turns: &[(String, String, Option<i64>)], i: usize) -> Option<String> {
    let session = |d: &str| d.split(':').next().map(str::to_owned);
    let here = session(&turns.get(i)?.0);
    let near: Vec<&str> = [i.checked_sub(1), Some(i + 1)]
        .into_iter()
        .flatten()
        .filter_map(|j| turns.get(j))
        .filter(|t| session(&t.0) == here)
        .map(|t| t.1.as_str())
        .collect();
    (!near.is_empty()).then(|| near.join("\n"))
}

#[derive(Default, Clone, Copy)]
struct Acc {
    n: usize,
    r5: f64,
    r10: f64,
    mrr: f64,
}

/// Runs the evaluation; `work` holds the temporary stores. Without an embedder only BM25
/// is measured.
pub fn run(
    conversations: &[Conversation],
    embedder: Option<&dyn Embedder>,
    work: &Path,
) -> Result<Vec<Row>> {
    let modes: Vec<Mode> = if embedder.is_some() {
        vec![Mode::Bm25, Mode::Vector, Mode::Hybrid]
    } else {
        vec![Mode::Bm25]
    };
    // (conversation id, mode, category) → accumulated metrics
    let mut acc: BTreeMap<(String, &'static str, u8), Acc> = BTreeMap::new();
    for conv in conversations {
        let mut opts = OpenOptions::new(DataDir::new(work.join(format!("locomo-{}", conv.id))));
        opts.new_key_backend = KeyBackend::File;
        let memories = Memories::new(Store::open(&opts)?).with_vector_index();
        let mut by_memory: HashMap<String, String> = HashMap::new();
        for (i, (dia, text, at)) in conv.turns.iter().enumerate() {
            let mut new = NewMemory::manual(text.clone(), Kind::Episode);
            new.event_at = *at;
            new.created = *at;
            new.context = context(&conv.turns, i);
            let m = memories.add(new, Actor::Import)?;
            by_memory.insert(m.id, dia.clone());
        }
        if let Some(e) = embedder {
            while memories.embed_pending(e, 256)? > 0 {}
        }
        for (question, category, evidence) in &conv.questions {
            let vector = match embedder {
                Some(e) => {
                    Some(e.embed_query(&hearth_memory::phrasing::as_memories_say(question))?)
                }
                None => None,
            };
            for mode in &modes {
                let v = vector
                    .as_deref()
                    .map(|v| (embedder.map(|e| e.model_id()).unwrap_or(""), v));
                let found = memories.search(question, v, *mode, 10)?;
                let ranked: Vec<&String> =
                    found.iter().filter_map(|c| by_memory.get(&c.id)).collect();
                let hits = |k: usize| {
                    ranked
                        .iter()
                        .take(k)
                        .filter(|d| evidence.contains(d))
                        .count() as f64
                };
                let first = ranked.iter().position(|d| evidence.contains(d));
                let name = match mode {
                    Mode::Bm25 => "bm25",
                    Mode::Vector => "vector",
                    Mode::Hybrid => "hybrid",
                };
                let a = acc.entry((conv.id.clone(), name, *category)).or_default();
                a.n += 1;
                a.r5 += hits(5) / evidence.len() as f64;
                a.r10 += hits(10) / evidence.len() as f64;
                a.mrr += first.map(|r| 1.0 / (r as f64 + 1.0)).unwrap_or(0.0);
            }
        }
    }
    let mut rows = Vec::new();
    for set in ["tuning", "reported", "all"] {
        let in_set = |id: &str| match set {
            "tuning" => TUNING.contains(&id),
            "reported" => !TUNING.contains(&id),
            _ => true,
        };
        for mode in ["bm25", "vector", "hybrid"] {
            for category in [None, Some(1u8), Some(2), Some(3), Some(4)] {
                let mut total = Acc::default();
                for ((id, m, c), a) in &acc {
                    if *m == mode && in_set(id) && category.is_none_or(|k| k == *c) {
                        total.n += a.n;
                        total.r5 += a.r5;
                        total.r10 += a.r10;
                        total.mrr += a.mrr;
                    }
                }
                if total.n == 0 {
                    continue;
                }
                let n = total.n as f64;
                rows.push(Row {
                    set: set.to_owned(),
                    mode: mode.to_owned(),
                    category,
                    questions: total.n,
                    recall_at_5: total.r5 / n,
                    recall_at_10: total.r10 / n,
                    mrr_at_10: total.mrr / n,
                });
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_evidence_ids_are_normalized_or_skipped() {
        assert_eq!(evidence_ids("D8:6; D9:17"), vec!["D8:6", "D9:17"]);
        assert_eq!(normalize_evidence("D:11:26").as_deref(), Some("D11:26"));
        assert_eq!(normalize_evidence("D30:05").as_deref(), Some("D30:5"));
        assert_eq!(normalize_evidence("D"), None);
        assert_eq!(normalize_evidence("session 3"), None);
        assert!(session_time("1:56 pm on 8 May, 2023").is_some());
    }

    #[test]
    fn a_zip_bomb_is_refused_at_the_entry_limit() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("locomo10.zip");
        let file = std::fs::File::create(&path).expect("create");
        let mut zip = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .large_file(true);
        zip.start_file("conv-26.json", options).expect("entry");
        let block = vec![b' '; 1024 * 1024];
        for _ in 0..=(MAX_ENTRY_BYTES / (1024 * 1024)) {
            zip.write_all(&block).expect("write");
        }
        zip.finish().expect("finish");
        assert!(
            std::fs::metadata(&path).expect("meta").len() < 4 * 1024 * 1024,
            "a small file"
        );
        let Err(err) = load(&path) else {
            panic!("a zip bomb was read");
        };
        assert_eq!(err.code(), "invalid_input");
        assert!(
            err.to_string().contains("inflates to more than 64 MiB"),
            "{err}"
        );
    }
}
