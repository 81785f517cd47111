//! The tray icon and its menu.

use tauri::image::Image;
use tauri::menu::{MenuBuilder, MenuItemBuilder};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Runtime};

use crate::windows;

const TRAY_ICON: &[u8] = include_bytes!("../../icons/tray.png");

pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let open = MenuItemBuilder::with_id("open", "Open Hearth").build(app)?;
    let quick = MenuItemBuilder::with_id("quick", "Quick prompt").build(app)?;
    let quit = MenuItemBuilder::with_id("quit", "Quit Hearth").build(app)?;
    let menu = MenuBuilder::new(app)
        .items(&[&open, &quick])
        .separator()
        .item(&quit)
        .build()?;
    TrayIconBuilder::with_id("hearth")
        .icon(Image::from_bytes(TRAY_ICON)?)
        .tooltip("Hearth")
        .menu(&menu)
        .on_menu_event(|app, event| {
            let result = match event.id().as_ref() {
                "open" => windows::show_main(app),
                // The same function the `toggle_quick_prompt` command calls.
                "quick" => windows::toggle_quick_prompt(app),
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
