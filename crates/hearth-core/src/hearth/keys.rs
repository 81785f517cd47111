//! The database key's use cases (`hearth key …`): they work on the store's files, so they
//! need no open [`Hearth`] — importing a recovery key is what makes one openable again.

use super::Hearth;
use crate::Result;
use crate::store::key::{KeyBackend, RecoveryKey};
use crate::store::{OpenOptions, Passphrase};

/// The key operations for the store `OpenOptions` name.
pub struct KeyService {
    opts: OpenOptions,
}

impl Hearth {
    /// The key operations for the store `opts` name (see [`KeyService`]).
    pub fn keys(opts: &OpenOptions) -> KeyService {
        KeyService { opts: opts.clone() }
    }
}

impl KeyService {
    /// Where the key is kept now (`None`: no store yet).
    pub fn backend(&self) -> Result<Option<KeyBackend>> {
        self.opts.existing_key_backend()
    }

    /// The key as a recovery key the user can write down.
    pub fn export_recovery(&self) -> Result<RecoveryKey> {
        crate::store::export_recovery_key(&self.opts)
    }

    /// Re-encrypts the database with a new key (earlier recovery keys stop working).
    pub fn rotate(&self) -> Result<()> {
        crate::store::rotate_key(&self.opts)
    }

    /// Moves the key to another backend (`to_passphrase`: the passphrase that protects it
    /// there, when that backend is `passphrase`).
    pub fn move_to(&self, to: KeyBackend, to_passphrase: Option<&Passphrase>) -> Result<()> {
        crate::store::move_key(&self.opts, to, to_passphrase)
    }

    /// Stores the key a recovery key gives (checked against the database first).
    pub fn import_recovery(&self, recovery: &RecoveryKey) -> Result<()> {
        crate::store::import_recovery_key(&self.opts, recovery)
    }
}
