//! Calendar words as they are written in English text, lower case: the one list the
//! semantic cache's anchors (a month must match) and the facet tagger's dated endings
//! ("until March") both read.

/// The months' names, January first.
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Their usual abbreviations ("may" is its own).
pub const MONTH_ABBREVIATIONS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
];

/// Whether `word` (lower case) names a month in full.
pub fn is_month(word: &str) -> bool {
    MONTHS.contains(&word)
}

/// Whether `word` (lower case) names a month, in full or abbreviated.
pub fn is_month_or_abbreviation(word: &str) -> bool {
    is_month(word) || MONTH_ABBREVIATIONS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_in_full_and_abbreviated() {
        assert!(is_month("march") && is_month("may"));
        assert!(!is_month("mar") && is_month_or_abbreviation("mar"));
        assert!(is_month_or_abbreviation("sept"));
        assert!(!is_month_or_abbreviation("monday") && !is_month("March"));
    }
}
