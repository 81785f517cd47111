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

/// glibc: keep freed buffers in the heap instead of unmapping or trimming them on every
/// free (the embedder allocates tens of MB per batch); the engine trims explicitly when it
/// drops an idle model. Measured: the embedding bench under glibc was 5.6 % (short texts)
/// and 9.5 % (long) slower than mimalloc with glibc's defaults, and on a par with these
/// (docs/decisions/0022).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_glibc_malloc() {
    unsafe extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
    const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
    // SAFETY: `mallopt` takes no pointers; called first thing in main, before other threads.
    unsafe {
        mallopt(M_TRIM_THRESHOLD, 512 << 20);
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
    }
}

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tune_glibc_malloc();
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
