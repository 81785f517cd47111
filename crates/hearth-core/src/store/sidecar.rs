//! The plaintext sidecar beside the database: its id and where its key lives. No secrets.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::key::KeyBackend;
use crate::{Error, Result};

const FORMAT: u32 = 1;

/// Contents of `hearth.id.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    /// File format version.
    pub format: u32,
    /// The database's id; the keyring account is `db-<id>`.
    pub db_id: String,
    /// Where the key lives now.
    pub key_backend: KeyBackend,
    /// Backends that may still hold a copy of the key after an interrupted move: wiped at
    /// the next open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_backends: Vec<KeyBackend>,
}

impl Sidecar {
    pub fn new(db_id: String, key_backend: KeyBackend) -> Self {
        Self {
            format: FORMAT,
            db_id,
            key_backend,
            stale_backends: Vec::new(),
        }
    }

    /// Reads the sidecar; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Self>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let sidecar: Sidecar = serde_json::from_slice(&bytes)
            .map_err(|e| Error::corrupt(path, format!("unreadable database id file: {e}")))?;
        if sidecar.format > FORMAT {
            return Err(Error::corrupt(
                path,
                format!(
                    "id file format {} is newer than this Hearth",
                    sidecar.format
                ),
            ));
        }
        Ok(Some(sidecar))
    }

    /// Replaces the sidecar atomically (write, fsync, rename, fsync the directory).
    pub fn write(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::Database(e.to_string()))?;
        write_atomic(path, &json, false)
    }
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file, never a
/// torn one. With `private`, the file is created with mode 0600 on Unix.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::corrupt(path, "no parent directory"))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if private {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = private;
        let mut file = options.open(&tmp).map_err(|e| Error::io(&tmp, e))?;
        file.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        file.sync_all().map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    sync_dir(dir);
    Ok(())
}

/// Flushes a directory entry change (rename, unlink) to disk where the OS supports it.
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}
