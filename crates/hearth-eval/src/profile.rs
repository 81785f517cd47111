//! Profile-style retrieval evaluation (`hearth eval memory --profile DIR`): the memories a
//! user's own assistant holds — short third-person facts about them, as extraction writes
//! them — among generated memories about other people, and natural requests that each
//! need one of them. For every request: is the keyed memory in the memory block a chat
//! turn would send (the real `hearth_memory::block::build`, the chat's budget), and where does
//! it rank in the search the Memory screen and `memory list --query` use?
//!
//! `DIR/memories.tsv`: `key<TAB>kind<TAB>text` lines; `DIR/queries.tsv`: `key<TAB>request`
//! lines, where a request that needs two memories (or more) joins their keys with `+`
//! (`wife-allergy+own-allergy`): it is a hit only when all of them are in the block, and its
//! search rank is the best of theirs. Blank lines and lines starting with `#` are skipped. LoCoMo (`locomo.rs`) measures
//! dialogue turns and questions quoting them; this measures the distribution Hearth
//! serves day to day.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Serialize;

use hearth_base::paths::DataDir;
use hearth_base::{Error, Result};
use hearth_embed::Embedder;
use hearth_memory::block;
use hearth_memory::distractors::{MAX_DISTRACTORS, distractor_memories};
use hearth_memory::phrasing::as_memories_say;
use hearth_memory::{Actor, Kind, Memories, NewMemory};
use hearth_store::key::KeyBackend;
use hearth_store::{OpenOptions, Store};
use hearth_text::tokens::Encoding;

/// The memories file in a profile folder.
pub const MEMORIES_FILE: &str = "memories.tsv";
/// The requests file in a profile folder.
pub const QUERIES_FILE: &str = "queries.tsv";
/// Generated memories about other people added by default.
pub const DEFAULT_DISTRACTORS: usize = 400;
/// A profile file larger than this is refused (a profile is a few hundred lines).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The window whose memory budget the block gets: a cloud model's, where the memory zone
/// reaches its cap (1,000 tokens, 003:248).
pub const BLOCK_WINDOW: u32 = 128_000;

/// One memory of the profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileMemory {
    pub key: String,
    pub kind: Kind,
    pub text: String,
}

/// A profile: its memories and the requests that each need one of them.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSet {
    pub memories: Vec<ProfileMemory>,
    /// (memory key — or keys joined by `+` for a request that needs several — , request)
    pub queries: Vec<(String, String)>,
}

/// What the evaluation found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileReport {
    /// Requests evaluated.
    pub n: usize,
    /// Fraction of requests whose memory was in the block.
    pub block_hit_rate: f64,
    /// Fraction whose memory ranked first in search.
    pub r1: f64,
    /// Fraction whose memory ranked in the top 5.
    pub r5: f64,
    /// Mean reciprocal rank in search (0 for a memory not listed).
    pub mrr: f64,
    /// Keys of the requests whose memory was not in the block, in file order.
    pub misses: Vec<String>,
    /// Requests that need more than one memory, and the fraction of them whose block held
    /// every one (`null` when the set has none).
    pub multi_n: usize,
    pub multi_block_hit_rate: Option<f64>,
    /// Every request's outcome, in file order.
    pub requests: Vec<RequestOutcome>,
    /// Profile memories and generated distractors in the store.
    pub memories: usize,
    pub distractors: usize,
    /// The block's token budget, and how many memories it carried on average.
    pub block_budget: u32,
    pub block_size_mean: f64,
    /// The embedding model used, or `null` when search was keyword-only.
    pub search_model: Option<String>,
    /// The facet tagger on this set.
    pub tagger: TaggerReport,
}

/// The deterministic facet tagger on the profile (no model): how often a request's facets
/// meet those of the memories it needs (the block's reserved room can only serve those),
/// how many memories it tags at all, and how well it finds what stopped being true — the
/// memories keyed `*-before`, beside their `*-now`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaggerReport {
    /// Fraction of requests sharing a facet with every memory they need.
    pub request_memory_agreement: f64,
    /// Fraction of the profile's memories with at least one facet.
    pub memories_tagged: f64,
    /// Of the `*-before` memories, the fraction tagged no longer true; of those tagged no
    /// longer true, the fraction keyed `*-before` (`null` when the set has none).
    pub past_recall: Option<f64>,
    pub past_precision: Option<f64>,
}

/// Measures the tagger on `set` (see [`TaggerReport`]).
pub fn tagger_report(set: &ProfileSet) -> TaggerReport {
    use hearth_memory::facets::{self, Facets};
    let tags: HashMap<&str, Facets> = set
        .memories
        .iter()
        .map(|m| (m.key.as_str(), facets::tag(&m.text, m.kind)))
        .collect();
    let agreeing = set
        .queries
        .iter()
        .filter(|(key, request)| {
            let asked = facets::of_request(request);
            key.split('+')
                .all(|k| tags.get(k).is_some_and(|f| f.shares_topic(asked)))
        })
        .count();
    let tagged = tags.values().filter(|f| f.0 & Facets::TOPICS != 0).count();
    let before: Vec<&str> = tags
        .keys()
        .copied()
        .filter(|k| k.ends_with("-before"))
        .collect();
    let marked: Vec<&str> = tags
        .iter()
        .filter(|(_, f)| f.has(Facets::PAST))
        .map(|(k, _)| *k)
        .collect();
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    TaggerReport {
        request_memory_agreement: agreeing as f64 / set.queries.len().max(1) as f64,
        memories_tagged: tagged as f64 / tags.len().max(1) as f64,
        past_recall: ratio(
            before
                .iter()
                .filter(|k| tags[**k].has(Facets::PAST))
                .count(),
            before.len(),
        ),
        past_precision: ratio(
            marked.iter().filter(|k| k.ends_with("-before")).count(),
            marked.len(),
        ),
    }
}

/// One request's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestOutcome {
    pub key: String,
    /// Whether its memory was in the block.
    pub in_block: bool,
    /// Its memory's rank in search (1 best), `null` when search did not list it.
    pub rank: Option<usize>,
    /// What search listed first when it was not the needed memory: the set's key for one
    /// of its memories, else the generated memory's text (for reading the misses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

fn bad(path: &Path, line: usize, what: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("{} line {line}: {what}", path.display()))
}

/// The non-blank, non-comment lines of `path` with their 1-based numbers, bounded.
fn lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let Some(text) = crate::read_bounded(path, MAX_FILE_BYTES)? else {
        return Err(Error::InvalidInput(format!(
            "{} is larger than {} MiB; a profile is a few hundred lines",
            path.display(),
            MAX_FILE_BYTES / (1024 * 1024)
        )));
    };
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r').to_owned()))
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .collect())
}

/// Reads `DIR/memories.tsv` and `DIR/queries.tsv`. A malformed line is refused with an
/// `invalid_input` error naming the file and the line.
pub fn load(dir: &Path) -> Result<ProfileSet> {
    let path = dir.join(MEMORIES_FILE);
    let mut memories = Vec::new();
    let mut keys = HashSet::new();
    for (n, line) in lines(&path)? {
        let fields: Vec<&str> = line.split('\t').collect();
        let [key, kind, text] = fields[..] else {
            return Err(bad(
                &path,
                n,
                format!(
                    "expected key<TAB>kind<TAB>text, found {} field(s)",
                    fields.len()
                ),
            ));
        };
        let (key, text) = (key.trim(), text.trim());
        if key.is_empty() || text.is_empty() {
            return Err(bad(&path, n, "the key and the text cannot be empty"));
        }
        let kind = Kind::parse(kind).map_err(|e| bad(&path, n, e))?;
        if !keys.insert(key.to_owned()) {
            return Err(bad(&path, n, format!("the key {key:?} is used twice")));
        }
        memories.push(ProfileMemory {
            key: key.to_owned(),
            kind,
            text: text.to_owned(),
        });
    }
    let path = dir.join(QUERIES_FILE);
    let mut queries = Vec::new();
    for (n, line) in lines(&path)? {
        let Some((key, request)) = line.split_once('\t') else {
            return Err(bad(&path, n, "expected key<TAB>request"));
        };
        let (key, request) = (key.trim(), request.trim());
        if request.is_empty() || request.contains('\t') {
            return Err(bad(&path, n, "expected key<TAB>request"));
        }
        for part in key.split('+') {
            if !keys.contains(part) {
                return Err(bad(
                    &path,
                    n,
                    format!("no memory has the key {part:?} in {MEMORIES_FILE}"),
                ));
            }
        }
        queries.push((key.to_owned(), request.to_owned()));
    }
    if memories.is_empty() || queries.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{} needs at least one memory and one request",
            dir.display()
        )));
    }
    Ok(ProfileSet { memories, queries })
}

/// Runs the evaluation in a fresh store under `work` (removed by the caller): the profile,
/// `distractors` generated memories about other people, every vector computed when there
/// is an `embedder` (else search is keyword-only, as in the app without a model).
pub fn run(
    set: &ProfileSet,
    distractors: usize,
    embedder: Option<&dyn Embedder>,
    work: &Path,
) -> Result<ProfileReport> {
    if distractors > MAX_DISTRACTORS {
        return Err(Error::InvalidInput(format!(
            "at most {MAX_DISTRACTORS} distractors"
        )));
    }
    let mut opts = OpenOptions::new(DataDir::new(work.join("profile")));
    opts.new_key_backend = KeyBackend::File;
    let memories = Memories::new(Store::open(&opts)?).with_vector_index();
    let mut ids: HashMap<String, String> = HashMap::new();
    for m in &set.memories {
        let stored = memories.add(NewMemory::manual(m.text.clone(), m.kind), Actor::Import)?;
        ids.insert(m.key.clone(), stored.id);
    }
    for (kind, text) in distractor_memories(distractors) {
        memories.add(NewMemory::manual(text, kind), Actor::Import)?;
    }
    if let Some(e) = embedder {
        while memories.embed_pending(e, 256)? > 0 {}
    }
    let budget = hearth_text::budget::Budgets::for_window(BLOCK_WINDOW).memory;
    let encoding = Encoding::for_model("gpt-4o-mini");
    let (mut hits, mut r1, mut r5, mut mrr, mut carried) = (0usize, 0usize, 0usize, 0.0, 0usize);
    let (mut multi_n, mut multi_hits) = (0usize, 0usize);
    let mut misses = Vec::new();
    let mut requests = Vec::new();
    for (key, request) in &set.queries {
        let vector = match embedder {
            Some(e) => Some(e.embed_query(&as_memories_say(request))?),
            None => None,
        };
        let v = vector
            .as_deref()
            .map(|v| (embedder.map(|e| e.model_id()).unwrap_or(""), v));
        let needed: Vec<&str> = key
            .split('+')
            .map(|k| ids.get(k).map(String::as_str).unwrap_or(""))
            .collect();
        let built = block::build(&memories, request, v, budget, encoding)?;
        carried += built.ids.len();
        let in_block = needed.iter().all(|id| built.ids.iter().any(|i| i == id));
        if in_block {
            hits += 1;
        } else {
            misses.push(key.clone());
        }
        if needed.len() > 1 {
            multi_n += 1;
            multi_hits += usize::from(in_block);
        }
        let listed = memories.search_listed(request, v)?;
        let rank = listed.iter().position(|c| needed.contains(&c.id.as_str()));
        if let Some(rank) = rank {
            r1 += usize::from(rank == 0);
            r5 += usize::from(rank < 5);
            mrr += 1.0 / (rank as f64 + 1.0);
        }
        let first = listed.first().filter(|_| rank != Some(0)).map(|c| {
            ids.iter()
                .find(|(_, id)| **id == c.id)
                .map(|(k, _)| k.clone())
                .unwrap_or_else(|| c.text.clone())
        });
        requests.push(RequestOutcome {
            key: key.clone(),
            in_block,
            rank: rank.map(|r| r + 1),
            first,
        });
    }
    let n = set.queries.len();
    let frac = |k: usize| k as f64 / n as f64;
    Ok(ProfileReport {
        n,
        block_hit_rate: frac(hits),
        r1: frac(r1),
        r5: frac(r5),
        mrr: mrr / n as f64,
        misses,
        multi_n,
        multi_block_hit_rate: (multi_n > 0).then(|| multi_hits as f64 / multi_n as f64),
        requests,
        memories: set.memories.len() + distractors,
        distractors,
        block_budget: budget,
        block_size_mean: frac(carried),
        search_model: embedder.map(|e| e.model_id().to_owned()),
        tagger: tagger_report(set),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, memories: &str, queries: &str) {
        std::fs::write(dir.join(MEMORIES_FILE), memories).expect("write");
        std::fs::write(dir.join(QUERIES_FILE), queries).expect("write");
    }

    #[test]
    fn a_malformed_line_is_refused_naming_the_file_and_the_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "# header\ndog\tfact\tUser has a dog.\n\ncat\tfact User has a cat.\n",
            "dog\tdog?\n",
        );
        let err = load(dir.path()).expect_err("two fields");
        assert_eq!(err.code(), "invalid_input");
        let text = err.to_string();
        assert!(
            text.contains("memories.tsv line 4: expected key<TAB>kind<TAB>text, found 2 field(s)"),
            "{text}"
        );

        write(dir.path(), "dog\tthought\tUser has a dog.\n", "dog\tdog?\n");
        let text = load(dir.path()).expect_err("kind").to_string();
        assert!(text.contains("memories.tsv line 1: unknown kind"), "{text}");

        write(
            dir.path(),
            "dog\tfact\tUser has a dog.\n",
            "dog\tdog?\ncat\tcat?\n",
        );
        let text = load(dir.path()).expect_err("key").to_string();
        assert!(
            text.contains("queries.tsv line 2: no memory has the key \"cat\""),
            "{text}"
        );

        write(dir.path(), "dog\tfact\tUser has a dog.\n", "dog?\n");
        let text = load(dir.path()).expect_err("no tab").to_string();
        assert!(
            text.contains("queries.tsv line 1: expected key<TAB>request"),
            "{text}"
        );
    }
}
