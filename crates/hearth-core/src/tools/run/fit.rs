//! The tools array offered to the model, fitted to the tools zone of the window.

use super::*;

/// The tools array offered to the model, fitted to the tools zone of the window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub specs: Vec<ToolSpec>,
    /// What the array costs, counted as the provider receives it.
    pub tokens: u32,
    /// Tools that did not fit the zone (the context inspector lists them).
    pub left_out: Vec<String>,
    /// The full schemas did not fit: every tool is a short entry beside `describe_tool`
    /// and `call_tool`, and each message gets the schemas of its likeliest tools
    /// ([`crate::tools::select`]).
    pub selection: bool,
}

/// Framing tokens per tool in a tools array (the provider's wrapper around each).
const TOOL_OVERHEAD: u32 = 8;

/// The tokens one tool costs in the tools array: its JSON as sent.
pub fn spec_tokens(spec: &ToolSpec, encoding: crate::tokens::Encoding) -> u32 {
    let json = serde_json::json!({
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    });
    encoding.count(&json.to_string()) as u32 + TOOL_OVERHEAD
}

/// The tools of `specs` (given read tools first, then write, then destructive) that fit
/// `budget` tokens: taken in that order, a tier's tools while they fit; once a tool of a
/// tier is left out, no tool of a riskier tier goes in (a small model gets its reads
/// before anything that changes files). A function of its inputs only, so a conversation
/// with the same model and enabled tools gets the same array every turn (the prompt cache
/// keeps it).
pub fn fit_catalog(
    specs: &[(ToolSpec, Risk)],
    budget: u32,
    encoding: crate::tokens::Encoding,
) -> Catalog {
    let mut out = Catalog::default();
    let mut cut_at: Option<Risk> = None;
    for (spec, risk) in specs {
        let cost = spec_tokens(spec, encoding);
        let blocked = cut_at.is_some_and(|r| *risk > r);
        if !blocked && out.tokens + cost <= budget {
            out.tokens += cost;
            out.specs.push(spec.clone());
        } else {
            cut_at = Some(cut_at.map_or(*risk, |r| r.min(*risk)));
            out.left_out.push(spec.name.clone());
        }
    }
    out
}
