//! Configured providers and where their API keys live.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use zeroize::Zeroizing;

use super::Preset;
use super::slots::{SLOTS_SETTING, Slot, SlotChoices};
use crate::llm::{LlmClient, Protocol, Provider};
use crate::models::{Models, WindowSource};
use crate::store::Store;
use crate::store::key::KeyBackend;
use crate::store::secret::SecretSlot;
use crate::time::now_millis;
use crate::{Error, Result};

/// A configured provider as listed (never with its key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderConfig {
    pub name: String,
    pub preset: String,
    pub protocol: String,
    pub base_url: String,
    pub model: Option<String>,
    pub fast_model: Option<String>,
    pub context_window: Option<u32>,
    /// `none`, `keyring` or `database`.
    pub key_location: String,
    pub is_default: bool,
}

/// What `add` needs.
#[derive(Debug, Clone)]
pub struct NewProvider {
    pub name: String,
    pub preset: Preset,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub fast_model: Option<String>,
    pub context_window: Option<u32>,
}

/// Provider configuration over one store.
#[derive(Clone)]
pub struct Providers {
    pub(super) store: Store,
}

fn protocol_str(p: Protocol) -> &'static str {
    match p {
        Protocol::OpenAiCompatible => "openai",
        Protocol::Anthropic => "anthropic",
    }
}

impl Providers {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    fn keyring_entry(&self, name: &str) -> Result<SecretSlot> {
        SecretSlot::new(&self.store, "provider", name)
    }

    /// Adds (or replaces) a provider; the first one becomes the default.
    pub fn add(
        &self,
        new: NewProvider,
        api_key: Option<Zeroizing<String>>,
    ) -> Result<ProviderConfig> {
        let name = new.name.trim().to_owned();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(Error::InvalidInput(
                "a provider name uses letters, digits, '-' and '_' only".into(),
            ));
        }
        let base_url = match new
            .base_url
            .or_else(|| new.preset.base_url().map(str::to_owned))
        {
            Some(u) if u.starts_with("http://") || u.starts_with("https://") => {
                u.trim_end_matches('/').to_owned()
            }
            Some(u) => return Err(Error::InvalidInput(format!("{u:?} is not an http(s) URL"))),
            None => return Err(Error::InvalidInput("the custom preset needs --url".into())),
        };
        let key_location = match (&api_key, self.store.key_backend()) {
            (None, _) => "none",
            (Some(_), KeyBackend::Keyring) => "keyring",
            (Some(_), _) => "database",
        };
        if let (Some(key), "keyring") = (&api_key, key_location) {
            self.keyring_entry(&name)?.set(key)?;
        }
        let db_key = api_key
            .filter(|_| key_location == "database")
            .map(|k| k.to_string());
        let protocol = protocol_str(new.preset.protocol());
        let (n, preset) = (name.clone(), new.preset.as_str());
        let (model, fast, window) = (new.model, new.fast_model, new.context_window);
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let others: i64 = tx.query_row("SELECT count(*) FROM providers WHERE name != ?1", [&n], |r| r.get(0))?;
            tx.execute(
                "INSERT INTO providers (name, preset, protocol, base_url, model, fast_model, context_window, key_location, api_key, is_default, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT (name) DO UPDATE SET preset = excluded.preset, protocol = excluded.protocol,
                   base_url = excluded.base_url, model = excluded.model, fast_model = excluded.fast_model,
                   context_window = excluded.context_window, key_location = excluded.key_location, api_key = excluded.api_key",
                params![n, preset, protocol, base_url, model, fast, window, key_location, db_key, others == 0, now_millis()],
            )?;
            tx.commit()
        })?;
        self.get(&name)?
            .ok_or_else(|| Error::Database("the provider vanished".into()))
    }

    /// All providers, the default first.
    pub fn list(&self) -> Result<Vec<ProviderConfig>> {
        self.store.read_blocking(|c| {
            let mut stmt = c.prepare(
                "SELECT name, preset, protocol, base_url, model, fast_model, context_window, key_location, is_default
                 FROM providers ORDER BY is_default DESC, name",
            )?;
            let rows = stmt.query_map([], row_to_config)?;
            rows.collect()
        })
    }

    /// One provider by name.
    pub fn get(&self, name: &str) -> Result<Option<ProviderConfig>> {
        let name = name.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                "SELECT name, preset, protocol, base_url, model, fast_model, context_window, key_location, is_default
                 FROM providers WHERE name = ?1",
                [name],
                row_to_config,
            )
            .optional()
        })
    }

    /// Removes a provider and its key; the oldest remaining one becomes the default.
    pub fn remove(&self, name: &str) -> Result<bool> {
        let Some(cfg) = self.get(name)? else {
            return Ok(false);
        };
        if cfg.key_location == "keyring" {
            self.keyring_entry(name)?.delete()?;
        }
        let n = name.to_owned();
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            tx.execute("DELETE FROM providers WHERE name = ?1", [&n])?;
            tx.execute(
                "UPDATE providers SET is_default = 1 WHERE name = (SELECT name FROM providers ORDER BY created_at, name LIMIT 1)
                 AND NOT EXISTS (SELECT 1 FROM providers WHERE is_default = 1)",
                [],
            )?;
            tx.commit()
        })?;
        // Slots naming it are cleared rather than left pointing at nothing.
        let mut choices = self.slot_choices()?;
        let before = choices.clone();
        let gone = |s: &Option<Slot>| s.as_ref().is_some_and(|s| s.provider == name);
        if gone(&choices.main) {
            choices = SlotChoices::default();
        }
        if gone(&choices.fast) {
            choices.fast = None;
        }
        if gone(&choices.fallback) {
            choices.fallback = None;
            choices.fallback_enabled = false;
        }
        if choices != before {
            self.store.set_setting(SLOTS_SETTING, &choices)?;
        }
        Ok(true)
    }

    /// The models a provider offers, each with its context window and where that came
    /// from. Ollama is asked through its native API (`/api/tags`, `/api/show`) and the
    /// windows it reports are remembered in the model table.
    pub async fn models(
        &self,
        client: &LlmClient,
        cfg: &ProviderConfig,
    ) -> Result<Vec<ModelListing>> {
        let provider = self.endpoint(cfg)?;
        let models = Models::new(self.store.clone());
        let names: Vec<String> = if cfg.preset == Preset::Ollama.as_str() {
            let listed = client.ollama_models(&provider).await?;
            let windows: Vec<(String, u32)> = listed
                .iter()
                .filter_map(|(m, w)| w.map(|w| (m.clone(), w)))
                .collect();
            let store_models = models.clone();
            tokio::task::spawn_blocking(move || store_models.record_server_windows(windows))
                .await
                .map_err(|e| Error::InvalidInput(e.to_string()))??;
            listed.into_iter().map(|(m, _)| m).collect()
        } else {
            client.list_models(&provider).await?
        };
        let table = tokio::task::spawn_blocking(move || models.table())
            .await
            .map_err(|e| Error::InvalidInput(e.to_string()))??;
        Ok(names
            .into_iter()
            .map(|id| {
                let (window, source) = match cfg.context_window {
                    Some(w) => (w, WindowSource::Configured),
                    None => table.window(&id),
                };
                ModelListing {
                    context_window: (source != WindowSource::Unknown).then_some(window),
                    window_source: source,
                    id,
                }
            })
            .collect())
    }

    fn api_key(&self, cfg: &ProviderConfig) -> Result<Option<Zeroizing<String>>> {
        match cfg.key_location.as_str() {
            "keyring" => match self.keyring_entry(&cfg.name)?.get()? {
                Some(k) => Ok(Some(Zeroizing::new(k))),
                None => Err(Error::InvalidInput(format!(
                    "the API key of provider {} is missing from the keyring; add the provider again",
                    cfg.name
                ))),
            },
            "database" => {
                let n = cfg.name.clone();
                let key: Option<String> = self.store.read_blocking(move |c| {
                    c.query_row("SELECT api_key FROM providers WHERE name = ?1", [n], |r| {
                        r.get(0)
                    })
                })?;
                Ok(key.map(Zeroizing::new))
            }
            _ => Ok(None),
        }
    }

    /// The runtime endpoint of a provider (with its key).
    pub fn endpoint(&self, cfg: &ProviderConfig) -> Result<Provider> {
        Ok(Provider {
            name: cfg.name.clone(),
            protocol: if cfg.protocol == "anthropic" {
                Protocol::Anthropic
            } else {
                Protocol::OpenAiCompatible
            },
            base_url: cfg.base_url.clone(),
            api_key: self.api_key(cfg)?,
            launch: None,
        })
    }
}

/// A model a provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelListing {
    pub id: String,
    pub context_window: Option<u32>,
    pub window_source: WindowSource,
}

fn row_to_config(r: &rusqlite::Row<'_>) -> rusqlite::Result<ProviderConfig> {
    Ok(ProviderConfig {
        name: r.get(0)?,
        preset: r.get(1)?,
        protocol: r.get(2)?,
        base_url: r.get(3)?,
        model: r.get(4)?,
        fast_model: r.get(5)?,
        context_window: r.get(6)?,
        key_location: r.get(7)?,
        is_default: r.get(8)?,
    })
}
