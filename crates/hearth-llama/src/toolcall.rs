//! Tool calls in a local model's output, in the few formats the model families that call
//! tools use, turned into the OpenAI-shaped calls Hearth's client reads — the same events
//! the tool loop and the consent gate see from any provider. What the model wrote is data:
//! a call that does not parse stays text, and nothing here runs anything.
//!
//! - **Hermes** (Qwen 2.5 and 3, Hermes, many fine-tunes): `<tool_call>{"name": …,
//!   "arguments": {…}}</tool_call>`, possibly several, possibly after some text.
//! - **Llama 3.x**: the whole answer is `{"name": …, "parameters": {…}}` (after
//!   `<|python_tag|>`, a control token the worker does not print), or several separated by
//!   `;`.
//! - **Mistral**: `[TOOL_CALLS]` (a control token) then a JSON array of `{"name",
//!   "arguments"}`.
//!
//! The format is read off the chat template: the template that renders the tools is the one
//! that taught the model how to call them.

use serde_json::Value;

/// How a model writes tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Hermes,
    Llama3,
    Mistral,
    /// The template does not render tools: the model is not offered any.
    None,
}

/// One call as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub name: String,
    /// The arguments as JSON text (an object).
    pub arguments: String,
}

/// The format a chat template teaches.
pub fn format_for(template: &str) -> Format {
    if !template.contains("tools") {
        Format::None
    } else if template.contains("<tool_call>") {
        Format::Hermes
    } else if template.contains("[TOOL_CALLS]") {
        Format::Mistral
    } else if template.contains("<|start_header_id|>") || template.contains("<|python_tag|>") {
        Format::Llama3
    } else {
        // A template that renders tools some other way: Hermes is the common default.
        Format::Hermes
    }
}

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

fn call_from(v: &Value) -> Option<Call> {
    let name = v.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let args = v
        .get("arguments")
        .or_else(|| v.get("parameters"))
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let arguments = match args {
        // Some models put the arguments' JSON in a string.
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => v.to_string(),
            _ => return None,
        },
        v @ Value::Object(_) => v.to_string(),
        _ => return None,
    };
    Some(Call {
        name: name.to_owned(),
        arguments,
    })
}

/// Splits `text` into what stays text and the calls in it. A call that does not parse is
/// left in the text.
pub fn parse(format: Format, text: &str) -> (String, Vec<Call>) {
    match format {
        Format::None => (text.to_owned(), Vec::new()),
        Format::Hermes => parse_hermes(text),
        Format::Llama3 => parse_llama3(text),
        Format::Mistral => parse_mistral(text),
    }
}

fn parse_hermes(text: &str) -> (String, Vec<Call>) {
    let mut calls = Vec::new();
    let mut content = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let (before, after) = rest.split_at(start);
        let body_and_more = &after[OPEN.len()..];
        // A missing close tag at the very end: generation stopped at the end token.
        let (body, next) = match body_and_more.find(CLOSE) {
            Some(end) => (&body_and_more[..end], &body_and_more[end + CLOSE.len()..]),
            None => (body_and_more, ""),
        };
        match serde_json::from_str::<Value>(body.trim())
            .ok()
            .as_ref()
            .and_then(call_from)
        {
            Some(call) => {
                content.push_str(before);
                calls.push(call);
            }
            None => {
                content.push_str(before);
                content.push_str(&after[..OPEN.len() + body.len()]);
                if body_and_more.len() > body.len() {
                    content.push_str(CLOSE);
                }
            }
        }
        rest = next;
    }
    content.push_str(rest);
    (content.trim().to_owned(), calls)
}

fn parse_llama3(text: &str) -> (String, Vec<Call>) {
    let body = text.trim().trim_start_matches("<|python_tag|>").trim();
    let unchanged = || (text.trim().to_owned(), Vec::new());
    if !body.starts_with('{') {
        return unchanged();
    }
    let one = |part: &str| {
        serde_json::from_str::<Value>(part.trim())
            .ok()
            .as_ref()
            .and_then(call_from)
    };
    // One object, or several separated by ';' (a ';' inside a string makes the split fail
    // to parse, and then the whole must be one object).
    if let Some(call) = one(body) {
        return (String::new(), vec![call]);
    }
    let calls: Option<Vec<Call>> = body
        .split(';')
        .filter(|p| !p.trim().is_empty())
        .map(one)
        .collect();
    match calls {
        Some(calls) if !calls.is_empty() => (String::new(), calls),
        _ => unchanged(),
    }
}

fn parse_mistral(text: &str) -> (String, Vec<Call>) {
    let trimmed = text.trim();
    let (before, body) = match trimmed.find("[TOOL_CALLS]") {
        Some(i) => (&trimmed[..i], trimmed[i + "[TOOL_CALLS]".len()..].trim()),
        None if trimmed.starts_with("[{") => ("", trimmed),
        None => return (trimmed.to_owned(), Vec::new()),
    };
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(body) else {
        return (trimmed.to_owned(), Vec::new());
    };
    let calls: Option<Vec<Call>> = items.iter().map(call_from).collect();
    match calls {
        Some(calls) if !calls.is_empty() => (before.trim().to_owned(), calls),
        _ => (trimmed.to_owned(), Vec::new()),
    }
}

/// Decides, piece by piece, what of a streamed answer may be shown now and what must wait:
/// text that is or may become a tool call is held back until the answer ends.
#[derive(Debug)]
pub struct Holdback {
    format: Format,
    /// Everything the model wrote.
    all: String,
    /// How much of `all` has been passed on as text.
    shown: usize,
    /// A call has begun: hold the rest.
    holding: bool,
}

impl Holdback {
    pub fn new(format: Format) -> Self {
        Self {
            format,
            all: String::new(),
            shown: 0,
            holding: false,
        }
    }

    /// Takes the next piece; returns the text that may be shown now.
    pub fn push(&mut self, piece: &str) -> String {
        self.all.push_str(piece);
        if self.holding {
            return String::new();
        }
        let pending = &self.all[self.shown..];
        let safe = match self.format {
            Format::None => pending.len(),
            Format::Hermes => match pending.find(OPEN) {
                Some(i) => {
                    self.holding = true;
                    i
                }
                // Keep back a tail that could be the start of the tag.
                None => pending.len() - partial_suffix(pending, OPEN),
            },
            Format::Llama3 | Format::Mistral => {
                let start = self.all.trim_start();
                let markers: &[&str] = if self.format == Format::Llama3 {
                    &["{", "<|python_tag|>"]
                } else {
                    &["[TOOL_CALLS]", "[{"]
                };
                if start.is_empty() {
                    0
                } else if markers
                    .iter()
                    .any(|m| start.starts_with(m) || m.starts_with(start))
                {
                    if markers.iter().any(|m| start.starts_with(m)) {
                        self.holding = true;
                    }
                    0
                } else {
                    pending.len()
                }
            }
        };
        let out = pending[..safe].to_owned();
        self.shown += safe;
        out
    }

    /// The answer ended: the text still to show and the calls.
    pub fn finish(self) -> (String, Vec<Call>) {
        let rest = &self.all[self.shown..];
        if self.format == Format::None {
            return (rest.to_owned(), Vec::new());
        }
        let (text, calls) = parse(self.format, rest);
        if calls.is_empty() {
            (rest.to_owned(), calls)
        } else {
            (text, calls)
        }
    }
}

/// The length of the longest end of `text` that is a proper start of `tag`.
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            text.len() >= n
                && text.is_char_boundary(text.len() - n)
                && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(call: &Call) -> Value {
        serde_json::from_str(&call.arguments).unwrap()
    }

    #[test]
    fn hermes_calls_after_text_several_and_without_the_closing_tag() {
        // As Qwen 2.5 writes them.
        let out = "I'll look that up.\n<tool_call>\n{\"name\": \"search_documents\", \"arguments\": {\"query\": \"lease renewal\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes/lease.md\"}}\n</tool_call>";
        let (text, calls) = parse(Format::Hermes, out);
        assert_eq!(text, "I'll look that up.");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "search_documents");
        assert_eq!(args(&calls[0])["query"], "lease renewal");
        assert_eq!(calls[1].name, "read_file");

        let cut = "<tool_call>\n{\"name\": \"list_files\", \"arguments\": {}}";
        let (text, calls) = parse(Format::Hermes, cut);
        assert_eq!(text, "");
        assert_eq!(calls[0].name, "list_files");
        assert_eq!(calls[0].arguments, "{}");
    }

    #[test]
    fn a_call_that_does_not_parse_stays_text() {
        let out =
            "Sure <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": </tool_call> done";
        let (text, calls) = parse(Format::Hermes, out);
        assert!(calls.is_empty());
        assert!(
            text.contains("<tool_call>") && text.contains("done"),
            "{text}"
        );
        let (text, calls) = parse(Format::Llama3, "{\"not\": \"a call\"}");
        assert!(calls.is_empty());
        assert_eq!(text, "{\"not\": \"a call\"}");
        let (_, calls) = parse(
            Format::Hermes,
            "<tool_call>{\"name\": \"x\", \"arguments\": [1]}</tool_call>",
        );
        assert!(calls.is_empty(), "arguments must be an object");
    }

    #[test]
    fn llama3_and_mistral_calls() {
        let (text, calls) = parse(
            Format::Llama3,
            "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lisbon\"}}",
        );
        assert_eq!(text, "");
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(args(&calls[0])["city"], "Lisbon");
        let (_, two) = parse(
            Format::Llama3,
            "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1}}",
        );
        assert_eq!(two.len(), 2);
        assert_eq!(args(&two[1])["x"], 1);
        let (text, calls) = parse(
            Format::Mistral,
            "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}]",
        );
        assert_eq!(text, "");
        assert_eq!(
            args(&calls[0])["path"],
            "a.txt",
            "string arguments are parsed"
        );
    }

    #[test]
    fn the_format_comes_from_the_template() {
        assert_eq!(
            format_for("{% for m in messages %}{{ m.content }}{% endfor %}"),
            Format::None
        );
        assert_eq!(
            format_for("{% if tools %}<tools>{{ tools }}</tools> ... <tool_call>{% endif %}"),
            Format::Hermes
        );
        assert_eq!(
            format_for("{% if tools %}<|start_header_id|>ipython{% endif %}"),
            Format::Llama3
        );
        assert_eq!(
            format_for("{% if tools %}[AVAILABLE_TOOLS][TOOL_CALLS]{% endif %}"),
            Format::Mistral
        );
    }

    #[test]
    fn streamed_text_is_shown_until_a_call_begins_and_the_call_is_held() {
        let mut h = Holdback::new(Format::Hermes);
        let mut shown = String::new();
        for piece in [
            "Let me ",
            "check.",
            " <tool",
            "_call>",
            "{\"name\": \"read_file\", ",
            "\"arguments\": {\"path\": \"a\"}}",
            "</tool_call>",
        ] {
            shown.push_str(&h.push(piece));
        }
        assert_eq!(shown, "Let me check. ");
        let (rest, calls) = h.finish();
        assert_eq!(rest, "");
        assert_eq!(calls[0].name, "read_file");

        // A '<' that does not become the tag is shown after all.
        let mut h = Holdback::new(Format::Hermes);
        let mut shown = h.push("a <");
        shown.push_str(&h.push("b> c"));
        let (rest, calls) = h.finish();
        assert_eq!(format!("{shown}{rest}"), "a <b> c");
        assert!(calls.is_empty());

        // Llama 3: an answer that starts as JSON is held whole; prose streams.
        let mut h = Holdback::new(Format::Llama3);
        assert_eq!(h.push("{\"name\": \"x\", "), "");
        assert_eq!(h.push("\"parameters\": {}}"), "");
        assert_eq!(h.finish().1.len(), 1);
        let mut h = Holdback::new(Format::Llama3);
        assert_eq!(h.push("Hello"), "Hello");
    }
}
