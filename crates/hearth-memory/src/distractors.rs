//! The generated memories about other people that a profile evaluation hides the user's
//! own among (`hearth eval memory --profile DIR --distractors N`): written as extraction
//! writes them ("User's colleague Dmitri has a beagle named Biscuit."), on a profile's
//! topics (pets, health, food, work, travel, hobbies), the same on every machine.

use std::collections::HashSet;

use super::Kind;

/// The most distractors the generator makes (all distinct).
pub const MAX_DISTRACTORS: usize = 50_000;

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
