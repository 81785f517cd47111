//! Configured providers: presets, the default one, and where their API keys live (the OS
//! keyring, or the encrypted database under the file/passphrase key backends — never a
//! config file, argv or a log).

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use zeroize::Zeroizing;

use crate::llm::{ChatModel, ModelSlots};
use std::time::Duration;

use crate::llm::{LlmClient, Protocol, Provider};
use crate::models::{Models, WindowSource};
use crate::store::Store;
use crate::store::key::{KEYRING_SERVICE, KeyBackend};
use crate::time::now_millis;
use crate::{Error, Result};

/// A known kind of provider with its default endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    OpenAi,
    Anthropic,
    OpenRouter,
    Ollama,
    LmStudio,
    LlamaCpp,
    Vllm,
    Custom,
}

impl Preset {
    /// Every preset, for help texts and pickers.
    pub const ALL: [Preset; 8] = [
        Preset::OpenAi,
        Preset::Anthropic,
        Preset::OpenRouter,
        Preset::Ollama,
        Preset::LmStudio,
        Preset::LlamaCpp,
        Preset::Vllm,
        Preset::Custom,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::OpenAi => "openai",
            Preset::Anthropic => "anthropic",
            Preset::OpenRouter => "openrouter",
            Preset::Ollama => "ollama",
            Preset::LmStudio => "lmstudio",
            Preset::LlamaCpp => "llamacpp",
            Preset::Vllm => "vllm",
            Preset::Custom => "custom",
        }
    }

    /// The preset named `s`.
    pub fn parse(s: &str) -> Result<Self> {
        Preset::ALL
            .into_iter()
            .find(|p| p.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.as_str()).collect();
                Error::InvalidInput(format!(
                    "unknown preset {s:?}: use one of {}",
                    names.join(", ")
                ))
            })
    }

    /// The name people know it by.
    pub fn label(self) -> &'static str {
        match self {
            Preset::OpenAi => "OpenAI",
            Preset::Anthropic => "Anthropic",
            Preset::OpenRouter => "OpenRouter",
            Preset::Ollama => "Ollama",
            Preset::LmStudio => "LM Studio",
            Preset::LlamaCpp => "llama.cpp server",
            Preset::Vllm => "vLLM",
            Preset::Custom => "Custom (OpenAI-compatible)",
        }
    }

    /// Runs on this computer by default.
    pub fn is_local(self) -> bool {
        matches!(
            self,
            Preset::Ollama | Preset::LmStudio | Preset::LlamaCpp | Preset::Vllm
        )
    }

    /// The default base URL (with `/v1`); `Custom` has none.
    pub fn base_url(self) -> Option<&'static str> {
        match self {
            Preset::OpenAi => Some("https://api.openai.com/v1"),
            Preset::Anthropic => Some("https://api.anthropic.com/v1"),
            Preset::OpenRouter => Some("https://openrouter.ai/api/v1"),
            Preset::Ollama => Some("http://127.0.0.1:11434/v1"),
            Preset::LmStudio => Some("http://127.0.0.1:1234/v1"),
            Preset::LlamaCpp => Some("http://127.0.0.1:8080/v1"),
            Preset::Vllm => Some("http://127.0.0.1:8000/v1"),
            Preset::Custom => None,
        }
    }

    /// The wire protocol.
    pub fn protocol(self) -> Protocol {
        match self {
            Preset::Anthropic => Protocol::Anthropic,
            _ => Protocol::OpenAiCompatible,
        }
    }

    /// Whether the provider normally needs an API key (local servers do not).
    pub fn needs_key(self) -> bool {
        matches!(
            self,
            Preset::OpenAi | Preset::Anthropic | Preset::OpenRouter
        )
    }
}

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
    store: Store,
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

    fn keyring_entry(&self, name: &str) -> Result<keyring::Entry> {
        keyring::Entry::new(
            KEYRING_SERVICE,
            &format!("provider-{}-{name}", self.store.db_id()),
        )
        .map_err(|e| Error::KeyringUnavailable {
            detail: e.to_string(),
        })
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
            self.keyring_entry(&name)?.set_password(key).map_err(|e| {
                Error::KeyringUnavailable {
                    detail: e.to_string(),
                }
            })?;
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
            match self.keyring_entry(name)?.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => {}
                Err(e) => {
                    return Err(Error::KeyringUnavailable {
                        detail: e.to_string(),
                    });
                }
            }
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
            "keyring" => match self.keyring_entry(&cfg.name)?.get_password() {
                Ok(k) => Ok(Some(Zeroizing::new(k))),
                Err(keyring::Error::NoEntry) => Err(Error::InvalidInput(format!(
                    "the API key of provider {} is missing from the keyring; add the provider again",
                    cfg.name
                ))),
                Err(e) => Err(Error::KeyringUnavailable {
                    detail: e.to_string(),
                }),
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
        })
    }

    /// The saved slot choices (Settings → Providers, `hearth providers slots`).
    pub fn slot_choices(&self) -> Result<SlotChoices> {
        Ok(self.store.setting(SLOTS_SETTING)?.unwrap_or_default())
    }

    /// Saves slot choices after checking each names a configured provider.
    pub fn set_slot_choices(&self, choices: &SlotChoices) -> Result<()> {
        for slot in [&choices.main, &choices.fast, &choices.fallback]
            .into_iter()
            .flatten()
        {
            if slot.model.trim().is_empty() {
                return Err(Error::InvalidInput("a slot needs a model name".into()));
            }
            if self.get(&slot.provider)?.is_none() {
                return Err(Error::InvalidInput(format!(
                    "there is no provider {}",
                    slot.provider
                )));
            }
        }
        if choices.fallback_enabled && choices.fallback.is_none() {
            return Err(Error::InvalidInput(
                "choose a fallback model before enabling it".into(),
            ));
        }
        if choices.main.is_none() && (choices.fast.is_some() || choices.fallback.is_some()) {
            return Err(Error::InvalidInput("choose the main model first".into()));
        }
        self.store.set_setting(SLOTS_SETTING, choices)
    }

    fn chat_model(&self, slot: &Slot) -> Result<Option<ChatModel>> {
        let Some(cfg) = self.get(&slot.provider)? else {
            tracing::warn!(provider = %slot.provider, "a model slot names a provider that is gone");
            return Ok(None);
        };
        Ok(Some(ChatModel {
            provider: self.endpoint(&cfg)?,
            model: slot.model.clone(),
            context_window: cfg.context_window,
        }))
    }

    /// Model slots: from a named provider (its model, or `model`), else from the saved slot
    /// choices, else from the default provider. `None` when nothing is configured.
    pub fn slots(&self, name: Option<&str>, model: Option<String>) -> Result<Option<ModelSlots>> {
        let choices = self.slot_choices()?;
        if name.is_none()
            && let Some(main_slot) = &choices.main
            && let Some(mut main) = self.chat_model(main_slot)?
        {
            let fast = match &choices.fast {
                Some(f) => self.chat_model(f)?.unwrap_or_else(|| main.clone()),
                None => main.clone(),
            };
            if let Some(m) = model {
                main.model = m;
            }
            let fallback = match (&choices.fallback, choices.fallback_enabled) {
                (Some(f), true) => self.chat_model(f)?,
                _ => None,
            };
            return Ok(Some(ModelSlots {
                main,
                fast,
                fallback,
            }));
        }
        let cfg = match name {
            Some(n) => self
                .get(n)?
                .ok_or_else(|| Error::InvalidInput(format!("there is no provider {n}")))?,
            None => match self.list()?.into_iter().next() {
                Some(c) => c,
                None => return Ok(None),
            },
        };
        let provider = self.endpoint(&cfg)?;
        let Some(main_model) = model.or_else(|| cfg.model.clone()) else {
            return Err(Error::InvalidInput(format!(
                "provider {} has no model: pass --model, choose one with `hearth providers slots --main {}:MODEL`, or add it again with --model",
                cfg.name, cfg.name
            )));
        };
        let main = ChatModel {
            provider,
            model: main_model,
            context_window: cfg.context_window,
        };
        let fast = match &cfg.fast_model {
            Some(m) => ChatModel {
                model: m.clone(),
                context_window: None,
                ..main.clone()
            },
            None => main.clone(),
        };
        Ok(Some(ModelSlots {
            main,
            fast,
            fallback: None,
        }))
    }
}

/// A model a provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelListing {
    pub id: String,
    pub context_window: Option<u32>,
    pub window_source: WindowSource,
}

/// A model server found running on this computer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DetectedServer {
    pub preset: Preset,
    pub base_url: String,
    pub models: Vec<String>,
    /// The configured provider already pointing at it.
    pub configured_as: Option<String>,
}

/// Where local servers are looked for: HEARTH_LOCAL_SERVERS (`preset=url,…`, for unusual
/// ports and for tests) or the default ports of Ollama, LM Studio and llama.cpp.
pub fn local_candidates() -> Result<Vec<(Preset, String)>> {
    match env("HEARTH_LOCAL_SERVERS") {
        None => Ok([Preset::Ollama, Preset::LmStudio, Preset::LlamaCpp]
            .into_iter()
            .filter_map(|p| p.base_url().map(|u| (p, u.to_owned())))
            .collect()),
        Some(list) => list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|entry| match entry.split_once('=') {
                Some((p, u)) if u.starts_with("http://") || u.starts_with("https://") => {
                    Ok((Preset::parse(p)?, u.trim().trim_end_matches('/').to_owned()))
                }
                _ => Err(Error::InvalidInput(format!(
                    "HEARTH_LOCAL_SERVERS entry {entry:?} is not PRESET=URL"
                ))),
            })
            .collect(),
    }
}

/// How long detection waits for a local server to answer.
pub const DETECT_TIMEOUT: Duration = Duration::from_millis(1_500);

/// The local model servers running now, with their models, marking the ones already
/// configured.
pub async fn detect_local(
    client: &LlmClient,
    providers: &Providers,
) -> Result<Vec<DetectedServer>> {
    let candidates = local_candidates()?;
    let urls: Vec<String> = candidates.iter().map(|(_, u)| u.clone()).collect();
    let found = client.probe(&urls, DETECT_TIMEOUT).await;
    let p = providers.clone();
    let configured = tokio::task::spawn_blocking(move || p.list())
        .await
        .map_err(|e| Error::InvalidInput(e.to_string()))??;
    Ok(candidates
        .into_iter()
        .filter_map(|(preset, url)| {
            let (_, models) = found.iter().find(|(u, _)| *u == url)?;
            Some(DetectedServer {
                preset,
                configured_as: configured
                    .iter()
                    .find(|c| c.base_url.trim_end_matches('/') == url)
                    .map(|c| c.name.clone()),
                base_url: url,
                models: models.clone(),
            })
        })
        .collect())
}

/// The settings key of the slot choices.
const SLOTS_SETTING: &str = "model_slots";

/// A provider and one of its models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Slot {
    pub provider: String,
    pub model: String,
}

impl Slot {
    /// Parses `PROVIDER:MODEL` (the model may itself contain `:`, as Ollama's tags do).
    pub fn parse(s: &str) -> Result<Self> {
        match s.split_once(':') {
            Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => Ok(Self {
                provider: p.trim().to_owned(),
                model: m.trim().to_owned(),
            }),
            _ => Err(Error::InvalidInput(format!(
                "{s:?} is not PROVIDER:MODEL (for example ollama:llama3.2)"
            ))),
        }
    }
}

/// Which models do which job. `fast` empty means "same as main"; the fallback is used only
/// when `fallback_enabled`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SlotChoices {
    pub main: Option<Slot>,
    pub fast: Option<Slot>,
    pub fallback: Option<Slot>,
    #[serde(default)]
    pub fallback_enabled: bool,
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

/// What `hearth chat` and the app say when no model is configured.
pub const NO_PROVIDER_HINT: &str = "No model is configured yet. Add one with `hearth providers add NAME --preset ollama \
--model llama3.2` (or another preset), or set HEARTH_PROVIDER_URL (an OpenAI-compatible base URL ending in /v1) \
and HEARTH_MODEL.";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.is_empty())
}

/// The one-off provider of the environment (HEARTH_PROVIDER_URL, HEARTH_MODEL or `model`,
/// HEARTH_API_KEY, HEARTH_FAST_MODEL, HEARTH_CONTEXT_WINDOW), if HEARTH_PROVIDER_URL is set.
pub fn slots_from_env(model: Option<String>) -> Result<Option<ModelSlots>> {
    let Some(base_url) = env("HEARTH_PROVIDER_URL") else {
        return Ok(None);
    };
    let Some(model) = model.or_else(|| env("HEARTH_MODEL")) else {
        return Err(Error::InvalidInput(
            "HEARTH_PROVIDER_URL is set but HEARTH_MODEL is not".into(),
        ));
    };
    let context_window = match env("HEARTH_CONTEXT_WINDOW") {
        None => None,
        Some(w) => Some(w.parse::<u32>().map_err(|_| {
            Error::InvalidInput(format!(
                "HEARTH_CONTEXT_WINDOW must be a number of tokens, not {w:?}"
            ))
        })?),
    };
    let name = base_url
        .split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or(&base_url)
        .to_owned();
    let provider = Provider {
        name,
        protocol: Protocol::OpenAiCompatible,
        base_url,
        api_key: env("HEARTH_API_KEY").map(Zeroizing::new),
    };
    let main = ChatModel {
        provider,
        model,
        context_window,
    };
    let fast = match env("HEARTH_FAST_MODEL") {
        Some(m) => ChatModel {
            model: m,
            context_window: None,
            ..main.clone()
        },
        None => main.clone(),
    };
    Ok(Some(ModelSlots {
        main,
        fast,
        fallback: None,
    }))
}

/// The models to use: the environment's one-off provider unless a provider is named, else
/// the named or default configured provider; `None` when nothing is configured.
pub fn resolve_slots(
    store: &Store,
    provider: Option<&str>,
    model: Option<String>,
) -> Result<Option<ModelSlots>> {
    if provider.is_none()
        && let Some(slots) = slots_from_env(model.clone())?
    {
        return Ok(Some(slots));
    }
    Providers::new(store.clone()).slots(provider, model)
}
