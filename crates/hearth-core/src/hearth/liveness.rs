//! Which turns are alive: each process holds `run/<process id>.lock` while its engine is
//! open and stamps the answers it streams with that id; an answer still `streaming` whose
//! owner is gone is marked `interrupted`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Result;
use crate::store::Store;

/// A `streaming` answer not checkpointed for this long belongs to a turn that died.
pub const STALE_TURN: Duration = Duration::from_secs(30);

/// This process's claim on the turns it streams: `run/<id>.lock`, held locked while the
/// engine is open. Another process that can lock it knows this one is gone.
pub(super) struct Liveness {
    pub(super) id: String,
    path: PathBuf,
    file: Option<File>,
}

impl Liveness {
    pub(super) fn claim(run_dir: &Path) -> Option<Self> {
        let id = uuid::Uuid::new_v4().to_string();
        let path = run_dir.join(format!("{id}.lock"));
        let claimed = std::fs::create_dir_all(run_dir)
            .and_then(|()| File::create(&path))
            .and_then(|f| f.try_lock().map(|()| f).map_err(std::io::Error::other));
        match claimed {
            Ok(file) => Some(Self {
                id,
                path,
                file: Some(file),
            }),
            Err(e) => {
                // Dead turns are then found by their stale heartbeat instead.
                tracing::warn!(error = %e, "could not create the process liveness file");
                None
            }
        }
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        drop(self.file.take());
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the process with liveness id `owner` still runs: its `run/<owner>.lock` exists
/// and is locked. An id that is not a plain uuid is not alive.
pub(super) fn alive(run_dir: &Path, owner: &str) -> bool {
    if !owner.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return false;
    }
    match File::open(run_dir.join(format!("{owner}.lock"))) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => true,
        Ok(f) => match f.try_lock() {
            Ok(()) => false,
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => true,
        },
    }
}

/// Marks `streaming` answers whose process is gone as interrupted, at once: their owner's
/// liveness file is missing or no longer locked. Returns how many were marked.
pub(super) fn sweep_dead_turns(store: &Store, me: Option<&str>) -> Result<usize> {
    let owners: Vec<String> = store.read_blocking(|c| {
        let mut stmt = c.prepare(
            "SELECT DISTINCT owner FROM messages WHERE state = 'streaming' AND owner IS NOT NULL",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect()
    })?;
    let run_dir = store.data_dir().run_dir();
    let mut marked = 0;
    for owner in owners {
        let plain = owner.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if Some(owner.as_str()) == me || !plain {
            continue;
        }
        let path = run_dir.join(format!("{owner}.lock"));
        if !alive(run_dir.as_path(), &owner) {
            let o = owner.clone();
            marked += store.write_blocking(move |c| {
                c.execute(
                    "UPDATE messages SET state = 'interrupted' WHERE state = 'streaming' AND owner = ?1",
                    [o],
                )
            })?;
            let _ = std::fs::remove_file(&path);
        }
    }
    if marked > 0 {
        tracing::info!(
            marked,
            "marked answers of processes that died as interrupted"
        );
    }
    Ok(marked)
}
