//! The semantic cache (opt-in, with the response cache switched on): a saved answer is
//! reused for a question that means the same — cosine similarity of the local embeddings at
//! or above the user's threshold (0.95 by default, `004`:171) — and only when
//!
//! - the request is **stateless**: no memory, no passages, no summary, no history (the first
//!   message of a new conversation with nothing about the user in its prompt), never for
//!   Regenerate or a temporary chat, and only a turn's first call;
//! - it goes to the **same scope**: provider, model, output limit, system prompt and tools
//!   array (a SHA-256 of them all), and the same embedding model;
//! - the two questions name the **same anchors**, in the same order: numbers, dates and
//!   times, names, units and currencies ("5 miles" is not "50 miles", "5 miles to km" is not
//!   "5 km to miles"), whatever the embeddings say.
//!
//! A hit says which question it answered ("answered from a saved reply to: …"), and the
//! user can ask the model instead (Regenerate, which never reads a cache). Entries live in
//! the encrypted database, expire like the response cache's and go with their conversation.

use rusqlite::params;

use crate::Result;
use crate::llm::{ChatModel, ChatRequest};
use crate::store::Store;
use crate::time::now_millis;
use crate::types::Role;

/// The most entries kept; past it the oldest go.
pub const MAX_ENTRIES: i64 = 2_000;

/// The default least similarity for a hit.
pub const DEFAULT_SIMILARITY: f32 = 0.95;

/// The lowest threshold a user may set: below it different questions match.
pub const MIN_SIMILARITY: f32 = 0.80;

/// The scope of a request: everything the provider receives except the conversation's
/// messages (system prompts are part of it), length-prefixed.
pub fn scope(model: &ChatModel, request: &ChatRequest) -> [u8; 32] {
    let system = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_bytes());
    super::cache::digest(b"hearth semantic cache v1", model, request, system)
}

/// The user's question when `request` is stateless: system prompts and one user message.
pub fn stateless_question(request: &ChatRequest) -> Option<&str> {
    let mut asked = request.messages.iter().filter(|m| m.role != Role::System);
    match (asked.next(), asked.next()) {
        (Some(m), None) if m.role == Role::User && m.tool_calls.is_empty() => {
            Some(m.content.as_str())
        }
        _ => None,
    }
}

const DAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tonight",
    "tomorrow",
    "yesterday",
    "weekend",
    "morning",
    "evening",
    "afternoon",
    "noon",
    "midnight",
    "am",
    "pm",
];

/// Units and currencies (singular and plural as people write them; a few spellings folded).
const UNITS: &[(&str, &str)] = &[
    ("mile", "mi"),
    ("miles", "mi"),
    ("mi", "mi"),
    ("kilometre", "km"),
    ("kilometres", "km"),
    ("kilometer", "km"),
    ("kilometers", "km"),
    ("km", "km"),
    ("metre", "m"),
    ("metres", "m"),
    ("meter", "m"),
    ("meters", "m"),
    ("foot", "ft"),
    ("feet", "ft"),
    ("ft", "ft"),
    ("inch", "in"),
    ("inches", "in"),
    ("cm", "cm"),
    ("centimetres", "cm"),
    ("centimeters", "cm"),
    ("mm", "mm"),
    ("yard", "yd"),
    ("yards", "yd"),
    ("kg", "kg"),
    ("kilo", "kg"),
    ("kilos", "kg"),
    ("kilogram", "kg"),
    ("kilograms", "kg"),
    ("gram", "g"),
    ("grams", "g"),
    ("g", "g"),
    ("pound", "lb"),
    ("pounds", "lb"),
    ("lb", "lb"),
    ("lbs", "lb"),
    ("ounce", "oz"),
    ("ounces", "oz"),
    ("oz", "oz"),
    ("stone", "st"),
    ("litre", "l"),
    ("litres", "l"),
    ("liter", "l"),
    ("liters", "l"),
    ("l", "l"),
    ("ml", "ml"),
    ("gallon", "gal"),
    ("gallons", "gal"),
    ("cup", "cup"),
    ("cups", "cup"),
    ("tablespoon", "tbsp"),
    ("tablespoons", "tbsp"),
    ("tbsp", "tbsp"),
    ("teaspoon", "tsp"),
    ("teaspoons", "tsp"),
    ("tsp", "tsp"),
    ("celsius", "c"),
    ("centigrade", "c"),
    ("fahrenheit", "f"),
    ("kelvin", "k"),
    ("degree", "deg"),
    ("degrees", "deg"),
    ("percent", "%"),
    ("hour", "h"),
    ("hours", "h"),
    ("minute", "min"),
    ("minutes", "min"),
    ("second", "s"),
    ("seconds", "s"),
    ("day", "d"),
    ("days", "d"),
    ("week", "wk"),
    ("weeks", "wk"),
    ("month", "mo"),
    ("months", "mo"),
    ("year", "y"),
    ("years", "y"),
    ("dollar", "usd"),
    ("dollars", "usd"),
    ("usd", "usd"),
    ("euro", "eur"),
    ("euros", "eur"),
    ("eur", "eur"),
    ("gbp", "gbp"),
    ("yen", "jpy"),
    ("jpy", "jpy"),
    ("mph", "mph"),
    ("kph", "kmh"),
    ("kmh", "kmh"),
];

/// The question as it is embedded: lower-cased, whitespace collapsed, curly quotes made
/// straight and the closing punctuation dropped, so the same words typed another way are
/// the same text (the embedding model sees a question mark as much as a word).
pub fn normalized(question: &str) -> String {
    let folded: String = question
        .chars()
        .map(|c| match c {
            '’' | '‘' => '\'',
            '“' | '”' => '"',
            c => c,
        })
        .collect::<String>()
        .to_lowercase();
    let words: Vec<&str> = folded.split_whitespace().collect();
    words
        .join(" ")
        .trim_end_matches(|c: char| matches!(c, '?' | '!' | '.' | '…') || c.is_whitespace())
        .to_owned()
}

/// One thing a question names that its answer depends on.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(String),
    /// A unit or currency (folded: `miles` → `mi`).
    Unit(String),
    /// A currency sign, before its amount (`$5`).
    Sign(String),
    /// A month, a day, a part of the day.
    Date(String),
    /// A capitalised word that does not start a sentence, or a word with a capital inside.
    Name(String),
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if matches!(c, '.' | '!' | '?' | '\n') {
            sentence_start = true;
            chars.next();
            continue;
        }
        if let Some(sign) = match c {
            '$' => Some("usd"),
            '€' => Some("eur"),
            '£' => Some("gbp"),
            '¥' => Some("jpy"),
            _ => None,
        } {
            out.push(Token::Sign(sign.to_owned()));
            chars.next();
            continue;
        }
        if matches!(c, '%' | '°') {
            out.push(Token::Unit(if c == '%' { "%" } else { "deg" }.to_owned()));
            chars.next();
            continue;
        }
        if c.is_ascii_digit() {
            let mut end = start;
            while let Some(&(i, d)) = chars.peek() {
                let decimal_point = (d == '.' || d == ',')
                    && text[i + d.len_utf8()..]
                        .chars()
                        .next()
                        .is_some_and(|n| n.is_ascii_digit());
                if d.is_ascii_digit() || decimal_point {
                    end = i + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(Token::Number(number(&text[start..end])));
            sentence_start = false;
            continue;
        }
        if c.is_alphanumeric() {
            let mut end = start;
            while let Some(&(i, d)) = chars.peek() {
                if d.is_alphanumeric() || d == '\'' || d == '’' || d == '-' {
                    end = i + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let word = &text[start..end];
            let lower = word.to_lowercase();
            let bare = lower.trim_end_matches("'s").trim_end_matches("’s");
            if let Some((_, unit)) = UNITS.iter().find(|(w, _)| *w == bare) {
                out.push(Token::Unit((*unit).to_owned()));
            } else if hearth_text::calendar::is_month_or_abbreviation(bare) || DAYS.contains(&bare) {
                out.push(Token::Date(bare.to_owned()));
            } else {
                let mut letters = word.chars();
                let first_capital = letters.next().is_some_and(char::is_uppercase);
                let inner_capital = letters.any(char::is_uppercase);
                let pronoun_i = bare == "i" || bare.starts_with("i'") || bare.starts_with("i’");
                if inner_capital || (first_capital && !sentence_start && !pronoun_i) {
                    out.push(Token::Name(bare.to_owned()));
                }
            }
            sentence_start = false;
            continue;
        }
        // Other punctuation.
        chars.next();
    }
    out
}

/// What two questions must both name, the same, for one's answer to serve the other:
/// every amount with its unit (`5 mi`: "5 miles to km" is not "5 km to miles"), currency
/// (`100 usd` for `$100`), other numbers, units, dates and times — in a canonical order, so
/// "What is 5 miles in km?" and "How many km is 5 miles?" agree. Names are compared apart
/// ([`same_names`]): a name typed in lower case is still the same name.
pub fn anchors(text: &str) -> Vec<String> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match (&toks[i], toks.get(i + 1)) {
            (Token::Number(n), Some(Token::Unit(u) | Token::Date(u))) => {
                out.push(format!("{n} {u}"));
                i += 2;
                continue;
            }
            (Token::Sign(s), Some(Token::Number(n))) => {
                out.push(format!("{n} {s}"));
                i += 2;
                continue;
            }
            (Token::Number(n), _) => out.push(n.clone()),
            (Token::Unit(u) | Token::Sign(u), _) => out.push(format!("unit {u}")),
            (Token::Date(d), _) => out.push(format!("date {d}")),
            (Token::Name(_), _) => {}
        }
        i += 1;
    }
    out.sort();
    out
}

/// The names `text` holds (lower-cased).
pub fn names(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter_map(|t| match t {
            Token::Name(n) => Some(n),
            _ => None,
        })
        .collect()
}

/// Whether every name either question holds is a word of the other (case aside).
pub fn same_names(a: &str, b: &str) -> bool {
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’' || c == '-'))
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.to_lowercase()
                    .trim_end_matches("'s")
                    .trim_end_matches("’s")
                    .to_owned()
            })
            .collect()
    };
    let (wa, wb) = (words(a), words(b));
    names(a).iter().all(|n| wb.contains(n)) && names(b).iter().all(|n| wa.contains(n))
}

/// A number as text, the same however it was written (`5`, `5.0`, `5,0`, `05`).
fn number(text: &str) -> String {
    let t = text.replace(',', ".");
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => format!("{v}"),
        _ => t,
    }
}

/// A saved answer found for a question.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The question the answer was given to.
    pub question: String,
    pub answer: String,
    pub similarity: f32,
}

/// The saved answer for a question in `scope` with the same anchors and names as `asked`
/// whose embedding (by `embedding_model`, L2-normalised like `vector`) is the most similar,
/// if at least `threshold`.
pub fn lookup(
    store: &Store,
    scope: &[u8; 32],
    embedding_model: &str,
    vector: &[f32],
    asked: &str,
    threshold: f32,
) -> Result<Option<Hit>> {
    let (scope, model) = (scope.to_vec(), embedding_model.to_owned());
    let anchors = serde_json::to_string(&anchors(asked)).unwrap_or_default();
    let rows: Vec<(String, String, Vec<u8>)> = store.read_blocking(move |c| {
        let mut s = c.prepare(
            "SELECT question, answer, vector FROM semantic_cache
             WHERE scope = ?1 AND embedding_model = ?2 AND anchors = ?3 AND expires_at > ?4",
        )?;
        let rows = s
            .query_map(params![scope, model, anchors, now_millis()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    })?;
    let best = rows
        .into_iter()
        .filter(|(_, _, blob)| blob.len() == vector.len() * 4)
        .filter(|(question, _, _)| same_names(asked, question))
        .map(|(question, answer, blob)| {
            let similarity: f32 = blob
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .zip(vector)
                .map(|(a, b)| a * b)
                .sum();
            Hit {
                question,
                answer,
                similarity,
            }
        })
        .filter(|h| h.similarity.is_finite())
        .max_by(|a, b| a.similarity.total_cmp(&b.similarity));
    if let Some(h) = &best {
        tracing::debug!(similarity = h.similarity, threshold, "semantic cache: nearest question");
    }
    Ok(best.filter(|h| h.similarity >= threshold))
}

/// What a saved answer came from.
pub struct Entry<'a> {
    pub scope: &'a [u8; 32],
    pub conversation: &'a str,
    pub question: &'a str,
    pub embedding_model: &'a str,
    pub vector: &'a [f32],
    pub model: &'a ChatModel,
    pub answer: &'a str,
}

/// Saves an answer to a stateless question, to expire after `ttl_hours`.
pub fn save(store: &Store, entry: Entry<'_>, ttl_hours: u32) -> Result<()> {
    let now = now_millis();
    let expires = now.saturating_add(i64::from(ttl_hours) * 3_600_000);
    let anchors = serde_json::to_string(&anchors(entry.question)).unwrap_or_default();
    let blob: Vec<u8> = entry.vector.iter().flat_map(|f| f.to_le_bytes()).collect();
    let values = (
        entry.scope.to_vec(),
        entry.conversation.to_owned(),
        entry.question.to_owned(),
        entry.embedding_model.to_owned(),
        entry.model.provider.name.clone(),
        entry.model.model.clone(),
        entry.answer.to_owned(),
    );
    store.write_blocking(move |c| {
        let (scope, conversation, question, embedding_model, provider, model, answer) = values;
        c.execute("DELETE FROM semantic_cache WHERE expires_at <= ?1", [now])?;
        c.execute(
            "INSERT INTO semantic_cache (scope, conversation_id, question, anchors,
               embedding_model, vector, provider, model, answer, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                scope,
                conversation,
                question,
                anchors,
                embedding_model,
                blob,
                provider,
                model,
                answer,
                now,
                expires
            ],
        )?;
        c.execute(
            "DELETE FROM semantic_cache WHERE id NOT IN
               (SELECT id FROM semantic_cache ORDER BY id DESC LIMIT ?1)",
            [MAX_ENTRIES],
        )?;
        Ok(())
    })
}

/// How many answers the semantic cache holds (expired ones not counted).
pub(crate) fn entries(store: &Store) -> Result<u64> {
    store.read_blocking(|c| {
        c.query_row(
            "SELECT COUNT(*) FROM semantic_cache WHERE expires_at > ?1",
            [now_millis()],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n.max(0) as u64)
    })
}

/// Removes every entry; returns how many there were.
pub(crate) fn clear(store: &Store) -> Result<u64> {
    store.write_blocking(|c| {
        c.execute("DELETE FROM semantic_cache", [])
            .map(|n| n as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        anchors(a) == anchors(b) && same_names(a, b)
    }

    #[test]
    fn amounts_units_dates_and_names_must_match() {
        assert!(same(
            "How many km is 5 miles?",
            "how many kilometres are 5 miles"
        ));
        assert!(same("Convert 5.0 miles to km", "convert 5 mi into kilometers"));
        assert!(same(
            "How many kilometres is 5 miles?",
            "What is 5 miles in kilometres?"
        ));
        assert!(!same("How many km is 5 miles?", "How many km is 50 miles?"));
        assert!(!same("Convert 5 miles to km", "Convert 5 km to miles"));
        assert!(!same("What's 20% of 80?", "What's 20% of 90?"));
        assert!(!same("Is it warm in Lisbon in May?", "Is it warm in Porto in May?"));
        assert!(!same("Is it warm in Lisbon in May?", "Is it warm in Lisbon in June?"));
        assert!(!same("What is $100 in euros?", "What is £100 in euros?"));
        assert!(!same("What time is it in Tokyo at 9 pm?", "What time is it in Tokyo at 9 am?"));
        assert!(!same("Convert 100 Fahrenheit to Celsius", "Convert 100 Celsius to Fahrenheit"));
        // A name typed in lower case is the same name; another name is not.
        assert!(same("What's the capital of Australia?", "what is the capital of australia"));
        assert!(!same("What's the capital of Australia?", "What's the capital of Austria?"));
        assert!(!same("Who wrote Pride and Prejudice?", "Who wrote Sense and Sensibility?"));
        // A capital that only starts a sentence, and "I", are not names.
        assert!(same("What is a haiku? Write one.", "what is a haiku? write one"));
        assert!(same("Can I freeze cooked rice?", "can i freeze cooked rice"));
        assert!(!same("Tell me about iPhone batteries", "tell me about phone batteries"));
        assert_eq!(
            anchors("Flights from Berlin to Lisbon on 3 May for 2 people, under €300?"),
            ["2", "3 may", "300 eur"]
        );
        assert_eq!(names("Flights from Berlin to Lisbon"), ["berlin", "lisbon"]);
        // Hostile input: no panic.
        let odd = "1.2.3,,4 $$ 💥 Ǆemal 9e999 ′ 0.0. $";
        let _ = (anchors(odd), names(odd), same_names(odd, ""));
        assert_eq!(anchors(""), Vec::<String>::new());
    }

    #[test]
    fn the_same_words_typed_another_way_are_one_text() {
        assert_eq!(
            normalized("  How many  kilometres is 5 miles?? "),
            "how many kilometres is 5 miles"
        );
        assert_eq!(normalized("What’s  a haiku…"), "what's a haiku");
        assert_eq!(normalized("?!"), "");
    }

    #[test]
    fn only_a_system_prompt_and_one_user_message_is_stateless() {
        use crate::types::Message;
        let mut r = ChatRequest {
            messages: vec![Message::system("You are Hearth."), Message::user("Hi")],
            ..ChatRequest::default()
        };
        assert_eq!(stateless_question(&r), Some("Hi"));
        r.messages.insert(1, Message::assistant("Earlier answer"));
        assert_eq!(stateless_question(&r), None);
        r.messages = vec![Message::system("s")];
        assert_eq!(stateless_question(&r), None);
    }
}
