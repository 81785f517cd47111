//! hearth-store — the one encrypted database: SQLCipher + sqlite-vec + FTS5, its key,
//! migrations, durable jobs and the hash-chained audit log.
//!
//! **Never depends on** a provider, the embedder, folders or the engine above it (its only
//! Hearth dependency is `hearth-base`): the store holds bytes and rows, so nothing a model or
//! a file says can change how it is opened, keyed or migrated. Kept by this crate's
//! `Cargo.toml`.
//!
//! Access model: one writer connection behind a mutex plus a small pool of reader
//! connections (WAL lets readers run beside the writer). Async callers go through
//! [`Store::read`]/[`Store::write`], which run the closure on tokio's blocking pool, so no
//! query ever blocks the async runtime; sync callers (CLI, tests) use the `_blocking` forms.

pub mod audit;
pub mod jobs;
pub mod key;
mod key_ops;
pub mod migrations;
pub mod secret;
mod settings;
mod sidecar;
mod watch;

use std::path::Path;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use key::Passphrase;
pub use key_ops::{export_recovery_key, import_recovery_key, move_key, rotate_key};
pub use sidecar::Sidecar;
pub use watch::ChangeWatcher;

use hearth_base::{Error, Result, failpoint, fsio, paths, time};

use crate::paths::DataDir;
use key::{DbKey, KeyBackend, KeyStore, Slot};

/// Environment variable choosing the key backend for a new database.
pub const KEY_BACKEND_ENV: &str = "HEARTH_KEY_BACKEND";
/// Environment variable holding the passphrase of the `passphrase` backend.
pub const PASSPHRASE_ENV: &str = "HEARTH_PASSPHRASE";

const READER_POOL: usize = 4;
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How to find and unlock the store.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The data directory.
    pub data_dir: DataDir,
    /// The backend a *new* database's key goes to; an existing one says where its key is.
    pub new_key_backend: KeyBackend,
    /// The passphrase, for the `passphrase` backend.
    pub passphrase: Option<Passphrase>,
}

impl OpenOptions {
    /// Options for `data_dir` with the keyring backend and no passphrase.
    pub fn new(data_dir: DataDir) -> Self {
        Self {
            data_dir,
            new_key_backend: KeyBackend::Keyring,
            passphrase: None,
        }
    }

    /// Options from the environment: `HEARTH_HOME`, `HEARTH_KEY_BACKEND`, `HEARTH_PASSPHRASE`.
    pub fn from_env() -> Result<Self> {
        let mut opts = Self::new(DataDir::from_env()?);
        if let Some(b) = std::env::var(KEY_BACKEND_ENV)
            .ok()
            .filter(|s| !s.is_empty())
        {
            opts.new_key_backend = b.parse()?;
        }
        if let Some(p) = std::env::var(PASSPHRASE_ENV).ok().filter(|s| !s.is_empty()) {
            opts.passphrase = Some(Passphrase::new(p)?);
        }
        Ok(opts)
    }

    /// The backend of the existing database, if there is one (reads only the sidecar).
    pub fn existing_key_backend(&self) -> Result<Option<KeyBackend>> {
        Ok(Sidecar::read(&self.data_dir.sidecar_path())?.map(|s| s.key_backend))
    }
}

/// A handle to the open database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    dir: DataDir,
    sidecar: Sidecar,
    key: DbKey,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Per-database state every clone of this store shares (in-memory indexes): one
    /// value of each type, made on first use.
    shared: Mutex<Vec<Arc<dyn std::any::Any + Send + Sync>>>,
}

/// Facts about the open store, as `hearth doctor` prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    pub db_id: String,
    pub schema_version: u32,
    pub sqlite_version: String,
    pub sqlcipher_version: String,
    pub sqlite_vec_version: String,
    pub key_backend: KeyBackend,
    pub encrypted: bool,
    pub fts5: bool,
    pub vec0: bool,
}

fn register_extensions() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature of an SQLite extension entry point;
        // sqlite3_auto_extension takes it as an untyped function pointer, as its docs require.
        unsafe {
            #[allow(clippy::missing_transmute_annotations)]
            rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute(
                sqlite_vec::sqlite3_vec_init as *const (),
            )));
        }
    });
}

impl Store {
    /// Opens the store, creating the data directory, key and database if none exist.
    ///
    /// An existing database is never replaced or re-keyed here: a missing or wrong key is an
    /// error and the files stay as they were.
    pub fn open(opts: &OpenOptions) -> Result<Store> {
        register_extensions();
        let dir = &opts.data_dir;
        let db_path = dir.db_path();
        let exists = db_path.try_exists().map_err(|e| Error::io(&db_path, e))?;
        let (sidecar, key) = if exists {
            unlock_existing(opts)?
        } else {
            create_key(opts)?
        };
        let mut conn = open_connection(&db_path, &key, !exists)?;
        let version = migrations::schema_version(&conn).map_err(|e| sqlite_error(e, &db_path))?;
        if version > migrations::LATEST {
            return Err(Error::SchemaTooNew {
                found: version,
                supported: migrations::LATEST,
            });
        }
        check_modules(&conn, &db_path)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| sqlite_error(e, &db_path))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(mode, "could not switch the database to WAL");
        }
        migrations::migrate_to(&mut conn, migrations::LATEST)
            .map_err(|e| sqlite_error(e, &db_path))?;
        // Every write transaction takes the write lock when it begins, so it waits
        // (busy_timeout) for another process's writer instead of failing with `locked`
        // when a deferred transaction that has read tries to write over a newer commit
        // (SQLite gives up at once there: SQLITE_BUSY_SNAPSHOT). Two `hearth` processes
        // learning at once hit it.
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        tracing::info!(backend = %sidecar.key_backend, "store opened");
        Ok(Store {
            inner: Arc::new(Inner {
                dir: dir.clone(),
                sidecar,
                key,
                writer: Mutex::new(conn),
                readers: Mutex::new(Vec::new()),
                shared: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The one `T` of this open database, shared by every clone of the store (made with
    /// `T::default()` on first use): in-memory copies of a table live as long as the
    /// store, whichever module holds it.
    pub fn shared<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut all = self.inner.shared.lock().unwrap_or_else(|p| p.into_inner());
        for any in all.iter() {
            if let Ok(t) = Arc::clone(any).downcast::<T>() {
                return t;
            }
        }
        let t = Arc::new(T::default());
        all.push(t.clone());
        t
    }

    /// The data directory.
    pub fn data_dir(&self) -> &DataDir {
        &self.inner.dir
    }

    /// The hash (hex) of the audit log's first entry as the id file records it, if it does.
    pub fn audit_genesis(&self) -> Result<Option<String>> {
        Ok(Sidecar::read(&self.inner.dir.sidecar_path())?.and_then(|s| s.audit_genesis))
    }

    /// Records the hash of the audit log's first entry in the id file, unless it holds one
    /// already (the first record stands: a log restarted later does not replace it).
    pub fn remember_audit_genesis(&self, hash: &str) -> Result<()> {
        let path = self.inner.dir.sidecar_path();
        let Some(mut sidecar) = Sidecar::read(&path)? else {
            return Ok(());
        };
        if sidecar.audit_genesis.is_some() {
            return Ok(());
        }
        sidecar.audit_genesis = Some(hash.to_owned());
        sidecar.write(&path)
    }

    /// The database id (names its key in the keyring).
    pub fn db_id(&self) -> &str {
        &self.inner.sidecar.db_id
    }

    /// Where the key lives.
    pub fn key_backend(&self) -> KeyBackend {
        self.inner.sidecar.key_backend
    }

    pub fn key(&self) -> &DbKey {
        &self.inner.key
    }

    /// The durable job queue.
    pub fn jobs(&self) -> jobs::Jobs {
        jobs::Jobs::new(self.clone())
    }

    /// Runs `f` with the writer connection on this thread.
    pub fn write_blocking<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let mut conn = self
            .inner
            .writer
            .lock()
            .map_err(|_| Error::Task("the database writer panicked earlier".into()))?;
        f(&mut conn).map_err(|e| sqlite_error(e, &self.inner.dir.db_path()))
    }

    /// Copies the write-ahead log into the database and truncates it, so that pages a real
    /// delete overwrote (zeroed by `secure_delete`) do not linger in the WAL with the old
    /// text. Best effort: a reader holding an old snapshot can keep part of it until the
    /// next checkpoint. Call after a real delete commits.
    pub fn checkpoint_wal(&self) {
        let done = self.write_blocking(|c| {
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            })
        });
        match done {
            Ok(0) => {}
            Ok(_) => tracing::debug!("the WAL checkpoint was partial (a reader is busy)"),
            Err(e) => tracing::warn!(code = e.code(), "the WAL checkpoint failed"),
        }
    }

    /// Gives back what the connections keep between uses, for an engine idle a while: the
    /// pooled readers are closed (the next read opens one) and the writer's page cache of
    /// decrypted pages is emptied.
    pub fn release_memory(&self) {
        let readers = match self.inner.readers.lock() {
            Ok(mut pool) => std::mem::take(&mut *pool),
            Err(_) => Vec::new(),
        };
        drop(readers);
        if let Ok(writer) = self.inner.writer.lock() {
            release_cache(&writer);
        }
    }

    /// Runs `f` with a reader connection on this thread.
    pub fn read_blocking<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let db_path = self.inner.dir.db_path();
        let pooled = self
            .inner
            .readers
            .lock()
            .map_err(|_| Error::Task("the reader pool panicked earlier".into()))?
            .pop();
        let conn = match pooled {
            Some(c) => c,
            None => open_connection(&db_path, &self.inner.key, false)?,
        };
        let result = f(&conn).map_err(|e| sqlite_error(e, &db_path));
        if let Ok(mut pool) = self.inner.readers.lock()
            && pool.len() < READER_POOL
        {
            pool.push(conn);
        }
        result
    }

    /// [`Store::write_blocking`] on tokio's blocking pool.
    pub async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.write_blocking(f))
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }

    /// [`Store::read_blocking`] on tokio's blocking pool.
    pub async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.read_blocking(f))
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }

    /// Watches for commits by any connection or process; `on_change` runs on a background
    /// thread after each.
    pub fn watch_changes(
        &self,
        interval: Duration,
        on_change: impl Fn() + Send + 'static,
    ) -> Result<ChangeWatcher> {
        let db_path = self.inner.dir.db_path();
        let conn = open_connection(&db_path, &self.inner.key, false)?;
        ChangeWatcher::spawn(conn, interval, on_change).map_err(|e| Error::io(&db_path, e))
    }

    /// Versions, modules and encryption state of the open database.
    pub fn info(&self) -> Result<StoreInfo> {
        let db_path = self.inner.dir.db_path();
        let header_is_plain = file_header_is_plaintext(&db_path)?;
        self.read_blocking(|c| {
            let modules = modules(c)?;
            let sqlcipher_version: String = c
                .query_row("PRAGMA cipher_version", [], |r| r.get(0))
                .unwrap_or_default();
            Ok(StoreInfo {
                db_id: self.db_id().to_owned(),
                schema_version: migrations::schema_version(c)?,
                sqlite_version: c.query_row("SELECT sqlite_version()", [], |r| r.get(0))?,
                encrypted: !header_is_plain && !sqlcipher_version.is_empty(),
                sqlcipher_version,
                sqlite_vec_version: c.query_row("SELECT vec_version()", [], |r| r.get(0))?,
                key_backend: self.key_backend(),
                fts5: modules.iter().any(|m| m == "fts5"),
                vec0: modules.iter().any(|m| m == "vec0"),
            })
        })
    }
}

/// A `meta` row's value (`None` when the row is absent): the counters that triggers move
/// (the vector generations) are read through this, so every in-memory copy asks the same way.
pub fn meta_value(c: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    use rusqlite::OptionalExtension;
    c.query_row(
        "SELECT CAST(value AS TEXT) FROM meta WHERE key = ?1",
        [key],
        |r| r.get(0),
    )
    .optional()
}

/// True when the file starts with SQLite's plaintext header (i.e. it is not encrypted).
pub fn file_header_is_plaintext(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut header = [0u8; 16];
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let n = f.read(&mut header).map_err(|e| Error::io(path, e))?;
    Ok(n == 16 && &header == b"SQLite format 3\0")
}

fn modules(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare("PRAGMA module_list")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

fn check_modules(conn: &Connection, db_path: &Path) -> Result<()> {
    let found = modules(conn).map_err(|e| sqlite_error(e, db_path))?;
    for needed in ["fts5", "vec0"] {
        if !found.iter().any(|m| m == needed) {
            return Err(Error::Database(format!(
                "this build of SQLite lacks the {needed} module"
            )));
        }
    }
    Ok(())
}

#[cfg(any(test, feature = "test-plaintext"))]
thread_local! {
    /// Tests only (this crate's, and the engine's through the `test-plaintext` feature,
    /// which `make lint` proves no front end's normal build enables): open stores on this
    /// thread without encryption, so a test can read the raw file and prove deleted text
    /// is gone from it (what `secure_delete` is for).
    pub static PLAINTEXT_FOR_TESTS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(any(test, feature = "test-plaintext"))]
fn plaintext_for_tests() -> bool {
    PLAINTEXT_FOR_TESTS.with(|p| p.get())
}

#[cfg(not(any(test, feature = "test-plaintext")))]
fn plaintext_for_tests() -> bool {
    false
}

/// Opens one connection with `key` and checks the key by reading the schema.
pub fn open_connection(db_path: &Path, key: &DbKey, create: bool) -> Result<Connection> {
    register_extensions();
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(db_path, flags).map_err(|e| sqlite_error(e, db_path))?;
    // SQLCipher would print "hmac check failed" for a wrong key on stderr; we report it typed.
    let _ = conn.execute_batch("PRAGMA cipher_log_level = NONE;");
    if !plaintext_for_tests() {
        conn.execute_batch(&format!("PRAGMA key = {};", key.pragma_value().as_str()))
            .map_err(|e| sqlite_error(e, db_path))?;
    }
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| sqlite_error(e, db_path))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| sqlite_error(e, db_path))?;
    conn.execute_batch(
        "PRAGMA foreign_keys = ON;
         PRAGMA cache_size = -32768;
         PRAGMA secure_delete = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA synchronous = NORMAL;",
    )
    .map_err(|e| sqlite_error(e, db_path))?;
    Ok(conn)
}

/// Frees the page cache a whole-table read filled (every page of it, decrypted): kept, it
/// would hold the connection's whole cache budget for as long as the process runs.
pub fn release_cache(c: &rusqlite::Connection) {
    if let Err(e) = c.execute_batch("PRAGMA shrink_memory") {
        tracing::debug!(error = %e, "could not shrink the page cache");
    }
}

/// True if `key` opens the database; false if it is the wrong key.
fn key_opens(db_path: &Path, key: &DbKey) -> Result<bool> {
    match open_connection(db_path, key, false) {
        Ok(_) => Ok(true),
        Err(Error::WrongKey { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Finds the key of an existing database, finishing an interrupted rotation or key move.
fn unlock_existing(opts: &OpenOptions) -> Result<(Sidecar, DbKey)> {
    let dir = &opts.data_dir;
    let db_path = dir.db_path();
    let mut sidecar = Sidecar::read(&dir.sidecar_path())?.ok_or_else(|| Error::KeyMissing {
        path: db_path.clone(),
        backend: "any key store, because its id file hearth.id.json is missing".into(),
    })?;
    let keys = KeyStore::new(dir, &sidecar.db_id, opts.passphrase.as_ref());
    let backend = sidecar.key_backend;
    let current = keys.load(backend, Slot::Current)?;
    let pending = keys.load(backend, Slot::Pending)?;
    let key = match (current, pending) {
        (Some(cur), pending) if key_opens(&db_path, &cur)? => {
            if pending.is_some() {
                // A rotation stopped before the re-key committed: the old key still rules.
                keys.delete(backend, Slot::Pending)?;
                tracing::info!("discarded the key of an interrupted rotation");
            }
            cur
        }
        (_, Some(next)) if key_opens(&db_path, &next)? => {
            // A rotation re-keyed the file but stopped before promoting the new key.
            keys.save(backend, Slot::Current, &next)?;
            keys.delete(backend, Slot::Pending)?;
            tracing::info!("finished an interrupted key rotation");
            next
        }
        (None, None) => {
            return Err(Error::KeyMissing {
                path: db_path,
                backend: describe_backend(backend),
            });
        }
        _ => return Err(Error::WrongKey { path: db_path }),
    };
    if !sidecar.stale_backends.is_empty() {
        for stale in std::mem::take(&mut sidecar.stale_backends) {
            if stale != backend {
                keys.delete_all(stale)?;
            }
        }
        sidecar.write(&dir.sidecar_path())?;
        tracing::info!("removed key copies left by an interrupted key move");
    }
    Ok((sidecar, key))
}

fn describe_backend(backend: KeyBackend) -> String {
    match backend {
        KeyBackend::Keyring => "the system keyring".into(),
        KeyBackend::File => "the key file hearth.key".into(),
        KeyBackend::Passphrase => "the passphrase-protected key file hearth.wrapped-key".into(),
    }
}

/// Makes (or, after a crash during creation, finds) the key of a database not yet created.
fn create_key(opts: &OpenOptions) -> Result<(Sidecar, DbKey)> {
    let dir = &opts.data_dir;
    let existing = Sidecar::read(&dir.sidecar_path())?;
    let sidecar = existing
        .clone()
        .unwrap_or_else(|| Sidecar::new(uuid::Uuid::new_v4().to_string(), opts.new_key_backend));
    let backend = sidecar.key_backend;
    if backend == KeyBackend::Passphrase && opts.passphrase.is_none() {
        return Err(Error::PassphraseRequired);
    }
    let keys = KeyStore::new(dir, &sidecar.db_id, opts.passphrase.as_ref());
    let reused = match existing {
        Some(_) => keys.load(backend, Slot::Current)?,
        None => None,
    };
    let key = match reused {
        Some(k) => k,
        None => {
            let key = DbKey::generate();
            // The keyring is tried before anything touches the disk, so an unreachable
            // keyring leaves no trace.
            if backend != KeyBackend::Keyring {
                dir.create()?;
            }
            keys.save(backend, Slot::Current, &key)?;
            key
        }
    };
    dir.create()?;
    if existing.is_none() {
        sidecar.write(&dir.sidecar_path())?;
    }
    tracing::info!(backend = %backend, "created a new database key");
    Ok((sidecar, key))
}

/// Classifies a SQLite error; `db_path` is used for wrong-key reports.
pub fn sqlite_error(err: rusqlite::Error, db_path: &Path) -> Error {
    use rusqlite::ffi::ErrorCode;
    if let rusqlite::Error::SqliteFailure(code, ref msg) = err {
        match code.code {
            ErrorCode::NotADatabase => {
                return Error::WrongKey {
                    path: db_path.to_path_buf(),
                };
            }
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                return Error::Locked {
                    detail: msg.clone().unwrap_or_else(|| code.to_string()),
                };
            }
            ErrorCode::DiskFull => return Error::DiskFull,
            _ => {}
        }
    }
    Error::Database(err.to_string())
}
