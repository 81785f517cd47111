//! Provider commands: presets, configured providers, connection tests, local-server
//! detection, model slots and the model table (Settings → Providers).

use hearth_core::models::{ModelEdit, Models};
use hearth_core::providers::{
    self, NewProvider, Preset, ProviderConfig, Providers, Slot, SlotChoices,
};
use tauri::State;
use zeroize::Zeroizing;

use crate::dto::{
    DetectedServerDto, ErrorDto, ModelDto, ModelInfoDto, PresetDto, ProviderDto, ProviderTestDto,
    SlotDto, SlotsDto,
};
use crate::state::AppState;

/// Runs blocking store or keyring work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> hearth_core::Result<T> + Send + 'static,
) -> Result<T, ErrorDto> {
    Ok(tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| ErrorDto::new("internal", e.to_string()))??)
}

fn provider_dto(c: ProviderConfig) -> ProviderDto {
    ProviderDto {
        name: c.name,
        preset: c.preset,
        protocol: c.protocol,
        base_url: c.base_url,
        key_location: c.key_location,
    }
}

fn model_info_dto(m: hearth_core::models::ModelInfo) -> ModelInfoDto {
    ModelInfoDto {
        model: m.model,
        context_window: m.context_window,
        input_usd_per_mtok: m.input_usd_per_mtok,
        output_usd_per_mtok: m.output_usd_per_mtok,
        cached_usd_per_mtok: m.cached_usd_per_mtok,
        edited: m.edited,
    }
}

fn slot_dto(s: Slot) -> SlotDto {
    SlotDto {
        provider: s.provider,
        model: s.model,
    }
}

fn slot(s: SlotDto) -> Slot {
    Slot {
        provider: s.provider,
        model: s.model,
    }
}

#[tauri::command]
pub fn list_presets() -> Vec<PresetDto> {
    Preset::ALL
        .into_iter()
        .map(|p| PresetDto {
            id: p.as_str().to_owned(),
            label: p.label().to_owned(),
            base_url: p.base_url().map(str::to_owned),
            needs_key: p.needs_key(),
            protocol: match p.protocol() {
                hearth_core::llm::Protocol::Anthropic => "anthropic".to_owned(),
                hearth_core::llm::Protocol::OpenAiCompatible => "openai".to_owned(),
            },
            local: p.is_local(),
        })
        .collect()
}

#[tauri::command]
pub async fn list_providers(state: State<'_, AppState>) -> Result<Vec<ProviderDto>, ErrorDto> {
    let providers = Providers::new(state.hearth()?.store().clone());
    let list = blocking(move || providers.list()).await?;
    Ok(list.into_iter().map(provider_dto).collect())
}

#[tauri::command]
pub async fn add_provider(
    state: State<'_, AppState>,
    name: String,
    preset: String,
    base_url: Option<String>,
    api_key: Option<String>,
) -> Result<ProviderDto, ErrorDto> {
    let providers = Providers::new(state.hearth()?.store().clone());
    let preset = Preset::parse(&preset)?;
    let api_key = api_key
        .map(|k| Zeroizing::new(k.trim().to_owned()))
        .filter(|k| !k.is_empty());
    if preset.needs_key() && api_key.is_none() {
        return Err(ErrorDto::new(
            "invalid_input",
            format!("{} needs an API key", preset.label()),
        ));
    }
    let new = NewProvider {
        name,
        preset,
        base_url: base_url.filter(|u| !u.trim().is_empty()),
        model: None,
        fast_model: None,
        context_window: None,
    };
    let cfg = blocking(move || providers.add(new, api_key)).await?;
    Ok(provider_dto(cfg))
}

#[tauri::command]
pub async fn remove_provider(state: State<'_, AppState>, name: String) -> Result<(), ErrorDto> {
    let providers = Providers::new(state.hearth()?.store().clone());
    if blocking(move || providers.remove(&name)).await? {
        Ok(())
    } else {
        Err(ErrorDto::new("not_found", "there is no such provider"))
    }
}

#[tauri::command]
pub async fn test_provider(
    state: State<'_, AppState>,
    name: String,
) -> Result<ProviderTestDto, ErrorDto> {
    let hearth = state.hearth()?.clone();
    let providers = Providers::new(hearth.store().clone());
    let p = providers.clone();
    let cfg = blocking(move || p.get(&name))
        .await?
        .ok_or_else(|| ErrorDto::new("not_found", "there is no such provider"))?;
    Ok(match providers.models(hearth.llm(), &cfg).await {
        Ok(models) => ProviderTestDto {
            ok: true,
            models: models
                .into_iter()
                .map(|m| ModelDto {
                    id: m.id,
                    context_window: m.context_window,
                    window_source: m.window_source.as_str().to_owned(),
                })
                .collect(),
            error: None,
        },
        Err(e) => ProviderTestDto {
            ok: false,
            models: Vec::new(),
            error: Some(e.into()),
        },
    })
}

#[tauri::command]
pub async fn detect_local_servers(
    state: State<'_, AppState>,
) -> Result<Vec<DetectedServerDto>, ErrorDto> {
    let hearth = state.hearth()?.clone();
    let found =
        providers::detect_local(hearth.llm(), &Providers::new(hearth.store().clone())).await?;
    Ok(found
        .into_iter()
        .map(|d| DetectedServerDto {
            preset: d.preset.as_str().to_owned(),
            label: d.preset.label().to_owned(),
            base_url: d.base_url,
            models: d.models,
            configured_as: d.configured_as,
        })
        .collect())
}

/// The slots in effect: the saved choices, or the default provider's model.
fn effective_slots(providers: &Providers) -> hearth_core::Result<SlotsDto> {
    let choices = providers.slot_choices()?;
    let from_env = std::env::var("HEARTH_PROVIDER_URL").is_ok_and(|v| !v.is_empty());
    if choices.main.is_some() {
        return Ok(SlotsDto {
            main: choices.main.map(slot_dto),
            fast: choices.fast.map(slot_dto),
            fallback: choices.fallback.map(slot_dto),
            fallback_enabled: choices.fallback_enabled,
            from_env,
        });
    }
    let main = providers.list()?.into_iter().next().and_then(|c| {
        c.model.clone().map(|m| SlotDto {
            provider: c.name.clone(),
            model: m,
        })
    });
    let fast = providers.list()?.into_iter().next().and_then(|c| {
        c.fast_model.clone().map(|m| SlotDto {
            provider: c.name.clone(),
            model: m,
        })
    });
    Ok(SlotsDto {
        main,
        fast,
        fallback: None,
        fallback_enabled: false,
        from_env,
    })
}

#[tauri::command]
pub async fn get_slots(state: State<'_, AppState>) -> Result<SlotsDto, ErrorDto> {
    let providers = Providers::new(state.hearth()?.store().clone());
    blocking(move || effective_slots(&providers)).await
}

#[tauri::command]
pub async fn set_slots(
    state: State<'_, AppState>,
    main: SlotDto,
    fast: Option<SlotDto>,
    fallback: Option<SlotDto>,
    fallback_enabled: bool,
) -> Result<SlotsDto, ErrorDto> {
    let providers = Providers::new(state.hearth()?.store().clone());
    let choices = SlotChoices {
        main: Some(slot(main)),
        fast: fast.map(slot),
        fallback: fallback.map(slot),
        fallback_enabled,
    };
    blocking(move || {
        providers.set_slot_choices(&choices)?;
        effective_slots(&providers)
    })
    .await
}

#[tauri::command]
pub async fn list_model_info(state: State<'_, AppState>) -> Result<Vec<ModelInfoDto>, ErrorDto> {
    let models = Models::new(state.hearth()?.store().clone());
    let list = blocking(move || models.list()).await?;
    Ok(list.into_iter().map(model_info_dto).collect())
}

#[tauri::command]
pub async fn set_model_info(
    state: State<'_, AppState>,
    model: String,
    context_window: Option<u32>,
    input_usd_per_mtok: Option<f64>,
    output_usd_per_mtok: Option<f64>,
    cached_usd_per_mtok: Option<f64>,
) -> Result<Vec<ModelInfoDto>, ErrorDto> {
    let models = Models::new(state.hearth()?.store().clone());
    let list = blocking(move || {
        models.set(ModelEdit {
            model,
            context_window,
            input_usd_per_mtok,
            output_usd_per_mtok,
            cached_usd_per_mtok,
        })?;
        models.list()
    })
    .await?;
    Ok(list.into_iter().map(model_info_dto).collect())
}

#[tauri::command]
pub async fn reset_model_info(
    state: State<'_, AppState>,
    model: String,
) -> Result<Vec<ModelInfoDto>, ErrorDto> {
    let models = Models::new(state.hearth()?.store().clone());
    let list = blocking(move || {
        models.reset(&model)?;
        models.list()
    })
    .await?;
    Ok(list.into_iter().map(model_info_dto).collect())
}
