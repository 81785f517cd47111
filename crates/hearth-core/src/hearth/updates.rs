//! [`UpdateService`]: when Hearth may look for a newer version of itself (Settings → About,
//! `hearth updates`). The rules live here so the app and the CLI agree; fetching, verifying
//! and installing the update is the desktop shell's (Tauri's updater plugin), which asks
//! [`UpdateService::due`] before every automatic check and never installs without a click.
//!
//! Hearth is local-first: nothing is asked of the network until the user has answered the
//! first-run question, and a "no" there or the switch turned off means no automatic request
//! at all. A check the user starts by hand is always allowed.

use serde::{Deserialize, Serialize};

use super::Hearth;
use crate::Result;

/// The settings key.
const KEY: &str = "updates";

/// At most one automatic check a day.
pub const UPDATE_CHECK_EVERY_MS: i64 = 24 * 60 * 60 * 1000;

/// What is stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Stored {
    /// `None` until the user answers the first-run question.
    check: Option<bool>,
    /// When the last automatic or manual check was made (Unix ms).
    last_checked_at: Option<i64>,
}

/// Whether and when Hearth looks for updates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateSettings {
    /// The user's choice: `None` = not asked yet (no automatic check until answered).
    pub check: Option<bool>,
    /// When the last check was made (Unix ms), if ever.
    pub last_checked_at: Option<i64>,
}

/// The update rules, one method per use case. Blocking: call from `spawn_blocking` in
/// async code.
#[derive(Clone)]
pub struct UpdateService {
    hearth: Hearth,
}

impl UpdateService {
    pub(crate) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    fn stored(&self) -> Result<Stored> {
        Ok(self
            .hearth
            .inner
            .store
            .setting::<Stored>(KEY)?
            .unwrap_or_default())
    }

    /// The user's choice and the time of the last check.
    pub fn settings(&self) -> Result<UpdateSettings> {
        let s = self.stored()?;
        Ok(UpdateSettings {
            check: s.check,
            last_checked_at: s.last_checked_at,
        })
    }

    /// The first-run answer or the Settings switch: look for updates automatically or not.
    pub fn set_check(&self, on: bool) -> Result<UpdateSettings> {
        let mut s = self.stored()?;
        s.check = Some(on);
        self.hearth.inner.store.set_setting(KEY, &s)?;
        tracing::info!(on, "automatic update checks changed");
        self.settings()
    }

    /// Whether an automatic check may be made at `now_ms`: the user said yes, and the last
    /// check is a day old (or there was none). A clock set back counts as a day passed, so a
    /// wrong clock cannot stop checks for good.
    pub fn due(&self, now_ms: i64) -> Result<bool> {
        let s = self.stored()?;
        if s.check != Some(true) {
            return Ok(false);
        }
        Ok(match s.last_checked_at {
            None => true,
            Some(last) => now_ms < last || now_ms - last >= UPDATE_CHECK_EVERY_MS,
        })
    }

    /// Records that a check was made at `now_ms` (whatever it found).
    pub fn record_check(&self, now_ms: i64) -> Result<()> {
        let mut s = self.stored()?;
        s.last_checked_at = Some(now_ms);
        self.hearth.inner.store.set_setting(KEY, &s)
    }
}
