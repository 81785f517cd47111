//! Built-in model commands (Settings → Models, the first-run choice): the catalogue fitted
//! to this computer, downloads with progress events, models added from disk, the choice of
//! model and the idle unload. Each converts, calls `Hearth::builtin()`, converts back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth_core::{BuiltinModel as ModelView, CatalogModel as CatalogView};
use hearth_core::{BuiltinStatus, DownloadProgress};
use tauri::{AppHandle, Emitter, Runtime, State};
use tokio_util::sync::CancellationToken;

use crate::cmd::blocking;
use crate::dto::args::*;
use crate::dto::{
    BuiltinCatalogDto, BuiltinDownloadEvent, BuiltinModelDto, BuiltinStatusDto, ErrorDto,
};
use crate::state::AppState;

/// Progress events at most this often (and the last one always).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

fn catalog_dto(v: CatalogView) -> BuiltinCatalogDto {
    BuiltinCatalogDto {
        name: v.entry.name,
        label: v.entry.label,
        family: v.entry.family,
        parameters: v.entry.parameters,
        quantisation: v.entry.quantisation,
        licence: v.entry.licence,
        bytes: v.entry.bytes as f64,
        memory_bytes: v.memory_bytes as f64,
        context: v.context,
        tools: v.entry.tools,
        fits: v.fits,
        fits_disk: v.fits_disk,
        recommended: v.recommended,
        installed: v.installed,
    }
}

fn model_dto(v: ModelView) -> BuiltinModelDto {
    BuiltinModelDto {
        name: v.model.name,
        path: v.model.path.to_string_lossy().into_owned(),
        source: v.model.source,
        architecture: v.model.architecture,
        bytes: v.model.bytes as f64,
        memory_bytes: v.memory_bytes as f64,
        context: v.context,
        tools: v.model.tools,
        fits: v.fits,
        main: v.main,
        fast: v.fast,
        problem: v.problem,
        tokens_per_s: v.model.tokens_per_s,
    }
}

fn status_dto(s: BuiltinStatus, downloading: Option<String>) -> BuiltinStatusDto {
    BuiltinStatusDto {
        engine_installed: s.engine_installed,
        running: s.worker.running,
        model: s.worker.model,
        resident_bytes: s.worker.resident_bytes.map(|b| b as f64),
        starts: s.worker.starts,
        crashes: s.worker.crashes,
        main: s.main,
        fast: s.fast,
        installed: u32::try_from(s.installed).unwrap_or(u32::MAX),
        total_memory: s.total_memory.map(|b| b as f64),
        idle_unload_s: s.idle_unload_s as f64,
        downloading,
    }
}

fn downloading(state: &AppState) -> Option<String> {
    state
        .download
        .lock()
        .ok()
        .and_then(|d| d.as_ref().map(|(name, _)| name.clone()))
}

/// The catalogue, each model as it would run here, the recommended one marked.
#[tauri::command]
pub async fn builtin_catalog(
    state: State<'_, AppState>,
) -> Result<Vec<BuiltinCatalogDto>, ErrorDto> {
    let builtin = state.hearth()?.builtin();
    let list = blocking(move || builtin.catalog()).await?;
    Ok(list.into_iter().map(catalog_dto).collect())
}

#[tauri::command]
pub async fn list_builtin_models(
    state: State<'_, AppState>,
) -> Result<Vec<BuiltinModelDto>, ErrorDto> {
    let builtin = state.hearth()?.builtin();
    let list = blocking(move || builtin.list()).await?;
    Ok(list.into_iter().map(model_dto).collect())
}

#[tauri::command]
pub async fn builtin_status(state: State<'_, AppState>) -> Result<BuiltinStatusDto, ErrorDto> {
    let builtin = state.hearth()?.builtin();
    let status = blocking(move || builtin.status()).await?;
    Ok(status_dto(status, downloading(&state)))
}

/// Downloads catalogue model `name` (progress as `builtin_download_progress` events) and
/// installs it; the first model installed is the one the chat uses. One at a time:
/// `busy` while another runs. `cancel_builtin_download` stops it, keeping what arrived.
#[tauri::command]
pub async fn download_builtin_model<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<BuiltinNameArgs>,
) -> Result<BuiltinModelDto, ErrorDto> {
    let BuiltinNameArgs { name } = args.0;
    let builtin = state.hearth()?.builtin();
    let cancel = CancellationToken::new();
    {
        let mut slot = state
            .download
            .lock()
            .map_err(|_| ErrorDto::new("internal", "download state poisoned"))?;
        if let Some((other, _)) = slot.as_ref() {
            return Err(ErrorDto::new(
                "busy",
                format!("{other} is downloading; wait for it or cancel it first"),
            ));
        }
        *slot = Some((name.clone(), cancel.clone()));
    }
    let last = std::sync::Mutex::new(None::<Instant>);
    let event_name = name.clone();
    let emitter = app.clone();
    let on_progress = Arc::new(move |p: DownloadProgress| {
        let finished = p.total.is_some_and(|t| p.done >= t);
        if let Ok(mut last) = last.lock() {
            if !finished && last.is_some_and(|at| at.elapsed() < PROGRESS_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        let _ = emitter.emit(
            "builtin_download_progress",
            BuiltinDownloadEvent {
                name: event_name.clone(),
                done: p.done as f64,
                total: p.total.map(|t| t as f64),
                bytes_per_s: p.bytes_per_s.map(|r| r as f64),
                eta_s: p.eta_s.map(|s| s as f64),
            },
        );
    });
    let result = builtin.download(&name, on_progress, &cancel).await;
    if let Ok(mut slot) = state.download.lock() {
        *slot = None;
    }
    let view = result?;
    let _ = app.emit("store_changed", ());
    Ok(model_dto(view))
}

/// Stops the running download, if any (what arrived stays: the next download resumes).
#[tauri::command]
pub fn cancel_builtin_download(state: State<'_, AppState>) -> Result<(), ErrorDto> {
    if let Ok(slot) = state.download.lock()
        && let Some((_, cancel)) = slot.as_ref()
    {
        cancel.cancel();
    }
    Ok(())
}

/// The OS file picker for a GGUF; `null` when the user cancels. Nothing is added yet: the
/// UI calls `add_builtin_model` with it.
#[tauri::command]
pub async fn pick_model_file<R: Runtime>(app: AppHandle<R>) -> Result<Option<String>, ErrorDto> {
    crate::cmd::pick_path(
        &app,
        "Choose a GGUF model file",
        Some(("GGUF model", &["gguf"])),
    )
    .await
}

/// Adds a GGUF from disk, in place, after checking it (header, architecture, fit).
#[tauri::command]
pub async fn add_builtin_model<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<AddBuiltinArgs>,
) -> Result<BuiltinModelDto, ErrorDto> {
    let AddBuiltinArgs { path, name } = args.0;
    let builtin = state.hearth()?.builtin();
    let view = blocking(move || {
        builtin.add(
            std::path::Path::new(&path),
            name.as_deref().filter(|n| !n.trim().is_empty()),
        )
    })
    .await?;
    let _ = app.emit("store_changed", ());
    Ok(model_dto(view))
}

/// Removes a model: a downloaded one's file is deleted, a file the user added stays.
#[tauri::command]
pub async fn remove_builtin_model<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<BuiltinNameArgs>,
) -> Result<(), ErrorDto> {
    let BuiltinNameArgs { name } = args.0;
    let builtin = state.hearth()?.builtin();
    blocking(move || builtin.remove(&name)).await?;
    let _ = app.emit("store_changed", ());
    Ok(())
}

#[tauri::command]
pub async fn use_builtin_model<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<UseBuiltinArgs>,
) -> Result<BuiltinModelDto, ErrorDto> {
    let UseBuiltinArgs { name, fast } = args.0;
    let builtin = state.hearth()?.builtin();
    let view = blocking(move || builtin.choose(&name, fast)).await?;
    let _ = app.emit("store_changed", ());
    Ok(model_dto(view))
}

/// How long the model stays loaded without work (at least 60 s).
#[tauri::command]
pub async fn set_idle_unload(
    state: State<'_, AppState>,
    args: Args<IdleUnloadArgs>,
) -> Result<BuiltinStatusDto, ErrorDto> {
    let IdleUnloadArgs { seconds } = args.0;
    let builtin = state.hearth()?.builtin();
    let status = blocking(move || {
        builtin.set_idle_unload(u64::from(seconds))?;
        builtin.status()
    })
    .await?;
    Ok(status_dto(status, downloading(&state)))
}
