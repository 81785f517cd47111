//! IPC commands: each converts, calls the core façade or a window helper, converts back.

use tauri::{AppHandle, Runtime, State};

use crate::dto::args::*;
use crate::dto::{ErrorDto, ShortcutStatus, StatusDto};
use crate::state::AppState;
use crate::{shortcut, windows};

#[tauri::command]
pub async fn get_status(state: State<'_, AppState>) -> Result<StatusDto, ErrorDto> {
    let hearth = state.hearth()?.clone();
    Ok(hearth.status().await?.into())
}

#[tauri::command]
pub fn get_shortcut(state: State<'_, AppState>) -> ShortcutStatus {
    shortcut::current(&state)
}

#[tauri::command]
pub fn set_shortcut<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<SetShortcutArgs>,
) -> Result<ShortcutStatus, ErrorDto> {
    let SetShortcutArgs { accelerator } = args.0;
    shortcut::change(&app, &state, &accelerator)
}

#[tauri::command]
pub fn toggle_quick_prompt<R: Runtime>(app: AppHandle<R>) -> Result<(), ErrorDto> {
    Ok(windows::toggle_quick_prompt(&app)?)
}

#[tauri::command]
pub fn hide_quick_prompt<R: Runtime>(app: AppHandle<R>) -> Result<(), ErrorDto> {
    Ok(windows::hide_quick_prompt(&app)?)
}

#[tauri::command]
pub fn show_main_window<R: Runtime>(app: AppHandle<R>) -> Result<(), ErrorDto> {
    Ok(windows::show_main(&app)?)
}

/// Hides the main window to the tray (Ctrl+W / Cmd+W), as closing it does.
#[tauri::command]
pub fn hide_main_window<R: Runtime>(app: AppHandle<R>) -> Result<(), ErrorDto> {
    Ok(windows::hide_main(&app)?)
}

/// Runs a blocking engine call off the async threads; a panicked task is `internal`.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> hearth_core::Result<T> + Send + 'static,
) -> Result<T, ErrorDto> {
    Ok(tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| ErrorDto::new("internal", e.to_string()))??)
}

/// The OS picker for a file (`Some((label, extensions))` filters it) or, with `None`, a
/// folder, opened in the home folder; `None` when the user cancels.
pub(crate) async fn pick_path<R: Runtime>(
    app: &AppHandle<R>,
    title: &str,
    file: Option<(&str, &[&str])>,
) -> Result<Option<String>, ErrorDto> {
    use tauri_plugin_dialog::DialogExt;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut dialog = app.dialog().file().set_title(title);
    if let Some(home) = std::env::var_os("HOME") {
        dialog = dialog.set_directory(home);
    }
    let reply = move |picked| {
        let _ = tx.send(picked);
    };
    match file {
        Some((label, extensions)) => dialog.add_filter(label, extensions).pick_file(reply),
        None => dialog.pick_folder(reply),
    }
    let picked = rx
        .await
        .map_err(|e| ErrorDto::new("internal", e.to_string()))?;
    Ok(picked
        .and_then(|p: tauri_plugin_dialog::FilePath| p.into_path().ok())
        .map(|p| p.to_string_lossy().into_owned()))
}
