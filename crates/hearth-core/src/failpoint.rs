//! Crash points for tests of crash safety.
//!
//! Multi-step operations (key rotation, moving the key between backends) call
//! [`failpoint!`] between steps. When the environment variable `HEARTH_TEST_CRASH_AT` names
//! that point, the process aborts right there, exactly as a kill would leave it. The variable
//! is read once; with it unset a failpoint costs one atomic load.
//!
//! Races are tested with delays and panics: `HEARTH_TEST_DELAY_AT=<point>:<ms>` makes
//! [`delay`] sleep that long at the point (on the calling thread), and
//! `HEARTH_TEST_PANIC_AT=<point>` makes [`panic_at`] panic there. Both are read once too.

use std::sync::OnceLock;
use std::time::Duration;

static CRASH_AT: OnceLock<Option<String>> = OnceLock::new();
static DELAY_AT: OnceLock<Option<(String, Duration)>> = OnceLock::new();
static PANIC_AT: OnceLock<Option<String>> = OnceLock::new();

/// Sleeps on this thread if `HEARTH_TEST_DELAY_AT` is `name:<milliseconds>`.
pub(crate) fn delay(name: &str) {
    let target = DELAY_AT.get_or_init(|| {
        let v = std::env::var("HEARTH_TEST_DELAY_AT").ok()?;
        let (point, ms) = v.rsplit_once(':')?;
        Some((
            point.to_owned(),
            Duration::from_millis(ms.trim().parse().ok()?),
        ))
    });
    if let Some((point, wait)) = target
        && point == name
    {
        tracing::warn!(
            failpoint = name,
            ms = wait.as_millis() as u64,
            "delaying at test point"
        );
        std::thread::sleep(*wait);
    }
}

/// Panics if `HEARTH_TEST_PANIC_AT` equals `name`.
pub(crate) fn panic_at(name: &str) {
    let target = PANIC_AT.get_or_init(|| std::env::var("HEARTH_TEST_PANIC_AT").ok());
    if target.as_deref() == Some(name) {
        tracing::warn!(failpoint = name, "panicking at test point");
        panic!("test panic at {name}");
    }
}

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
