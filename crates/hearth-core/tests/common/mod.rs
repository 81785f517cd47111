//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hearth_core::store::OpenOptions;
use hearth_core::{DataDir, KeyBackend, Passphrase};

/// Options for a fresh data dir inside `root` using `backend`.
pub fn options(root: &Path, backend: KeyBackend) -> OpenOptions {
    let mut opts = OpenOptions::new(DataDir::new(root.join("data")));
    opts.new_key_backend = backend;
    if backend == KeyBackend::Passphrase {
        opts.passphrase =
            Some(Passphrase::new("correct horse battery staple").expect("passphrase"));
    }
    opts
}

/// Fails the test unless a Secret Service session is reachable (scripts/with-keyring.sh).
pub fn require_keyring() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "this test needs the real Secret Service: run it under scripts/with-keyring.sh (make test does)"
    );
}

/// Every regular file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// The files under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            std::fs::read(p)
                .map(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
                .unwrap_or(false)
        })
        .collect()
}

/// A fingerprint of every file under `dir` (path → length and content hash).
pub fn fingerprint(dir: &Path) -> BTreeMap<PathBuf, (usize, u64)> {
    use std::hash::{Hash, Hasher};
    files_under(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_default();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut h);
            (p, (bytes.len(), h.finish()))
        })
        .collect()
}

/// A marker no file would contain by chance.
pub fn marker(tag: &str) -> String {
    format!("HEARTH-MARKER-{tag}-{}", uuid_like())
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:x}{:x}", std::process::id())
}

/// A watched-folder row (the parent of file and chunk rows written by hand), by its path;
/// returns its id.
pub fn add_folder(store: &hearth_core::store::Store, path: &str) -> i64 {
    store
        .write_blocking(|c| {
            c.execute(
                "INSERT INTO folders (path, added_at) VALUES (?1, 0)",
                [path],
            )?;
            Ok(c.last_insert_rowid())
        })
        .expect("folder")
}

/// Runs the test named `name` again in a child process with `env` set (failpoints and
/// switches are read once per process) and fails if it fails, or if it did not run. False
/// in the child itself: go on with the test.
pub fn rerun_in_child(name: &str, env: (&str, &str)) -> bool {
    if std::env::var_os(env.0).is_some() {
        return false;
    }
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(env.0, env.1)
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran the test: {stdout}"
    );
    true
}
