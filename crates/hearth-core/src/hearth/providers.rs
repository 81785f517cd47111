//! [`ProviderService`] and [`ModelService`]: every provider and model-table use case the
//! front ends have, one method each, so the app and the CLI give the same answer and the
//! same error code (a missing provider is `not_found`, a cloud preset without a key is
//! `invalid_input`, in both). Blocking unless `async`: call the blocking ones from
//! `spawn_blocking` in async code.

use serde::Serialize;
use zeroize::Zeroizing;

use super::Hearth;
use crate::llm::ModelSlots;
use crate::models::{ModelEdit, ModelInfo, Models};
use crate::providers::{
    self, DetectedServer, ModelListing, NO_PROVIDER_HINT, NewProvider, ProviderConfig, Providers,
    SlotChoices,
};
use crate::{Error, Result};

/// The slots in effect, as Settings → Providers shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveSlots {
    /// What was chosen; when nothing was, the default provider's models.
    #[serde(flatten)]
    pub choices: SlotChoices,
    /// `HEARTH_PROVIDER_URL` is set, so chats use the environment's provider instead.
    pub from_env: bool,
}

/// Providers: add, list, test, detect, remove, and which model does which job.
#[derive(Clone)]
pub struct ProviderService {
    hearth: Hearth,
}

impl ProviderService {
    pub(super) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    fn providers(&self) -> Providers {
        Providers::new(self.hearth.inner.store.clone())
    }

    /// Adds (or replaces) a provider; the first becomes the default. A preset that needs
    /// a key (OpenAI, Anthropic, OpenRouter) is refused without one.
    pub fn add(
        &self,
        new: NewProvider,
        api_key: Option<Zeroizing<String>>,
    ) -> Result<ProviderConfig> {
        let api_key = api_key
            .map(|k| Zeroizing::new(k.trim().to_owned()))
            .filter(|k| !k.is_empty());
        if new.preset.needs_key() && api_key.is_none() {
            return Err(Error::InvalidInput(format!(
                "{} needs an API key",
                new.preset.label()
            )));
        }
        let new = NewProvider {
            base_url: new.base_url.filter(|u| !u.trim().is_empty()),
            ..new
        };
        self.providers().add(new, api_key)
    }

    /// All providers, the default first.
    pub fn list(&self) -> Result<Vec<ProviderConfig>> {
        self.providers().list()
    }

    /// One provider; `not_found` when there is none by that name.
    pub fn get(&self, name: &str) -> Result<ProviderConfig> {
        self.providers().get(name)?.ok_or_else(|| not_found(name))
    }

    /// Removes a provider and its stored key; `not_found` when there is none.
    pub fn remove(&self, name: &str) -> Result<()> {
        if self.providers().remove(name)? {
            Ok(())
        } else {
            Err(not_found(name))
        }
    }

    /// Asks a provider for its models once (no retries), each with its context window.
    pub async fn test(&self, name: &str) -> Result<Vec<ModelListing>> {
        let this = self.clone();
        let n = name.to_owned();
        let (providers, cfg) = tokio::task::spawn_blocking(move || {
            let cfg = this.get(&n)?;
            Ok::<_, Error>((this.providers(), cfg))
        })
        .await
        .map_err(|e| Error::Task(e.to_string()))??;
        providers.models(&self.hearth.inner.llm, &cfg).await
    }

    /// The local model servers running now, marking those already configured.
    pub async fn detect_local(&self) -> Result<Vec<DetectedServer>> {
        providers::detect_local(&self.hearth.inner.llm, &self.providers()).await
    }

    /// The slots in effect: the saved choices, or the default provider's models.
    pub fn slots(&self) -> Result<EffectiveSlots> {
        let providers = self.providers();
        let from_env = std::env::var("HEARTH_PROVIDER_URL").is_ok_and(|v| !v.is_empty());
        let mut choices = providers.slot_choices()?;
        if choices.main.is_none()
            && let Some(first) = providers.list()?.into_iter().next()
        {
            let slot = |m: &Option<String>| {
                m.clone().map(|model| providers::Slot {
                    provider: first.name.clone(),
                    model,
                })
            };
            choices.main = slot(&first.model);
            choices.fast = slot(&first.fast_model);
        }
        Ok(EffectiveSlots { choices, from_env })
    }

    /// Saves the slot choices (each must name a configured provider) and returns the
    /// slots now in effect.
    pub fn set_slots(&self, choices: &SlotChoices) -> Result<EffectiveSlots> {
        self.providers().set_slot_choices(choices)?;
        self.slots()
    }

    /// The saved choices only (what `hearth providers slots` edits).
    pub fn slot_choices(&self) -> Result<SlotChoices> {
        self.providers().slot_choices()
    }

    /// The models a chat uses: `provider` (and `model`) when named, else the environment's
    /// one-off provider, the saved slots or the default provider; `no_provider` when
    /// nothing is set up, `not_found` for an unknown provider.
    pub fn for_chat(&self, provider: Option<&str>, model: Option<String>) -> Result<ModelSlots> {
        if let Some(p) = provider.filter(|p| *p != crate::builtin::PROVIDER) {
            self.get(p)?;
        }
        providers::resolve_slots(&self.hearth.inner.store, provider, model)?
            .ok_or_else(|| Error::NoProvider(NO_PROVIDER_HINT.into()))
    }
}

fn not_found(name: &str) -> Error {
    Error::NotFound(format!(
        "there is no provider {name:?}; see `hearth providers list`"
    ))
}

/// The model table: context windows and prices, built in or edited by the user.
#[derive(Clone)]
pub struct ModelService {
    hearth: Hearth,
}

impl ModelService {
    pub(super) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    fn models(&self) -> Models {
        Models::new(self.hearth.inner.store.clone())
    }

    /// The whole table.
    pub fn list(&self) -> Result<Vec<ModelInfo>> {
        self.models().list()
    }

    /// Sets the user's row for a model and returns the table.
    pub fn set(&self, edit: ModelEdit) -> Result<Vec<ModelInfo>> {
        let models = self.models();
        models.set(edit)?;
        models.list()
    }

    /// Drops the user's row for a model and returns the table; `not_found` when the user
    /// had not changed it.
    pub fn reset(&self, model: &str) -> Result<Vec<ModelInfo>> {
        let models = self.models();
        if !models.reset(model)? {
            return Err(Error::NotFound(format!("you have not changed {model}")));
        }
        models.list()
    }
}
