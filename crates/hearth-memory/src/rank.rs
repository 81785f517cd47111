//! Memory's own ranking rules over the one hybrid ranker ([`crate::rank`], which folder
//! search shares): who a memory is about ([`Subject`]), the weight of its context, and the
//! block's candidate pool and per-side reserve, so that neither side starves the other.
//! docs/decisions/0008-memory-ranking.md has the numbers that chose them.

use super::block::{CANDIDATES, Candidate};
use super::people::People;
use hearth_text::rank::experiment;
pub use hearth_text::rank::{Fusion, RRF_K, VECTOR_WEIGHT};

/// Subject awareness: a request in the first person is about the user's life. A memory
/// extraction wrote about someone else by name — "User's colleague Dmitri has a beagle" —
/// is worth less to it unless the request names that person or that relation ("my
/// colleague", "Dmitri"). The user's household (partner, children, parents, siblings) is
/// the user's life and is never discounted; nor is a memory about a role without a name
/// ("User's manager is Priya" is a fact about the user's work).
///
/// With the people of the user's life known ([`People`]: "User is married to Helena"), a
/// request that names a role names its people ("my wife" names Helena); a memory led by a
/// name ("Helena is allergic to shellfish") is about that person: named, it counts more;
/// of the household, it is the user's life; someone else the user has named by a role
/// ("Daniel had back surgery", Daniel the manager), it is discounted like any other person's.
/// A memory about someone's relative ("Helena's brother Tiago cannot eat walnuts") is about
/// another person even when the request names the first one.
#[derive(Debug, Clone)]
pub struct Subject {
    words: std::collections::HashSet<String>,
    weight: f64,
    named: f64,
    people: std::sync::Arc<People>,
    /// The first names of the people the request names by role ("my son": Felix): they
    /// name the user's Felix, not "User's cousin Felix".
    by_role: std::collections::HashSet<String>,
}

/// Words for a person's relatives and pets besides the household words ([`HOUSEHOLD`]):
/// "<Name>'s <one of these> …" is about someone other than <Name>.
const OTHER_RELATIONS: &[&str] = &[
    "sons",
    "daughters",
    "twins",
    "friend",
    "friends",
    "colleague",
    "colleagues",
    "boss",
    "manager",
    "family",
    "cat",
    "dog",
    "uncle",
    "aunt",
    "cousin",
    "neighbour",
    "neighbor",
];

/// What a memory about a person the request names is worth beside one that is not (a
/// request about Caroline: what Caroline said, "User's colleague Caroline …"). Chosen on
/// LoCoMo's tuning conversations: see docs/decisions/0008-memory-ranking.md. `HEARTH_NAMED_WEIGHT` overrides it.
pub const NAMED_WEIGHT: f64 = 1.5;

/// What a memory about another named person is worth to a request that does not name them
/// (chosen on the profile set: see docs/decisions/0008-memory-ranking.md). `HEARTH_SUBJECT_WEIGHT` overrides it
/// for experiments (1 turns the rule off).
pub const OTHER_PERSON_WEIGHT: f64 = 0.4;

const HOUSEHOLD: &[&str] = &[
    "partner",
    "wife",
    "husband",
    "spouse",
    "fiancé",
    "fiancée",
    "fiance",
    "fiancee",
    "boyfriend",
    "girlfriend",
    "daughter",
    "son",
    "child",
    "children",
    "kid",
    "kids",
    "baby",
    "mother",
    "mum",
    "mom",
    "father",
    "dad",
    "parents",
    "brother",
    "sister",
    "stepson",
    "stepdaughter",
    "grandmother",
    "grandfather",
    "grandma",
    "grandpa",
];

const NOT_RELATION: &[&str] = &[
    "is", "was", "are", "were", "has", "had", "have", "does", "did", "likes", "lives", "works",
    "prefers", "wants", "and", "or", "who", "which", "the", "a", "an", "of", "in", "on", "at",
    "to", "for", "with", "from", "by", "not", "never", "always",
];

/// Words that leave a household relation one ("older brother", "little sister").
const HOUSEHOLD_MODIFIERS: &[&str] = &[
    "older", "younger", "elder", "little", "big", "baby", "twin", "eldest", "youngest",
];

/// The user's own household: one household word, perhaps with a modifier. Not someone
/// else's ("landlady's son", "team lead's partner") nor a compound ("climbing partner",
/// "business partner").
fn is_household(relation: &str) -> bool {
    let mut words = relation.split(' ').filter(|w| !w.is_empty()).peekable();
    while words
        .peek()
        .is_some_and(|w| HOUSEHOLD_MODIFIERS.contains(w))
    {
        words.next();
    }
    match (words.next(), words.next()) {
        (Some(head), None) => HOUSEHOLD.contains(&head),
        _ => false,
    }
}

impl Subject {
    /// The request's words (lower case), to see whom it names.
    pub fn of_query(query: &str) -> Self {
        Self::of_query_with(query, Default::default())
    }

    /// The same, with the people of the user's life: a role the request names counts as
    /// naming its people.
    pub fn of_query_with(query: &str, people: std::sync::Arc<People>) -> Self {
        static WEIGHT: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
        let weight = *WEIGHT.get_or_init(|| {
            experiment(
                "HEARTH_SUBJECT_WEIGHT",
                |w: &f64| w.is_finite() && (0.0..=1.0).contains(w),
                OTHER_PERSON_WEIGHT,
            )
        });
        static NAMED: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
        let named = *NAMED.get_or_init(|| {
            experiment(
                "HEARTH_NAMED_WEIGHT",
                |w: &f64| w.is_finite() && (1.0..=10.0).contains(w),
                NAMED_WEIGHT,
            )
        });
        let words: std::collections::HashSet<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        Subject {
            named,
            words,
            by_role: people.named_in(query).into_iter().collect(),
            weight,
            people,
        }
    }

    /// The relation and the name of the other person a memory is about, if it is written
    /// as "User's <relation> <Name> …" with a relation outside the household.
    pub fn other_person(text: &str) -> Option<(&str, &str)> {
        let rest = text.strip_prefix("User's ")?;
        let mut relation_end = 0;
        for (i, word) in rest.split(' ').enumerate() {
            if word.starts_with(|c: char| c.is_uppercase()) {
                if i == 0 {
                    return None;
                }
                let relation = rest[..relation_end].trim_end();
                if is_household(relation) {
                    return None;
                }
                let name = word.trim_end_matches(|c: char| !c.is_alphanumeric());
                return Some((relation, name));
            }
            // A relation is a few lower-case nouns ("old schoolmate"); a verb or a function
            // word means the sentence is about the role ("User's manager is Priya").
            if i >= 3
                || NOT_RELATION.contains(&word)
                || !word
                    .chars()
                    .all(|c| c.is_lowercase() || c == '-' || c == '\'')
            {
                return None;
            }
            relation_end += word.len() + 1;
        }
        None
    }

    /// The speaker of a memory written as a transcript line ("Caroline: I went …"): one
    /// or two capitalised words before a colon at its start.
    pub fn speaker(text: &str) -> Option<&str> {
        let (label, rest) = text.split_once(':')?;
        let words: Vec<&str> = label.split(' ').collect();
        let named = (1..=2).contains(&words.len())
            && words.iter().all(|w| {
                w.starts_with(|c: char| c.is_uppercase())
                    && w.chars()
                        .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
            });
        (named && rest.starts_with(' ') && label != "User").then_some(label)
    }

    /// The person a memory is led by, if it is written "<Name> <verb> …" ("Helena is
    /// allergic …", "Noor and Felix go …": the first) — or, as the second value, when it is
    /// about a relative of theirs ("Helena's brother Tiago …", "Marta's twins …"), that
    /// relative's name if given.
    pub fn led_by(text: &str) -> Option<(&str, Option<Option<&str>>)> {
        let mut words = text.split(' ');
        let first = words.next()?;
        let (name, possessive) = match first.strip_suffix("'s").or(first.strip_suffix("’s")) {
            Some(name) => (name, true),
            None => (first, false),
        };
        let capitalised = name.chars().next().is_some_and(char::is_uppercase)
            && name.len() > 1
            && name.chars().all(|c| c.is_alphabetic() || c == '-');
        if !capitalised || matches!(name, "User" | "The" | "A" | "An" | "This" | "That" | "It") {
            return None;
        }
        if !possessive {
            return Some((name, None));
        }
        let relation = words.next()?;
        if !HOUSEHOLD.contains(&relation) && !OTHER_RELATIONS.contains(&relation) {
            // "Helena's birthday is …": about Helena.
            return Some((name, None));
        }
        let relative = words
            .next()
            .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| w.chars().next().is_some_and(char::is_uppercase));
        Some((name, Some(relative)))
    }

    /// Whether the request names `person` (every word of the name).
    fn names(&self, person: &str) -> bool {
        person
            .split(' ')
            .all(|w| self.words.contains(&w.to_lowercase()))
    }

    /// Whether the request names `person` by name or by a role they hold.
    fn names_or_means(&self, person: &str) -> bool {
        self.names(person) || self.by_role.contains(&person.to_lowercase())
    }

    /// [`NAMED_WEIGHT`] for a memory about someone the request names; the discount for a
    /// memory about another person the request does not name; else 1.
    pub fn weight(&self, text: &str) -> f64 {
        if !self.people.is_empty()
            && let Some((name, relative)) = Self::led_by(text)
        {
            return match relative {
                // About someone's relative: named by the request, or someone else.
                Some(relative) if relative.is_some_and(|r| self.names(r)) => self.named,
                Some(_) => self.weight,
                None if self.names_or_means(name) => self.named,
                None => match self.people.is_household(name) {
                    Some(false) => self.weight,
                    // The household's, or someone no memory of the user's gives a role.
                    _ => 1.0,
                },
            };
        }
        let other = Self::other_person(text);
        if let Some(person) = other.map(|(_, name)| name).or_else(|| Self::speaker(text))
            && self.names(person)
        {
            return self.named;
        }
        match other {
            // Named in the request: returned above (`names`).
            Some((relation, _))
                if !relation
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w.len() >= 3 && self.words.contains(&w.to_lowercase())) =>
            {
                self.weight
            }
            _ => 1.0,
        }
    }
}

/// The vector side's weight in hybrid memory search for a request in the user's own words
/// ("How often should I brush my dog?"; [`crate::phrasing::speaks_as_user`]): such requests
/// say what they need the way a person does, not the way the memory is written ("User has
/// a border collie"), so meaning counts more than shared words. A question about others
/// ("When did Caroline go to the support group?") keeps [`VECTOR_WEIGHT`], where words are
/// the evidence. Chosen on the profile sets at 400 others: see
/// docs/decisions/0025-memory-at-scale.md. `HEARTH_FIRST_PERSON_VECTOR_WEIGHT` overrides it.
pub const FIRST_PERSON_VECTOR_WEIGHT: f64 = 2.0;

/// The fusion for `request`: [`Fusion::current`], with the vector side weighted
/// [`FIRST_PERSON_VECTOR_WEIGHT`] when the request speaks as the user (RRF only).
pub fn fusion_for(request: &str) -> Fusion {
    static W: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    let fusion = Fusion::current();
    match fusion {
        Fusion::Rrf { .. } if crate::phrasing::speaks_as_user(request) => Fusion::Rrf {
            vector_weight: *W.get_or_init(|| {
                experiment(
                    "HEARTH_FIRST_PERSON_VECTOR_WEIGHT",
                    |w: &f64| w.is_finite() && (0.0..=100.0).contains(w),
                    FIRST_PERSON_VECTOR_WEIGHT,
                )
            }),
        },
        other => other,
    }
}

/// How many candidates each side offers the block (the union is up to twice this).
/// Among 10,000 memories mostly about other people, 50 a side were all theirs.
/// `HEARTH_BLOCK_POOL` overrides it for experiments.
pub const BLOCK_POOL: usize = 100;

pub fn block_pool() -> usize {
    static POOL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *POOL.get_or_init(|| {
        experiment(
            "HEARTH_BLOCK_POOL",
            |w| (CANDIDATES..=2_000).contains(w),
            BLOCK_POOL,
        )
    })
}

/// The weight of a memory's context beside its own text in BM25 (FTS5 column weights).
/// `HEARTH_CONTEXT_WEIGHT` overrides it for experiments.
pub const CONTEXT_WEIGHT: f64 = 0.5;

/// FTS5's rank function for memories: BM25 with the columns' weights (text, context).
pub fn bm25_weights() -> &'static str {
    static W: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    W.get_or_init(|| {
        let w = experiment(
            "HEARTH_CONTEXT_WEIGHT",
            |w: &f64| w.is_finite() && (0.0..=10.0).contains(w),
            CONTEXT_WEIGHT,
        );
        format!("bm25(1.0, {w})")
    })
}

/// Whether a memory's vector is made from its context too. Off: on LoCoMo's tuning
/// conversations it added 0.004 to recall@10 (0.754 → 0.758) for three times the text to
/// embed. `HEARTH_CONTEXT_VECTORS=1` turns it on for experiments.
pub fn context_in_vectors() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| experiment("HEARTH_CONTEXT_VECTORS", |_: &u8| true, 0) != 0)
}

/// How many of each side's best candidates (closest in meaning; best by words) go into
/// the block before the fused order fills the rest, so neither side starves the other.
/// `HEARTH_BLOCK_RESERVE` overrides it for experiments (0 turns it off).
pub const BLOCK_RESERVE: usize = 20;

pub fn block_reserve() -> usize {
    static RESERVE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *RESERVE.get_or_init(|| experiment("HEARTH_BLOCK_RESERVE", |w| *w <= CANDIDATES, BLOCK_RESERVE))
}

/// Moves the `n` closest in meaning and the `n` best by words (discounted like the fused
/// relevance, see [`Subject`]) to the front, each group keeping the score order.
pub fn reserve_each_side(rest: &mut Vec<Candidate>, n: usize) {
    if n == 0 {
        return;
    }
    // Each side's ranks are on the discounted evidence already (`block::rank_discounted`).
    let mut by_meaning: Vec<(usize, usize)> = rest
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.vector_rank.map(|r| (i, r)))
        .collect();
    by_meaning.sort_by_key(|(_, r)| *r);
    let mut by_words: Vec<(usize, usize)> = rest
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.lexical_rank.map(|r| (i, r)))
        .collect();
    by_words.sort_by_key(|(_, r)| *r);
    let mut front = vec![false; rest.len()];
    for (i, _) in by_meaning.iter().take(n) {
        front[*i] = true;
    }
    for (i, _) in by_words.iter().take(n) {
        front[*i] = true;
    }
    let (mut first, mut later) = (Vec::new(), Vec::new());
    for (i, c) in rest.drain(..).enumerate() {
        if front[i] {
            first.push(c)
        } else {
            later.push(c)
        }
    }
    first.extend(later);
    *rest = first;
}
