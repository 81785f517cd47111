//! The database key and the three places it can live: the OS keyring, a private file, or
//! wrapped by a passphrase.
//!
//! The key itself is 32 random bytes made once, when the database is created. It never
//! changes when it moves between backends (so a recovery key stays valid); only `hearth key
//! rotate` replaces it. Each backend has two slots: `current`, and `pending`, which holds the
//! next key during a rotation so that a crash at any point leaves a key that opens the file.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::fsio::write_atomic;
use crate::paths::DataDir;
use crate::{Error, Result};

/// Keyring service name under which database keys are stored.
pub const KEYRING_SERVICE: &str = "hearth";

/// Where the database key is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyBackend {
    /// The OS keyring (Keychain, Credential Manager, Secret Service). The default.
    Keyring,
    /// A file beside the database, readable only by the user. A fallback: anyone who can
    /// read the user's files can read the data.
    File,
    /// Wrapped with a key derived from a passphrase (Argon2id); asked for at every start.
    Passphrase,
}

impl KeyBackend {
    /// The name used in configuration and output.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyBackend::Keyring => "keyring",
            KeyBackend::File => "file",
            KeyBackend::Passphrase => "passphrase",
        }
    }

    /// What a user should be told about this backend, if anything.
    pub fn warning(self) -> Option<&'static str> {
        match self {
            KeyBackend::File => Some(
                "The database key is stored in a plain file beside the database \
                 (key backend \"file\"): anyone who can read your files can read your data. \
                 Run `hearth key backend keyring` when a system keyring is available.",
            ),
            _ => None,
        }
    }
}

impl fmt::Display for KeyBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KeyBackend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "keyring" => Ok(KeyBackend::Keyring),
            "file" => Ok(KeyBackend::File),
            "passphrase" => Ok(KeyBackend::Passphrase),
            other => Err(Error::InvalidInput(format!(
                "unknown key backend {other:?}: use keyring, file or passphrase"
            ))),
        }
    }
}

/// A passphrase, wiped from memory when dropped.
#[derive(Clone)]
pub struct Passphrase(Zeroizing<String>);

impl Passphrase {
    /// Wraps a passphrase; an empty one is refused.
    pub fn new(s: impl Into<String>) -> Result<Self> {
        let s = Zeroizing::new(s.into());
        if s.is_empty() {
            return Err(Error::InvalidInput("the passphrase is empty".into()));
        }
        Ok(Self(s))
    }
}

impl fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Passphrase(..)")
    }
}

/// The 32-byte database key, wiped from memory when dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct DbKey(Zeroizing<[u8; 32]>);

impl fmt::Debug for DbKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DbKey(..)")
    }
}

impl DbKey {
    /// A fresh random key from the OS generator.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new([0u8; 32]);
        rand::rng().fill_bytes(bytes.as_mut());
        Self(bytes)
    }

    fn from_hex(hex_str: &str) -> Option<Self> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(hex_str.trim(), bytes.as_mut()).ok()?;
        Some(Self(bytes))
    }

    fn to_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(self.0.as_ref()))
    }

    /// The `PRAGMA key`/`rekey` value: a raw key, so SQLCipher skips its passphrase KDF.
    pub fn pragma_value(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("\"x'{}'\"", self.to_hex().as_str()))
    }

    /// The key as a recovery key a person can write down.
    pub fn to_recovery(&self) -> RecoveryKey {
        let hex = self.to_hex();
        let groups: Vec<&str> = (0..8).map(|i| &hex[i * 8..i * 8 + 8]).collect();
        RecoveryKey(Zeroizing::new(groups.join("-")))
    }
}

/// A database key written for people: 64 hex digits in groups of eight.
#[derive(Clone)]
pub struct RecoveryKey(Zeroizing<String>);

impl RecoveryKey {
    /// The text to show or store. Treat it as the data itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Parses a recovery key, ignoring dashes and white space.
    pub fn parse(text: &str) -> Result<Self> {
        let cleaned: Zeroizing<String> = Zeroizing::new(
            text.chars()
                .filter(|c| !c.is_whitespace() && *c != '-')
                .collect::<String>()
                .to_ascii_lowercase(),
        );
        DbKey::from_hex(&cleaned)
            .filter(|_| cleaned.len() == 64)
            .map(|k| k.to_recovery())
            .ok_or_else(|| {
                Error::InvalidInput("a recovery key is 64 hex digits (dashes allowed)".into())
            })
    }

    pub fn to_key(&self) -> DbKey {
        let cleaned: Zeroizing<String> = Zeroizing::new(self.0.replace('-', ""));
        // Constructed only from a valid key, so this cannot fail; fall back defensively.
        DbKey::from_hex(&cleaned).unwrap_or_else(|| DbKey(Zeroizing::new([0u8; 32])))
    }
}

impl fmt::Debug for RecoveryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RecoveryKey(..)")
    }
}

/// One of the two places for a key inside a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Current,
    Pending,
}

impl Slot {
    fn name(self) -> &'static str {
        match self {
            Slot::Current => "current",
            Slot::Pending => "pending",
        }
    }
}

/// Reads and writes one database's key in any backend.
pub struct KeyStore<'a> {
    dir: &'a DataDir,
    db_id: &'a str,
    passphrase: Option<&'a Passphrase>,
    kek: OnceLock<Zeroizing<[u8; 32]>>,
}

#[derive(Serialize, Deserialize, Default)]
struct KeyFile {
    format: u32,
    current: Option<String>,
    pending: Option<String>,
}

#[derive(Serialize, Deserialize, Clone)]
struct Kdf {
    algorithm: String,
    memory_kib: u32,
    iterations: u32,
    parallelism: u32,
    salt: String,
}

#[derive(Serialize, Deserialize, Clone)]
struct Wrapped {
    nonce: String,
    ciphertext: String,
}

#[derive(Serialize, Deserialize)]
struct WrappedKeyFile {
    format: u32,
    kdf: Kdf,
    current: Option<Wrapped>,
    pending: Option<Wrapped>,
}

impl<'a> KeyStore<'a> {
    pub fn new(dir: &'a DataDir, db_id: &'a str, passphrase: Option<&'a Passphrase>) -> Self {
        Self {
            dir,
            db_id,
            passphrase,
            kek: OnceLock::new(),
        }
    }

    fn keyring_entry(&self, slot: Slot) -> Result<keyring::Entry> {
        let account = match slot {
            Slot::Current => format!("db-{}", self.db_id),
            Slot::Pending => format!("db-{}.pending", self.db_id),
        };
        keyring::Entry::new(KEYRING_SERVICE, &account).map_err(keyring_error)
    }

    /// The key in `slot` of `backend`, if there is one.
    pub fn load(&self, backend: KeyBackend, slot: Slot) -> Result<Option<DbKey>> {
        match backend {
            KeyBackend::Keyring => match with_retry(|| {
                self.keyring_entry(slot)?
                    .get_password()
                    .map_err(Retry::Keyring)
            })? {
                Ok(hex) => {
                    let hex = Zeroizing::new(hex);
                    DbKey::from_hex(&hex).map(Some).ok_or_else(|| {
                        Error::corrupt(
                            self.dir.db_path(),
                            "the key stored in the keyring is not a valid key",
                        )
                    })
                }
                Err(keyring::Error::NoEntry) => Ok(None),
                Err(e) => Err(keyring_error(e)),
            },
            KeyBackend::File => {
                let path = self.dir.key_file_path();
                let Some(file) = read_json::<KeyFile>(&path)? else {
                    return Ok(None);
                };
                let hex = match slot {
                    Slot::Current => file.current,
                    Slot::Pending => file.pending,
                };
                match hex.map(Zeroizing::new) {
                    None => Ok(None),
                    Some(h) => DbKey::from_hex(&h)
                        .map(Some)
                        .ok_or_else(|| Error::corrupt(&path, "the key file holds an invalid key")),
                }
            }
            KeyBackend::Passphrase => {
                let path = self.dir.wrapped_key_path();
                let Some(file) = read_json::<WrappedKeyFile>(&path)? else {
                    return Ok(None);
                };
                let wrapped = match slot {
                    Slot::Current => file.current.clone(),
                    Slot::Pending => file.pending.clone(),
                };
                match wrapped {
                    None => Ok(None),
                    Some(w) => self.unwrap_key(&file.kdf, &w, slot).map(Some),
                }
            }
        }
    }

    /// Stores `key` in `slot` of `backend`, replacing what was there.
    pub fn save(&self, backend: KeyBackend, slot: Slot, key: &DbKey) -> Result<()> {
        match backend {
            KeyBackend::Keyring => with_retry(|| {
                self.keyring_entry(slot)?
                    .set_password(&key.to_hex())
                    .map_err(Retry::Keyring)
            })?
            .map_err(keyring_error),
            KeyBackend::File => {
                let path = self.dir.key_file_path();
                let mut file = read_json::<KeyFile>(&path)?.unwrap_or_default();
                file.format = 1;
                let hex = Some(key.to_hex().to_string());
                match slot {
                    Slot::Current => file.current = hex,
                    Slot::Pending => file.pending = hex,
                }
                let json = Zeroizing::new(serde_json::to_vec_pretty(&file).map_err(json_error)?);
                write_atomic(&path, &json, true)
            }
            KeyBackend::Passphrase => {
                let path = self.dir.wrapped_key_path();
                let mut file = match read_json::<WrappedKeyFile>(&path)? {
                    Some(f) => {
                        // The passphrase must be the one already protecting this file.
                        if let Some(w) = &f.current {
                            self.unwrap_key(&f.kdf, w, Slot::Current)?;
                        }
                        f
                    }
                    None => WrappedKeyFile {
                        format: 1,
                        kdf: Kdf::new_random(),
                        current: None,
                        pending: None,
                    },
                };
                let wrapped = Some(self.wrap_key(&file.kdf, key, slot)?);
                match slot {
                    Slot::Current => file.current = wrapped,
                    Slot::Pending => file.pending = wrapped,
                }
                let json = serde_json::to_vec_pretty(&file).map_err(json_error)?;
                write_atomic(&path, &json, true)
            }
        }
    }

    /// Removes the key in `slot` of `backend`; removing what is not there is fine.
    pub fn delete(&self, backend: KeyBackend, slot: Slot) -> Result<()> {
        match backend {
            KeyBackend::Keyring => match with_retry(|| {
                self.keyring_entry(slot)?
                    .delete_credential()
                    .map_err(Retry::Keyring)
            })? {
                Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                Err(e) => Err(keyring_error(e)),
            },
            KeyBackend::File => {
                let path = self.dir.key_file_path();
                let Some(mut file) = read_json::<KeyFile>(&path)? else {
                    return Ok(());
                };
                match slot {
                    Slot::Current => file.current = None,
                    Slot::Pending => file.pending = None,
                }
                if file.current.is_none() && file.pending.is_none() {
                    remove_file(&path)
                } else {
                    let json =
                        Zeroizing::new(serde_json::to_vec_pretty(&file).map_err(json_error)?);
                    write_atomic(&path, &json, true)
                }
            }
            KeyBackend::Passphrase => {
                let path = self.dir.wrapped_key_path();
                let Some(mut file) = read_json::<WrappedKeyFile>(&path)? else {
                    return Ok(());
                };
                match slot {
                    Slot::Current => file.current = None,
                    Slot::Pending => file.pending = None,
                }
                if file.current.is_none() && file.pending.is_none() {
                    remove_file(&path)
                } else {
                    let json = serde_json::to_vec_pretty(&file).map_err(json_error)?;
                    write_atomic(&path, &json, true)
                }
            }
        }
    }

    /// Removes both slots of `backend`.
    pub fn delete_all(&self, backend: KeyBackend) -> Result<()> {
        self.delete(backend, Slot::Pending)?;
        self.delete(backend, Slot::Current)
    }

    fn kek(&self, kdf: &Kdf) -> Result<&Zeroizing<[u8; 32]>> {
        if let Some(k) = self.kek.get() {
            return Ok(k);
        }
        let passphrase = self.passphrase.ok_or(Error::PassphraseRequired)?;
        let salt = hex::decode(&kdf.salt)
            .map_err(|_| Error::corrupt(self.dir.wrapped_key_path(), "bad salt"))?;
        if kdf.algorithm != "argon2id" {
            return Err(Error::corrupt(
                self.dir.wrapped_key_path(),
                format!("unknown key derivation {:?}", kdf.algorithm),
            ));
        }
        let params = argon2::Params::new(kdf.memory_kib, kdf.iterations, kdf.parallelism, Some(32))
            .map_err(|e| Error::corrupt(self.dir.wrapped_key_path(), e.to_string()))?;
        let argon =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut out = Zeroizing::new([0u8; 32]);
        argon
            .hash_password_into(passphrase.0.as_bytes(), &salt, out.as_mut())
            .map_err(|e| Error::corrupt(self.dir.wrapped_key_path(), e.to_string()))?;
        Ok(self.kek.get_or_init(|| out))
    }

    fn aad(&self, slot: Slot) -> Vec<u8> {
        format!("hearth-db-key:{}:{}", self.db_id, slot.name()).into_bytes()
    }

    fn wrap_key(&self, kdf: &Kdf, key: &DbKey, slot: Slot) -> Result<Wrapped> {
        let kek = self.kek(kdf)?;
        let cipher = XChaCha20Poly1305::new(kek.as_ref().into());
        let mut nonce = [0u8; 24];
        rand::rng().fill_bytes(&mut nonce);
        let aad = self.aad(slot);
        let ciphertext = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: key.0.as_ref(),
                    aad: &aad,
                },
            )
            .map_err(|_| Error::Task("key wrapping failed".into()))?;
        Ok(Wrapped {
            nonce: hex::encode(nonce),
            ciphertext: hex::encode(ciphertext),
        })
    }

    fn unwrap_key(&self, kdf: &Kdf, wrapped: &Wrapped, slot: Slot) -> Result<DbKey> {
        let path = self.dir.wrapped_key_path();
        let kek = self.kek(kdf)?;
        let nonce = hex::decode(&wrapped.nonce).map_err(|_| Error::corrupt(&path, "bad nonce"))?;
        let ciphertext = hex::decode(&wrapped.ciphertext)
            .map_err(|_| Error::corrupt(&path, "bad ciphertext"))?;
        if nonce.len() != 24 {
            return Err(Error::corrupt(&path, "bad nonce"));
        }
        let cipher = XChaCha20Poly1305::new(kek.as_ref().into());
        let aad = self.aad(slot);
        let plain = Zeroizing::new(
            cipher
                .decrypt(
                    XNonce::from_slice(&nonce),
                    Payload {
                        msg: &ciphertext,
                        aad: &aad,
                    },
                )
                .map_err(|_| Error::WrongPassphrase)?,
        );
        let mut bytes = Zeroizing::new([0u8; 32]);
        if plain.len() != 32 {
            return Err(Error::corrupt(&path, "wrapped key has the wrong length"));
        }
        bytes.copy_from_slice(&plain);
        Ok(DbKey(bytes))
    }
}

impl Kdf {
    fn new_random() -> Self {
        let mut salt = [0u8; 16];
        rand::rng().fill_bytes(&mut salt);
        Self {
            algorithm: "argon2id".into(),
            memory_kib: 64 * 1024,
            iterations: 3,
            parallelism: 1,
            salt: hex::encode(salt),
        }
    }
}

/// A keyring call's failure: from building the entry (final) or from the platform store.
enum Retry {
    Entry(Error),
    Keyring(keyring::Error),
}

impl From<Error> for Retry {
    fn from(e: Error) -> Self {
        Retry::Entry(e)
    }
}

/// Runs a keyring call, retrying a platform failure twice: the Secret Service over D-Bus
/// reports transient errors when several processes change items at once. Returns the
/// call's own result, or the entry error.
fn with_retry<T>(
    mut call: impl FnMut() -> std::result::Result<T, Retry>,
) -> Result<std::result::Result<T, keyring::Error>> {
    let mut attempt = 0;
    loop {
        match call() {
            Ok(v) => return Ok(Ok(v)),
            Err(Retry::Entry(e)) => return Err(e),
            Err(Retry::Keyring(keyring::Error::PlatformFailure(e))) if attempt < 2 => {
                attempt += 1;
                tracing::debug!(error = %e, attempt, "keyring call failed; retrying");
                std::thread::sleep(std::time::Duration::from_millis(50 * attempt));
            }
            Err(Retry::Keyring(e)) => return Ok(Err(e)),
        }
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &std::path::Path) -> Result<Option<T>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => Zeroizing::new(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::corrupt(path, format!("unreadable key file: {e}")))
}

fn remove_file(path: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {
            if let Some(dir) = path.parent() {
                crate::fsio::sync_dir(dir);
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

fn json_error(e: serde_json::Error) -> Error {
    Error::Task(format!("serialising a key file: {e}"))
}

fn keyring_error(e: keyring::Error) -> Error {
    match e {
        keyring::Error::BadEncoding(_) | keyring::Error::Ambiguous(_) => {
            Error::KeyringUnavailable {
                detail: format!("the keyring entry is unusable: {e}"),
            }
        }
        other => Error::KeyringUnavailable {
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_key_round_trips_and_tolerates_formatting() {
        let key = DbKey::generate();
        let recovery = key.to_recovery();
        assert_eq!(recovery.expose().len(), 64 + 7);
        let spaced = recovery.expose().replace('-', " ").to_uppercase();
        let parsed = RecoveryKey::parse(&spaced).expect("parses");
        assert!(parsed.to_key() == key);
        assert!(RecoveryKey::parse("abc").is_err());
    }

    #[test]
    fn wrong_passphrase_is_reported_as_such() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = DataDir::new(tmp.path());
        let good = Passphrase::new("correct horse").expect("passphrase");
        let bad = Passphrase::new("battery staple").expect("passphrase");
        let key = DbKey::generate();
        KeyStore::new(&dir, "id", Some(&good))
            .save(KeyBackend::Passphrase, Slot::Current, &key)
            .expect("save");
        let loaded = KeyStore::new(&dir, "id", Some(&good))
            .load(KeyBackend::Passphrase, Slot::Current)
            .expect("load");
        assert!(loaded == Some(key));
        let err = KeyStore::new(&dir, "id", Some(&bad))
            .load(KeyBackend::Passphrase, Slot::Current)
            .expect_err("wrong passphrase");
        assert_eq!(err.code(), "wrong_passphrase");
        let err = KeyStore::new(&dir, "id", None)
            .load(KeyBackend::Passphrase, Slot::Current)
            .expect_err("no passphrase");
        assert_eq!(err.code(), "passphrase_required");
    }
}
