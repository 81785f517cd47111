// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

/// mimalloc keeps the pages of the embedder's large, short-lived tensors instead of
/// returning them to the kernel on every free (see the workspace Cargo.toml). On Linux with
/// glibc the app keeps glibc's allocator: the app lives for days, mostly idle, and after
/// the engine drops an idle model `malloc_trim` hands every wholly free 4 KiB page of every
/// thread's arena back, where mimalloc kept tens of MB in pages of idle threads' heaps
/// (docs/decisions/0022, the idle-memory numbers).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns the pages mimalloc keeps to the system: the engine calls it after it drops a
/// model it had not used for the idle-unload time (glibc's heap it trims itself).
fn release_freed_memory() {
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    // SAFETY: `mi_collect` takes no pointers; any thread may call it at any time.
    unsafe {
        libmimalloc_sys::mi_collect(true)
    };
}

fn main() {
    // SAFETY: first thing in main, before any other thread exists.
    #[cfg(target_os = "linux")]
    unsafe {
        hearth_desktop::choose_webkit_renderer()
    };
    // The extraction worker (this binary as the indexer's child) ends here.
    // SAFETY: first thing in main, before any other thread exists.
    if let Some(code) = unsafe { hearth_core::process_start() } {
        std::process::exit(code);
    }
    hearth_core::set_release_freed_memory(release_freed_memory);
    hearth_core::set_build_commit(env!("HEARTH_COMMIT"));
    // For tests and support: print the data folder the app would use, and exit.
    if std::env::args().any(|a| a == "--print-data-dir") {
        match hearth_core::default_data_dir() {
            Ok(dir) => {
                println!("{}", dir.display());
                return;
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
    hearth_desktop::run();
}
