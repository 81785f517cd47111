//! The people in the user's life, by the roles the user names them by: "User is married to
//! Helena" makes Helena the one "my wife" means; "User has two children: Noor, who is nine,
//! and Felix, who is five" makes Noor and Felix "the kids". Requests name people by role;
//! memories name them by name — this is the bridge.
//!
//! Derived data: read again from the active memories whenever one is added, edited or goes
//! (a `meta` generation the memories table's triggers move, migration 0026), so a role is
//! gone when the memory that stated it is. Only the user's own words define a role: memories
//! learned from a file (a document) are never read here.

use std::collections::HashMap;
use std::sync::Mutex;

use rusqlite::Connection;

/// The `meta` key of the people generation.
pub const GENERATION_KEY: &str = "memory_people_generation";

/// A role, the words a memory states it with and the words a request names it by.
struct Role {
    name: &'static str,
    /// Nouns in a memory that state this role ("User's manager is …").
    stated: &'static [&'static str],
    /// Words in a request after "my", "our" or "the" that name it.
    named: &'static [&'static str],
    /// Part of the user's household: their memories are the user's life, never discounted
    /// as someone else's.
    household: bool,
}

const ROLES: &[Role] = &[
    Role {
        name: "spouse",
        stated: &[
            "wife", "husband", "spouse", "partner", "fiancé", "fiancée", "fiance", "fiancee",
        ],
        named: &[
            "wife", "husband", "spouse", "partner", "fiancé", "fiancée", "fiance", "fiancee",
        ],
        household: true,
    },
    Role {
        name: "children",
        stated: &["children", "kids", "child"],
        named: &[
            "children", "kids", "kid", "child", "eldest", "youngest", "oldest", "little",
        ],
        household: true,
    },
    Role {
        name: "daughter",
        stated: &["daughter", "daughters"],
        named: &["daughter", "daughters"],
        household: true,
    },
    Role {
        name: "son",
        stated: &["son", "sons"],
        named: &["son", "sons"],
        household: true,
    },
    Role {
        name: "parents",
        stated: &["parents"],
        named: &["parents", "folks"],
        household: true,
    },
    Role {
        name: "mother",
        stated: &["mother", "mum", "mom"],
        named: &["mother", "mum", "mom", "mam", "mama"],
        household: true,
    },
    Role {
        name: "father",
        stated: &["father", "dad"],
        named: &["father", "dad", "papa"],
        household: true,
    },
    Role {
        name: "sister",
        stated: &["sister"],
        named: &["sister"],
        household: true,
    },
    Role {
        name: "brother",
        stated: &["brother"],
        named: &["brother"],
        household: true,
    },
    Role {
        name: "manager",
        stated: &["manager", "boss", "supervisor"],
        named: &["manager", "boss", "supervisor"],
        household: false,
    },
    Role {
        name: "best friend",
        stated: &["closest friend", "best friend", "oldest friend"],
        named: &["best friend", "closest friend", "oldest friend"],
        household: false,
    },
    Role {
        name: "cat",
        stated: &["cat", "kitten"],
        named: &["cat", "kitten"],
        household: true,
    },
    Role {
        name: "dog",
        stated: &["dog", "puppy"],
        named: &["dog", "puppy"],
        household: true,
    },
];

/// When a request names a role nobody holds, the role whose people it means instead ("my
/// daughter" with only "the children" known; "my mum" with only "my parents").
const FALLBACK: &[(&str, &str)] = &[
    ("daughter", "children"),
    ("son", "children"),
    ("mother", "parents"),
    ("father", "parents"),
];

/// Who holds each role, from the user's own memories.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct People {
    /// Role name → the first names of the people who hold it, in the order stated.
    roles: HashMap<&'static str, Vec<String>>,
    /// Every first name a role was stated for (lower case) → whether it is household.
    known: HashMap<String, bool>,
}

fn role(name: &str) -> Option<&'static Role> {
    ROLES.iter().find(|r| r.name == name)
}

/// A name: one or two capitalised words ("Daniel Okafor"); its first word is what other
/// memories call the person by.
fn is_name_word(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
        && chars.all(|c| c.is_alphabetic() || c == '-' || c == '\'')
        && !matches!(word, "User" | "I" | "The" | "A" | "An")
}

/// The first names in `text`, a list as in "Greta and Piet", "Noor, who is nine, and Felix,
/// who is five" or "Daniel Okafor": capitalised words, each name's first word, stopping at
/// the end of the sentence's list (a lower-case word that is not part of a "who …" clause
/// or "and"). At most six.
fn names_in(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_clause = false;
    let mut after_name = false;
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-');
        let ends_clause = raw.ends_with(',') || raw.ends_with(':');
        if word.is_empty() {
            continue;
        }
        if in_clause {
            if ends_clause {
                in_clause = false;
            }
            if raw.ends_with('.') || raw.ends_with(';') {
                break;
            }
            continue;
        }
        if is_name_word(word) {
            if !after_name {
                names.push(word.to_owned());
            }
            // "Daniel Okafor": the second word belongs to the same name.
            after_name = !ends_clause;
        } else if word == "and" || word == "or" {
            after_name = false;
        } else if matches!(word, "who" | "whom" | "aged" | "both") && !names.is_empty() {
            in_clause = !ends_clause;
            after_name = false;
        } else {
            break;
        }
        if raw.ends_with('.') || raw.ends_with(';') || names.len() == 6 {
            break;
        }
    }
    names
}

/// Words that leave a relation the same ("older brother", "two children").
const MODIFIERS: &[&str] = &[
    "a", "an", "one", "two", "three", "four", "five", "older", "younger", "elder", "little", "big",
    "baby", "twin", "eldest", "youngest", "oldest",
];

/// The role a relation phrase states: a stated term, perhaps after modifiers ("older
/// sister", "two children") and before "at work" ("manager at work") — never a compound
/// ("climbing partner", "team lead's partner" are other people's relations to the user).
fn stated_role(phrase: &str) -> Option<&'static Role> {
    let phrase = phrase.to_lowercase();
    let mut words: Vec<&str> = phrase
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| c == ',' || c == ':' || c == '.'))
        .filter(|w| !w.is_empty())
        .collect();
    if words.ends_with(&["at", "work"]) {
        words.truncate(words.len() - 2);
    }
    let start = words.iter().take_while(|w| MODIFIERS.contains(w)).count();
    let term = words[start..].join(" ");
    ROLES.iter().find(|r| r.stated.contains(&term.as_str()))
}

/// The role "User has …" states: the phrase's last word, after any adjectives ("a grey
/// cat"), for the roles one "has" (children, siblings, pets; never a partner: "a climbing
/// partner" is someone else).
fn had_role(phrase: &str) -> Option<&'static Role> {
    let last = phrase.split_whitespace().last()?.to_lowercase();
    let role = ROLES.iter().find(|r| r.stated.contains(&last.as_str()))?;
    matches!(
        role.name,
        "children" | "daughter" | "son" | "sister" | "brother" | "cat" | "dog"
    )
    .then_some(role)
}

/// Words between "User's" and the verb that may make up a relation ("manager at work").
const MAX_RELATION_WORDS: usize = 4;

/// The role and people a memory states, if it is written as one of the ways extraction
/// states a relation:
/// - "User is married to Helena …" / "User is engaged to …";
/// - "User's manager (at work) is (called) Daniel Okafor." / "User's parents are Greta and Piet.";
/// - "User's parents, Greta and Piet, live …" (the names between commas);
/// - "User's sister Lotte is …" (a household role, then the name);
/// - "User has two children: Noor, who is nine, and Felix …" / "User has a grey cat called Biscuit."
pub fn relation(text: &str) -> Option<(&'static str, Vec<String>)> {
    let text = text.trim();
    if let Some(rest) = text
        .strip_prefix("User is married to ")
        .or_else(|| text.strip_prefix("User is engaged to "))
    {
        let names = names_in(rest);
        return (!names.is_empty()).then_some(("spouse", names));
    }
    if let Some(rest) = text.strip_prefix("User's ") {
        let words: Vec<&str> = rest.split(' ').collect();
        for (i, word) in words.iter().enumerate().take(MAX_RELATION_WORDS + 1) {
            let phrase = words[..i].join(" ");
            if word.ends_with(',') && i + 1 < words.len() {
                // "User's parents, Greta and Piet, live …"
                let phrase = words[..=i].join(" ");
                let role = stated_role(phrase.trim_end_matches(','))?;
                let names = names_in(&words[i + 1..].join(" "));
                return (!names.is_empty()).then_some((role.name, names));
            }
            if matches!(*word, "is" | "are") {
                let role = stated_role(&phrase)?;
                let mut after = &words[i + 1..];
                if after
                    .first()
                    .is_some_and(|w| matches!(*w, "called" | "named"))
                {
                    after = &after[1..];
                }
                let names = names_in(&after.join(" "));
                return (!names.is_empty()).then_some((role.name, names));
            }
            if is_name_word(word.trim_end_matches(|c: char| !c.is_alphanumeric())) {
                let role = stated_role(&phrase)?;
                // Only the household is stated this way ("User's sister Lotte"); "User's
                // colleague Rui" says who Rui is, not a role a request would name.
                if !role.household || i == 0 {
                    return None;
                }
                let names = names_in(&words[i..].join(" "));
                return (!names.is_empty()).then_some((role.name, names));
            }
            if word.chars().any(|c| c.is_uppercase()) {
                return None;
            }
        }
        return None;
    }
    if let Some(rest) = text.strip_prefix("User has ") {
        // "two children: Noor, …" / "a grey cat called Biscuit."
        let (phrase, names) = if let Some((phrase, list)) = rest.split_once(':') {
            (phrase.to_owned(), names_in(list))
        } else {
            let words: Vec<&str> = rest.split(' ').collect();
            let at = words
                .iter()
                .position(|w| matches!(*w, "called" | "named"))?;
            (words[..at].join(" "), names_in(&words[at + 1..].join(" ")))
        };
        if phrase.split(' ').count() > MAX_RELATION_WORDS {
            return None;
        }
        let role = had_role(&phrase)?;
        return (!names.is_empty()).then_some((role.name, names));
    }
    None
}

impl People {
    /// From memory texts (the user's own: never a document's).
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut people = People::default();
        for text in texts {
            let Some((name, names)) = relation(text) else {
                continue;
            };
            let household = role(name).is_some_and(|r| r.household);
            let held = people.roles.entry(name).or_default();
            for n in names {
                people
                    .known
                    .entry(n.to_lowercase())
                    .and_modify(|h| *h |= household)
                    .or_insert(household);
                if !held.contains(&n) {
                    held.push(n);
                }
            }
        }
        people
    }

    /// Whether no role is known.
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }

    /// The first names of the people a request names by role ("my wife", "the kids", "our
    /// cat", "my boss's", "my best friend"), lower case, without duplicates.
    pub fn named_in(&self, request: &str) -> Vec<String> {
        if self.roles.is_empty() {
            return Vec::new();
        }
        let lower = request.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’' && c != 'é')
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.trim_end_matches("'s")
                    .trim_end_matches("’s")
                    .trim_end_matches('\'')
            })
            .collect();
        let mut out: Vec<String> = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if !matches!(*w, "my" | "our" | "the") {
                continue;
            }
            // "my wife", "my little one", "my best friend", "our youngest".
            for len in [2usize, 1] {
                let Some(span) = words.get(i + 1..i + 1 + len) else {
                    continue;
                };
                let said = span.join(" ");
                let Some(r) = ROLES.iter().find(|r| r.named.contains(&said.as_str())) else {
                    continue;
                };
                let held = self.roles.get(r.name).or_else(|| {
                    FALLBACK
                        .iter()
                        .find(|(from, _)| *from == r.name)
                        .and_then(|(_, to)| self.roles.get(to))
                });
                for n in held.into_iter().flatten() {
                    let n = n.to_lowercase();
                    if !out.contains(&n) {
                        out.push(n);
                    }
                }
                break;
            }
        }
        out
    }

    /// Whether `first_name` (any case) holds a role of the user's household; `None` when no
    /// role is known for them.
    pub fn is_household(&self, first_name: &str) -> Option<bool> {
        self.known.get(&first_name.to_lowercase()).copied()
    }
}

/// The people of a store, read again when its generation moves. Only long-lived readers
/// gain from keeping one; a fresh one reads once.
#[derive(Debug, Default)]
pub struct PeopleCache {
    loaded: Mutex<Option<(String, std::sync::Arc<People>)>>,
}

impl PeopleCache {
    /// The people of the store `c` reads, from the active memories the user stated.
    pub fn get(&self, c: &Connection) -> rusqlite::Result<std::sync::Arc<People>> {
        let generation = hearth_store::meta_value(c, GENERATION_KEY)?.unwrap_or_default();
        let mut guard = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, people)) = guard.as_ref()
            && *at == generation
        {
            return Ok(people.clone());
        }
        // Relations are stated in the user's words: "User is …", "User's …", "User has …".
        let mut stmt = c.prepare_cached(
            "SELECT text FROM memories WHERE status = 'active' AND source_kind != 'file'
               AND text LIKE 'User%'",
        )?;
        let texts: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let people = std::sync::Arc::new(People::from_texts(texts.iter().map(String::as_str)));
        *guard = Some((generation, people.clone()));
        Ok(people)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ways_extraction_states_a_relation_give_the_role_and_the_names() {
        type Stated<'a> = Option<(&'a str, &'a [&'a str])>;
        let cases: &[(&str, Stated)] = &[
            (
                "User is married to Helena, who teaches chemistry at a secondary school.",
                Some(("spouse", &["Helena"])),
            ),
            (
                "User is married to Ana, who works as a paediatric nurse.",
                Some(("spouse", &["Ana"])),
            ),
            (
                "User has two children: Noor, who is nine, and Felix, who is five.",
                Some(("children", &["Noor", "Felix"])),
            ),
            (
                "User's manager at work is Daniel Okafor.",
                Some(("manager", &["Daniel"])),
            ),
            (
                "User's manager is Priya, who prefers updates in writing.",
                Some(("manager", &["Priya"])),
            ),
            (
                "User's parents, Greta and Piet, live in Utrecht.",
                Some(("parents", &["Greta", "Piet"])),
            ),
            (
                "User's sister Lotte is a nurse in Rotterdam.",
                Some(("sister", &["Lotte"])),
            ),
            (
                "User's daughter Lena is six years old.",
                Some(("daughter", &["Lena"])),
            ),
            (
                "User's closest friend is Yusuf, whom they met at university.",
                Some(("best friend", &["Yusuf"])),
            ),
            (
                "User has a grey cat called Biscuit.",
                Some(("cat", &["Biscuit"])),
            ),
            // Not relations a request names by role.
            ("User's colleague Rui is allergic to peanuts.", None),
            ("User's neighbour Marta is allergic to shellfish.", None),
            ("User lives in Lisbon, in the Alfama neighbourhood.", None),
            ("User's brother-in-law is visiting.", None),
            ("Helena's brother Tiago cannot eat walnuts.", None),
            ("User has a border collie named Pixel.", None),
            ("User's manager at Siemens was Frau Schulz.", None),
            ("User's climbing partner Zara takes an inhaler.", None),
            ("User's team lead's partner Wen volunteers.", None),
            ("User has a climbing partner called Zara.", None),
            (
                "User's older brother Marco is a pilot.",
                Some(("brother", &["Marco"])),
            ),
        ];
        for (text, want) in cases {
            let got = relation(text);
            let want = want.map(|(r, n)| (r, n.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn a_request_naming_a_role_names_its_people() {
        let people = People::from_texts([
            "User is married to Helena, who teaches chemistry.",
            "User has two children: Noor, who is nine, and Felix, who is five.",
            "User's parents, Greta and Piet, live in Utrecht.",
            "User's manager at work is Daniel Okafor.",
            "User's closest friend is Yusuf.",
            "User has a grey cat called Biscuit.",
            "User's colleague Rui is allergic to peanuts.",
        ]);
        let named = |r: &str| people.named_in(r);
        assert_eq!(
            named("Can I make paella for my wife's birthday?"),
            ["helena"]
        );
        assert_eq!(
            named("Plan a dinner for my wife and my best friend."),
            ["helena", "yusuf"]
        );
        assert_eq!(
            named("How long is the ride to the kids' school?"),
            ["noor", "felix"]
        );
        // No daughter is known by that role: the children are who "my daughter" can be.
        assert_eq!(named("Tips for my daughter's reading?"), ["noor", "felix"]);
        assert_eq!(
            named("What can I serve when my dad comes over?"),
            ["greta", "piet"]
        );
        assert_eq!(named("Email my boss about Friday."), ["daniel"]);
        assert_eq!(named("Can I give the cat some tuna?"), ["biscuit"]);
        assert!(named("Can I have the baklava?").is_empty());
        // A colleague is not a role a request resolves.
        assert!(named("What can my colleague eat?").is_empty());
        assert_eq!(people.is_household("Helena"), Some(true));
        assert_eq!(people.is_household("daniel"), Some(false));
        assert_eq!(people.is_household("Rui"), None);
    }
}
