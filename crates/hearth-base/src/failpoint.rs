//! Crash points for tests of crash safety.
//!
//! Multi-step operations (key rotation, moving the key between backends) call
//! [`hit`] between steps. When the environment variable `HEARTH_TEST_CRASH_AT` names
//! that point, the process aborts right there, exactly as a kill would leave it. The variable
//! is read once; with it unset a failpoint costs one atomic load.
//!
//! Races are tested with delays and panics: `HEARTH_TEST_DELAY_AT=<point>:<ms>` makes
//! [`delay`] sleep that long at the point (on the calling thread), and
//! `HEARTH_TEST_PANIC_AT=<point>` makes [`panic_at`] panic there. Both are read once too.
//! `HEARTH_TEST_ALLOC_AT=<point>:<MiB>` makes [`alloc`] take that much memory there.

use std::sync::OnceLock;
use std::time::Duration;

static CRASH_AT: OnceLock<Option<String>> = OnceLock::new();
static DELAY_AT: OnceLock<Option<(String, Duration)>> = OnceLock::new();
static PANIC_AT: OnceLock<Option<String>> = OnceLock::new();

/// Sleeps on this thread if `HEARTH_TEST_DELAY_AT` is `name:<milliseconds>`.
pub fn delay(name: &str) {
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
pub fn panic_at(name: &str) {
    let target = PANIC_AT.get_or_init(|| std::env::var("HEARTH_TEST_PANIC_AT").ok());
    if target.as_deref() == Some(name) {
        tracing::warn!(failpoint = name, "panicking at test point");
        panic!("test panic at {name}");
    }
}

static FAIL_AT: OnceLock<Option<String>> = OnceLock::new();

/// Whether an outside service is to fail at `name`, as if it were unavailable:
/// `HEARTH_TEST_FAIL_AT` equals `name` (e.g. `trash`: the OS trash refuses). Read once.
pub fn fails_at(name: &str) -> bool {
    let target = FAIL_AT.get_or_init(|| std::env::var("HEARTH_TEST_FAIL_AT").ok());
    target.as_deref() == Some(name)
}

static FAIL_TIMES: OnceLock<Option<(String, std::sync::atomic::AtomicUsize)>> = OnceLock::new();

/// Whether `name` is to fail this time: `HEARTH_TEST_FAIL_TIMES=<name>:<n>` fails its first
/// `n` passes, then lets it through (a transient failure). Read once.
pub fn fails_times(name: &str) -> bool {
    let target = FAIL_TIMES.get_or_init(|| {
        let v = std::env::var("HEARTH_TEST_FAIL_TIMES").ok()?;
        let (point, n) = v.rsplit_once(':')?;
        Some((
            point.to_owned(),
            std::sync::atomic::AtomicUsize::new(n.trim().parse().ok()?),
        ))
    });
    match target {
        Some((point, left)) if point == name => left
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok(),
        _ => false,
    }
}

static UNWATCHABLE: OnceLock<Option<String>> = OnceLock::new();

/// Whether the OS watcher is to refuse `path`, as inotify does at its watch limit (ENOSPC):
/// `HEARTH_TEST_UNWATCHABLE` is a part of the paths to refuse. Read once.
pub fn unwatchable(path: &std::path::Path) -> bool {
    let target = UNWATCHABLE.get_or_init(|| std::env::var("HEARTH_TEST_UNWATCHABLE").ok());
    target
        .as_deref()
        .is_some_and(|t| !t.is_empty() && path.to_string_lossy().contains(t))
}

static POLL_MS: OnceLock<Option<u64>> = OnceLock::new();

/// How often an unwatchable folder is walked, if `HEARTH_TEST_POLL_MS` says (else `None`).
pub fn poll_every() -> Option<Duration> {
    POLL_MS
        .get_or_init(|| std::env::var("HEARTH_TEST_POLL_MS").ok()?.parse().ok())
        .map(Duration::from_millis)
}

static FREE_BYTES: OnceLock<Option<u64>> = OnceLock::new();

/// The free disk space a download sees, if `HEARTH_TEST_FREE_BYTES` sets it (read once).
pub fn free_bytes() -> Option<u64> {
    *FREE_BYTES.get_or_init(|| std::env::var("HEARTH_TEST_FREE_BYTES").ok()?.parse().ok())
}

static ALLOC_AT: OnceLock<Option<(String, usize)>> = OnceLock::new();

/// Takes and touches that many MiB of memory, and keeps them until the process ends, if
/// `HEARTH_TEST_ALLOC_AT` is `name:<MiB>` (a parser that eats memory). Read once.
pub fn alloc(name: &str) {
    let target = ALLOC_AT.get_or_init(|| {
        let v = std::env::var("HEARTH_TEST_ALLOC_AT").ok()?;
        let (point, mib) = v.rsplit_once(':')?;
        Some((point.to_owned(), mib.trim().parse().ok()?))
    });
    if let Some((point, mib)) = target
        && point == name
    {
        tracing::warn!(failpoint = name, mib, "allocating at test point");
        // A MiB at a time, each page written, so the memory is resident, not just reserved.
        for _ in 0..*mib {
            let block = vec![1u8; 1024 * 1024];
            std::mem::forget(std::hint::black_box(block));
        }
    }
}

/// Aborts the process if `HEARTH_TEST_CRASH_AT` equals `name`.
pub fn hit(name: &str) {
    let target = CRASH_AT.get_or_init(|| std::env::var("HEARTH_TEST_CRASH_AT").ok());
    if target.as_deref() == Some(name) {
        tracing::warn!(failpoint = name, "aborting at test crash point");
        std::process::abort();
    }
}
