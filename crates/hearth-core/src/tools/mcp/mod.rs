//! MCP servers' tools (issue 13): the client (`client`), the servers the user added and
//! their pinned tool definitions (`registry`), and the tools a run offers from them.
//!
//! **Invariant:** an MCP tool reaches the model only when its server is enabled and the
//! user approved the tool's definition exactly as the server lists it now (SHA-256 over
//! canonical JSON); it runs only through [`super::run::ToolRun`] as an
//! [`super::external::ExternalTool`] — the same schema check, gate, record and audit as a
//! built-in — and what it returns is untrusted data. Nothing here depends on `chat` or the
//! façade.

pub mod client;
pub mod config;
pub mod desktop;
pub mod manager;
pub mod registry;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Risk;

/// A tool as a server describes it (the part that is pinned).
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// The MCP annotations as sent (`readOnlyHint`, `destructiveHint`, …), or null.
    pub annotations: Value,
}

impl Definition {
    /// The definition as canonical JSON: keys sorted at every level, no spaces.
    pub fn canonical(&self) -> String {
        let v = serde_json::json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": self.annotations,
        });
        canonical_json(&v)
    }

    /// SHA-256 of [`Definition::canonical`], hex.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.canonical().as_bytes()))
    }

    /// Parses what [`Definition::canonical`] wrote.
    pub fn from_canonical(text: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(text).ok()?;
        Some(Self {
            name: v.get("name")?.as_str()?.to_owned(),
            description: v
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            input_schema: v.get("inputSchema").cloned().unwrap_or(Value::Null),
            annotations: v.get("annotations").cloned().unwrap_or(Value::Null),
        })
    }

    /// The risk its annotations give (SPEC §6): `readOnlyHint: true` → read;
    /// `destructiveHint: false` → write; anything else → destructive. The second value
    /// says whether an annotation decided it (`annotation`) or nothing did (`default`).
    pub fn annotated_risk(&self) -> (Risk, &'static str) {
        let hint = |k: &str| self.annotations.get(k).and_then(Value::as_bool);
        match (hint("readOnlyHint"), hint("destructiveHint")) {
            (Some(true), _) => (Risk::Read, "annotation"),
            (_, Some(false)) => (Risk::Write, "annotation"),
            (_, Some(true)) => (Risk::Destructive, "annotation"),
            _ => (Risk::Destructive, "default"),
        }
    }

    /// It may reach beyond the computer: `openWorldHint` is not false.
    pub fn open_world(&self) -> bool {
        self.annotations
            .get("openWorldHint")
            .and_then(Value::as_bool)
            != Some(false)
    }
}

/// `v` as JSON with object keys sorted recursively (whatever order the map keeps).
pub fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    if let Some(x) = map.get(k) {
                        write(x, out);
                    }
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// Where a tool stands with the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolState {
    /// Approved as the server lists it now: offered to the model.
    Enabled,
    /// Its definition changed since the user approved it: off until reviewed.
    DisabledChanged,
    /// It appeared after the user approved the server: off until approved.
    DisabledNew,
    /// The server was never approved.
    NeedsApproval,
}

impl ToolState {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolState::Enabled => "enabled",
            ToolState::DisabledChanged => "disabled_changed",
            ToolState::DisabledNew => "disabled_new",
            ToolState::NeedsApproval => "needs_approval",
        }
    }
}

/// The name the model calls a server's tool by: `server__tool` when both names are already
/// valid (`[a-zA-Z0-9_-]`, the server's without `__`: then the pair is unambiguous) and the
/// result fits 64 characters and is not `taken`; otherwise the cleaned name cut short with
/// a short hash of the real pair. A function of the pair, never of the order a server
/// lists its tools, so a re-added server's tools get the names they had (`taken` matters
/// only for a hash collision). Never parsed back: the registry maps it to (server, tool).
pub fn exposed_name(server: &str, tool: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let base = format!("{}__{}", clean(server), clean(tool));
    let unambiguous = clean(server) == server && clean(tool) == tool && !server.contains("__");
    if unambiguous && base.len() <= 64 && !taken(&base) {
        return base;
    }
    let digest = hex::encode(Sha256::digest(format!("{server}\u{0}{tool}").as_bytes()));
    for n in 0..4 {
        let suffix = &digest[n * 8..n * 8 + 8];
        let keep = 64 - 1 - suffix.len();
        let mut head: String = base.chars().take(keep).collect();
        head.push('_');
        head.push_str(suffix);
        if !taken(&head) {
            return head;
        }
    }
    format!("mcp_{}", &digest[..59])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(annotations: Value) -> Definition {
        Definition {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
            annotations,
        }
    }

    #[test]
    fn risk_follows_the_annotations_and_anything_else_is_destructive() {
        assert_eq!(
            def(json!({"readOnlyHint": true})).annotated_risk(),
            (Risk::Read, "annotation")
        );
        assert_eq!(
            def(json!({"readOnlyHint": false, "destructiveHint": false})).annotated_risk(),
            (Risk::Write, "annotation")
        );
        assert_eq!(
            def(json!({"destructiveHint": true})).annotated_risk(),
            (Risk::Destructive, "annotation")
        );
        assert_eq!(
            def(Value::Null).annotated_risk(),
            (Risk::Destructive, "default")
        );
        assert!(def(Value::Null).open_world());
        assert!(!def(json!({"openWorldHint": false})).open_world());
    }

    #[test]
    fn the_hash_ignores_key_order_and_sees_every_change() {
        let a = def(json!({"readOnlyHint": true, "title": "x"}));
        let mut b = a.clone();
        b.annotations = json!({"title": "x", "readOnlyHint": true});
        assert_eq!(a.hash(), b.hash());
        let mut c = a.clone();
        c.description.push('!');
        assert_ne!(a.hash(), c.hash());
        assert_eq!(Definition::from_canonical(&a.canonical()), Some(a));
        assert_eq!(
            canonical_json(&json!({"b": [{"d": 1, "c": 2}], "a": null})),
            r#"{"a":null,"b":[{"c":2,"d":1}]}"#
        );
    }

    #[test]
    fn exposed_names_are_valid_unique_and_never_split() {
        let none = |_: &str| false;
        assert_eq!(exposed_name("fs", "read_file", &none), "fs__read_file");
        // A name that had to be cleaned gets its pair's hash, whoever came first: "a.b" and
        // "a_b" keep their names in either listing order.
        let dotted = exposed_name("my.server", "get sum", &none);
        assert!(dotted.starts_with("my_server__get_sum_"), "{dotted}");
        assert_eq!(exposed_name("fs", "a_b", &none), "fs__a_b");
        assert_ne!(exposed_name("fs", "a.b", &none), "fs__a_b");
        assert_eq!(
            exposed_name("fs", "a.b", &none),
            exposed_name("fs", "a.b", &|n: &str| n == "fs__a_b")
        );
        // A name taken by another pair gets a hash of its own pair.
        let taken = |n: &str| n == "a__b__c";
        let x = exposed_name("a__b", "c", &taken);
        let y = exposed_name("a", "b__c", &|n: &str| n == "a__b__c" || n == x);
        assert_ne!(x, "a__b__c");
        assert_ne!(x, y);
        let long = exposed_name(&"s".repeat(50), &"t".repeat(50), &none);
        assert!(long.len() <= 64);
        for n in [&x, &y, &long] {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
    }
}
