//! Which model does which job: the saved slot choices, the default provider's models, or
//! the environment's one-off provider.

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::{Providers, env};
use crate::llm::{ChatModel, ModelSlots, Protocol, Provider};
use crate::store::Store;
use crate::{Error, Result};

impl Providers {
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
            if slot.provider == crate::builtin::PROVIDER {
                // A built-in model is a slot like any other, once installed.
                if crate::builtin::slot_model(&self.store, &slot.model)?.is_none() {
                    return Err(Error::InvalidInput(format!(
                        "there is no built-in model {:?}; see `hearth model list`",
                        slot.model
                    )));
                }
            } else if self.get(&slot.provider)?.is_none() {
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
        if slot.provider == crate::builtin::PROVIDER {
            let model = crate::builtin::slot_model(&self.store, &slot.model)?;
            if model.is_none() {
                tracing::warn!("a model slot names a built-in model that is gone");
            }
            return Ok(model);
        }
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

/// The settings key of the slot choices.
pub(super) const SLOTS_SETTING: &str = "model_slots";

/// A provider and one of its models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotChoices {
    pub main: Option<Slot>,
    pub fast: Option<Slot>,
    pub fallback: Option<Slot>,
    #[serde(default)]
    pub fallback_enabled: bool,
}

/// What `hearth chat` and the app say when no model is configured.
pub const NO_PROVIDER_HINT: &str = "No model is configured yet. Add a model file to run on this computer with \
`hearth model add PATH.gguf`, or a provider with `hearth providers add NAME --preset ollama \
--model llama3.2` (or another preset), or set HEARTH_PROVIDER_URL (an OpenAI-compatible base URL ending in /v1) \
and HEARTH_MODEL.";

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
        launch: None,
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
    if provider == Some(crate::builtin::PROVIDER) {
        return crate::builtin::slots(store, model);
    }
    match Providers::new(store.clone()).slots(provider, model.clone())? {
        Some(slots) => Ok(Some(slots)),
        // With no provider configured, the built-in model answers (when one is installed).
        None if provider.is_none() => crate::builtin::slots(store, model),
        None => Ok(None),
    }
}
