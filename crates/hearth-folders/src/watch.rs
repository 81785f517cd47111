//! Watching folders: one OS watcher (`notify`, debounced by `notify-debouncer-full`) for
//! every watched folder. A change anywhere in a folder makes it *dirty*; the caller then
//! runs the reconcile pass over it, which is exact whatever the events said (renames by file
//! id, ignore rules, links) — so an overflowing event queue (`Rescan`) or a burst of
//! thousands of files costs one walk, never a missed file. A folder the OS will not watch
//! (inotify's watch limit, ENOSPC; a network drive) is *polled*: walked every
//! [`POLL_EVERY`], and said so, never silently left unwatched.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::Folder;

/// How long events are gathered before a folder is reconciled.
pub const DEBOUNCE: Duration = Duration::from_millis(400);

/// How often a folder that cannot be watched is walked instead.
pub const POLL_EVERY: Duration = Duration::from_secs(30);

/// What the watcher saw since it was last asked.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Folders with changes, by id.
    pub dirty: BTreeSet<i64>,
    /// Folders whose events overflowed (or the OS asked for a rescan).
    pub rescan: BTreeSet<i64>,
    /// Watch errors, as messages (the folders concerned are polled).
    pub errors: Vec<String>,
}

/// One watcher for every folder.
pub struct FolderWatcher {
    debouncer: Option<Debouncer<notify::RecommendedWatcher, RecommendedCache>>,
    events: mpsc::Receiver<DebounceEventResult>,
    /// Watched roots (canonical) and their folder ids.
    watched: HashMap<PathBuf, i64>,
    /// Folders that could not be watched: polled.
    polled: BTreeSet<i64>,
    /// Why the OS watcher could not start at all (every folder is polled).
    pub unavailable: Option<String>,
}

impl FolderWatcher {
    /// Starts the OS watcher (watching nothing yet). If the OS has none to give, every
    /// folder is polled and [`FolderWatcher::unavailable`] says why.
    pub fn new() -> Self {
        let (tx, rx) = mpsc::channel();
        let (debouncer, unavailable) = match new_debouncer(DEBOUNCE, None, tx) {
            Ok(d) => (Some(d), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Self {
            debouncer,
            events: rx,
            watched: HashMap::new(),
            polled: BTreeSet::new(),
            unavailable,
        }
    }

    /// Watches `folders` (and stops watching those gone). Returns the folders now polled,
    /// with why, for the ones newly so.
    pub fn sync(&mut self, folders: &[Folder]) -> Vec<(i64, String)> {
        let wanted: HashMap<PathBuf, i64> = folders
            .iter()
            .filter(|f| f.available && !f.paused)
            .map(|f| (PathBuf::from(&f.path), f.id))
            .collect();
        let gone: Vec<PathBuf> = self
            .watched
            .keys()
            .filter(|p| !wanted.contains_key(*p))
            .cloned()
            .collect();
        for path in gone {
            if let Some(d) = self.debouncer.as_mut() {
                let _ = d.unwatch(&path);
            }
            self.watched.remove(&path);
        }
        self.polled.retain(|id| wanted.values().any(|w| w == id));
        let mut newly_polled = Vec::new();
        for (path, id) in wanted {
            if self.watched.contains_key(&path) || self.polled.contains(&id) {
                continue;
            }
            let result = match self.debouncer.as_mut() {
                Some(_) if crate::failpoint::unwatchable(&path) => {
                    Err("No space left on device (os error 28): the system's limit of watched folders (test hook)".to_owned())
                }
                Some(d) => d
                    .watch(&path, RecursiveMode::Recursive)
                    .map_err(|e| e.to_string()),
                None => Err(self
                    .unavailable
                    .clone()
                    .unwrap_or_else(|| "no file watcher".into())),
            };
            match result {
                Ok(()) => {
                    self.watched.insert(path, id);
                }
                Err(why) => {
                    tracing::warn!(folder = id, "cannot watch a folder; polling it instead");
                    self.polled.insert(id);
                    newly_polled.push((id, why));
                }
            }
        }
        newly_polled
    }

    /// Folders polled instead of watched.
    pub fn polled(&self) -> &BTreeSet<i64> {
        &self.polled
    }

    /// How often a polled folder is walked: [`POLL_EVERY`] (tests may shorten it).
    pub fn poll_every() -> Duration {
        crate::failpoint::poll_every().unwrap_or(POLL_EVERY)
    }

    /// Whether folder `id` is watched by the OS.
    pub fn is_watched(&self, id: i64) -> bool {
        self.watched.values().any(|w| *w == id)
    }

    fn folder_of(&self, path: &Path) -> Option<i64> {
        self.watched
            .iter()
            .filter(|(root, _)| path.starts_with(root))
            .max_by_key(|(root, _)| root.as_os_str().len())
            .map(|(_, id)| *id)
    }

    /// Waits up to `timeout` for events, then takes every one that arrived.
    pub fn wait(&mut self, timeout: Duration) -> Seen {
        let mut seen = Seen::default();
        let first = match self.events.recv_timeout(timeout) {
            Ok(r) => r,
            Err(_) => return seen,
        };
        let mut batch = vec![first];
        while let Ok(more) = self.events.try_recv() {
            batch.push(more);
        }
        for result in batch {
            match result {
                Ok(events) => {
                    for event in events {
                        let rescan = event.need_rescan();
                        let ids: Vec<i64> = if event.paths.is_empty() {
                            // A rescan without a path: every watched folder.
                            self.watched.values().copied().collect()
                        } else {
                            event
                                .paths
                                .iter()
                                .filter_map(|p| self.folder_of(p))
                                .collect()
                        };
                        for id in ids {
                            seen.dirty.insert(id);
                            if rescan {
                                seen.rescan.insert(id);
                            }
                        }
                    }
                }
                Err(errors) => {
                    for e in errors {
                        let ids: Vec<i64> = if e.paths.is_empty() {
                            self.watched.values().copied().collect()
                        } else {
                            e.paths.iter().filter_map(|p| self.folder_of(p)).collect()
                        };
                        // A watch error may mean lost events: walk those folders.
                        for id in ids {
                            seen.dirty.insert(id);
                            seen.rescan.insert(id);
                        }
                        seen.errors.push(e.to_string());
                    }
                }
            }
        }
        seen
    }
}

impl Default for FolderWatcher {
    fn default() -> Self {
        Self::new()
    }
}
