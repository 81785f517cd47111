//! Folder commands: the Folders screen (add, pause, remove, files, search) and the passage
//! view of an answer's sources. Every rule is the façade's (`Hearth::folders`); this only
//! converts to DTOs, picks a folder with the OS dialog and hands a checked path to the OS.

use std::path::{Path, PathBuf};

use hearth_core::FileStatus;
use hearth_core::FolderService;
use hearth_core::SearchMode as Mode;
use tauri::{AppHandle, Emitter, Runtime, State};
use tauri_plugin_opener::OpenerExt;

use crate::cmd::blocking;
use crate::dto::args::*;
use crate::dto::{AddFolderResultDto, ErrorDto, FileDto, FolderDto, PassageDto, SearchResultDto};
use crate::state::AppState;

fn folders(state: &AppState) -> Result<FolderService, ErrorDto> {
    Ok(state.hearth()?.folders())
}

/// Tells every window (and the tray) that folders changed.
fn changed<R: Runtime>(app: &AppHandle<R>) {
    let _ = app.emit("store_changed", ());
    crate::tray::refresh(app);
}

#[tauri::command]
pub async fn list_folders(state: State<'_, AppState>) -> Result<Vec<FolderDto>, ErrorDto> {
    let folders = folders(&state)?;
    let list = blocking(move || folders.list()).await?;
    Ok(list.into_iter().map(Into::into).collect())
}

/// The OS folder picker; `null` when the user cancels. The folder is not added yet: the
/// UI calls `add_folder` with it.
#[tauri::command]
pub async fn pick_folder<R: Runtime>(app: AppHandle<R>) -> Result<Option<String>, ErrorDto> {
    crate::cmd::pick_path(&app, "Choose a folder for Hearth to read", None).await
}

#[tauri::command]
pub async fn add_folder<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<FolderPathArgs>,
) -> Result<AddFolderResultDto, ErrorDto> {
    let folders = folders(&state)?;
    let path = PathBuf::from(args.0.path);
    let (summary, report) = blocking(move || folders.add(&path)).await?;
    changed(&app);
    Ok(AddFolderResultDto {
        folder: summary.into(),
        queued: report.queued,
        skipped: report.skipped,
    })
}

#[tauri::command]
pub async fn remove_folder<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<FolderPathArgs>,
) -> Result<(), ErrorDto> {
    let folders = folders(&state)?;
    let path = PathBuf::from(args.0.path);
    blocking(move || folders.remove(&path)).await?;
    changed(&app);
    Ok(())
}

#[tauri::command]
pub async fn set_folder_paused<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<SetFolderPausedArgs>,
) -> Result<(), ErrorDto> {
    let SetFolderPausedArgs { path, paused } = args.0;
    let folders = folders(&state)?;
    blocking(move || folders.set_paused(path.as_deref().map(Path::new), paused)).await?;
    changed(&app);
    Ok(())
}

#[tauri::command]
pub async fn set_folder_writable<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<SetFolderWritableArgs>,
) -> Result<(), ErrorDto> {
    let SetFolderWritableArgs { path, writable } = args.0;
    let folders = folders(&state)?;
    // Making a folder writable is confirmed in the consent window (the core asks), never
    // by this window alone.
    folders
        .set_writable(Path::new(&path), writable, state.consent.as_ref())
        .await?;
    changed(&app);
    Ok(())
}

#[tauri::command]
pub async fn list_folder_files(
    state: State<'_, AppState>,
    args: Args<FolderFilesArgs>,
) -> Result<Vec<FileDto>, ErrorDto> {
    let FolderFilesArgs { path, status } = args.0;
    let status = status.as_deref().map(FileStatus::parse).transpose()?;
    let folders = folders(&state)?;
    let root = PathBuf::from(&path);
    let rows = blocking(move || folders.files(Path::new(&path), status)).await?;
    Ok(rows
        .into_iter()
        .map(|r| FileDto {
            rel_path: Path::new(&r.path)
                .strip_prefix(&root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| r.path.clone()),
            status: r.status.as_str().to_owned(),
            reason_code: r.reason_code.map(|c| c.as_str().to_owned()),
            message: r.message,
            size: r.size,
        })
        .collect())
}

#[tauri::command]
pub async fn search_documents(
    state: State<'_, AppState>,
    args: Args<SearchDocumentsArgs>,
) -> Result<SearchResultDto, ErrorDto> {
    let SearchDocumentsArgs {
        query,
        folder,
        mode,
        limit,
    } = args.0;
    let mode = match mode.as_deref() {
        None => Mode::Hybrid,
        Some(m) => Mode::parse(m)?,
    };
    let k = limit.map(|l| l as usize);
    let folders = folders(&state)?;
    let found = blocking(move || {
        let folder = folder.map(PathBuf::from);
        folders.search(
            &query,
            k,
            mode,
            &hearth_core::SearchScope {
                folder: folder.as_deref(),
                ..Default::default()
            },
        )
    })
    .await?;
    Ok(SearchResultDto {
        mode: found.mode.as_str().to_owned(),
        warning: found.warning,
        results: found.results.into_iter().map(Into::into).collect(),
    })
}

#[tauri::command]
pub async fn get_passage(
    state: State<'_, AppState>,
    args: Args<ChunkArgs>,
) -> Result<PassageDto, ErrorDto> {
    let folders = folders(&state)?;
    let id = args.0.chunk_id;
    Ok(blocking(move || folders.passage(id)).await?.into())
}

/// Opens a passage's file with the OS's default app, or shows it in its folder. The path
/// comes from the engine (by chunk id, checked to be a file still inside its watched
/// folder), never from the window, and so does the choice: a launcher or executable is
/// only ever shown in its folder (`FolderService::open_target`).
#[tauri::command]
pub async fn open_source_file<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<OpenSourceArgs>,
) -> Result<(), ErrorDto> {
    let OpenSourceArgs { chunk_id, reveal } = args.0;
    let folders = folders(&state)?;
    let (file, reveal) = blocking(move || folders.open_target(chunk_id, reveal)).await?;
    let opener = app.opener();
    let result = if reveal {
        opener.reveal_item_in_dir(&file)
    } else {
        opener.open_path(file.to_string_lossy(), None::<&str>)
    };
    result.map_err(|e| {
        tracing::warn!(error = %e, reveal, "could not hand a file to the OS");
        ErrorDto::new(
            "open_failed",
            format!("the system could not open {}: {e}", file.display()),
        )
    })
}
