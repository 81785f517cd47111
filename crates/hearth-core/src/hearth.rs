//! [`Hearth`]: the one handle the desktop shell and the CLI talk to.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::events::Event;
use crate::store::{ChangeWatcher, OpenOptions, Store};
use crate::{Error, Result};

const EVENT_CAPACITY: usize = 256;

/// How often other processes' commits are looked for.
pub const CHANGE_POLL_INTERVAL: Duration = Duration::from_millis(300);

/// The engine. Cheap to clone; every clone shares one store and one event channel.
#[derive(Clone)]
pub struct Hearth {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    events: broadcast::Sender<Event>,
    _watcher: Option<ChangeWatcher>,
}

/// What `hearth doctor` and the app's Status panel show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub data_dir: String,
    pub db_path: String,
    pub db_id: String,
    pub schema_version: u32,
    pub sqlite_version: String,
    pub sqlcipher_version: String,
    pub sqlite_vec_version: String,
    pub key_backend: String,
    pub encrypted: bool,
    pub fts5: bool,
    pub vec0: bool,
    /// Things the user should know (e.g. the key is kept in a plain file).
    pub warnings: Vec<String>,
}

impl Hearth {
    /// Opens (or creates) the store and starts watching it for changes from other processes.
    pub fn open(opts: &OpenOptions) -> Result<Self> {
        Self::open_inner(opts, true)
    }

    /// Opens the store without the change watcher (for one-shot CLI commands).
    pub fn open_oneshot(opts: &OpenOptions) -> Result<Self> {
        Self::open_inner(opts, false)
    }

    fn open_inner(opts: &OpenOptions, watch: bool) -> Result<Self> {
        let store = Store::open(opts)?;
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let watcher = if watch {
            let tx = events.clone();
            Some(store.watch_changes(CHANGE_POLL_INTERVAL, move || {
                let _ = tx.send(Event::StoreChanged);
            })?)
        } else {
            None
        };
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                events,
                _watcher: watcher,
            }),
        })
    }

    /// Events from now on (store changes; later tokens, consent requests, progress).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// The store, for subsystems built on it.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The status report, on this thread.
    pub fn status_blocking(&self) -> Result<Status> {
        let store = &self.inner.store;
        let info = store.info()?;
        let dir = store.data_dir();
        Ok(Status {
            data_dir: dir.root().display().to_string(),
            db_path: dir.db_path().display().to_string(),
            db_id: info.db_id,
            schema_version: info.schema_version,
            sqlite_version: info.sqlite_version,
            sqlcipher_version: info.sqlcipher_version,
            sqlite_vec_version: info.sqlite_vec_version,
            key_backend: info.key_backend.to_string(),
            encrypted: info.encrypted,
            fts5: info.fts5,
            vec0: info.vec0,
            warnings: info
                .key_backend
                .warning()
                .map(|w| vec![w.to_owned()])
                .unwrap_or_default(),
        })
    }

    /// The status report, off the async runtime's threads.
    pub async fn status(&self) -> Result<Status> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.status_blocking())
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }
}
