//! The two windows: main (closes to tray) and the quick prompt (frameless, on top, hidden).

use std::path::PathBuf;

use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder, Window, WindowEvent};

pub const MAIN: &str = "main";
pub const QUICK: &str = "quick";

/// Creates both windows; webview data goes to `webview_dir` (inside Hearth's data folder).
pub fn create<R: Runtime>(app: &AppHandle<R>, webview_dir: PathBuf) -> tauri::Result<()> {
    WebviewWindowBuilder::new(app, MAIN, WebviewUrl::App("index.html".into()))
        .title("Hearth")
        .inner_size(1080.0, 720.0)
        .min_inner_size(720.0, 480.0)
        .data_directory(webview_dir.clone())
        .build()?;
    WebviewWindowBuilder::new(app, QUICK, WebviewUrl::App("quick.html".into()))
        .title("Hearth quick prompt")
        .inner_size(640.0, 360.0)
        .decorations(false)
        .always_on_top(true)
        .resizable(false)
        .skip_taskbar(true)
        .visible(false)
        .center()
        .data_directory(webview_dir)
        .build()?;
    Ok(())
}

/// Shows, un-minimises and focuses the main window.
pub fn show_main<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    if let Some(w) = app.get_webview_window(MAIN) {
        w.show()?;
        w.unminimize()?;
        w.set_focus()?;
    }
    Ok(())
}

/// Shows the quick prompt centred and focused, or hides it if it is showing.
pub fn toggle_quick_prompt<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let Some(w) = app.get_webview_window(QUICK) else {
        return Ok(());
    };
    if w.is_visible()? {
        w.hide()
    } else {
        w.center()?;
        w.show()?;
        w.set_focus()
    }
}

/// Hides the quick prompt.
pub fn hide_quick_prompt<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    match app.get_webview_window(QUICK) {
        Some(w) => w.hide(),
        None => Ok(()),
    }
}

/// Closing a window hides it: Hearth lives in the tray until the user quits from there.
pub fn on_window_event<R: Runtime>(window: &Window<R>, event: &WindowEvent) {
    if let WindowEvent::CloseRequested { api, .. } = event {
        api.prevent_close();
        if let Err(e) = window.hide() {
            tracing::warn!(error = %e, "could not hide window");
        }
    }
}
