//! Facets: the parts of a life a memory touches (health and diet, family, home, work, money,
//! travel and documents, schedule, leisure, style of answers) and three marks of what it is —
//! a safety fact, about another person, no longer true. Tagged deterministically (word
//! lists, no model call) when a memory is written, kept in `memories.facets` (a bit set;
//! `NULL` until [`super::Memories::tag_untagged`] reaches a memory written before migration
//! 27). A request maps to facets by the same words, so the block can keep room for the
//! user's own memories of the parts of life the request is about before anything else
//! competes (docs/decisions/0025-memory-at-scale.md).

use super::Kind;

/// A set of facets and marks (the bits of `memories.facets`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Facets(pub u32);

impl Facets {
    pub const HEALTH: u32 = 1;
    pub const FAMILY: u32 = 1 << 1;
    pub const HOME: u32 = 1 << 2;
    pub const WORK: u32 = 1 << 3;
    pub const MONEY: u32 = 1 << 4;
    pub const TRAVEL: u32 = 1 << 5;
    pub const SCHEDULE: u32 = 1 << 6;
    pub const LEISURE: u32 = 1 << 7;
    pub const STYLE: u32 = 1 << 8;
    /// The parts of life (every facet that is not a mark).
    pub const TOPICS: u32 = (1 << 9) - 1;
    /// An allergy, intolerance, medication or condition ([`super::safety::is_safety_fact`]).
    pub const SAFETY: u32 = 1 << 16;
    /// About another named person ("User's colleague Dmitri …"), not the user's own.
    pub const OTHER: u32 = 1 << 17;
    /// No longer true: its words say it ended ("until March 2026", "used to"), or a newer
    /// memory the user's own words gave replaced it (`memories.superseded_by`).
    pub const PAST: u32 = 1 << 18;

    /// The facets' names, as exported and shown (`health`, `family`, …; marks excluded).
    pub const NAMES: [(u32, &'static str); 9] = [
        (Self::HEALTH, "health"),
        (Self::FAMILY, "family"),
        (Self::HOME, "home"),
        (Self::WORK, "work"),
        (Self::MONEY, "money"),
        (Self::TRAVEL, "travel"),
        (Self::SCHEDULE, "schedule"),
        (Self::LEISURE, "leisure"),
        (Self::STYLE, "style"),
    ];

    pub fn has(self, bits: u32) -> bool {
        self.0 & bits != 0
    }

    /// The topic facets in common with `other`.
    pub fn shares_topic(self, other: Facets) -> bool {
        self.0 & other.0 & Self::TOPICS != 0
    }

    /// The names of its topic facets, in [`Facets::NAMES`] order.
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(bit, _)| self.0 & bit != 0)
            .map(|(_, n)| *n)
            .collect()
    }

    /// The topic facets named (unknown names are ignored: a file cannot add a mark).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Facets {
        Facets(
            names
                .iter()
                .filter_map(|n| Self::NAMES.iter().find(|(_, m)| *m == n.as_ref()))
                .fold(0, |acc, (bit, _)| acc | bit),
        )
    }
}

/// The index of the user's own safety facts (migration 27) covers the rows where this holds;
/// a query must say it in exactly these words to use it.
pub const OWN_SAFETY_SQL: &str = "(m.facets & 196608) = 65536";

/// Words (lowercase, whole) of each topic; a memory or request with one of them touches it.
const WORDS: &[(u32, &[&str])] = &[
    (
        Facets::HEALTH,
        &[
            "health",
            "healthy",
            "doctor",
            "gp",
            "dentist",
            "hospital",
            "clinic",
            "pharmacy",
            "medicine",
            "medication",
            "pill",
            "pills",
            "prescription",
            "prescribed",
            "allergic",
            "allergy",
            "allergies",
            "intolerant",
            "asthma",
            "inhaler",
            "diabetes",
            "diabetic",
            "insulin",
            "blood",
            "disc",
            "back",
            "knee",
            "injury",
            "pain",
            "migraine",
            "sick",
            "ill",
            "illness",
            "surgery",
            "therapy",
            "therapist",
            "pregnant",
            "vaccine",
            "sleep",
            "diet",
            "vegan",
            "vegetarian",
            "food",
            "eat",
            "eats",
            "ate",
            "eating",
            "meal",
            "meals",
            "dinner",
            "lunch",
            "breakfast",
            "dessert",
            "snack",
            "snacks",
            "cook",
            "cooking",
            "recipe",
            "recipes",
            "drink",
            "drinks",
            "coffee",
            "espresso",
            "tea",
            "alcohol",
            "wine",
            "beer",
            "sugar",
            "gluten",
            "lactose",
            "dairy",
            "nuts",
            "peanut",
            "peanuts",
            "shellfish",
            "seafood",
            "fish",
            "meat",
            "low-carb",
            "mediterranean",
            "restaurant",
            "café",
            "cafe",
            "vet",
            "lift",
            "lifting",
            "heavy",
        ],
    ),
    (
        Facets::FAMILY,
        &[
            "family",
            "wife",
            "husband",
            "partner",
            "spouse",
            "married",
            "children",
            "child",
            "kids",
            "kid",
            "son",
            "sons",
            "daughter",
            "daughters",
            "baby",
            "mum",
            "mom",
            "mother",
            "dad",
            "father",
            "parents",
            "parent",
            "sister",
            "brother",
            "siblings",
            "grandmother",
            "grandfather",
            "grandma",
            "grandpa",
            "aunt",
            "uncle",
            "cousin",
            "niece",
            "nephew",
            "eldest",
            "youngest",
            "godparent",
            "in-laws",
            "school",
            "nursery",
            "cat",
            "dog",
            "pet",
            "birthday",
            "anniversary",
        ],
    ),
    (
        Facets::HOME,
        &[
            "home",
            "house",
            "flat",
            "apartment",
            "live",
            "lives",
            "lived",
            "living",
            "moved",
            "move",
            "moving",
            "neighbourhood",
            "neighborhood",
            "street",
            "rent",
            "rents",
            "landlord",
            "landlady",
            "mortgage",
            "garden",
            "terrace",
            "balcony",
            "kitchen",
            "garage",
            "furniture",
            "bookshelf",
            "ikea",
            "address",
            "neighbour",
            "neighbor",
            "near",
            "nearby",
            "local",
        ],
    ),
    (
        Facets::WORK,
        &[
            "work",
            "works",
            "worked",
            "working",
            "job",
            "jobs",
            "career",
            "office",
            "boss",
            "manager",
            "colleague",
            "colleagues",
            "team",
            "company",
            "employer",
            "client",
            "clients",
            "meeting",
            "meetings",
            "project",
            "projects",
            "start-up",
            "startup",
            "salary",
            "promotion",
            "interview",
            "cv",
            "resume",
            "bio",
            "linkedin",
            "deadline",
            "business",
            "head",
            "operations",
            "notion",
            "laptop",
            "email",
            "emails",
            "report",
            "update",
            "updates",
            "presentation",
            "conference",
        ],
    ),
    (
        Facets::MONEY,
        &[
            "money",
            "pay",
            "paid",
            "payday",
            "salary",
            "rent",
            "mortgage",
            "tax",
            "taxes",
            "budget",
            "bank",
            "savings",
            "save",
            "saving",
            "invest",
            "investment",
            "pension",
            "price",
            "cost",
            "costs",
            "expensive",
            "cheap",
            "afford",
            "euros",
            "euro",
            "dollars",
            "pounds",
            "loan",
            "debt",
            "bill",
            "bills",
            "insurance",
            "spend",
            "spending",
            "subscription",
        ],
    ),
    (
        Facets::TRAVEL,
        &[
            "travel",
            "travelling",
            "traveling",
            "trip",
            "trips",
            "flight",
            "flights",
            "fly",
            "flying",
            "airport",
            "holiday",
            "holidays",
            "vacation",
            "hotel",
            "passport",
            "visa",
            "abroad",
            "train",
            "trains",
            "luggage",
            "ticket",
            "tickets",
            "journey",
            "commute",
            "car",
            "cars",
            "drive",
            "drives",
            "drove",
            "driving",
            "bike",
            "bikes",
            "cycle",
            "cycling",
            "metro",
            "bus",
            "tram",
            "taxi",
            "transport",
            "ride",
            "licence",
            "license",
        ],
    ),
    (
        Facets::SCHEDULE,
        &[
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
            "mondays",
            "tuesdays",
            "wednesdays",
            "thursdays",
            "fridays",
            "saturdays",
            "sundays",
            "weekend",
            "weekends",
            "morning",
            "mornings",
            "evening",
            "evenings",
            "afternoon",
            "tonight",
            "tomorrow",
            "today",
            "week",
            "weekly",
            "daily",
            "calendar",
            "schedule",
            "appointment",
            "when",
            "time",
            "am",
            "pm",
            "lesson",
            "lessons",
            "class",
            "routine",
            "bedtime",
            "bed",
            "overtired",
            "early",
            "late",
            "starts",
            "stops",
        ],
    ),
    (
        Facets::LEISURE,
        &[
            "sport",
            "sports",
            "football",
            "yoga",
            "gym",
            "run",
            "running",
            "marathon",
            "race",
            "swim",
            "swimming",
            "club",
            "music",
            "guitar",
            "piano",
            "book",
            "books",
            "reading",
            "film",
            "films",
            "movie",
            "movies",
            "game",
            "games",
            "hobby",
            "hobbies",
            "paint",
            "painting",
            "hike",
            "hiking",
            "climbing",
            "box",
            "boxing",
            "concert",
            "museum",
            "gardening",
            "photography",
            "knitting",
        ],
    ),
    (
        Facets::STYLE,
        &[
            "answer",
            "answers",
            "reply",
            "replies",
            "response",
            "responses",
            "tone",
            "formal",
            "informal",
            "concise",
            "brief",
            "bullet",
            "bullets",
            "verbose",
            "emoji",
            "emojis",
            "summary",
            "summaries",
            "explain",
            "explanations",
            "units",
            "metric",
        ],
    ),
];

/// Phrases (lowercase) that touch a topic where no single word does.
const PHRASES: &[(u32, &str)] = &[
    (Facets::TRAVEL, "get to "),
    (Facets::TRAVEL, "get there"),
    (Facets::TRAVEL, "get around"),
    (Facets::TRAVEL, "gets around"),
];

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '\'')
        .map(|w| w.trim_matches(|c| c == '\'' || c == '-'))
        .map(|w| w.strip_suffix("'s").unwrap_or(w))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The topics `text`'s words touch.
fn topics(text: &str) -> u32 {
    let mut bits = 0;
    for w in words(text) {
        for (bit, list) in WORDS {
            if bits & bit == 0 && list.contains(&w.as_str()) {
                bits |= bit;
            }
        }
    }
    let lower = text.to_lowercase();
    for (bit, phrase) in PHRASES {
        if lower.contains(phrase) {
            bits |= bit;
        }
    }
    bits
}

/// How much `text` is about the topics of `asked`: how many of its words belong to them
/// ("head of operations at a start-up" is more about work than "listens to podcasts on the
/// way to work").
pub fn strength(text: &str, asked: Facets) -> usize {
    words(text)
        .filter(|w| {
            WORDS
                .iter()
                .any(|(bit, list)| asked.0 & bit != 0 && list.contains(&w.as_str()))
        })
        .count()
}

/// A request's facets: the topics its words touch, and health and travel whenever it
/// touches food, health or travel as the safety rule sees it ("Can I have the baklava?").
pub fn of_request(request: &str) -> Facets {
    use super::safety::Touches;
    let mut bits = topics(request);
    for t in super::safety::touches(request) {
        bits |= match t {
            Touches::Food | Touches::Health => Facets::HEALTH,
            Touches::Travel => Facets::TRAVEL,
        };
    }
    Facets(bits)
}

/// A memory's facets: its topics, whether it is a safety fact, about another person, or
/// says it is no longer true. Instructions are about the style of answers whatever else.
pub fn tag(text: &str, kind: Kind) -> Facets {
    let mut bits = topics(text);
    if kind == Kind::Instruction {
        bits |= Facets::STYLE;
    }
    if super::safety::is_safety_fact(text) {
        bits |= Facets::SAFETY;
    }
    if super::vectors::about_other(text) != 0 {
        bits |= Facets::OTHER;
    }
    if kind != Kind::Episode && says_it_ended(text) {
        bits |= Facets::PAST;
    }
    Facets(bits)
}

/// Past-tense verbs that lead a memory about a state ("User lived in Berlin …").
const PAST_VERBS: &[&str] = &[
    "was", "were", "had", "lived", "worked", "drove", "owned", "ate", "used", "studied", "played",
    "went", "rode", "drank", "taught", "ran", "kept", "took", "wore", "dated",
];

/// Seasons and words besides the months that date an end ("until last summer").
const DATED: &[&str] = &[
    "last", "spring", "summer", "autumn", "fall", "winter", "recently", "selling", "moving",
    "leaving", "retiring",
];

/// Participles after "was" that describe a lasting fact, not an ended state ("was born",
/// "was diagnosed with asthma").
const LASTING: &[&str] = &[
    "born",
    "diagnosed",
    "raised",
    "adopted",
    "named",
    "baptised",
    "baptized",
    "told",
    "given",
    "prescribed",
    "married",
    // Irregular participles: "was stolen", "was broken" are events, not former states.
    "stolen",
    "broken",
    "taken",
    "bitten",
    "hit",
    "hurt",
    "made",
    "sent",
    "written",
    "chosen",
    "known",
    "paid",
    "left",
];

/// Words that say the statement is about the present ("… so they now use two locks").
const NOW: &[&str] = &["now", "still", "currently", "nowadays"];

/// Whether a fact's own words say it stopped being true: "used to", "formerly", a
/// past-tense state that ran "until" a date or "for" a stretch of time, "was <someone>".
/// "No longer" is a current fact ("User no longer owns a car") and not one of them.
fn says_it_ended(text: &str) -> bool {
    let lower = text.to_lowercase();
    let w: Vec<String> = words(&lower).collect();
    if lower.contains("used to ") || w.iter().any(|x| x == "formerly" || x == "previously") {
        return true;
    }
    // The verb that leads the statement: the first past-tense verb among the first words
    // (after "User", "User's GP in Berlin", "Helena").
    let Some(v) = w
        .iter()
        .take(6)
        .position(|x| PAST_VERBS.contains(&x.as_str()))
    else {
        return false;
    };
    let after = &w[v + 1..];
    if after.iter().any(|x| NOW.contains(&x.as_str())) {
        return false;
    }
    if w[v] == "was" || w[v] == "were" {
        return match after.first() {
            Some(next) => !LASTING.contains(&next.as_str()) && !next.ends_with("ed"),
            None => false,
        };
    }
    let until = after.windows(2).any(|p| {
        p[0] == "until"
            && (DATED.contains(&p[1].as_str())
                || hearth_text::calendar::is_month(&p[1])
                || is_year(&p[1]))
    });
    let for_a_stretch = after.windows(2).any(|p| {
        p[0] == "for"
            && (matches!(
                p[1].as_str(),
                "most" | "years" | "months" | "a" | "two" | "three"
            ) || is_year(&p[1]))
    }) && after
        .iter()
        .any(|x| is_year(x) || x == "years" || x == "months");
    until || for_a_stretch
}

fn is_year(w: &str) -> bool {
    w.len() == 4 && w.starts_with(['1', '2']) && w.chars().all(|c| c.is_ascii_digit())
}

impl super::Memories {
    /// Tags the memories written before facets existed (migration 27 leaves them `NULL`);
    /// returns how many. Cheap when there are none (a partial index holds them).
    pub fn tag_untagged(&self) -> crate::Result<usize> {
        self.store().write_blocking(|c| {
            let tx = c.transaction()?;
            let rows: Vec<(i64, String, String, bool)> = {
                let mut stmt = tx.prepare(
                    "SELECT n, text, kind, superseded_by IS NOT NULL FROM memories
                      WHERE facets IS NULL",
                )?;
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                    .collect::<rusqlite::Result<_>>()?
            };
            {
                let mut set = tx.prepare("UPDATE memories SET facets = ?1 WHERE n = ?2")?;
                for (n, text, kind, superseded) in &rows {
                    let kind = Kind::parse(kind).unwrap_or(Kind::Fact);
                    let f = super::facets_for(text, kind, Facets::default(), *superseded);
                    set.execute(rusqlite::params![f, n])?;
                }
            }
            tx.commit()?;
            Ok(rows.len())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(text: &str, bit: u32) -> bool {
        tag(text, Kind::Fact).has(bit)
    }

    #[test]
    fn memories_are_tagged_with_the_parts_of_life_they_touch() {
        assert!(has("User is allergic to tree nuts.", Facets::HEALTH));
        assert!(has("User is allergic to tree nuts.", Facets::SAFETY));
        assert!(has(
            "User has been head of operations at a solar start-up called Lumen since January 2026.",
            Facets::WORK
        ));
        assert!(has(
            "User no longer owns a car and gets around by bike and metro.",
            Facets::TRAVEL
        ));
        assert!(has(
            "User moved to Lisbon in April 2026 and lives in Campo de Ourique.",
            Facets::HOME
        ));
        assert!(has(
            "User rents a flat with a small terrace for 1,900 euros a month.",
            Facets::MONEY
        ));
        assert!(has(
            "User has a Portuguese lesson every Tuesday at 6 pm.",
            Facets::SCHEDULE
        ));
        assert!(tag("Answer in British English.", Kind::Instruction).has(Facets::STYLE));
        let other = tag(
            "User's colleague Dmitri is allergic to peanuts.",
            Kind::Fact,
        );
        assert!(other.has(Facets::OTHER) && other.has(Facets::SAFETY));
        assert!(!has("User is allergic to tree nuts.", Facets::OTHER));
    }

    #[test]
    fn a_fact_that_says_it_ended_is_past_and_a_current_one_is_not() {
        for text in [
            "User lived in Berlin, in Kreuzberg, until March 2026.",
            "User worked as a project manager at Siemens until December 2025.",
            "User drove a grey Volkswagen Golf until selling it in 2025.",
            "User used to box at a gym in Neukölln twice a week.",
            "User had an iPhone 12 until last summer.",
            "User's GP in Berlin was Dr. Weber.",
            "User ate a low-carb diet for most of 2025.",
            "User formerly worked nights.",
        ] {
            assert!(has(text, Facets::PAST), "{text}");
        }
        for text in [
            "User moved to Lisbon in April 2026 and lives in Campo de Ourique.",
            "User no longer owns a car and gets around by bike and metro.",
            "User switched to a Fairphone 5 in July.",
            "User was diagnosed with asthma as a child.",
            "User was born in Utrecht.",
            "User is in Porto until Friday.",
            "User has been head of operations at Lumen since January 2026.",
            "User's e-bike was stolen once, so they now use two locks.",
            "User's laptop was broken in the move.",
            "User had knee surgery in 2024 and still avoids running downhill.",
        ] {
            assert!(!has(text, Facets::PAST), "{text}");
        }
        assert!(
            !tag(
                "User ran a half marathon in May 2025 for two hours.",
                Kind::Episode
            )
            .has(Facets::PAST),
            "an episode is past by nature, not superseded"
        );
    }

    #[test]
    fn requests_map_to_the_facets_they_are_about_without_a_model() {
        let f = |r: &str| of_request(r);
        assert!(f("Write a two-line bio for my company's website.").has(Facets::WORK));
        assert!(
            f("How should I get to IKEA this weekend to pick up a bookshelf?").has(Facets::TRAVEL)
        );
        assert!(f("How do I get a heavy bookshelf home from the shop?").has(Facets::HOME));
        assert!(f("Find me a quiet café near home to work from.").has(Facets::HOME));
        assert_eq!(
            f("Can I have the baklava at the party?"),
            Facets(Facets::HEALTH),
            "food, by the safety rule's words"
        );
        assert_eq!(f("Tell me a joke.").0 & Facets::TOPICS, 0);
    }

    #[test]
    fn facet_names_round_trip_and_a_file_cannot_set_a_mark() {
        let f = Facets(Facets::WORK | Facets::HOME | Facets::SAFETY);
        assert_eq!(f.names(), ["home", "work"]);
        assert_eq!(
            Facets::from_names(&["home", "work", "safety", "past", "nonsense"]),
            Facets(Facets::HOME | Facets::WORK)
        );
    }

    #[test]
    fn the_own_safety_index_expression_names_the_marks_it_filters_on() {
        assert_eq!(Facets::SAFETY | Facets::OTHER, 196_608);
        assert_eq!(Facets::SAFETY, 65_536);
        let migration = include_str!("../../hearth-store/src/migrations/0027_facets.sql");
        assert!(
            migration.contains(&OWN_SAFETY_SQL.replace("m.facets", "facets")),
            "migration 27's partial index must use the query's expression"
        );
    }
}
