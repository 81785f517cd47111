//! The plaintext sidecar beside the database: its id and where its key lives. No secrets.

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
    /// The hash of the audit log's first entry (hex): an emptied or restarted log is found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_genesis: Option<String>,
}

impl Sidecar {
    pub fn new(db_id: String, key_backend: KeyBackend) -> Self {
        Self {
            format: FORMAT,
            db_id,
            key_backend,
            stale_backends: Vec::new(),
            audit_genesis: None,
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
        crate::fsio::write_atomic(path, &json, false)
    }
}
