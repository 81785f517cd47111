//! A secret of one database kept in the OS keyring (a provider's API key, an MCP server's
//! env and header values): its account names the kind, the database and the owner, so two
//! databases on one computer never share one.

use super::Store;
use super::key::KEYRING_SERVICE;
use crate::{Error, Result};

fn unavailable(e: keyring::Error) -> Error {
    Error::KeyringUnavailable {
        detail: e.to_string(),
    }
}

/// One keyring entry: `{kind}-{db_id}-{name}` under Hearth's service.
pub struct SecretSlot(keyring::Entry);

impl SecretSlot {
    pub fn new(store: &Store, kind: &str, name: &str) -> Result<Self> {
        keyring::Entry::new(KEYRING_SERVICE, &format!("{kind}-{}-{name}", store.db_id()))
            .map(Self)
            .map_err(unavailable)
    }

    pub fn set(&self, value: &str) -> Result<()> {
        self.0.set_password(value).map_err(unavailable)
    }

    /// The value, or `None` when there is none.
    pub fn get(&self) -> Result<Option<String>> {
        match self.0.get_password() {
            Ok(v) => Ok(Some(v)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(unavailable(e)),
        }
    }

    /// Deletes it (nothing to delete is fine).
    pub fn delete(&self) -> Result<()> {
        match self.0.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(unavailable(e)),
        }
    }
}
