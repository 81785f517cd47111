//! Operations on the database key that must survive a crash at any step.
//!
//! Each one needs the database to itself: they fail with [`Error::Locked`] while the app (or
//! another `hearth`) has it open.

use super::key::{DbKey, KeyBackend, KeyStore, Passphrase, RecoveryKey, Slot};
use super::{OpenOptions, Sidecar, Store, key_opens, open_connection};
use crate::{Error, Result};

/// The recovery key of the database (opens it, so the key is known to be right).
pub fn export_recovery_key(opts: &OpenOptions) -> Result<RecoveryKey> {
    let store = Store::open(opts)?;
    Ok(store.key().to_recovery())
}

/// Replaces the key with a fresh one (`PRAGMA rekey`).
///
/// Steps: the new key is saved in the backend's pending slot; the database leaves WAL mode
/// (the re-key runs under SQLite's rollback journal, which restores the old pages with the
/// old key if interrupted); the file is re-keyed in one transaction; the new key is promoted
/// to current. [`Store::open`] finishes or discards an interrupted rotation by trying the
/// current key, then the pending one.
pub fn rotate_key(opts: &OpenOptions) -> Result<()> {
    let store = Store::open(opts)?;
    let db_path = store.data_dir().db_path();
    let backend = store.key_backend();
    let dir = store.data_dir().clone();
    let db_id = store.db_id().to_owned();
    let keys = KeyStore::new(&dir, &db_id, opts.passphrase.as_ref());
    let next = DbKey::generate();
    store.write_blocking(|c| {
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        let mode: String = c.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("delete") {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                Some("another process has the database open; close Hearth first".into()),
            ));
        }
        Ok(())
    })?;
    keys.save(backend, Slot::Pending, &next)?;
    crate::failpoint::hit("rotate.pending_saved");
    store.write_blocking(|c| {
        c.execute_batch(&format!("PRAGMA rekey = {};", next.pragma_value().as_str()))
    })?;
    crate::failpoint::hit("rotate.rekeyed");
    store.write_blocking(|c| c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())))?;
    drop(store);
    keys.save(backend, Slot::Current, &next)?;
    crate::failpoint::hit("rotate.promoted");
    keys.delete(backend, Slot::Pending)?;
    // Prove the result before reporting success.
    if !key_opens(&db_path, &next)? {
        return Err(Error::WrongKey { path: db_path });
    }
    tracing::info!("rotated the database key");
    Ok(())
}

/// Moves the key to another backend; the key itself stays the same.
///
/// `to_passphrase` protects it when moving to the passphrase backend. Steps: the sidecar
/// marks the target as possibly holding a stray copy; the key is saved there; the sidecar
/// switches to the target and marks the source stale; the source is wiped; the mark is
/// cleared. [`Store::open`] wipes whatever is marked stale, so a crash never leaves an
/// extra copy of the key behind.
pub fn move_key(
    opts: &OpenOptions,
    to: KeyBackend,
    to_passphrase: Option<&Passphrase>,
) -> Result<()> {
    let store = Store::open(opts)?;
    let from = store.key_backend();
    if from == to {
        return Ok(());
    }
    if to == KeyBackend::Passphrase && to_passphrase.is_none() {
        return Err(Error::PassphraseRequired);
    }
    let dir = store.data_dir().clone();
    let key = store.key().clone();
    let db_id = store.db_id().to_owned();
    drop(store);
    let sidecar_path = dir.sidecar_path();
    let mut sidecar = Sidecar::new(db_id.clone(), from);
    // What else the id file holds (the audit log's first entry) stays.
    sidecar.audit_genesis = Sidecar::read(&sidecar_path)?.and_then(|s| s.audit_genesis);
    sidecar.stale_backends = vec![to];
    sidecar.write(&sidecar_path)?;
    crate::failpoint::hit("move.marked");
    let target = KeyStore::new(&dir, &db_id, to_passphrase);
    if to == KeyBackend::Passphrase {
        // A leftover wrapped key under another passphrase would refuse the save.
        target.delete_all(to)?;
    }
    target.save(to, Slot::Current, &key)?;
    crate::failpoint::hit("move.saved");
    sidecar.key_backend = to;
    sidecar.stale_backends = vec![from];
    sidecar.write(&sidecar_path)?;
    crate::failpoint::hit("move.switched");
    KeyStore::new(&dir, &db_id, opts.passphrase.as_ref()).delete_all(from)?;
    crate::failpoint::hit("move.wiped");
    sidecar.stale_backends.clear();
    sidecar.write(&sidecar_path)?;
    tracing::info!(%from, %to, "moved the database key");
    Ok(())
}

/// Stores a recovery key as the database's key, after checking that it opens the database.
///
/// For a database whose key was lost (keyring wiped, id file deleted): the key goes to the
/// backend the id file names, or to `opts.new_key_backend` when the id file is gone too.
pub fn import_recovery_key(opts: &OpenOptions, recovery: &RecoveryKey) -> Result<()> {
    let dir = &opts.data_dir;
    let db_path = dir.db_path();
    if !db_path.try_exists().map_err(|e| Error::io(&db_path, e))? {
        return Err(Error::InvalidInput(format!(
            "there is no database at {} to import a key for",
            db_path.display()
        )));
    }
    let key = recovery.to_key();
    // Checked read-only first: a wrong recovery key changes nothing.
    open_connection(&db_path, &key, false)?;
    let sidecar = match Sidecar::read(&dir.sidecar_path())? {
        Some(s) => s,
        None => Sidecar::new(uuid::Uuid::new_v4().to_string(), opts.new_key_backend),
    };
    let keys = KeyStore::new(dir, &sidecar.db_id, opts.passphrase.as_ref());
    if sidecar.key_backend == KeyBackend::Passphrase {
        if opts.passphrase.is_none() {
            return Err(Error::PassphraseRequired);
        }
        keys.delete_all(KeyBackend::Passphrase)?;
    }
    keys.save(sidecar.key_backend, Slot::Current, &key)?;
    keys.delete(sidecar.key_backend, Slot::Pending)?;
    sidecar.write(&dir.sidecar_path())?;
    tracing::info!(backend = %sidecar.key_backend, "imported a recovery key");
    Ok(())
}
