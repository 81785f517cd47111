//! The tray icon and its menu.

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, CheckMenuItemBuilder, MenuBuilder, MenuItemBuilder};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

use crate::state::AppState;
use crate::windows;

const TRAY_ICON: &[u8] = include_bytes!("../../icons/tray.png");

/// The tray's "Pause indexing" item, kept to follow the folders' state.
struct PauseItem<R: Runtime>(CheckMenuItem<R>);

pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let open = MenuItemBuilder::with_id("open", "Open Hearth").build(app)?;
    let quick = MenuItemBuilder::with_id("quick", "Quick prompt").build(app)?;
    let pause = CheckMenuItemBuilder::with_id("pause_indexing", "Pause indexing")
        .checked(false)
        .enabled(false)
        .build(app)?;
    let quit = MenuItemBuilder::with_id("quit", "Quit Hearth").build(app)?;
    let menu = MenuBuilder::new(app)
        .items(&[&open, &quick])
        .separator()
        .item(&pause)
        .separator()
        .item(&quit)
        .build()?;
    app.manage(PauseItem(pause));
    refresh(app);
    TrayIconBuilder::with_id("hearth")
        .icon(Image::from_bytes(TRAY_ICON)?)
        .tooltip("Hearth")
        .menu(&menu)
        .on_menu_event(|app, event| {
            let result = match event.id().as_ref() {
                "open" => windows::show_main(app),
                // The same function the `toggle_quick_prompt` command calls.
                "quick" => windows::toggle_quick_prompt(app),
                "pause_indexing" => {
                    toggle_pause(app);
                    Ok(())
                }
                "quit" => {
                    app.exit(0);
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = result {
                tracing::warn!(error = %e, "tray action failed");
            }
        })
        .build(app)?;
    Ok(())
}

/// Pauses every watched folder, or resumes them all when all are paused (what
/// `set_folder_paused` with no path does).
fn toggle_pause<R: Runtime>(app: &AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let Ok(hearth) = state.hearth() else {
        return;
    };
    let folders = hearth.folders();
    let app = app.clone();
    tauri::async_runtime::spawn_blocking(move || {
        if let Err(e) = folders.toggle_pause_all() {
            tracing::warn!(code = e.code(), "could not pause or resume indexing");
        }
        let _ = tauri::Emitter::emit(&app, "store_changed", ());
        refresh(&app);
    });
}

/// Ticks "Pause indexing" when every folder is paused; greys it out with no folder.
pub fn refresh<R: Runtime>(app: &AppHandle<R>) {
    let (Some(item), Some(state)) = (app.try_state::<PauseItem<R>>(), app.try_state::<AppState>())
    else {
        return;
    };
    let Ok(hearth) = state.hearth() else {
        return;
    };
    let Ok((all, paused)) = hearth.folders().paused_counts() else {
        return;
    };
    let _ = item.0.set_enabled(all > 0);
    let _ = item.0.set_checked(all > 0 && paused == all);
}
