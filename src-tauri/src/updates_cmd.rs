//! Updates and "Open at login": Settings → About and the update offer.
//!
//! Tauri's updater plugin fetches `latest.json`, downloads the bundle and verifies its
//! minisign signature against the public key in `tauri.conf.json` before anything is
//! installed; the engine decides when an automatic check may run (`Hearth::updates`). The
//! request carries only what the endpoint's URL and the plugin's user agent say: the
//! version and the platform.
//!
//! Debug builds (tests, `make run`) may point the updater at a test server signed with the
//! test-only key (`HEARTH_UPDATE_ENDPOINT`, `HEARTH_UPDATE_INSTALL_PATH`); release builds
//! compile that out and trust only the release key.

use std::sync::Mutex;
use std::time::Duration;

use tauri::{AppHandle, Emitter, Manager, Runtime, State};
use tauri_plugin_updater::{Update, Updater, UpdaterExt};

use crate::cmd::blocking;
use crate::dto::args::*;
use crate::dto::{ErrorDto, UpdateOfferDto, UpdatesDto};
use crate::state::AppState;
use crate::windows;

/// Where a person downloads Hearth when this copy cannot install an update itself.
pub const DOWNLOAD_PAGE: &str = "https://github.com/hearth-app/hearth/releases/latest";

/// How long the check may take (a small JSON file).
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the download may take (the whole bundle).
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// How often the app asks the engine whether a check is due (it allows one a day).
const WAKE_EVERY: Duration = Duration::from_secs(60 * 60);

/// The test-only public key (its private half is `tests/data/updater/test-only.key`).
#[cfg(debug_assertions)]
const TEST_PUBKEY: &str = include_str!("../../tests/data/updater/test-only.key.pub");

/// The update found by the last check, waiting for the user's click, and the version
/// installed since the app started (it runs after a restart).
#[derive(Default)]
pub struct PendingUpdate {
    offer: Mutex<Option<Update>>,
    installed: Mutex<Option<String>>,
}

/// A test server in place of the release endpoint (debug builds only).
fn test_endpoint() -> Option<String> {
    #[cfg(debug_assertions)]
    {
        std::env::var("HEARTH_UPDATE_ENDPOINT").ok()
    }
    #[cfg(not(debug_assertions))]
    {
        None
    }
}

/// How this copy was installed, when it can replace itself: the package type Tauri's
/// bundler marked in the binary. `None`: built from source, or unpacked by hand.
fn installer() -> Option<&'static str> {
    #[cfg(debug_assertions)]
    if std::env::var_os("HEARTH_UPDATE_INSTALL_PATH").is_some() {
        return Some("AppImage");
    }
    use tauri::utils::config::BundleType;
    use tauri::utils::platform::bundle_type;
    match bundle_type()? {
        BundleType::Deb => Some("deb"),
        BundleType::Rpm => Some("rpm"),
        BundleType::AppImage => Some("AppImage"),
        BundleType::Msi => Some("msi"),
        BundleType::Nsis => Some("NSIS"),
        BundleType::App | BundleType::Dmg => Some("app"),
    }
}

/// Whether this copy looks for updates at all: an installed package, or a test server.
fn can_check() -> bool {
    installer().is_some() || test_endpoint().is_some()
}

fn updater<R: Runtime>(app: &AppHandle<R>) -> Result<Updater, ErrorDto> {
    let builder = app.updater_builder().timeout(CHECK_TIMEOUT);
    #[cfg(debug_assertions)]
    let builder = with_test_server(builder)?;
    builder.build().map_err(update_error)
}

/// The test server and the test-only key in place of the release endpoint and key, when
/// the environment names them (debug builds only).
#[cfg(debug_assertions)]
fn with_test_server(
    mut builder: tauri_plugin_updater::UpdaterBuilder,
) -> Result<tauri_plugin_updater::UpdaterBuilder, ErrorDto> {
    if let Some(url) = test_endpoint() {
        let url = url
            .parse()
            .map_err(|e| ErrorDto::new("invalid_input", format!("update endpoint: {e}")))?;
        builder = builder
            .endpoints(vec![url])
            .map_err(update_error)?
            .pubkey(TEST_PUBKEY.trim());
    }
    if let Some(path) = std::env::var_os("HEARTH_UPDATE_INSTALL_PATH") {
        builder = builder.executable_path(path);
    }
    Ok(builder)
}

/// A clear message for each way an update can fail.
fn update_error(e: tauri_plugin_updater::Error) -> ErrorDto {
    use tauri_plugin_updater::Error as E;
    match e {
        E::Minisign(_)
        | E::SignatureUtf8(_)
        | E::Base64(_)
        | E::SignedVersionMismatch { .. }
        | E::MissingSignedVersion => ErrorDto::new(
            "update_signature",
            "The download is not signed with Hearth's release key, so it was not installed. \
             Nothing on this computer was changed.",
        ),
        E::Reqwest(_) | E::Network(_) => ErrorDto::new(
            "update_unreachable",
            format!("Couldn't reach the update server: {e}"),
        ),
        other => ErrorDto::new("update_failed", other.to_string()),
    }
}

fn offer(update: &Update) -> UpdateOfferDto {
    UpdateOfferDto {
        version: update.version.clone(),
        current_version: update.current_version.clone(),
        notes: update.body.clone(),
        date: update.date.map(|d| d.to_string()),
        can_install: installer().is_some(),
        download_page: DOWNLOAD_PAGE.to_owned(),
    }
}

async fn state_of<R: Runtime>(app: &AppHandle<R>) -> Result<UpdatesDto, ErrorDto> {
    let state = app.state::<AppState>();
    let hearth = state.hearth()?.clone();
    let settings = blocking(move || hearth.updates().settings()).await?;
    let pending = app
        .state::<PendingUpdate>()
        .offer
        .lock()
        .ok()
        .and_then(|p| p.as_ref().map(offer));
    let installed = app
        .state::<PendingUpdate>()
        .installed
        .lock()
        .ok()
        .and_then(|i| i.clone());
    Ok(UpdatesDto {
        check: settings.check,
        last_checked_at: settings.last_checked_at,
        current_version: app.package_info().version.to_string(),
        can_check: can_check(),
        installer: installer().map(str::to_owned),
        download_page: DOWNLOAD_PAGE.to_owned(),
        offer: pending,
        installed,
    })
}

/// Asks the server; keeps and returns what it offers.
async fn check<R: Runtime>(app: &AppHandle<R>) -> Result<Option<UpdateOfferDto>, ErrorDto> {
    let state = app.state::<AppState>();
    let hearth = state.hearth()?.clone();
    let now = hearth_core::now_millis();
    blocking(move || hearth.updates().record_check(now)).await?;
    let found = updater(app)?.check().await.map_err(update_error)?;
    let dto = found.as_ref().map(offer);
    if let Ok(mut pending) = app.state::<PendingUpdate>().offer.lock() {
        *pending = found;
    }
    Ok(dto)
}

/// The automatic check, when the engine says one is due: an offer goes to the main window;
/// a failure is only logged (an offline laptop is not an error to show).
pub async fn check_if_due<R: Runtime>(app: &AppHandle<R>) {
    if !can_check() {
        return;
    }
    let Ok(hearth) = app.state::<AppState>().hearth().cloned() else {
        return;
    };
    let now = hearth_core::now_millis();
    match blocking(move || hearth.updates().due(now)).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!("no automatic update check: not due, or turned off");
            return;
        }
        Err(e) => {
            tracing::warn!(code = e.code, "could not read the update settings");
            return;
        }
    }
    match check(app).await {
        Ok(Some(offer)) => {
            tracing::info!(version = %offer.version, "an update is available");
            let _ = app.emit_to(
                tauri::EventTarget::webview_window(windows::MAIN),
                "update_available",
                offer,
            );
        }
        Ok(None) => tracing::info!("checked for updates: Hearth is up to date"),
        Err(e) => tracing::info!(code = e.code, "the update check failed (not shown)"),
    }
}

/// At start and then once a day (the engine keeps the day), while the app runs.
pub fn start<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            check_if_due(&app).await;
            tokio::time::sleep(WAKE_EVERY).await;
        }
    });
}

#[tauri::command]
pub async fn get_updates<R: Runtime>(app: AppHandle<R>) -> Result<UpdatesDto, ErrorDto> {
    state_of(&app).await
}

/// The first-run answer or Settings' switch. Turned on, the first check runs now.
#[tauri::command]
pub async fn set_update_check<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    args: Args<SetUpdateCheckArgs>,
) -> Result<UpdatesDto, ErrorDto> {
    let SetUpdateCheckArgs { on } = args.0;
    let hearth = state.hearth()?.clone();
    blocking(move || hearth.updates().set_check(on)).await?;
    if on {
        let app = app.clone();
        tauri::async_runtime::spawn(async move { check_if_due(&app).await });
    }
    state_of(&app).await
}

/// "Check now" in Settings → About: the user asked, so failures are shown.
#[tauri::command]
pub async fn check_for_update<R: Runtime>(app: AppHandle<R>) -> Result<UpdatesDto, ErrorDto> {
    if !can_check() {
        return Err(ErrorDto::new(
            "update_unsupported",
            format!(
                "This copy of Hearth was built from source or unpacked by hand, so it doesn't \
                 update itself. Newer versions are at {DOWNLOAD_PAGE}"
            ),
        ));
    }
    check(&app).await?;
    state_of(&app).await
}

/// The user's click on "Install": downloads the bundle, verifies its signature, installs
/// it. A bundle that does not verify is refused before anything is replaced.
#[tauri::command]
pub async fn install_update<R: Runtime>(app: AppHandle<R>) -> Result<UpdatesDto, ErrorDto> {
    if installer().is_none() {
        return Err(ErrorDto::new(
            "update_unsupported",
            format!(
                "This copy of Hearth can't replace itself. Download the new version from \
                 {DOWNLOAD_PAGE}"
            ),
        ));
    }
    let update = app
        .state::<PendingUpdate>()
        .offer
        .lock()
        .ok()
        .and_then(|mut p| p.take());
    let Some(mut update) = update else {
        return Err(ErrorDto::new(
            "not_found",
            "There is no update to install; check again.",
        ));
    };
    update.timeout = Some(DOWNLOAD_TIMEOUT);
    let version = update.version.clone();
    let bytes = update
        .download(|_, _| {}, || {})
        .await
        .map_err(update_error);
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(code = e.code, %version, "the update was refused or not downloaded");
            return Err(e);
        }
    };
    // Verified again and installed off the async threads (it writes files).
    let installed = tauri::async_runtime::spawn_blocking(move || update.install(bytes))
        .await
        .map_err(|e| ErrorDto::new("internal", e.to_string()))?;
    installed.map_err(update_error)?;
    tracing::info!(%version, "update installed; waiting for a restart");
    if let Ok(mut installed) = app.state::<PendingUpdate>().installed.lock() {
        *installed = Some(version);
    }
    state_of(&app).await
}

/// "Restart now" after an update was installed.
#[tauri::command]
pub fn restart_app<R: Runtime>(app: AppHandle<R>) -> Result<(), ErrorDto> {
    app.restart()
}

/// "Open the download page" when this copy cannot install an update: Hearth's own page,
/// never a URL the UI or a server chose.
#[tauri::command]
pub fn open_download_page<R: Runtime>(app: AppHandle<R>) -> Result<(), ErrorDto> {
    use tauri_plugin_opener::OpenerExt;
    app.opener()
        .open_url(DOWNLOAD_PAGE, None::<&str>)
        .map_err(|e| ErrorDto::new("open", e.to_string()))
}

#[tauri::command]
pub fn get_open_at_login<R: Runtime>(app: AppHandle<R>) -> Result<bool, ErrorDto> {
    use tauri_plugin_autostart::ManagerExt;
    app.autolaunch()
        .is_enabled()
        .map_err(|e| ErrorDto::new("autostart", e.to_string()))
}

/// "Open at login": Hearth starts in the tray when the user logs in.
#[tauri::command]
pub fn set_open_at_login<R: Runtime>(
    app: AppHandle<R>,
    args: Args<SetOpenAtLoginArgs>,
) -> Result<bool, ErrorDto> {
    use tauri_plugin_autostart::ManagerExt;
    let launcher = app.autolaunch();
    let done = if args.0.on {
        launcher.enable()
    } else {
        launcher.disable()
    };
    done.map_err(|e| ErrorDto::new("autostart", e.to_string()))?;
    launcher
        .is_enabled()
        .map_err(|e| ErrorDto::new("autostart", e.to_string()))
}
