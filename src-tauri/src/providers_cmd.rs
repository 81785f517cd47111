//! Provider commands: presets, configured providers, connection tests, local-server
//! detection, model slots and the model table (Settings → Providers).

use hearth_core::EffectiveSlots;
use hearth_core::ModelEdit;
use hearth_core::{NewProvider, Preset, ProviderConfig, Slot, SlotChoices};
use tauri::State;
use zeroize::Zeroizing;

use crate::cmd::blocking;
use crate::dto::args::*;
use crate::dto::{
    DetectedServerDto, ErrorDto, ModelDto, ModelInfoDto, PresetDto, ProviderCapsDto, ProviderDto,
    ProviderTestDto, RoutingDto, SlotDto, SlotsDto, SpendingDto, StandingDto, UsageDto,
};
use crate::state::AppState;

/// Runs blocking store or keyring work off the async threads.
fn provider_dto(c: ProviderConfig) -> ProviderDto {
    ProviderDto {
        name: c.name,
        preset: c.preset,
        protocol: c.protocol,
        base_url: c.base_url,
        key_location: c.key_location,
    }
}

fn model_info_dto(m: hearth_core::ModelInfo) -> ModelInfoDto {
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
                hearth_core::Protocol::Anthropic => "anthropic".to_owned(),
                hearth_core::Protocol::OpenAiCompatible => "openai".to_owned(),
            },
            local: p.is_local(),
        })
        .collect()
}

#[tauri::command]
pub async fn list_providers(state: State<'_, AppState>) -> Result<Vec<ProviderDto>, ErrorDto> {
    let providers = state.hearth()?.providers();
    let list = blocking(move || providers.list()).await?;
    Ok(list.into_iter().map(provider_dto).collect())
}

#[tauri::command]
pub async fn add_provider(
    state: State<'_, AppState>,
    args: Args<AddProviderArgs>,
) -> Result<ProviderDto, ErrorDto> {
    let AddProviderArgs {
        name,
        preset,
        base_url,
        api_key,
    } = args.0;
    let providers = state.hearth()?.providers();
    let new = NewProvider {
        name,
        preset: Preset::parse(&preset)?,
        base_url,
        model: None,
        fast_model: None,
        context_window: None,
    };
    let cfg = blocking(move || providers.add(new, api_key.map(Zeroizing::new))).await?;
    Ok(provider_dto(cfg))
}

#[tauri::command]
pub async fn remove_provider(
    state: State<'_, AppState>,
    args: Args<ProviderNameArgs>,
) -> Result<(), ErrorDto> {
    let ProviderNameArgs { name } = args.0;
    let providers = state.hearth()?.providers();
    blocking(move || providers.remove(&name)).await
}

#[tauri::command]
pub async fn test_provider(
    state: State<'_, AppState>,
    args: Args<ProviderNameArgs>,
) -> Result<ProviderTestDto, ErrorDto> {
    let ProviderNameArgs { name } = args.0;
    let providers = state.hearth()?.providers();
    Ok(match providers.test(&name).await {
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
        Err(e) if e.code() == "not_found" => return Err(e.into()),
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
    let found = state.hearth()?.providers().detect_local().await?;
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

fn slots_dto(s: EffectiveSlots) -> SlotsDto {
    SlotsDto {
        main: s.choices.main.map(slot_dto),
        fast: s.choices.fast.map(slot_dto),
        fallback: s.choices.fallback.map(slot_dto),
        fallback_enabled: s.choices.fallback_enabled,
        from_env: s.from_env,
    }
}

#[tauri::command]
pub async fn get_slots(state: State<'_, AppState>) -> Result<SlotsDto, ErrorDto> {
    let providers = state.hearth()?.providers();
    blocking(move || providers.slots()).await.map(slots_dto)
}

#[tauri::command]
pub async fn set_slots(
    state: State<'_, AppState>,
    args: Args<SetSlotsArgs>,
) -> Result<SlotsDto, ErrorDto> {
    let SetSlotsArgs {
        main,
        fast,
        fallback,
        fallback_enabled,
    } = args.0;
    let providers = state.hearth()?.providers();
    let choices = SlotChoices {
        main: Some(slot(main)),
        fast: fast.map(slot),
        fallback: fallback.map(slot),
        fallback_enabled,
    };
    blocking(move || providers.set_slots(&choices))
        .await
        .map(slots_dto)
}

/// The caps, where each stands, and the router's switches.
fn spending(hearth: &hearth_core::Hearth) -> Result<SpendingDto, hearth_core::Error> {
    let caps = hearth.budgets()?;
    let routing = hearth.routing()?;
    Ok(SpendingDto {
        daily_usd: caps.overall.daily_usd,
        monthly_usd: caps.overall.monthly_usd,
        providers: caps
            .providers
            .into_iter()
            .map(|(provider, c)| ProviderCapsDto {
                provider,
                daily_usd: c.daily_usd,
                monthly_usd: c.monthly_usd,
            })
            .collect(),
        status: hearth
            .budget_status()?
            .into_iter()
            .map(StandingDto::from)
            .collect(),
        routing: routing.enabled,
        cascade: routing.cascade,
    })
}

#[tauri::command]
pub async fn get_usage(
    state: State<'_, AppState>,
    args: Args<GetUsageArgs>,
) -> Result<UsageDto, ErrorDto> {
    let GetUsageArgs { since } = args.0;
    let hearth = state.hearth()?.clone();
    blocking(move || {
        use hearth_core::UsageGroup;
        let days = hearth.usage(Some(&since), UsageGroup::Day)?;
        let models = hearth.usage(Some(&since), UsageGroup::Model)?;
        let slots = hearth.usage(Some(&since), UsageGroup::Slot)?;
        let r = days.routing.clone();
        Ok(UsageDto {
            since,
            days: days.rows.into_iter().map(Into::into).collect(),
            models: models.rows.into_iter().map(Into::into).collect(),
            slots: slots.rows.into_iter().map(Into::into).collect(),
            total: days.total.into(),
            cache_hit_ratio: days.cache_hit_ratio,
            routing: RoutingDto {
                fast: r.fast,
                strong: r.strong,
                escalated: r.escalated,
                cached: r.cached,
                fast_cost_usd: r.fast_cost_usd,
                always_strong_usd: r.always_strong_usd,
                saved_usd: r.saved_usd,
            },
            budgets: hearth
                .budget_status()?
                .into_iter()
                .map(StandingDto::from)
                .collect(),
        })
    })
    .await
}

#[tauri::command]
pub async fn get_spending(state: State<'_, AppState>) -> Result<SpendingDto, ErrorDto> {
    let hearth = state.hearth()?.clone();
    blocking(move || spending(&hearth)).await
}

#[tauri::command]
pub async fn set_budget(
    state: State<'_, AppState>,
    args: Args<SetBudgetArgs>,
) -> Result<SpendingDto, ErrorDto> {
    let SetBudgetArgs {
        provider,
        daily_usd,
        monthly_usd,
    } = args.0;
    let hearth = state.hearth()?.clone();
    blocking(move || {
        hearth.set_budget(provider.as_deref(), Some(daily_usd), Some(monthly_usd))?;
        spending(&hearth)
    })
    .await
}

#[tauri::command]
pub async fn set_routing(
    state: State<'_, AppState>,
    args: Args<SetRoutingArgs>,
) -> Result<SpendingDto, ErrorDto> {
    let SetRoutingArgs { enabled, cascade } = args.0;
    let hearth = state.hearth()?.clone();
    blocking(move || {
        hearth.set_routing(hearth_core::RoutingSettings { enabled, cascade })?;
        spending(&hearth)
    })
    .await
}

#[tauri::command]
pub async fn list_model_info(state: State<'_, AppState>) -> Result<Vec<ModelInfoDto>, ErrorDto> {
    let models = state.hearth()?.models();
    let list = blocking(move || models.list()).await?;
    Ok(list.into_iter().map(model_info_dto).collect())
}

#[tauri::command]
pub async fn set_model_info(
    state: State<'_, AppState>,
    args: Args<SetModelInfoArgs>,
) -> Result<Vec<ModelInfoDto>, ErrorDto> {
    let SetModelInfoArgs {
        model,
        context_window,
        input_usd_per_mtok,
        output_usd_per_mtok,
        cached_usd_per_mtok,
    } = args.0;
    let models = state.hearth()?.models();
    let edit = ModelEdit {
        model,
        context_window,
        input_usd_per_mtok,
        output_usd_per_mtok,
        cached_usd_per_mtok,
    };
    let list = blocking(move || models.set(edit)).await?;
    Ok(list.into_iter().map(model_info_dto).collect())
}

#[tauri::command]
pub async fn reset_model_info(
    state: State<'_, AppState>,
    args: Args<ResetModelInfoArgs>,
) -> Result<Vec<ModelInfoDto>, ErrorDto> {
    let ResetModelInfoArgs { model } = args.0;
    let models = state.hearth()?.models();
    let list = blocking(move || models.reset(&model)).await?;
    Ok(list.into_iter().map(model_info_dto).collect())
}
