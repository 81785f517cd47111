//! Updates and "Open at login" (Settings → About, the update offer).

use serde::Serialize;
use ts_rs::TS;

/// A newer version the update server offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct UpdateOfferDto {
    pub version: String,
    pub current_version: String,
    /// The release notes, as the server sent them (shown as text, never as Markdown).
    pub notes: Option<String>,
    /// When it was published (RFC 3339), if the server said.
    pub date: Option<String>,
    /// This copy can install it itself; otherwise the UI links to `download_page`.
    pub can_install: bool,
    pub download_page: String,
}

/// Whether and how Hearth updates itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct UpdatesDto {
    /// The user's choice; `null` until the first-run question is answered.
    pub check: Option<bool>,
    /// When the last check was made (ms since the Unix epoch).
    #[ts(type = "number | null")]
    pub last_checked_at: Option<i64>,
    pub current_version: String,
    /// This copy looks for updates at all (an installed package, not a build from source).
    pub can_check: bool,
    /// The package type that installs updates here (`deb`, `AppImage`, `msi`, …), if any.
    pub installer: Option<String>,
    pub download_page: String,
    /// The update found by the last check, waiting for the user.
    pub offer: Option<UpdateOfferDto>,
    /// The version just installed (after `install_update`): restart to use it.
    pub installed: Option<String>,
}
