//! Hearth's desktop shell: thin. Windows, tray, global shortcut and IPC commands over the
//! `hearth-core` façade; no product logic lives here.
//!
//! **Never depends on** a crate below `hearth-core` (Cargo; `crate_graph.rs`) nor on its
//! `internals`: the app and the CLI must behave the same, so both reach only the façade.

mod chat_cmd;
mod cmd;
pub mod dto;
mod folders_cmd;
mod mcp_cmd;
mod memory_cmd;
mod models_cmd;
mod providers_cmd;
#[cfg(test)]
mod same_rules_tests;
mod shortcut;
mod state;
mod tools_cmd;
mod tray;
mod updates_cmd;
mod windows;

use std::sync::Mutex;

use hearth_core::{DataDir, Event, Hearth, OpenOptions};
use tauri::{AppHandle, Builder, Emitter, Manager, Runtime};

use dto::{ErrorDto, ShortcutStatus};
use state::AppState;

/// Turns WebKitGTK's DMA-BUF renderer off where it does harm (see
/// `windows::disable_dmabuf_renderer`).
///
/// # Safety
/// Changes the environment: call it first thing in `main`, before any other thread exists.
#[cfg(target_os = "linux")]
pub unsafe fn choose_webkit_renderer() {
    // SAFETY: passed on to the caller.
    unsafe { windows::choose_webkit_renderer() }
}

/// Starts the app; returns when the user quits.
pub fn run() {
    let data_dir = DataDir::from_env();
    let _log_guard = data_dir.as_ref().ok().and_then(init_logging);
    let app = build(tauri::Builder::default()).build(tauri::generate_context!());
    match app {
        Ok(app) => app.run(|_, _| {}),
        Err(e) => {
            tracing::error!(error = %e, "the app failed to start");
            eprintln!("Hearth failed to start: {e}");
            std::process::exit(1);
        }
    }
}

/// The app's builder, generic over the runtime so tests can use a mock one.
pub fn build<R: Runtime>(builder: Builder<R>) -> Builder<R> {
    builder
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Err(e) = windows::show_main(app) {
                tracing::warn!(error = %e, "could not show the main window");
            }
        }))
        // Rust-side only: no window may call these plugins' own commands (the capability
        // files list ours alone). The dialog picks a folder; the opener opens a file the
        // engine checked is inside a watched folder.
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        // Rust-side only too: a question waiting while the main window is hidden.
        .plugin(tauri_plugin_notification::init())
        // Rust-side only: the update check and install (`updates_cmd`), and "Open at login",
        // which starts Hearth in the tray.
        .plugin(tauri_plugin_updater::Builder::new().build())
        .plugin(
            tauri_plugin_autostart::Builder::new()
                .args([windows::IN_TRAY_ARG])
                .build(),
        )
        .plugin(
            tauri_plugin_global_shortcut::Builder::new()
                .with_handler(shortcut::on_shortcut)
                .build(),
        )
        // Every command of `commands.in.rs` (build.rs writes the list).
        .invoke_handler(include!(concat!(env!("OUT_DIR"), "/handler.rs")))
        .on_window_event(windows::on_window_event)
        .setup(|app| {
            let handle = app.handle().clone();
            let (hearth, webview_dir) = open_engine();
            let state = AppState {
                hearth,
                shortcut: Mutex::new(ShortcutStatus {
                    accelerator: shortcut::DEFAULT.to_owned(),
                    registered: false,
                    error: None,
                }),
                turns: Mutex::new(std::collections::HashMap::new()),
                next_turn: std::sync::atomic::AtomicU64::new(1),
                jobs: Mutex::new(None),
                watching: Mutex::new(None),
                consent: std::sync::Arc::new(windows::consent_queue(&handle)),
                download: Mutex::new(None),
            };
            shortcut::register_at_start(&handle, &state);
            if let Ok(h) = &state.hearth {
                forward_events(&handle, h);
                // The engine's job runner: leftovers of a previous run (a crash, a `hearth
                // chat --no-wait`), learning after each turn, re-embedding, indexing.
                let runtime = tauri::async_runtime::handle();
                let _entered = runtime.inner().enter();
                if let Ok(mut jobs) = state.jobs.lock() {
                    *jobs = Some(h.jobs().start());
                }
                // Watched folders: the reconcile pass now (changes made while the app was
                // closed), then every change as it happens, indexed by the ingest worker.
                if let Ok(mut watching) = state.watching.lock() {
                    *watching = Some(h.folders().start_watching());
                }
            }
            app.manage(state);
            app.manage(updates_cmd::PendingUpdate::default());
            // Started at login ("Open at login"): in the tray, no window in the way.
            let in_tray = std::env::args().any(|a| a == windows::IN_TRAY_ARG);
            windows::create(&handle, webview_dir, in_tray)?;
            tray::create(&handle)?;
            updates_cmd::start(&handle);
            Ok(())
        })
}

/// Opens the engine from the environment (HEARTH_HOME, HEARTH_KEY_BACKEND, HEARTH_PASSPHRASE).
fn open_engine() -> (Result<Hearth, ErrorDto>, std::path::PathBuf) {
    let opts = match OpenOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            return (Err(e.into()), hearth_core::fallback_webview_dir());
        }
    };
    let webview_dir = opts.data_dir.webview_dir();
    let hearth = Hearth::open(&opts).map_err(|e| {
        tracing::error!(code = e.code(), "could not open the store");
        ErrorDto::from(e)
    });
    (hearth, webview_dir)
}

/// Re-emits engine events to every window.
fn forward_events<R: Runtime>(app: &AppHandle<R>, hearth: &Hearth) {
    let mut rx = hearth.subscribe();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(150);
        let mut last_progress = std::time::Instant::now() - PROGRESS_EVERY;
        loop {
            match rx.recv().await {
                Ok(Event::StoreChanged) => {
                    let _ = app.emit("store_changed", ());
                    // Another process may have paused or added folders.
                    let app = app.clone();
                    tauri::async_runtime::spawn_blocking(move || tray::refresh(&app));
                }
                Ok(Event::MemoryUpdated {
                    conversation,
                    message,
                    changes,
                }) => {
                    // It carries memory text: the main window only (the quick prompt
                    // shows no memories).
                    let _ = app.emit_to(
                        tauri::EventTarget::webview_window(windows::MAIN),
                        "memory_updated",
                        dto::MemoryUpdatedEvent {
                            conversation_id: conversation,
                            message_id: Some(message),
                            changes: changes
                                .into_iter()
                                .map(|c| dto::MemoryChangeDto {
                                    memory_id: c.memory_id,
                                    op: c.op,
                                    text: c.text,
                                    old_text: c.old_text,
                                    proposal_id: c.proposal_id,
                                })
                                .collect(),
                        },
                    );
                }
                Ok(Event::EmbeddingProgress { model, done, total }) => {
                    let _ = app.emit(
                        "embedding_progress",
                        dto::EmbeddingProgressEvent {
                            model,
                            done: done as u32,
                            total: total as u32,
                        },
                    );
                }
                // One event per file can be thousands a second: the window hears at most
                // one every PROGRESS_EVERY, and always the last of a run.
                Ok(Event::IndexProgress { done, total }) => {
                    let now = std::time::Instant::now();
                    if done >= total || now.duration_since(last_progress) >= PROGRESS_EVERY {
                        last_progress = now;
                        let _ = app.emit_to(
                            tauri::EventTarget::webview_window(windows::MAIN),
                            "index_progress",
                            dto::IndexProgressEvent { done, total },
                        );
                    }
                }
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            }
        }
    });
}

/// Logs to `<data>/logs/hearth-desktop.log.<date>` (never secrets or memory contents).
fn init_logging(data_dir: &DataDir) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let logs = data_dir.logs_dir();
    std::fs::create_dir_all(&logs).ok()?;
    let appender = tracing_appender::rolling::daily(logs, "hearth-desktop.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = tracing_subscriber::EnvFilter::try_from_env("HEARTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
