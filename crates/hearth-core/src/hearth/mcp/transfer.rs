//! Servers in and out: importing a desktop config (Claude Desktop's, a file, standard
//! input) and exporting Hearth's.

use super::*;

impl McpService {
    /// Where Claude Desktop keeps its config here (it may not exist).
    pub fn claude_desktop_config() -> Result<std::path::PathBuf> {
        desktop::claude_desktop_path().ok_or_else(|| {
            Error::NotFound("no home folder to find Claude Desktop's config in".into())
        })
    }

    /// Imports the servers of a desktop config read from `reader` (standard input), read
    /// bounded: see [`Self::import`].
    pub async fn import_reader(
        &self,
        reader: impl std::io::Read,
        replace: bool,
        surface: &dyn Consent,
    ) -> Result<ImportReport> {
        let text = desktop::read_bounded(reader, "the config")?;
        self.import(&text, replace, surface).await
    }

    /// Imports the servers of a desktop config file (read bounded): see [`Self::import`].
    pub async fn import_file(
        &self,
        path: &Path,
        replace: bool,
        surface: &dyn Consent,
    ) -> Result<ImportReport> {
        self.import(&desktop::read_file(path)?, replace, surface)
            .await
    }

    /// Imports the servers of a desktop config (`{"mcpServers": …}`): bare commands
    /// resolved on PATH to absolute paths, env and header values to the keyring, unknown
    /// keys ignored (and noted), a name that exists skipped unless `replace`. Starts
    /// nothing and approves nothing: each server is `new` until its tools are listed. The
    /// servers are programs Hearth will start, so the user confirms the import on
    /// `surface` first (`confirmation_required`).
    pub async fn import(
        &self,
        text: &str,
        replace: bool,
        surface: &dyn Consent,
    ) -> Result<ImportReport> {
        let (servers, mut skipped) = desktop::parse(text)?;
        if !servers.is_empty() {
            let listed: Vec<serde_json::Value> = servers
                .iter()
                .map(|s| match (&s.command, &s.url) {
                    (Some(c), _) => {
                        serde_json::json!({"name": s.name, "command": c, "args": s.args})
                    }
                    (None, Some(u)) => serde_json::json!({"name": s.name,
                        "url": crate::tools::mcp::config::redact_url(u)}),
                    _ => serde_json::json!({"name": s.name}),
                })
                .collect();
            confirm(
                surface,
                &Act {
                    what: format!("import {} MCP servers", servers.len()),
                    origin: Origin::BuiltIn,
                    reason: "each is a program Hearth will start on this computer, as you, \
                             when its tools are listed or used"
                        .into(),
                    details: serde_json::to_string_pretty(&listed).unwrap_or_default(),
                },
            )
            .await?;
        }
        let registry = self.registry();
        let mut imported = Vec::new();
        for s in servers {
            match self.import_one(&registry, s, replace) {
                Ok(Some(row)) => imported.push(row),
                Ok(None) => {}
                Err((name, reason)) => skipped.push(Skipped { name, reason }),
            }
        }
        skipped.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ImportReport { imported, skipped })
    }

    pub(super) fn import_one(
        &self,
        registry: &Registry,
        s: DesktopServer,
        replace: bool,
    ) -> std::result::Result<Option<ImportedServer>, (String, String)> {
        let fail = |e: Error| (s.name.clone(), e.to_string());
        crate::tools::mcp::config::check_name(&s.name).map_err(fail)?;
        let existing = registry.get(&s.name).map_err(fail)?;
        if existing.is_some() && !replace {
            return Err((
                s.name.clone(),
                "a server of that name exists (import with --replace to replace it)".into(),
            ));
        }
        let transport =
            Self::transport_of(s.command.as_deref(), &s.args, s.url.as_deref()).map_err(fail)?;
        let mut notes: Vec<String> = s
            .ignored
            .iter()
            .map(|k| format!("ignored {k:?}: Hearth asks before tools run; approve them here"))
            .collect();
        // A redacted value (from an export) keeps the value stored under that name, if any.
        let old = match &existing {
            Some(row) => registry.secrets(row).map_err(fail)?,
            None => Secrets::default(),
        };
        let mut keep = |values: &BTreeMap<String, String>,
                        stored: &BTreeMap<String, String>,
                        what: &str|
         -> BTreeMap<String, String> {
            let mut out = BTreeMap::new();
            for (k, v) in values {
                if v == REDACTED {
                    match stored.get(k) {
                        Some(old) => {
                            out.insert(k.clone(), old.clone());
                        }
                        None => notes.push(format!(
                            "{what} {k} was redacted in the file; set it with hearth mcp add --replace"
                        )),
                    }
                } else {
                    out.insert(k.clone(), v.clone());
                }
            }
            out
        };
        let secrets = Secrets {
            env: keep(&s.env, &old.env, "env"),
            headers: keep(&s.headers, &old.headers, "header"),
        };
        if let Transport::Http { url } = &transport {
            crate::tools::mcp::config::check_secrets_travel(url, !secrets.headers.is_empty())
                .map_err(|e| (s.name.clone(), e))?;
        }
        let mut row = registry
            .add(&s.name, &transport, &secrets, replace)
            .map_err(fail)?;
        if s.disabled {
            row = registry.set_enabled(&s.name, false).map_err(fail)?;
        }
        Ok(Some(ImportedServer {
            server: shown(row),
            notes,
        }))
    }

    /// Every server in the desktop format. Secret values read [`REDACTED`] unless
    /// `include_secrets`.
    pub fn export(&self, include_secrets: bool) -> Result<serde_json::Value> {
        let registry = self.registry();
        let mut servers = serde_json::Map::new();
        for row in registry.list()? {
            let secrets = if include_secrets {
                registry.secrets(&row)?
            } else {
                Secrets {
                    env: row
                        .env
                        .iter()
                        .map(|k| (k.clone(), REDACTED.into()))
                        .collect(),
                    headers: row
                        .headers
                        .iter()
                        .map(|k| (k.clone(), REDACTED.into()))
                        .collect(),
                }
            };
            let mut d = DesktopServer {
                name: row.name.clone(),
                env: secrets.env,
                headers: secrets.headers,
                disabled: !row.enabled,
                ..Default::default()
            };
            match &row.transport {
                Transport::Stdio { command, args } => {
                    d.command = Some(command.to_string_lossy().into_owned());
                    d.args = args.clone();
                    d.headers.clear();
                }
                Transport::Http { url } => {
                    // A token in the URL is a secret too: redacted unless asked for.
                    d.url = Some(if include_secrets {
                        url.clone()
                    } else {
                        crate::tools::mcp::config::redact_url(url)
                    });
                    d.env.clear();
                }
            }
            servers.insert(row.name.clone(), desktop::entry(&d));
        }
        Ok(serde_json::json!({ "mcpServers": servers }))
    }

    /// Writes [`Self::export`] to `path` atomically, readable by the user only (0600 on
    /// Unix). Returns how many servers it holds.
    pub fn export_to(&self, path: &Path, include_secrets: bool) -> Result<usize> {
        let doc = self.export(include_secrets)?;
        let n = doc["mcpServers"].as_object().map_or(0, |m| m.len());
        let text =
            serde_json::to_string_pretty(&doc).map_err(|e| Error::Database(e.to_string()))?;
        crate::fsio::write_atomic(path, format!("{text}\n").as_bytes(), true)?;
        Ok(n)
    }
}
