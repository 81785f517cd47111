//! Crash points for tests of crash safety.
//!
//! Multi-step operations (key rotation, moving the key between backends) call
//! [`failpoint!`] between steps. When the environment variable `HEARTH_TEST_CRASH_AT` names
//! that point, the process aborts right there, exactly as a kill would leave it. The variable
//! is read once; with it unset a failpoint costs one atomic load.

use std::sync::OnceLock;

static CRASH_AT: OnceLock<Option<String>> = OnceLock::new();

/// Aborts the process if `HEARTH_TEST_CRASH_AT` equals `name`.
pub(crate) fn hit(name: &str) {
    let target = CRASH_AT.get_or_init(|| std::env::var("HEARTH_TEST_CRASH_AT").ok());
    if target.as_deref() == Some(name) {
        tracing::warn!(failpoint = name, "aborting at test crash point");
        std::process::abort();
    }
}

macro_rules! failpoint {
    ($name:literal) => {
        $crate::failpoint::hit($name)
    };
}
pub(crate) use failpoint;
