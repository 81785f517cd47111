//! Memory handed back while Hearth is idle. The built-in model's worker ends itself after
//! the idle-unload time (Settings → Built-in models, ten minutes by default); after the same
//! time without use, this process drops the local embedding model and the token encoders,
//! then asks the allocator to return what they held to the system (the binaries' allocator
//! keeps freed pages otherwise). The next search or turn loads them again.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{OnceLock, Weak};
use std::time::Duration;

use super::{Hearth, Inner};

/// How often the idle check runs.
const TICK: Duration = Duration::from_secs(5);

/// After a drop, the allocator is asked to hand freed pages back on this many more ticks.
const COLLECTS_AFTER_DROP: u32 = 6;

/// The binary's way to return freed memory to the system.
static RELEASE_FREED: OnceLock<fn()> = OnceLock::new();

/// Tells the engine how to hand freed memory back to the system after it drops a model (the
/// global allocator's collect, e.g. mimalloc's `mi_collect(true)`). Set once, first thing
/// in `main`; without it the memory stays with the allocator.
pub fn set_release_freed_memory(release: fn()) {
    let _ = RELEASE_FREED.set(release);
}

/// The idle check's thread, stopped when the engine is dropped.
pub(super) struct IdleRelease {
    _stop: mpsc::Sender<()>,
}

/// Starts the idle check of the engine `inner` (its thread holds no strong reference).
pub(super) fn start(inner: Weak<Inner>) -> Option<IdleRelease> {
    let (stop, stopped) = mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("hearth-idle".into())
        .spawn(move || {
            // Threads that held the dropped model's memory free their part of it over the
            // next moments; the allocator hands those pages back only when asked again.
            let mut collects_left = 0u32;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
                let Some(inner) = inner.upgrade() else {
                    return;
                };
                if release_when_idle(&Hearth { inner }, None) {
                    collects_left = COLLECTS_AFTER_DROP;
                } else if collects_left > 0 {
                    collects_left -= 1;
                    release_freed();
                }
            }
        });
    match spawned {
        Ok(_) => Some(IdleRelease { _stop: stop }),
        Err(e) => {
            tracing::warn!(error = %e, "could not start the idle check; models stay loaded");
            None
        }
    }
}

/// Drops the embedding model and the encoders unused for `idle` (default: the built-in
/// model's idle-unload time) and returns freed memory to the system. Returns whether
/// anything was dropped.
pub(super) fn release_when_idle(hearth: &Hearth, idle: Option<Duration>) -> bool {
    let embedder = hearth.inner.embedder.get();
    let loaded =
        embedder.as_ref().is_some_and(|e| e.is_loaded()) || crate::tokens::encoders_loaded();
    if !loaded {
        return false;
    }
    let idle = match idle {
        Some(idle) => idle,
        None => match crate::builtin::Installed::load(&hearth.inner.store) {
            Ok(installed) => installed.idle(),
            Err(e) => {
                tracing::debug!(code = e.code(), "idle check skipped: settings unreadable");
                return false;
            }
        },
    };
    let embedder_dropped = embedder.is_some_and(|e| e.unload_if_idle(idle));
    let encoders_dropped = crate::tokens::release_idle_encoders(idle);
    let dropped = embedder_dropped || encoders_dropped;
    if dropped {
        tracing::info!(
            embedder = embedder_dropped,
            encoders = encoders_dropped,
            idle_s = idle.as_secs(),
            "dropped what was idle"
        );
    }
    if dropped {
        // The database connections' caches too: the next read opens a reader again.
        hearth.inner.store.release_memory();
        release_freed();
    }
    dropped
}

/// Hands freed memory back to the system: the binary's allocator (its hook), and glibc's
/// heap, which the C libraries in this process (SQLCipher, GTK, WebKit's UI side) allocate
/// from and which keeps freed pages too.
fn release_freed() {
    if let Some(release) = RELEASE_FREED.get() {
        release();
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            /// glibc: returns free memory at the top of the heap and in whole free pages
            /// inside it to the system.
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's `malloc_trim` takes no pointers and locks its arenas itself.
        unsafe { malloc_trim(0) };
    }
}
