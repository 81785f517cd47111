//! The common desktop config format (`{"mcpServers": {name: {command, args, env} | {url,
//! headers}}}`, as Claude Desktop, Cursor and others write it): reading it for import and
//! writing it for export.
//!
//! The file is someone else's and treated as hostile: read bounded, every value
//! type-checked, unknown keys ignored (and named, so `autoApprove`-style keys are visibly
//! not honoured), the legacy HTTP+SSE transport refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::{Error, Result};

/// The largest config file read (the biggest real ones are a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// What an exported secret value reads as unless `--include-secrets`.
pub const REDACTED: &str = "<redacted: kept in Hearth's keyring>";

/// One server as a desktop config describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DesktopServer {
    pub name: String,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub url: Option<String>,
    pub env: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
    /// `"disabled": true` in the file.
    pub disabled: bool,
    /// Keys Hearth does not use (`autoApprove`, `timeout`, …), ignored.
    pub ignored: Vec<String>,
}

/// A server of the file that was not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub name: String,
    pub reason: String,
}

/// Where Claude Desktop keeps its config on this platform (an unofficial location):
/// Linux `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (`~/.config` when unset),
/// macOS `~/Library/Application Support/Claude/…`, Windows `%APPDATA%\Claude\…`.
pub fn claude_desktop_path() -> Option<PathBuf> {
    let base = if cfg!(target_os = "linux") {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().join(".config")))?
    } else {
        // macOS: ~/Library/Application Support; Windows: %APPDATA% (roaming).
        directories::BaseDirs::new()?.config_dir().to_path_buf()
    };
    Some(base.join("Claude").join("claude_desktop_config.json"))
}

/// Reads a config file, bounded.
pub fn read_file(path: &Path) -> Result<String> {
    let file = std::fs::File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound(format!("{} does not exist", path.display()))
        } else {
            Error::Io {
                path: path.to_path_buf(),
                source: e,
            }
        }
    })?;
    read_bounded(file, &path.display().to_string())
}

/// A config from `reader` (a file, standard input), read bounded: UTF-8 text of at most
/// [`MAX_CONFIG_BYTES`]; `what` names it in the error.
pub fn read_bounded(reader: impl std::io::Read, what: &str) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    let n = reader
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|_| Error::InvalidInput(format!("{what} is not UTF-8 text")))?;
    if n as u64 > MAX_CONFIG_BYTES {
        return Err(Error::InvalidInput(format!(
            "{what} is over {} KiB; it is not an MCP config",
            MAX_CONFIG_BYTES / 1024
        )));
    }
    Ok(text)
}

fn string_map(
    v: Option<&Value>,
    what: &str,
) -> std::result::Result<BTreeMap<String, String>, String> {
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(format!("{what} {k:?} is not a string")),
            })
            .collect(),
        Some(_) => Err(format!("{what} is not an object")),
    }
}

fn one_server(name: &str, v: &Value) -> std::result::Result<DesktopServer, String> {
    let Value::Object(m) = v else {
        return Err("its entry is not an object".into());
    };
    let text = |k: &str| -> std::result::Result<Option<String>, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(format!("{k:?} is not a non-empty string")),
        }
    };
    let command = text("command")?;
    let url = match text("url")? {
        Some(u) => Some(u),
        None => text("serverUrl")?,
    };
    let kind = text("type")?.map(|t| t.to_ascii_lowercase());
    match kind.as_deref() {
        None | Some("stdio") | Some("http") | Some("streamable-http") | Some("streamablehttp") => {}
        Some("sse") => {
            return Err(
                "it uses the legacy HTTP+SSE transport, which Hearth does not speak".into(),
            );
        }
        Some(other) => return Err(format!("its type {other:?} is not one Hearth knows")),
    }
    match (&command, &url) {
        (Some(_), Some(_)) => return Err("it names both a command and a URL".into()),
        (None, None) => return Err("it names neither a command nor a URL".into()),
        _ => {}
    }
    let args = match m.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err("an argument is not a string".to_owned()),
            })
            .collect::<std::result::Result<_, _>>()?,
        Some(_) => return Err("\"args\" is not a list".into()),
    };
    let known = [
        "command",
        "args",
        "env",
        "url",
        "serverUrl",
        "headers",
        "type",
        "disabled",
    ];
    Ok(DesktopServer {
        name: name.to_owned(),
        command,
        args,
        url,
        env: string_map(m.get("env"), "env value")?,
        headers: string_map(m.get("headers"), "header")?,
        disabled: matches!(m.get("disabled"), Some(Value::Bool(true))),
        ignored: m
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
            .cloned()
            .collect(),
    })
}

/// Parses a desktop config: its servers (under `mcpServers`, or `servers` as VS Code
/// writes it) and those it cannot import, with why. Keys beside the servers are ignored.
pub fn parse(text: &str) -> Result<(Vec<DesktopServer>, Vec<Skipped>)> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        Error::InvalidInput(format!(
            "not a JSON MCP config (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    let servers: &Map<String, Value> = match root.get("mcpServers").or_else(|| root.get("servers"))
    {
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(Error::InvalidInput(
                "\"mcpServers\" is not an object of servers".into(),
            ));
        }
        None => {
            return Err(Error::InvalidInput(
                "no \"mcpServers\" object: not an MCP desktop config".into(),
            ));
        }
    };
    let (mut ok, mut skipped) = (Vec::new(), Vec::new());
    for (name, v) in servers {
        match one_server(name, v) {
            Ok(s) => ok.push(s),
            Err(reason) => skipped.push(Skipped {
                name: name.clone(),
                reason,
            }),
        }
    }
    Ok((ok, skipped))
}

/// One server's entry for export.
pub fn entry(server: &DesktopServer) -> Value {
    let mut m = Map::new();
    if let Some(c) = &server.command {
        m.insert("command".into(), c.clone().into());
        m.insert("args".into(), server.args.clone().into());
        if !server.env.is_empty() {
            m.insert("env".into(), serde_json::json!(server.env));
        }
    }
    if let Some(u) = &server.url {
        m.insert("type".into(), "http".into());
        m.insert("url".into(), u.clone().into());
        if !server.headers.is_empty() {
            m.insert("headers".into(), serde_json::json!(server.headers));
        }
    }
    if server.disabled {
        m.insert("disabled".into(), true.into());
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_config_parses_with_unknown_keys_ignored_and_sse_refused() {
        let text = r#"{
          "globalShortcut": "Ctrl+Space",
          "mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "pkg", 3], "env": {"TOKEN": "s"},
                   "autoApprove": ["read_file"]},
            "remote": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer t"}},
            "old": {"type": "sse", "url": "https://x.example/sse"},
            "both": {"command": "a", "url": "https://b"},
            "bad": {"command": "a", "env": {"K": {"nested": 1}}},
            "off": {"command": "b", "disabled": true}
          }
        }"#;
        let (ok, skipped) = parse(text).unwrap_or_default();
        let names: Vec<&str> = ok.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fs", "off", "remote"]);
        assert_eq!(ok[0].args, ["-y", "pkg", "3"]);
        assert_eq!(ok[0].ignored, ["autoApprove"]);
        assert!(ok[1].disabled);
        assert_eq!(ok[2].headers["Authorization"], "Bearer t");
        let skipped: Vec<&str> = skipped.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(skipped, ["bad", "both", "old"]);
        assert!(parse("[]").is_err());
        assert!(parse("{\"mcpServers\": 3}").is_err());
        assert!(parse("not json").is_err());
    }
}
