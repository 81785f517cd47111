//! Tools from outside Hearth's own code (an MCP server's, issue 13): what the run needs to
//! offer one, gate it and call it. An external tool never runs except through
//! [`super::run::ToolRun`] — the same parse, validate, gate, run and record as a built-in —
//! and everything it returns is untrusted data (it escalates the calls after it).

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::{Origin, Risk};

/// What an external tool gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalOutput {
    /// The result as text (for the model, and the user in full).
    pub text: String,
    /// False when the tool reported an error (the model is told it failed).
    pub ok: bool,
    /// It failed for a system reason that may pass (a read is tried again; a write never).
    pub transient: bool,
}

/// A tool Hearth does not implement itself.
pub trait ExternalTool: Send + Sync {
    /// The name the model calls it by (`^[a-zA-Z0-9_-]{1,64}$`, unique in the run).
    fn name(&self) -> &str;
    /// What it does, when to use it and when not.
    fn description(&self) -> &str;
    /// Its input: a JSON Schema object.
    fn parameters(&self) -> Value;
    fn origin(&self) -> Origin;
    fn risk(&self) -> Risk;
    /// It can send data off this computer (MCP `openWorldHint` not false): after untrusted
    /// text entered the turn, even a read of this kind asks.
    fn open_world(&self) -> bool;
    /// What a grant of it names beyond its name: for an MCP tool, its server's identity
    /// and its pinned definition's hash (a grant ends when either changes).
    fn binding(&self) -> String;
    /// What a grant of it covers, in words (`hearth grants list`).
    fn covers(&self) -> String;
    /// Runs with arguments that passed [`check_arguments`] and the gate. The future is
    /// dropped when the user stops the turn or the call's time is up: an implementation
    /// that owns a child process kills it on drop.
    fn call(&self, arguments: Value) -> Pin<Box<dyn Future<Output = ExternalOutput> + Send>>;
}

/// Checks `arguments` against a tool's JSON Schema before anyone is asked. The common
/// faults first, in words a model fixes readily (an object, every `required` property, no
/// property a closed schema does not name, each property of its `type`); then the whole
/// schema (`jsonschema`: enums, nested objects, bounds, patterns …). A schema the validator
/// cannot build (a remote `$ref`, an unknown draft) keeps the first check only.
pub fn check_arguments(schema: &Value, arguments: &Value) -> Result<(), String> {
    check_common(schema, arguments)?;
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Ok(());
    };
    match validator.validate(arguments) {
        Ok(()) => Ok(()),
        Err(e) => {
            let at = e.instance_path().to_string();
            // Masked: the message names the rule, not the value (it may be long or private).
            let what = e.masked().to_string();
            Err(if at.is_empty() {
                format!("the arguments do not match the tool's schema: {what}")
            } else {
                format!("`{at}` does not match the tool's schema: {what}")
            })
        }
    }
}

fn check_common(schema: &Value, arguments: &Value) -> Result<(), String> {
    let Some(args) = arguments.as_object() else {
        return Err("the arguments must be a JSON object".into());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !args.contains_key(name) {
            return Err(format!("the argument `{name}` is required"));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (name, value) in args {
        let Some(spec) = properties.and_then(|p| p.get(name)) else {
            if closed {
                return Err(format!("there is no argument `{name}`"));
            }
            continue;
        };
        let Some(kind) = spec.get("type") else {
            continue;
        };
        let kinds: Vec<&str> = match kind {
            Value::String(k) => vec![k.as_str()],
            Value::Array(ks) => ks.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        if !kinds.iter().any(|k| of_type(value, k)) {
            return Err(format!("`{name}` must be of type {}", kinds.join(" or ")));
        }
    }
    Ok(())
}

fn of_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::check_arguments;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_against_the_schema_before_anyone_is_asked() {
        let schema = json!({
            "type": "object",
            "properties": {"url": {"type": "string"}, "max": {"type": ["integer", "null"]}},
            "required": ["url"],
            "additionalProperties": false
        });
        assert!(check_arguments(&schema, &json!({"url": "https://x"})).is_ok());
        assert!(check_arguments(&schema, &json!({"url": "https://x", "max": null})).is_ok());
        assert_eq!(
            check_arguments(&schema, &json!({})),
            Err("the argument `url` is required".into())
        );
        assert_eq!(
            check_arguments(&schema, &json!({"url": 3})),
            Err("`url` must be of type string".into())
        );
        assert_eq!(
            check_arguments(&schema, &json!({"url": "u", "max": 1.5})),
            Err("`max` must be of type integer or null".into())
        );
        assert_eq!(
            check_arguments(&schema, &json!({"url": "u", "then": "delete"})),
            Err("there is no argument `then`".into())
        );
        assert!(check_arguments(&schema, &json!(["url"])).is_err());
        // An open schema lets other properties through.
        assert!(check_arguments(&json!({"type": "object"}), &json!({"a": 1})).is_ok());
        // The rest of the schema holds too: enums, nested objects, bounds.
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"enum": ["read", "write"]},
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"old": {"type": "string"}},
                    "required": ["old"]
                }},
                "depth": {"type": "integer", "minimum": 1}
            }
        });
        assert!(
            check_arguments(&schema, &json!({"mode": "read", "edits": [{"old": "a"}]})).is_ok()
        );
        for bad in [
            json!({"mode": "delete"}),
            json!({"edits": [{"new": "b"}]}),
            json!({"depth": 0}),
        ] {
            let e = check_arguments(&schema, &bad).expect_err("invalid");
            assert!(e.contains("does not match the tool's schema"), "{e}");
        }
        // A schema the validator cannot build keeps the common checks.
        let remote =
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}});
        assert!(check_arguments(&remote, &json!({"a": 1})).is_ok());
    }
}
