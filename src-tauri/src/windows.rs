//! The two windows: main (closes to tray) and the quick prompt (frameless, on top, hidden).

use std::path::PathBuf;

use tauri::webview::NewWindowResponse;
use tauri::{
    AppHandle, Manager, Runtime, Url, WebviewUrl, WebviewWindowBuilder, Window, WindowEvent,
};

pub const MAIN: &str = "main";
pub const QUICK: &str = "quick";
/// The consent window: the only one that may answer a tool's request.
pub const CONSENT: &str = "consent";

/// Whether `url` is the app's own page: the bundled UI (`tauri://localhost`, or
/// `http(s)://tauri.localhost` on Windows) or, in a dev build, the dev server. A window
/// never navigates anywhere else: a link in an answer or a document cannot turn a window
/// that can call the core into someone else's page.
pub fn is_own_origin(url: &Url, dev_url: Option<&Url>) -> bool {
    let host = url.host_str();
    let bundled = match url.scheme() {
        "tauri" => host == Some("localhost"),
        "http" | "https" => host == Some("tauri.localhost"),
        _ => false,
    };
    bundled
        || (cfg!(debug_assertions)
            && dev_url.is_some_and(|d| d.origin() == url.origin() && d.scheme() != "file"))
}

/// A window of ours: own origin only, and no new windows (`window.open`, `target=_blank`).
fn guarded<'a, R: Runtime>(
    app: &'a AppHandle<R>,
    label: &'a str,
    page: &str,
) -> WebviewWindowBuilder<'a, R, AppHandle<R>> {
    let dev_url = app.config().build.dev_url.clone();
    WebviewWindowBuilder::new(app, label, WebviewUrl::App(page.into()))
        .on_navigation(move |url| {
            let ok = is_own_origin(url, dev_url.as_ref());
            if !ok {
                tracing::warn!(scheme = url.scheme(), "refused a navigation off the app");
            }
            ok
        })
        .on_new_window(|_url, _features| {
            tracing::warn!("refused to open a new window");
            NewWindowResponse::Deny
        })
}

/// The variable that turns WebKitGTK's DMA-BUF renderer off.
pub const DMABUF_VAR: &str = "WEBKIT_DISABLE_DMABUF_RENDERER";

/// Whether to turn WebKitGTK's DMA-BUF renderer off: on a machine with no GPU render node
/// (`/dev/dri/renderD*`) it has nothing to share buffers with, and there it delayed the
/// main window's first paint (installed release under Xvfb: 1.43–1.55 s to a painted
/// window with it, 1.09–1.25 s without, five starts each, alternating); with NVIDIA's
/// driver it shows blank windows (tauri-apps/tauri#9304). Elsewhere WebKit's default stays.
/// A value the user set wins, whatever it is.
pub fn disable_dmabuf_renderer(user_set: bool, has_render_node: bool, nvidia: bool) -> bool {
    !user_set && (!has_render_node || nvidia)
}

/// Sets [`DMABUF_VAR`] when [`disable_dmabuf_renderer`] says so, from this machine's facts.
///
/// # Safety
/// Changes the environment: call it before any other thread exists.
#[cfg(target_os = "linux")]
pub unsafe fn choose_webkit_renderer() {
    let has_render_node = std::fs::read_dir("/dev/dri").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    });
    let nvidia = std::path::Path::new("/proc/driver/nvidia/version").exists();
    if disable_dmabuf_renderer(
        std::env::var_os(DMABUF_VAR).is_some(),
        has_render_node,
        nvidia,
    ) {
        // SAFETY: the caller promises no other thread exists yet.
        unsafe { std::env::set_var(DMABUF_VAR, "1") };
    }
}

/// The argument "Open at login" starts Hearth with: the main window stays hidden.
pub const IN_TRAY_ARG: &str = "--in-tray";

/// Creates the windows; webview data goes to `webview_dir` (inside Hearth's data folder).
/// `in_tray`: the main window starts hidden (the tray shows it).
pub fn create<R: Runtime>(
    app: &AppHandle<R>,
    webview_dir: PathBuf,
    in_tray: bool,
) -> tauri::Result<()> {
    guarded(app, MAIN, "index.html")
        .title("Hearth")
        .visible(!in_tray)
        .inner_size(1080.0, 720.0)
        .min_inner_size(720.0, 480.0)
        .data_directory(webview_dir.clone())
        .build()?;
    guarded(app, QUICK, "quick.html")
        .title("Hearth quick prompt")
        .inner_size(640.0, 360.0)
        .decorations(false)
        .always_on_top(true)
        .resizable(false)
        .skip_taskbar(true)
        .visible(false)
        .center()
        .data_directory(webview_dir.clone())
        .build()?;
    // Renders no model Markdown: only the request, as text.
    guarded(app, CONSENT, "consent.html")
        .title("Hearth — allow this action?")
        .inner_size(620.0, 640.0)
        .min_inner_size(480.0, 420.0)
        .always_on_top(true)
        .visible(false)
        .center()
        .data_directory(webview_dir)
        .build()?;
    Ok(())
}

/// The queue tool calls wait on: each change brings the consent window forward (or hides
/// it when nothing is left) and tells it to reload the questions.
pub fn consent_queue<R: Runtime>(app: &AppHandle<R>) -> hearth_core::ConsentQueue {
    let app = app.clone();
    // How many questions were open at the last change: a new one may need a notification.
    let open = std::sync::atomic::AtomicUsize::new(0);
    hearth_core::ConsentQueue::new(move |pending| {
        use tauri::Emitter;
        let before = open.swap(pending.len(), std::sync::atomic::Ordering::Relaxed);
        if pending.len() > before
            && let Some(newest) = pending.last()
            && main_is_hidden(&app)
        {
            notify_question(&app, &newest.request);
        }
        let _ = app.emit_to(
            tauri::EventTarget::webview_window(CONSENT),
            "consent_changed",
            pending.len(),
        );
        let Some(w) = app.get_webview_window(CONSENT) else {
            return;
        };
        let shown = if pending.is_empty() {
            w.hide()
        } else {
            w.show()
                .and_then(|()| w.unminimize())
                .and_then(|()| w.set_focus())
        };
        if let Err(e) = shown {
            tracing::warn!(error = %e, "could not show or hide the consent window");
        }
    })
}

/// Whether the main window is out of sight (closed to the tray, or minimised).
fn main_is_hidden<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window(MAIN)
        .is_none_or(|w| !w.is_visible().unwrap_or(false) || w.is_minimized().unwrap_or(false))
}

/// An OS notification that a tool waits for the user's answer: the tool and its risk only
/// (a notification can show on a locked screen; the arguments stay in the consent window).
fn notify_question<R: Runtime>(app: &AppHandle<R>, request: &hearth_core::ConsentRequest) {
    use tauri_plugin_notification::NotificationExt;
    let body = format!(
        "{} ({}) is waiting for your answer in the consent window.",
        request.tool,
        request.risk.as_str()
    );
    if let Err(e) = app
        .notification()
        .builder()
        .title("Hearth needs your answer")
        .body(body)
        .show()
    {
        tracing::warn!(error = %e, "could not show a notification");
    }
}

/// Hides the main window to the tray (as closing it does).
pub fn hide_main<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    match app.get_webview_window(MAIN) {
        Some(w) => w.hide(),
        None => Ok(()),
    }
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
        // Closing the consent window is a "no" to what it asks.
        if window.label() == CONSENT
            && let Some(state) = window.try_state::<crate::state::AppState>()
        {
            state.consent.deny_all();
        }
        if let Err(e) = window.hide() {
            tracing::warn!(error = %e, "could not hide window");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_dmabuf_renderer_is_off_without_a_render_node_or_with_nvidia_unless_the_user_chose() {
        use super::disable_dmabuf_renderer as off;
        assert!(off(false, false, false), "no GPU render node");
        assert!(off(false, true, true), "NVIDIA's driver");
        assert!(
            !off(false, true, false),
            "a working GPU keeps WebKit's default"
        );
        assert!(!off(true, false, false), "the user's own value wins");
        assert!(!off(true, true, true));
    }

    use super::is_own_origin;
    use tauri::Url;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    #[test]
    fn only_the_bundled_ui_and_the_dev_server_are_own_origin() {
        let dev = url("http://127.0.0.1:1420");
        for ok in [
            "tauri://localhost/index.html",
            "tauri://localhost/quick.html#x",
            "http://tauri.localhost/index.html",
            "https://tauri.localhost/",
        ] {
            assert!(is_own_origin(&url(ok), Some(&dev)), "{ok}");
        }
        for bad in [
            "https://example.com/",
            "http://localhost/",
            "tauri://evil/",
            "http://tauri.localhost.evil.com/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/html,hi",
            "http://127.0.0.1:1421/",
        ] {
            assert!(!is_own_origin(&url(bad), Some(&dev)), "{bad}");
        }
        // The dev server only in debug builds (tests are).
        assert!(is_own_origin(
            &url("http://127.0.0.1:1420/index.html"),
            Some(&dev)
        ));
        assert!(!is_own_origin(
            &url("http://127.0.0.1:1420/index.html"),
            None
        ));
    }
}
