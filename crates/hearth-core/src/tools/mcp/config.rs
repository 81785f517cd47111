//! How a server is started: its command or URL, and the environment its child gets.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How Hearth reaches a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "transport", rename_all = "snake_case")]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout; `command` is absolute.
    Stdio { command: PathBuf, args: Vec<String> },
    /// Streamable HTTP at `url`.
    Http { url: String },
}

/// A server's secret values: its env values and header values (kept in the keyring, or
/// the encrypted database under the file and passphrase key backends; never in settings
/// rows, files or logs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secrets {
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

impl Secrets {
    pub fn is_empty(&self) -> bool {
        self.env.is_empty() && self.headers.is_empty()
    }
}

/// A server name: letters, digits, `-`, `_` and `.`, 1–48 characters.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 48
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "{name:?} is not a server name: use 1–48 letters, digits, '-', '_' or '.'"
        )))
    }
}

/// The environment variables a child inherits from Hearth's (the MCP SDK's default
/// allow-list). Nothing else of Hearth's environment reaches it: never `HEARTH_*`, never a
/// provider key.
#[cfg(unix)]
pub const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
#[cfg(windows)]
pub const INHERITED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// Resolves a bare command (`npx`) against `path` (the user's PATH) to an absolute file;
/// a command with a directory part is made absolute against `cwd`. Refuses what is not an
/// executable file.
pub fn resolve_command(command: &str, path: Option<OsString>, cwd: &Path) -> Result<PathBuf> {
    let given = Path::new(command);
    if command.trim().is_empty() {
        return Err(Error::InvalidInput("the command is empty".into()));
    }
    let candidates: Vec<PathBuf> = if given.components().count() > 1 || given.is_absolute() {
        vec![cwd.join(given)]
    } else {
        path.map(|p| std::env::split_paths(&p).map(|d| d.join(given)).collect())
            .unwrap_or_default()
    };
    candidates
        .into_iter()
        // Not canonicalised: `/usr/bin/npx` is a link into npm's own folder, and the
        // child gets this file's directory first on PATH, where `node` lives beside it.
        .find(|c| is_executable(c))
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "{command:?} was not found as an executable file{}",
                if given.components().count() > 1 {
                    ""
                } else {
                    " on PATH"
                }
            ))
        })
}

fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The folder a child starts in: the user's home (as a desktop app's children do, so a
/// relative path in its arguments, or `npx` looking for a local package, starts there),
/// else the command's own folder.
pub fn child_cwd(parent: impl Fn(&str) -> Option<OsString>, command: &Path) -> Option<PathBuf> {
    parent("HOME")
        .or_else(|| parent("USERPROFILE"))
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h.is_dir())
        .or_else(|| command.parent().map(Path::to_path_buf))
}

/// The child's whole environment: [`INHERITED_ENV`] from `parent`, the resolved command's
/// directory first on PATH (so `#!/usr/bin/env node` finds the node next to `npx`), then
/// what the config names.
pub fn child_env(
    parent: impl Fn(&str) -> Option<OsString>,
    command: &Path,
    configured: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
    for name in INHERITED_ENV {
        if let Some(v) = parent(name) {
            env.insert((*name).into(), v);
        }
    }
    if let Some(dir) = command.parent() {
        let mut dirs = vec![dir.to_path_buf()];
        if let Some(p) = env.get(&OsString::from("PATH")) {
            dirs.extend(std::env::split_paths(p).filter(|d| d != dir));
        }
        if let Ok(joined) = std::env::join_paths(dirs) {
            env.insert("PATH".into(), joined);
        }
    }
    for (k, v) in configured {
        env.insert(k.into(), v.into());
    }
    env.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_gets_the_allow_list_and_its_config_never_hearths_own() {
        let parent = |k: &str| -> Option<OsString> {
            match k {
                "HOME" => Some("/home/u".into()),
                "PATH" => Some("/usr/bin:/opt/node/bin".into()),
                "HEARTH_KEY_FILE" | "OPENAI_API_KEY" => Some("secret".into()),
                _ => None,
            }
        };
        let mut cfg = BTreeMap::new();
        cfg.insert("API_TOKEN".to_owned(), "t".to_owned());
        let env = child_env(parent, Path::new("/opt/node/bin/npx"), &cfg);
        let names: Vec<String> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["API_TOKEN", "HOME", "PATH"]);
        let path = &env[2].1;
        assert_eq!(path, "/opt/node/bin:/usr/bin");
    }

    #[test]
    fn a_bare_command_resolves_on_path_to_an_absolute_file() {
        let dir = std::env::temp_dir();
        let found = resolve_command("sh", Some("/nonexistent:/bin:/usr/bin".into()), &dir);
        let found = found.unwrap_or_default();
        assert!(found.is_absolute(), "{found:?}");
        assert!(resolve_command("no-such-cmd-hearth", Some("/bin".into()), &dir).is_err());
        assert!(check_name("fs").is_ok());
        assert!(check_name("a b").is_err());
    }
}

/// Refuses, before anything is sent, to carry secrets (header values, or a user name and
/// password in the URL) over plain `http://` to another computer, as providers refuse
/// (`provider_insecure`); a server on this computer may use plain http.
pub fn check_secrets_travel(
    url: &str,
    has_secret_headers: bool,
) -> std::result::Result<(), String> {
    let Some(host) = crate::llm::insecure_host(url) else {
        return Ok(());
    };
    let in_url =
        reqwest::Url::parse(url).is_ok_and(|u| !u.username().is_empty() || u.password().is_some());
    if has_secret_headers || in_url {
        return Err(format!(
            "{host} is reached over plain http, so its secrets would cross the network in \
             clear; use its https:// URL"
        ));
    }
    Ok(())
}

/// `url` as it may be shown or logged: no user name or password, and every query value
/// replaced by `redacted` (tokens ride there). An unparsable URL is not shown at all.
pub fn redact_url(url: &str) -> String {
    let Ok(mut u) = reqwest::Url::parse(url) else {
        return "(an invalid URL)".into();
    };
    let _ = u.set_username("");
    let _ = u.set_password(None);
    if u.query().is_some() {
        let keys: Vec<String> = u.query_pairs().map(|(k, _)| k.into_owned()).collect();
        let mut q = u.query_pairs_mut();
        q.clear();
        for k in keys {
            q.append_pair(&k, "redacted");
        }
    }
    u.to_string()
}

#[cfg(test)]
mod redact_tests {
    #[test]
    fn secrets_never_go_over_plain_http_to_another_computer() {
        use super::check_secrets_travel as check;
        assert!(check("http://mcp.example.com/mcp", true).is_err());
        assert!(check("http://bob:pw@mcp.example.com/mcp", false).is_err());
        assert!(check("http://mcp.example.com/mcp", false).is_ok());
        assert!(check("https://mcp.example.com/mcp", true).is_ok());
        assert!(check("http://127.0.0.1:9000/mcp", true).is_ok());
        assert!(check("http://localhost:9000/mcp", true).is_ok());
    }

    #[test]
    fn urls_lose_credentials_and_query_values() {
        assert_eq!(
            super::redact_url("https://bob:pw@mcp.example.com/mcp?token=s3cret&x=1"),
            "https://mcp.example.com/mcp?token=redacted&x=redacted"
        );
        assert_eq!(
            super::redact_url("http://127.0.0.1:8080/mcp"),
            "http://127.0.0.1:8080/mcp"
        );
        assert_eq!(super::redact_url("not a url"), "(an invalid URL)");
    }
}
