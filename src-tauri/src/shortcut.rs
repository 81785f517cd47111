//! The quick-prompt global shortcut: registered at start, changeable in Settings, and never
//! fatal: if another app holds it the app runs on and Settings says so.

use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut, ShortcutEvent, ShortcutState};

use crate::dto::{ErrorDto, ShortcutStatus};
use crate::state::AppState;
use crate::windows;

/// Ctrl+Shift+Space, Cmd+Shift+Space on macOS.
pub const DEFAULT: &str = "CommandOrControl+Shift+Space";

/// The plugin's handler: any of our shortcuts toggles the quick prompt.
pub fn on_shortcut<R: Runtime>(app: &AppHandle<R>, _shortcut: &Shortcut, event: ShortcutEvent) {
    if event.state() == ShortcutState::Pressed
        && let Err(e) = windows::toggle_quick_prompt(app)
    {
        tracing::warn!(error = %e, "could not toggle the quick prompt");
    }
}

fn parse(accelerator: &str) -> Result<Shortcut, ErrorDto> {
    accelerator.trim().parse::<Shortcut>().map_err(|e| {
        ErrorDto::new(
            "invalid_shortcut",
            format!("{accelerator:?} is not a shortcut Hearth understands ({e}); try e.g. Ctrl+Shift+Space"),
        )
    })
}

/// Registers the saved (or default) shortcut at start; failure is recorded, not fatal.
pub fn register_at_start<R: Runtime>(app: &AppHandle<R>, state: &AppState) {
    let saved = state
        .hearth
        .as_ref()
        .ok()
        .and_then(|h| h.quick_prompt_shortcut().ok().flatten());
    let accelerator = saved.unwrap_or_else(|| DEFAULT.to_owned());
    let status = match parse(&accelerator) {
        Ok(shortcut) => match app.global_shortcut().register(shortcut) {
            Ok(()) => ShortcutStatus {
                accelerator,
                registered: true,
                error: None,
            },
            Err(e) => {
                tracing::warn!(error = %e, "the quick-prompt shortcut is taken");
                ShortcutStatus {
                    accelerator,
                    registered: false,
                    error: Some(e.to_string()),
                }
            }
        },
        Err(e) => ShortcutStatus {
            accelerator,
            registered: false,
            error: Some(e.message),
        },
    };
    if let Ok(mut current) = state.shortcut.lock() {
        *current = status;
    }
}

pub fn current(state: &AppState) -> ShortcutStatus {
    state
        .shortcut
        .lock()
        .map(|s| s.clone())
        .unwrap_or_else(|p| p.into_inner().clone())
}

/// Switches to `accelerator`. On failure the previous shortcut stays as it was.
pub fn change<R: Runtime>(
    app: &AppHandle<R>,
    state: &AppState,
    accelerator: &str,
) -> Result<ShortcutStatus, ErrorDto> {
    let new = parse(accelerator)?;
    let old = current(state);
    let old_shortcut = parse(&old.accelerator).ok().filter(|_| old.registered);
    if old_shortcut.as_ref() == Some(&new) {
        return Ok(old);
    }
    let gs = app.global_shortcut();
    if let Some(s) = old_shortcut {
        let _ = gs.unregister(s);
    }
    if let Err(e) = gs.register(new) {
        if let Some(s) = old_shortcut {
            let _ = gs.register(s);
        }
        return Err(ErrorDto::new(
            "shortcut_taken",
            format!(
                "{} is already in use by another app ({e}); pick another one",
                accelerator.trim()
            ),
        ));
    }
    let status = ShortcutStatus {
        accelerator: accelerator.trim().to_owned(),
        registered: true,
        error: None,
    };
    if let Ok(h) = state.hearth() {
        h.set_quick_prompt_shortcut(&status.accelerator)?;
    }
    if let Ok(mut s) = state.shortcut.lock() {
        *s = status.clone();
    }
    let _ = app.emit("shortcut_changed", status.clone());
    if let Some(w) = app.get_webview_window(windows::QUICK) {
        let _ = w.hide();
    }
    Ok(status)
}
