// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

/// mimalloc keeps the pages of the embedder's large, short-lived tensors instead of
/// returning them to the kernel on every free (see the workspace Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // The extraction worker (this binary as the indexer's child) ends here.
    // SAFETY: first thing in main, before any other thread exists.
    if let Some(code) = unsafe { hearth_core::process_start() } {
        std::process::exit(code);
    }
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
