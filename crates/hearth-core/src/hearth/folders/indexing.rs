//! Indexing and watching the folders: the queue run, vectors, the watcher and its
//! polling fallback.

use super::*;

/// Chunks embedded per batch (one progress event each).
const EMBED_BATCH: usize = 32;

/// How often the watcher looks for folders added or removed (by any process).
const SYNC_EVERY: Duration = Duration::from_secs(2);

/// How long the watcher waits for events at a time.
const WAIT: Duration = Duration::from_millis(500);

/// How often a process that waits for another's indexer looks at the store.
const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// The folder watcher of [`FolderService::start_watching`]; stops when dropped.
pub struct WatchingFolders {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WatchingFolders {
    /// Stops the watcher and waits for it (at most one wait for events, 0.5 s).
    pub fn stop(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for WatchingFolders {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Clears, when dropped, the watch state `me` wrote on every folder.
pub(super) struct ClearWatch<'a> {
    folders: &'a Folders,
    me: Option<String>,
}

impl Drop for ClearWatch<'_> {
    fn drop(&mut self) {
        let Ok(list) = self.folders.list() else {
            return;
        };
        for f in list
            .iter()
            .filter(|f| f.watch.is_some() && f.watch_owner == self.me)
        {
            if let Err(e) = self.folders.set_watch(f.id, None, None, None) {
                tracing::warn!(code = e.code(), "could not clear a folder's watch state");
            }
        }
    }
}

impl FolderService {
    /// `hearth index`: the reconcile pass, then (with `wait`) the queue run here until no
    /// file is pending — or, when another process holds the indexer's lock, that process
    /// followed through the store. `on` hears every step.
    pub fn index(
        &self,
        options: &IndexOptions,
        on: &mut dyn FnMut(&Progress),
    ) -> Result<IndexSummary> {
        self.scan()?;
        let pending = self.runnable_pending()?;
        on(&Progress {
            phase: "scan",
            done: 0,
            total: pending,
            path: None,
            status: None,
        });
        if !options.wait {
            self.queue_ingest()?;
            return self.summary();
        }
        self.drain(options, true, &|| false, on)?;
        let summary = self.summary()?;
        let total = summary.files.indexed + summary.files.skipped + summary.files.failed;
        on(&Progress {
            phase: "done",
            done: total,
            total: total + summary.files.pending,
            path: None,
            status: None,
        });
        Ok(summary)
    }

    /// Gives every chunk a vector from the embedder in use, a batch at a time, under the
    /// indexer's lock (following the process that holds it otherwise). No embedder: nothing
    /// to do (the summary says `unavailable`). `on` hears `embed` events.
    pub(super) fn embed_all(
        &self,
        lock_path: &Path,
        follow: bool,
        stop: &dyn Fn() -> bool,
        on: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        let Some(embedder) = self.hearth.inner.embedder.get() else {
            return Ok(());
        };
        let store = &self.hearth.inner.store;
        loop {
            let (done, total) = crate::folders::vectors::counts(store, embedder.model_id())?;
            if done >= total || stop() {
                return Ok(());
            }
            let Some(_lock) = IndexLock::try_acquire(lock_path)? else {
                if !follow {
                    return Ok(());
                }
                // Another process embeds: follow it.
                on(&Progress {
                    phase: "embed",
                    done,
                    total,
                    path: None,
                    status: None,
                });
                std::thread::sleep(FOLLOW_POLL);
                continue;
            };
            while !stop() {
                let n =
                    crate::folders::vectors::embed_pending(store, embedder.as_ref(), EMBED_BATCH)?;
                let (done, total) = crate::folders::vectors::counts(store, embedder.model_id())?;
                on(&Progress {
                    phase: "embed",
                    done,
                    total,
                    path: None,
                    status: None,
                });
                if n == 0 {
                    return Ok(());
                }
            }
            return Ok(());
        }
    }

    /// Gives every chunk lacking one a vector from the embedder in use, here (following the
    /// process that holds the indexer's lock, if another does): `hearth embedding use` and
    /// `download` after a change of model. Returns how many chunks gained a vector; 0 at
    /// once without an embedder. `on` hears `embed` events.
    pub fn embed_vectors(&self, on: &mut dyn FnMut(&Progress)) -> Result<u64> {
        let Some(embedder) = self.hearth.inner.embedder.get() else {
            return Ok(0);
        };
        let store = &self.hearth.inner.store;
        let (before, _) = crate::folders::vectors::counts(store, embedder.model_id())?;
        let lock_path = store.data_dir().index_lock_path();
        self.embed_all(&lock_path, true, &|| false, on)?;
        let (after, _) = crate::folders::vectors::counts(store, embedder.model_id())?;
        Ok(after.saturating_sub(before))
    }

    /// Watches every folder until `stop` says so (the app, `hearth index --watch`): first
    /// the reconcile pass over all of them (changes made while nothing ran), then each
    /// change is reconciled and its files indexed — here when `options.wait` (the CLI),
    /// else queued for the ingest job (the app). An overflow of the OS's event queue is a
    /// `rescan` event, a folder the OS cannot watch is walked every 30 s (`polling`).
    pub fn watch(
        &self,
        options: &IndexOptions,
        stop: &dyn Fn() -> bool,
        on: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        use crate::folders::watch::FolderWatcher;
        use std::time::Instant;
        let folders = self.folders();
        let mut watcher = FolderWatcher::new();
        let mut last_poll = Instant::now();
        let mut last_sync: Option<Instant> = None;
        let mut first = true;
        let event = |phase: &'static str, path: &str| Progress {
            phase,
            done: 0,
            total: 0,
            path: Some(path.to_owned()),
            status: None,
        };
        let mut list = Vec::new();
        let me = self.hearth.inner.liveness.as_ref().map(|l| l.id.clone());
        let run_dir = self.hearth.inner.store.data_dir().run_dir();
        let mut reasons: std::collections::HashMap<i64, String> = Default::default();
        let poll_every = FolderWatcher::poll_every();
        // However the loop ends, the folders this process said it watched are no longer.
        let _clear = ClearWatch {
            folders: &folders,
            me: me.clone(),
        };
        while !stop() {
            if last_sync.is_none_or(|t| t.elapsed() >= SYNC_EVERY) {
                // Folders added or removed by any process, read every 2 s (not per wait).
                list = folders.list()?;
                for (id, why) in watcher.sync(&list) {
                    if let Some(f) = list.iter().find(|f| f.id == id) {
                        on(&event("polling", &f.path));
                    }
                    reasons.insert(id, why);
                }
                // How each folder is watched, in the store for every front end to show;
                // written when it changes, never over another running watcher's.
                for f in &list {
                    let (watch, reason) = if watcher.is_watched(f.id) {
                        (Some("watching"), None)
                    } else if watcher.polled().contains(&f.id) {
                        (Some("polling"), reasons.get(&f.id).map(String::as_str))
                    } else {
                        (None, None)
                    };
                    let theirs = f.watch_owner.as_deref().filter(|o| {
                        Some(*o) != me.as_deref() && super::super::liveness::alive(&run_dir, o)
                    });
                    let same = f.watch.as_deref() == watch
                        && f.watch_reason.as_deref() == reason
                        && f.watch_owner == me;
                    if theirs.is_none() && !same {
                        folders.set_watch(f.id, watch, reason, me.as_deref())?;
                    }
                }
                last_sync = Some(Instant::now());
            }
            let mut dirty: std::collections::BTreeSet<i64> = if first {
                list.iter().map(|f| f.id).collect()
            } else {
                let seen = watcher.wait(WAIT);
                for id in &seen.rescan {
                    if let Some(f) = list.iter().find(|f| f.id == *id) {
                        on(&event("rescan", &f.path));
                    }
                }
                seen.dirty
            };
            first = false;
            if last_poll.elapsed() >= poll_every {
                dirty.extend(watcher.polled().iter().copied());
                // A folder that went (an unplugged drive) or came back.
                dirty.extend(list.iter().filter(|f| !f.available).map(|f| f.id));
                last_poll = Instant::now();
            }
            if dirty.is_empty() {
                continue;
            }
            let mut queued = 0;
            for f in list.iter().filter(|f| dirty.contains(&f.id)) {
                let r = folders.reconcile(f)?;
                queued += r.queued + r.removed + r.moved;
            }
            if queued == 0 && self.runnable_pending()? == 0 {
                continue;
            }
            if options.wait {
                self.drain(options, false, stop, on)?;
            } else {
                self.queue_ingest()?;
            }
        }
        Ok(())
    }

    /// Starts watching every folder on a thread of its own (the app): changes are reconciled
    /// and queued for the ingest job, which this process's job runner takes. Stopped when
    /// the handle is dropped.
    pub fn start_watching(&self) -> WatchingFolders {
        // A long-lived process searches often: the in-memory keyword index is built once
        // here, off the user's path (until it is, keyword search is FTS5's).
        let warm = self.clone();
        let _ = std::thread::Builder::new()
            .name("keyword-index".into())
            .spawn(move || {
                let _ = warm.warm_search();
            });
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let this = self.clone();
        let thread = std::thread::Builder::new()
            .name("folder-watcher".into())
            .spawn(move || {
                let events = this.hearth.inner.events.clone();
                let stopped = || flag.load(std::sync::atomic::Ordering::Relaxed);
                let result = this.watch(&IndexOptions::default(), &stopped, &mut |p| {
                    if matches!(p.phase, "rescan" | "polling") {
                        tracing::info!(phase = p.phase, "folder watcher");
                    }
                    let _ = events.send(crate::events::Event::IndexProgress {
                        done: p.done,
                        total: p.total,
                    });
                });
                if let Err(e) = result {
                    tracing::warn!(code = e.code(), "the folder watcher stopped");
                }
            })
            .ok();
        WatchingFolders { stop, thread }
    }

    /// Indexes the queue here under the indexer's lock, then (with `wait_vectors`) embeds;
    /// when another process holds the lock, follows it through the store if `follow`, else
    /// leaves the work to it.
    pub(super) fn drain(
        &self,
        options: &IndexOptions,
        follow: bool,
        stop: &dyn Fn() -> bool,
        on: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        let worker = options.worker()?;
        let lock_path = self.hearth.inner.store.data_dir().index_lock_path();
        let pending = self.runnable_pending()?;
        let mut last_done = 0;
        loop {
            if let Some(_lock) = IndexLock::try_acquire(&lock_path)? {
                let mut indexer = Indexer::new(
                    self.hearth.inner.store.clone(),
                    worker.clone(),
                    options.limits,
                );
                let offset = last_done;
                indexer.run(stop, &mut |p| {
                    on(&Progress {
                        done: p.done + offset,
                        total: p.total + offset,
                        ..p.clone()
                    })
                })?;
                break;
            }
            if !follow {
                return Ok(());
            }
            // Another process indexes: follow its progress through the store.
            let left = self.runnable_pending()?;
            if left == 0 || stop() {
                break;
            }
            let done = pending.saturating_sub(left).max(last_done);
            if done != last_done {
                last_done = done;
                on(&Progress {
                    phase: "follow",
                    done,
                    total: done + left,
                    path: None,
                    status: None,
                });
            }
            std::thread::sleep(FOLLOW_POLL);
        }
        if options.wait_vectors {
            let lock_path = self.hearth.inner.store.data_dir().index_lock_path();
            self.embed_all(&lock_path, follow, stop, on)?;
        }
        Ok(())
    }

    pub(super) fn runnable_pending(&self) -> Result<u64> {
        crate::folders::index::runnable_pending(&self.hearth.inner.store)
    }

    /// Counts over every folder.
    pub fn summary(&self) -> Result<IndexSummary> {
        let mut files = FileCounts::default();
        let mut chunks = 0;
        for f in self.list()? {
            files.indexed += f.files.indexed;
            files.pending += f.files.pending;
            files.skipped += f.files.skipped;
            files.failed += f.files.failed;
            chunks += f.chunks;
        }
        let (vectors, vectors_reason) = match self.hearth.inner.embedder.get() {
            None if chunks > 0 => (
                "unavailable",
                Some(
                    "no embedding model is available (no local model on disk, or embedding is off: see `hearth embedding show`); search is by keyword"
                        .to_owned(),
                ),
            ),
            None => ("complete", None),
            Some(e) => {
                let (done, total) =
                    crate::folders::vectors::counts(&self.hearth.inner.store, e.model_id())?;
                if done >= total {
                    ("complete", None)
                } else {
                    (
                        "pending",
                        Some(format!(
                            "{} of {total} chunks have a vector from {}; the rest are found by keyword until then",
                            done,
                            e.model_id()
                        )),
                    )
                }
            }
        };
        Ok(IndexSummary {
            files,
            chunks,
            vectors,
            vectors_reason,
        })
    }

    /// Queues the ingest job unless one is already waiting.
    pub(super) fn queue_ingest(&self) -> Result<()> {
        let store = &self.hearth.inner.store;
        let waiting = store.read_blocking(|c| {
            c.query_row(
                "SELECT count(*) FROM jobs WHERE kind = ?1 AND state = 'queued'",
                [INGEST_JOB],
                |r| r.get::<_, i64>(0),
            )
        })?;
        if waiting == 0 {
            store
                .jobs()
                .enqueue_in(INGEST_JOB, Lane::Ingest, &serde_json::json!({}))?;
        }
        jobs::wake(&self.hearth.inner.jobs_wake, Lane::Ingest);
        Ok(())
    }
}
