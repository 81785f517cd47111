//! Safety facts: the allergies, intolerances, medication and conditions of the user and of
//! the people a request involves are always in the memory block when the request touches
//! food, health or travel — whether or not they share a word with it ("Can I have the
//! baklava?" and "User is allergic to tree nuts"). Deterministic: word lists, no model call.

use super::people::People;
use super::rank::Subject;

/// What a request is about, as far as safety goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touches {
    Food,
    Health,
    Travel,
}

/// Words of a request about food and drink.
const FOOD: &[&str] = &[
    "eat",
    "eats",
    "eating",
    "ate",
    "food",
    "foods",
    "meal",
    "meals",
    "dinner",
    "dinners",
    "lunch",
    "breakfast",
    "brunch",
    "supper",
    "dessert",
    "desserts",
    "snack",
    "snacks",
    "cook",
    "cooking",
    "cooked",
    "recipe",
    "recipes",
    "menu",
    "restaurant",
    "restaurants",
    "cafe",
    "café",
    "takeaway",
    "bake",
    "baking",
    "cake",
    "cakes",
    "biscuits",
    "cookies",
    "dish",
    "dishes",
    "serve",
    "serving",
    "served",
    "drink",
    "drinks",
    "wine",
    "beer",
    "cocktail",
    "coffee",
    "tea",
    "pizza",
    "paella",
    "sushi",
    "curry",
    "satay",
    "baklava",
    "pesto",
    "barbecue",
    "bbq",
    "picnic",
    "grocery",
    "groceries",
    "ingredients",
    "nuts",
    "peanut",
    "peanuts",
    "seafood",
    "fish",
    "prawns",
    "shrimp",
    "meat",
    "cheese",
    "milk",
    "bread",
    "chocolate",
    "sweets",
    "candy",
    "ice",
    "pastry",
    "pastries",
    "sandwich",
    "soup",
    "salad",
    "pasta",
    "taste",
    "tasting",
    "feast",
    "buffet",
    "catering",
    "hungry",
    "diet",
    "vegan",
    "vegetarian",
    "cuisine",
    "thai",
    "chinese",
    "indian",
    "italian",
];

/// Words of a request about health, medicine and exercise.
const HEALTH: &[&str] = &[
    "health",
    "healthy",
    "medicine",
    "medicines",
    "medication",
    "pill",
    "pills",
    "tablet",
    "tablets",
    "painkiller",
    "painkillers",
    "ibuprofen",
    "paracetamol",
    "aspirin",
    "antibiotic",
    "antibiotics",
    "doctor",
    "gp",
    "hospital",
    "clinic",
    "pharmacy",
    "prescription",
    "sick",
    "ill",
    "illness",
    "fever",
    "headache",
    "migraine",
    "pain",
    "symptom",
    "symptoms",
    "vaccine",
    "vaccination",
    "injection",
    "allergy",
    "allergies",
    "asthma",
    "sport",
    "sports",
    "exercise",
    "workout",
    "gym",
    "training",
    "train",
    "run",
    "running",
    "race",
    "marathon",
    "swim",
    "swimming",
    "hike",
    "hiking",
    "climb",
    "climbing",
    "cycling",
    "yoga",
    "check-up",
    "checkup",
    "dentist",
    "surgery",
];

/// Words of a request about travel.
const TRAVEL: &[&str] = &[
    "trip",
    "trips",
    "travel",
    "travelling",
    "traveling",
    "flight",
    "flights",
    "fly",
    "flying",
    "holiday",
    "holidays",
    "vacation",
    "hotel",
    "hotels",
    "abroad",
    "passport",
    "visa",
    "airport",
    "pack",
    "packing",
    "journey",
    "cruise",
    "camping",
    "away",
];

/// Words that make a memory a safety fact.
const SAFETY: &[&str] = &[
    "allergic",
    "allergy",
    "allergies",
    "intolerant",
    "intolerance",
    "coeliac",
    "celiac",
    "anaphylaxis",
    "anaphylactic",
    "epipen",
    "inhaler",
    "asthma",
    "diabetes",
    "diabetic",
    "insulin",
    "medication",
    "epilepsy",
    "epileptic",
    "pregnant",
];

/// Phrases that make a memory a safety fact.
const SAFETY_PHRASES: &[&str] = &[
    "blood pressure",
    "blood thinner",
    "blood thinners",
    "heart condition",
    "cannot eat",
    "can't eat",
    "must not eat",
    "must not lift",
    "herniated disc",
    "kidney diet",
];

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '-' && c != 'é')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// What `request` touches among food, health and travel (each at most once, in that order).
pub fn touches(request: &str) -> Vec<Touches> {
    let said: std::collections::HashSet<String> = words(request).collect();
    [
        (Touches::Food, FOOD),
        (Touches::Health, HEALTH),
        (Touches::Travel, TRAVEL),
    ]
    .into_iter()
    .filter(|(_, list)| list.iter().any(|w| said.contains(*w)))
    .map(|(t, _)| t)
    .collect()
}

/// Whether a memory states an allergy, an intolerance, a medication or a condition.
pub fn is_safety_fact(text: &str) -> bool {
    let lower = text.to_lowercase();
    words(&lower).any(|w| SAFETY.contains(&w.as_str()))
        || SAFETY_PHRASES.iter().any(|p| lower.contains(p))
}

/// Words of a request that involve the whole household ("we", "our family").
const HOUSEHOLD_WORDS: &[&str] = &["we", "us", "our", "family", "everyone", "together"];

/// Whether a safety fact is about someone `request` involves: the user; a person it names
/// (or names by role); the household when it speaks for "we" or "the family". Never another
/// person the request does not name.
pub fn involves(request: &str, people: &People, text: &str) -> bool {
    if let Some((_, name)) = Subject::other_person(text) {
        // "User's cousin Felix": only a request naming this Felix by name (a role names
        // the user's own Felix, not this one).
        return words(request).any(|w| w == name.to_lowercase());
    }
    match Subject::led_by(text) {
        // "User is allergic …", "User takes …".
        None => text.starts_with("User"),
        Some((_, Some(_))) => false,
        Some((name, None)) => {
            named(request, people, text)
                || (people.is_household(name) == Some(true)
                    && words(request).any(|w| HOUSEHOLD_WORDS.contains(&w.as_str())))
        }
    }
}

/// The names `request` says ("Marta", and "Helena" for "my wife"): its capitalised words
/// but the first and the people its roles name, lowercase.
pub fn names_in(request: &str, people: &People) -> Vec<String> {
    let mut names: Vec<String> = request
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .skip(1)
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase) && *w != "I")
        .map(str::to_lowercase)
        .collect();
    names.extend(
        people
            .named_in(request)
            .into_iter()
            .map(|n| n.to_lowercase()),
    );
    names.sort();
    names.dedup();
    names
}

/// Whether the request names, directly or by role, a person the memory names.
fn named(request: &str, people: &People, text: &str) -> bool {
    let mut said: std::collections::HashSet<String> = words(request).collect();
    said.extend(people.named_in(request));
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase) && *w != "User")
        .any(|w| said.contains(&w.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_touch_food_health_or_travel_by_their_words() {
        assert_eq!(
            touches("Can I have the baklava they're serving at the office party?"),
            [Touches::Food]
        );
        assert_eq!(
            touches("Is it okay for me to take ibuprofen for a headache?"),
            [Touches::Health]
        );
        assert_eq!(
            touches("What should I pack for our summer island trip?"),
            [Touches::Travel]
        );
        assert!(touches("Draft an email to my boss asking for Friday off.").is_empty());
    }

    #[test]
    fn allergies_medication_and_conditions_are_safety_facts() {
        for text in [
            "User is allergic to tree nuts, especially cashews and walnuts.",
            "Helena is allergic to shellfish.",
            "User takes lisinopril every morning for high blood pressure.",
            "Felix has mild asthma and uses an inhaler before sport.",
            "Piet has type 2 diabetes.",
            "User is lactose intolerant.",
        ] {
            assert!(is_safety_fact(text), "{text}");
        }
        for text in [
            "User drinks espresso with no sugar.",
            "Helena loves botanical prints and fountain pens.",
        ] {
            assert!(!is_safety_fact(text), "{text}");
        }
    }

    #[test]
    fn a_safety_fact_is_in_for_the_user_and_the_people_the_request_involves() {
        let people = People::from_texts([
            "User is married to Helena.",
            "User has two children: Noor, who is nine, and Felix, who is five.",
        ]);
        let own = "User is allergic to tree nuts.";
        let wife = "Helena is allergic to shellfish.";
        let neighbour = "User's neighbour Marta is allergic to shellfish.";
        let in_law = "Helena's brother Tiago cannot eat walnuts.";
        let alone = "Can I have the baklava?";
        assert!(involves(alone, &people, own));
        assert!(!involves(alone, &people, wife));
        assert!(!involves(alone, &people, neighbour));
        let for_wife = "Plan a dinner for my wife.";
        assert!(involves(for_wife, &people, wife));
        assert!(!involves(for_wife, &people, in_law));
        assert!(!involves(for_wife, &people, neighbour));
        let family = "Plan a dinner our family can all eat.";
        assert!(involves(family, &people, wife));
        assert!(!involves(family, &people, neighbour));
        assert!(involves("What can Marta eat?", &people, neighbour));
        assert_eq!(names_in("What can Marta eat?", &people), ["marta"]);
        assert_eq!(names_in("Plan a dinner for my wife.", &people), ["helena"]);
        assert!(names_in("Can I have the baklava?", &people).is_empty());
    }
}
