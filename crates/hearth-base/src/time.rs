//! Timestamps as the store keeps them: milliseconds since the Unix epoch, UTC.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (UTC); what every `*_at` column holds.
pub type Millis = i64;

/// The current time in [`Millis`].
pub fn now_millis() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
