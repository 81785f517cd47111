//! A request says "I" and "my"; memories say "User" ("User has a border collie named
//! Pixel"). The query vector is computed from the request said the way memories are
//! ("How often should User brush User's dog?"), so a small sentence model compares like
//! with like. Only the vector side: every memory has "User", so it says nothing to BM25.

use std::borrow::Cow;

/// `request` with the user's first-person words as memories write them; borrowed when it
/// has none.
pub fn as_memories_say(request: &str) -> Cow<'_, str> {
    let mut out = String::with_capacity(request.len() + 16);
    let mut changed = false;
    let mut word = String::new();
    // "am" only after "I" ("I am" → "User is"; "8 am" stays).
    let mut after_i = false;
    let mut flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let said = match third_person(word) {
            Some(t) => Some(t),
            None if after_i && word == "am" => Some("is"),
            None => None,
        };
        after_i = word == "I" || word == "i";
        match said {
            Some(t) => {
                out.push_str(t);
                changed = true;
            }
            None => out.push_str(word),
        }
        word.clear();
    };
    for ch in request.chars() {
        // Apostrophes (straight and curly) belong to the word: "I'm", "I’ve".
        if ch.is_alphanumeric() || ch == '\'' || ch == '\u{2019}' {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            if !ch.is_whitespace() {
                // "I, am" is not "I am".
                word.clear();
            }
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(request)
    }
}

/// Whether `request` speaks as the user: it has a first-person word ("I", "my", "me" …).
pub fn speaks_as_user(request: &str) -> bool {
    matches!(as_memories_say(request), Cow::Owned(_))
}

fn third_person(word: &str) -> Option<&'static str> {
    let w = word.replace('\u{2019}', "'");
    Some(match w.as_str() {
        "I" => "User",
        "i" => "User",
        "me" | "Me" | "myself" | "Myself" => "User",
        "my" | "My" | "mine" | "Mine" => "User's",
        "I'm" | "i'm" | "Im" => "User is",
        "I've" | "i've" => "User has",
        "I'd" | "i'd" => "User would",
        "I'll" | "i'll" => "User will",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::as_memories_say;

    #[test]
    fn first_person_becomes_user() {
        assert_eq!(
            as_memories_say("How often should I brush my dog?"),
            "How often should User brush User's dog?"
        );
        assert_eq!(
            as_memories_say("I’m hosting my best friend; I am cooking for me?"),
            "User is hosting User's best friend; User is cooking for User?"
        );
        // Only whole words: "Miami", "8 am", "Imogen" stay.
        assert_eq!(
            as_memories_say("Can I call Imogen in Miami at 8 am? She's a friend of mine."),
            "Can User call Imogen in Miami at 8 am? She's a friend of User's."
        );
        assert!(matches!(
            as_memories_say("Plan a hiking route."),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
