//! Text from outside — a model's answer, a tool's output, an MCP server's stderr, a file's
//! name or heading, a stored conversation — made safe to show on a terminal or in a
//! dialog. Front ends never write such text raw: the CLI passes every byte it prints
//! through [`prose`] (its `println!` is this function's), and every argument, path and
//! consent question through [`escape`].
//!
//! Two strengths:
//! - [`prose`] keeps what people read — emoji (with their zero-width joiners), accents,
//!   right-to-left scripts — and makes visible every character a terminal would act on
//!   instead of showing: C0 controls but newline and tab (so `ESC`, and with it every CSI,
//!   OSC and DCS sequence, `BEL`, `CR`, backspace), `DEL`, the C1 controls (`U+009B` is a
//!   CSI on its own on some terminals) and the bidirectional overrides and isolates that
//!   reorder a line. Each shows as `\u{…}`, so a model cannot conceal text (`ESC[8m`), move
//!   the cursor over Hearth's own question, or retitle the window.
//! - [`escape`] is for arguments, paths and the question itself: [`prose`]'s set plus
//!   every zero-width and invisible formatting character, so `report\u{200b}.pdf` cannot
//!   pass for `report.pdf`.

use std::borrow::Cow;

/// Bidirectional embeddings, overrides and isolates (and the Arabic letter mark): they
/// reorder what follows them on the line.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}')
}

/// Characters that take no room and change nothing a reader sees, but make two strings
/// that look the same differ (zero-width space, joiners, marks, word joiner, BOM, soft
/// hyphen).
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}'
        | '\u{2060}'..='\u{2064}'
        | '\u{FEFF}'
        | '\u{00AD}')
}

/// A terminal acts on it: every control (C0, `DEL`, C1) but newline and tab.
fn is_terminal_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` with every character `hide` picks written by `write` instead (borrowed when there
/// is none: the common case costs one scan).
fn replaced<'a>(
    text: &'a str,
    hide: impl Fn(char) -> bool,
    write: impl Fn(char, &mut String),
) -> Cow<'a, str> {
    if !text.chars().any(&hide) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hide(c) {
            write(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every character `hide` picks shown as a visible `\u{…}` escape.
fn escaped(text: &str, hide: impl Fn(char) -> bool) -> Cow<'_, str> {
    replaced(text, hide, |c, out| {
        out.push_str(&format!("\\u{{{:04x}}}", c as u32))
    })
}

/// Prose from outside, safe to write to a terminal: see the module's text. Borrowed when
/// nothing needed escaping (the common case costs one scan).
pub fn prose(text: &str) -> Cow<'_, str> {
    escaped(text, |c| is_terminal_control(c) || is_bidi_control(c))
}

/// An argument, a path, a tool's or a question's text: [`prose`]'s escaping plus every
/// zero-width character, so nothing in it can hide or reorder what the user approves.
pub fn escape(text: &str) -> String {
    escaped(text, |c| {
        is_terminal_control(c) || is_bidi_control(c) || is_invisible(c)
    })
    .into_owned()
}

/// JSON text (as `serde_json` writes it) with the characters [`prose`] escapes written as
/// JSON `\uXXXX` escapes: the same value, and nothing in it a terminal acts on. (`serde_json`
/// escapes C0 controls itself, but leaves C1 controls and bidi overrides raw.)
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    // Every such character is in the BMP: one `\uXXXX` says it.
    replaced(
        json,
        |c| is_terminal_control(c) || is_bidi_control(c),
        |c, out| out.push_str(&format!("\\u{:04x}", c as u32)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_shows_every_sequence_a_terminal_would_act_on() {
        let model = "Sure.\u{1b}[8mhidden\u{1b}[0m\u{1b}]0;title\u{7}\r\u{9b}2J\u{202e}txt\u{8}";
        let shown = prose(model);
        assert!(!shown.chars().any(|c| c.is_control() && c != '\n'));
        assert!(!shown.contains('\u{202e}'));
        assert_eq!(
            shown,
            "Sure.\\u{001b}[8mhidden\\u{001b}[0m\\u{001b}]0;title\\u{0007}\\u{000d}\\u{009b}2J\\u{202e}txt\\u{0008}"
        );
    }

    #[test]
    fn prose_keeps_what_people_read() {
        for text in [
            "Zoë's café 東京\n\tindented",
            "family: 👨\u{200d}👩\u{200d}👧 and 👍🏽",
            "שלום עולם — مرحبا بالعالم",
        ] {
            assert!(matches!(prose(text), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn escape_also_shows_invisible_characters() {
        let shown = escape("a\u{1b}[31mred\u{202e}txt.exe\u{200b}\nnext\tline");
        assert_eq!(
            shown,
            "a\\u{001b}[31mred\\u{202e}txt.exe\\u{200b}\nnext\tline"
        );
        assert_eq!(escape("Zoë's café 東京"), "Zoë's café 東京");
    }

    #[test]
    fn json_for_terminal_keeps_the_value() {
        let v = serde_json::json!({"answer": "x\u{9b}31m\u{202e}y\u{1b}z 👍"});
        let text = serde_json::to_string(&v).unwrap_or_default();
        let safe = json_for_terminal(&text);
        assert!(!safe.chars().any(|c| c.is_control() || is_bidi_control(c)));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap_or_default();
        assert_eq!(back, v);
    }
}
