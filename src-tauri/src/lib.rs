//! Hearth's desktop shell: thin. Windows, tray, global shortcut and IPC commands over the
//! `hearth-core` façade; no product logic lives here.

mod chat_cmd;
mod cmd;
pub mod dto;
mod memory_cmd;
mod providers_cmd;
mod shortcut;
mod state;
mod tray;
mod windows;

use std::sync::Mutex;

use hearth_core::{DataDir, Event, Hearth, OpenOptions};
use tauri::{AppHandle, Builder, Emitter, Manager, Runtime};

use dto::{ErrorDto, ShortcutStatus};
use state::AppState;

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
        .plugin(
            tauri_plugin_global_shortcut::Builder::new()
                .with_handler(shortcut::on_shortcut)
                .build(),
        )
        .invoke_handler(tauri::generate_handler![
            cmd::get_status,
            cmd::get_shortcut,
            cmd::set_shortcut,
            cmd::toggle_quick_prompt,
            cmd::hide_quick_prompt,
            cmd::show_main_window,
            chat_cmd::chat_status,
            chat_cmd::list_conversations,
            chat_cmd::get_messages,
            chat_cmd::send_message,
            chat_cmd::stop_turn,
            chat_cmd::delete_conversation,
            chat_cmd::open_in_main,
            chat_cmd::regenerate,
            chat_cmd::edit_last_message,
            providers_cmd::list_presets,
            providers_cmd::list_providers,
            providers_cmd::add_provider,
            providers_cmd::remove_provider,
            providers_cmd::test_provider,
            providers_cmd::detect_local_servers,
            providers_cmd::get_slots,
            providers_cmd::set_slots,
            providers_cmd::list_model_info,
            providers_cmd::set_model_info,
            providers_cmd::reset_model_info,
            memory_cmd::count_conversation_memories,
            memory_cmd::list_memories,
            memory_cmd::memory_counts,
            memory_cmd::get_memory,
            memory_cmd::add_memory,
            memory_cmd::edit_memory,
            memory_cmd::set_memory_pinned,
            memory_cmd::set_memory_critical,
            memory_cmd::delete_memories,
            memory_cmd::restore_memory,
            memory_cmd::empty_removed_memories,
            memory_cmd::forget_memories,
            memory_cmd::export_memories,
            memory_cmd::import_memories,
            memory_cmd::get_memory_settings,
            memory_cmd::set_memory_settings,
            memory_cmd::undo_memory_change,
            memory_cmd::list_memory_proposals,
            memory_cmd::accept_memory_proposal,
            memory_cmd::reject_memory_proposal,
            memory_cmd::get_embedding_status,
            memory_cmd::set_embedding,
            memory_cmd::download_embedding_model,
        ])
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
                downloading_model: std::sync::atomic::AtomicBool::new(false),
                jobs: Mutex::new(None),
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
            }
            app.manage(state);
            windows::create(&handle, webview_dir)?;
            tray::create(&handle)?;
            Ok(())
        })
}

/// Opens the engine from the environment (HEARTH_HOME, HEARTH_KEY_BACKEND, HEARTH_PASSPHRASE).
fn open_engine() -> (Result<Hearth, ErrorDto>, std::path::PathBuf) {
    let opts = match OpenOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            let fallback = std::env::temp_dir().join("hearth-webview");
            return (Err(e.into()), fallback);
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
        loop {
            match rx.recv().await {
                Ok(Event::StoreChanged) => {
                    let _ = app.emit("store_changed", ());
                }
                Ok(Event::MemoryUpdated {
                    conversation,
                    message,
                    changes,
                }) => {
                    let _ = app.emit(
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
