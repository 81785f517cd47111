//! What every Hearth binary (the app, the CLI) does first in `main`.

/// Starts a Hearth process. When this process was started as Hearth's extraction worker (a
/// child of this very binary, started by the indexer: it reads hostile files so the main
/// process never does), serves it and returns its exit code — the caller exits with it at
/// once. Otherwise prepares the process (the embedder's kernels single-threaded, see
/// `embed::single_threaded_kernels`) and returns `None`: the caller goes on.
///
/// # Safety
/// It may set environment variables: call it first thing in `main`, before any other
/// thread exists.
pub unsafe fn process_start() -> Option<i32> {
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(crate::folders::worker::WORKER_ARG))
    {
        return Some(crate::folders::worker::serve());
    }
    // SAFETY: the caller promises no other thread exists yet.
    unsafe { crate::embed::single_threaded_kernels() };
    None
}
