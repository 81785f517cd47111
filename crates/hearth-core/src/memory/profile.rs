//! Profile-style retrieval evaluation (`hearth eval memory --profile DIR`): the memories a
//! user's own assistant holds — short third-person facts about them, as extraction writes
//! them — among generated memories about other people, and natural requests that each
//! need one of them. For every request: is the keyed memory in the memory block a chat
//! turn would send (the real [`super::block::build`], the chat's budget), and where does
//! it rank in the search the Memory screen and `memory list --query` use?
//!
//! `DIR/memories.tsv`: `key<TAB>kind<TAB>text` lines; `DIR/queries.tsv`: `key<TAB>request`
//! lines. Blank lines and lines starting with `#` are skipped. LoCoMo (`eval.rs`) measures
//! dialogue turns and questions quoting them; this measures the distribution Hearth
//! serves day to day.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use super::block;
use super::{Actor, Kind, Memories, NewMemory};
use crate::embed::Embedder;
use crate::store::{OpenOptions, Store};
use crate::tokens::Encoding;
use crate::{DataDir, Error, KeyBackend, Result};

/// The memories file in a profile folder.
pub const MEMORIES_FILE: &str = "memories.tsv";
/// The requests file in a profile folder.
pub const QUERIES_FILE: &str = "queries.tsv";
/// Generated memories about other people added by default.
pub const DEFAULT_DISTRACTORS: usize = 400;
/// The most distractors the generator makes (all distinct).
pub const MAX_DISTRACTORS: usize = 50_000;
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
    /// (memory key, request)
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
}

/// One request's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestOutcome {
    pub key: String,
    /// Whether its memory was in the block.
    pub in_block: bool,
    /// Its memory's rank in search (1 best), `null` when search did not list it.
    pub rank: Option<usize>,
}

fn bad(path: &Path, line: usize, what: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("{} line {line}: {what}", path.display()))
}

/// The non-blank, non-comment lines of `path` with their 1-based numbers, bounded.
fn lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::io(path, e))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::InvalidInput(format!(
            "{} is larger than {} MiB; a profile is a few hundred lines",
            path.display(),
            MAX_FILE_BYTES / (1024 * 1024)
        )));
    }
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
        if !keys.contains(key) {
            return Err(bad(
                &path,
                n,
                format!("no memory has the key {key:?} in {MEMORIES_FILE}"),
            ));
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
    let memories = Memories::new(Store::open(&opts)?);
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
    let budget = crate::context::Budgets::for_window(BLOCK_WINDOW).memory;
    let encoding = Encoding::for_model("gpt-4o-mini");
    let (mut hits, mut r1, mut r5, mut mrr, mut carried) = (0usize, 0usize, 0usize, 0.0, 0usize);
    let mut misses = Vec::new();
    let mut requests = Vec::new();
    for (key, request) in &set.queries {
        let vector = match embedder {
            Some(e) => e.embed(&[request.as_str()])?.pop(),
            None => None,
        };
        let v = vector
            .as_deref()
            .map(|v| (embedder.map(|e| e.model_id()).unwrap_or(""), v));
        let id = ids.get(key).map(String::as_str).unwrap_or("");
        let built = block::build(&memories, request, v, budget, encoding)?;
        carried += built.ids.len();
        let in_block = built.ids.iter().any(|i| i == id);
        if in_block {
            hits += 1;
        } else {
            misses.push(key.clone());
        }
        let listed = memories.search_listed(request, v)?;
        let rank = listed.iter().position(|c| c.id == id);
        if let Some(rank) = rank {
            r1 += usize::from(rank == 0);
            r5 += usize::from(rank < 5);
            mrr += 1.0 / (rank as f64 + 1.0);
        }
        requests.push(RequestOutcome {
            key: key.clone(),
            in_block,
            rank: rank.map(|r| r + 1),
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
        requests,
        memories: set.memories.len() + distractors,
        distractors,
        block_budget: budget,
        block_size_mean: frac(carried),
        search_model: embedder.map(|e| e.model_id().to_owned()),
    })
}

const RELATIONS: &[&str] = &[
    "colleague",
    "neighbour",
    "friend",
    "cousin",
    "old schoolmate",
    "climbing partner",
    "former flatmate",
    "dentist",
    "hairdresser",
    "team lead's partner",
    "uncle",
    "aunt",
    "godson",
    "client",
    "landlady's son",
];

const NAMES: &[&str] = &[
    "Dmitri", "Sofia", "Kwame", "Hannah", "Rahul", "Ines", "Oliver", "Mei", "Lucas", "Amara",
    "Jonas", "Chloe", "Mateo", "Yuki", "Farah", "Pedro", "Greta", "Samir", "Nora", "Ivan", "Leila",
    "Tobias", "Aisha", "Bruno", "Elif", "Hugo", "Zara", "Kenji", "Marta", "Felix", "Lucia", "Omar",
    "Freya", "Diego", "Anya", "Rui", "Helga", "Tariq", "Clara", "Viktor", "Maya", "Emeka", "Sara",
    "Paulo", "Ingrid", "Nikos", "Beatriz", "Arjun", "Wen", "Carlos",
];

/// (kind, template with `{w}` for the person and `{a}`, `{b}` for slot values)
const TEMPLATES: &[(Kind, &str, &[&str], &[&str])] = &[
    (
        Kind::Fact,
        "{w} has a {a} named {b}.",
        &[
            "beagle",
            "golden retriever",
            "tabby cat",
            "parrot",
            "rabbit",
            "dachshund",
            "husky",
        ],
        &[
            "Biscuit", "Luna", "Max", "Mochi", "Pepper", "Rocky", "Ziggy", "Bolt",
        ],
    ),
    (
        Kind::Fact,
        "{w} is allergic to {a} and avoids {b}.",
        &[
            "shellfish",
            "pollen",
            "dust mites",
            "sesame",
            "latex",
            "wasp stings",
        ],
        &[
            "seafood restaurants",
            "parks in May",
            "old carpets",
            "bakeries",
            "hospitals",
            "picnics",
        ],
    ),
    (
        Kind::Fact,
        "{w} is training for the {a} marathon in {b}.",
        &["Berlin", "Porto", "Valencia", "Chicago", "Tokyo", "Seville"],
        &[
            "October", "November", "spring", "April", "December", "March",
        ],
    ),
    (
        Kind::Fact,
        "{w} works as a {a} in {b}.",
        &[
            "pharmacist",
            "civil engineer",
            "primary teacher",
            "chef",
            "pilot",
            "UX designer",
            "lawyer",
        ],
        &[
            "Madrid", "Coimbra", "Berlin", "Montreal", "Lyon", "Braga", "Dublin",
        ],
    ),
    (
        Kind::Fact,
        "{w} drives a {a} to {b} every day.",
        &[
            "red hatchback",
            "diesel van",
            "electric SUV",
            "vintage Beetle",
            "motorbike",
        ],
        &[
            "the hospital",
            "the factory",
            "the university",
            "the port",
            "the studio",
        ],
    ),
    (
        Kind::Preference,
        "{w} is vegan and loves {a} with {b}.",
        &[
            "lentil curry",
            "tofu stir-fry",
            "mushroom risotto",
            "falafel wraps",
            "bean chilli",
        ],
        &[
            "rice",
            "flatbread",
            "extra garlic",
            "lime",
            "roasted peppers",
        ],
    ),
    (
        Kind::Fact,
        "{w} plays the {a} in a {b} band.",
        &[
            "drums",
            "bass guitar",
            "saxophone",
            "violin",
            "trumpet",
            "accordion",
        ],
        &["jazz", "punk", "folk", "wedding", "brass", "rock"],
    ),
    (
        Kind::Fact,
        "{w} is learning {a} for a move to {b}.",
        &[
            "German", "Mandarin", "Spanish", "Italian", "Korean", "Dutch",
        ],
        &["Munich", "Shanghai", "Bogotá", "Milan", "Seoul", "Utrecht"],
    ),
    (
        Kind::Fact,
        "{w} has {a} children who go to school in {b}.",
        &["two", "three", "four", "twin"],
        &["Sintra", "Cascais", "Almada", "Oeiras", "Setúbal"],
    ),
    (
        Kind::Fact,
        "{w}'s birthday is on {a} {b}.",
        &["2", "9", "15", "21", "28", "30"],
        &["January", "April", "July", "August", "October", "December"],
    ),
    (
        Kind::Preference,
        "{w} hates {a} and always orders {b}.",
        &[
            "olives",
            "mushrooms",
            "raw onion",
            "blue cheese",
            "anchovies",
        ],
        &[
            "pizza margherita",
            "grilled chicken",
            "sushi",
            "pad thai",
            "steak",
        ],
    ),
    (
        Kind::Episode,
        "{w} went on holiday to {a} in {b}.",
        &[
            "Crete",
            "Iceland",
            "Morocco",
            "Vietnam",
            "the Azores",
            "Patagonia",
            "Scotland",
        ],
        &["June", "August", "winter", "September", "May", "the spring"],
    ),
    (
        Kind::Preference,
        "{w} recommends the novel {a} by {b}.",
        &[
            "The Remains of the Day",
            "Beloved",
            "Blindness",
            "Norwegian Wood",
            "Middlemarch",
        ],
        &[
            "a book club friend",
            "their sister",
            "a podcast host",
            "a teacher",
        ],
    ),
    (
        Kind::Fact,
        "{w} uses a {a} for {b}.",
        &[
            "MacBook Air",
            "gaming PC",
            "Chromebook",
            "iPad",
            "Linux desktop",
        ],
        &[
            "video editing",
            "school work",
            "accounting",
            "drawing",
            "writing music",
        ],
    ),
    (
        Kind::Fact,
        "{w} is saving to buy a house in {a} before {b}.",
        &[
            "the Algarve",
            "Brittany",
            "Tuscany",
            "Galicia",
            "the Alentejo",
        ],
        &[
            "retirement",
            "next summer",
            "the baby arrives",
            "2030",
            "their wedding",
        ],
    ),
    (
        Kind::Episode,
        "{w} had {a} surgery in {b}.",
        &["shoulder", "back", "wrist", "hip", "eye", "ankle"],
        &["January", "March", "the summer", "November", "spring"],
    ),
    (
        Kind::Fact,
        "{w} commutes by {a} and listens to {b} on the way.",
        &["metro", "bus", "ferry", "tram", "scooter"],
        &[
            "audiobooks",
            "true crime podcasts",
            "opera",
            "the news",
            "language lessons",
        ],
    ),
    (
        Kind::Fact,
        "{w} grows {a} in an allotment near {b}.",
        &[
            "potatoes",
            "courgettes",
            "strawberries",
            "chillies",
            "beans",
        ],
        &[
            "the railway",
            "the river",
            "the old mill",
            "the school",
            "the stadium",
        ],
    ),
    (
        Kind::Preference,
        "{w} only drinks {a}, never {b}.",
        &[
            "green tea",
            "black coffee",
            "sparkling water",
            "red wine",
            "craft beer",
        ],
        &["sugary drinks", "spirits", "decaf", "milk", "energy drinks"],
    ),
    (
        Kind::Fact,
        "{w} volunteers at {a} on {b}.",
        &[
            "an animal shelter",
            "a hospice",
            "a youth club",
            "a library",
            "a community garden",
        ],
        &[
            "Sundays",
            "Wednesday nights",
            "bank holidays",
            "weekday mornings",
        ],
    ),
    (
        Kind::Episode,
        "{w} is getting married in {a} in {b}.",
        &[
            "a vineyard",
            "Sintra",
            "a beach in Comporta",
            "Paris",
            "a castle",
        ],
        &["June", "September", "next spring", "the autumn"],
    ),
    (
        Kind::Fact,
        "{w} takes {a} for {b}.",
        &[
            "insulin",
            "blood-pressure tablets",
            "iron supplements",
            "an inhaler",
            "vitamin D",
        ],
        &[
            "diabetes",
            "hypertension",
            "anaemia",
            "asthma",
            "a deficiency",
        ],
    ),
    (
        Kind::Fact,
        "{w} speaks {a} at home and {b} at work.",
        &[
            "Ukrainian",
            "Cantonese",
            "Arabic",
            "Polish",
            "Hindi",
            "Swahili",
        ],
        &["English", "French", "Portuguese", "German"],
    ),
    (
        Kind::Preference,
        "{w} supports {a} and never misses {b}.",
        &["Benfica", "Sporting", "FC Porto", "Arsenal", "Real Madrid"],
        &["a derby", "a home match", "the cup final", "away games"],
    ),
];

/// `n` distinct generated memories about people in the user's life (never about the user),
/// on the same topics as a profile (pets, health, food, work, travel, hobbies), in a fixed
/// order: the same `n` gives the same memories on every machine.
pub fn distractor_memories(n: usize) -> Vec<(Kind, String)> {
    let mut out = Vec::with_capacity(n);
    let mut seen = HashSet::new();
    let mut i: u64 = 0;
    while out.len() < n.min(MAX_DISTRACTORS) && i < (MAX_DISTRACTORS as u64) * 8 {
        // A fixed mixing of the index (splitmix64), so the picks look unordered.
        let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        i += 1;
        let pick = |list_len: usize, shift: u32| ((z >> shift) % list_len as u64) as usize;
        let (kind, template, a, b) = TEMPLATES[pick(TEMPLATES.len(), 0)];
        let who = format!(
            "User's {} {}",
            RELATIONS[pick(RELATIONS.len(), 8)],
            NAMES[pick(NAMES.len(), 16)]
        );
        let text = template
            .replace("{w}", &who)
            .replace("{a}", a[pick(a.len(), 32)])
            .replace("{b}", b[pick(b.len(), 40)]);
        if seen.insert(text.clone()) {
            out.push((kind, text));
        }
    }
    out
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

    #[test]
    fn distractors_are_distinct_about_other_people_and_the_same_every_time() {
        let a = distractor_memories(2_000);
        assert_eq!(a.len(), 2_000);
        let texts: HashSet<&String> = a.iter().map(|(_, t)| t).collect();
        assert_eq!(texts.len(), 2_000, "distinct");
        assert!(a.iter().all(|(_, t)| t.starts_with("User's ")));
        assert_eq!(distractor_memories(50), a[..50].to_vec(), "a fixed order");
        assert_eq!(distractor_memories(10_000).len(), 10_000);
    }
}
