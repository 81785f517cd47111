//! The folders service of the façade: every use case of the Folders screen and of
//! `hearth folders`, `hearth index` and `hearth search`, so the app and the CLI behave the
//! same.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::{Hearth, jobs};
use crate::folders::cite::PassageView;
use crate::folders::extract::Limits;
use crate::folders::index::{IndexLock, Indexer, Progress};
use crate::folders::search::{Found, Mode};
use crate::folders::worker::WorkerCommand;
use crate::folders::{FileCounts, FileRow, FileStatus, Folder, Folders, ScanReport};
use crate::store::jobs::Lane;
use crate::time::Millis;
use crate::{Error, Result};

/// The job that indexes pending files of watched folders (the ingest lane).
pub const INGEST_JOB: &str = "folder_ingest";

/// Chunks embedded per batch (one progress event each).
const EMBED_BATCH: usize = 32;

/// How often the watcher looks for folders added or removed (by any process).
const SYNC_EVERY: Duration = Duration::from_secs(2);

/// How long the watcher waits for events at a time.
const WAIT: Duration = Duration::from_millis(500);

/// How often a process that waits for another's indexer looks at the store.
const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// What a watched folder is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FolderState {
    /// The user paused it: nothing of it is indexed until resumed.
    Paused,
    /// Its path is gone (an unmounted drive): its index is kept.
    Unavailable,
    /// Files are waiting to be indexed.
    Indexing,
    /// Up to date, and walked every 30 s by the running app (or `hearth index --watch`)
    /// because the OS would not watch it (`watch_reason` says why).
    Polling,
    /// Up to date, and watched for changes by the running app (or `hearth index --watch`).
    Watching,
    /// Every file it holds is indexed (or skipped with a reason); nothing watches it now
    /// (changes are found at the next start or `hearth index`).
    Idle,
}

/// How many passages a search returns when the user does not say.
pub const SEARCH_RESULTS: usize = 10;

/// The most passages one search returns, whoever asks (the app, the CLI).
pub const SEARCH_RESULTS_MAX: usize = 50;

/// A watched folder as the Folders screen and `hearth folders list` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FolderSummary {
    pub id: i64,
    pub path: String,
    pub state: FolderState,
    pub files: FileCounts,
    pub chunks: u64,
    /// Chunks with a vector of the embedding model in use.
    pub chunks_embedded: u64,
    pub last_indexed: Option<Millis>,
    /// Why the OS would not watch it (`polling`), else null.
    pub watch_reason: Option<String>,
    /// Tools may create, change and delete files in it.
    pub writable: bool,
}

/// Where indexing stands: `hearth index`'s summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IndexSummary {
    pub files: FileCounts,
    pub chunks: u64,
    /// `complete`, `pending` or `unavailable`.
    pub vectors: &'static str,
    pub vectors_reason: Option<String>,
}

/// How `index` runs.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    /// Also run the queue (or follow the process that runs it) until no file is pending.
    pub wait: bool,
    /// Also give every chunk a vector from the embedding model in use (when there is one).
    pub wait_vectors: bool,
    /// The extraction worker; this binary with the hidden argument by default.
    pub worker: Option<WorkerCommand>,
    pub limits: Limits,
}

/// What a search looks at: one watched folder, one file type, files modified since a time
/// (each optional; none: everything indexed).
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchScope<'a> {
    pub folder: Option<&'a Path>,
    /// A file extension (`md`, `.pdf`).
    pub extension: Option<&'a str>,
    /// ms since the epoch.
    pub modified_since: Option<Millis>,
}

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

impl IndexOptions {
    /// The extraction worker: the one given, else this binary with the hidden argument.
    fn worker(&self) -> Result<WorkerCommand> {
        match &self.worker {
            Some(w) => Ok(w.clone()),
            None => WorkerCommand::current_exe().map_err(|e| Error::io("current executable", e)),
        }
    }
}

/// Clears, when dropped, the watch state `me` wrote on every folder.
struct ClearWatch<'a> {
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

/// Watched folders, one method per use case. Blocking: the app calls it off its async
/// threads.
#[derive(Clone)]
pub struct FolderService {
    hearth: Hearth,
}

impl FolderService {
    pub(super) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    /// Builds this process's in-memory keyword index of chunks (or brings it up to date):
    /// keyword search then ranks there instead of in FTS5 (`folders::lexical`). For
    /// long-lived processes; a one-shot command searches FTS5 and never pays the build.
    pub fn warm_search(&self) -> Result<()> {
        crate::folders::lexical::warm(&self.hearth.inner.store)
    }

    fn folders(&self) -> Folders {
        Folders::new(self.hearth.inner.store.clone())
    }

    /// Starts watching `path`: registers it (the same folder again is the same folder),
    /// walks it, and queues its files for indexing.
    pub fn add(&self, path: &Path) -> Result<(FolderSummary, ScanReport)> {
        self.add_with(path, None)
    }

    /// As [`FolderService::add`], also making the folder writable for tools (`true`) or
    /// read-only again (`false`). Making it writable lowers caution: the user confirms it
    /// on `surface` first (the app's consent window, the terminal, or `--yes`), else
    /// `confirmation_required` and nothing is added.
    pub async fn add_writable(
        &self,
        path: &Path,
        writable: bool,
        surface: &dyn crate::tools::gate::Consent,
    ) -> Result<(FolderSummary, ScanReport)> {
        if writable {
            crate::tools::gate::confirm(surface, &Self::writable_act(path)).await?;
        }
        let (me, path) = (FolderService::new(self.hearth.clone()), path.to_owned());
        tokio::task::spawn_blocking(move || me.add_with(&path, Some(writable)))
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }

    /// The question making a folder writable asks.
    fn writable_act(path: &Path) -> crate::tools::gate::Act {
        crate::tools::gate::Act {
            what: format!("let tools change files in {}", path.display()),
            origin: crate::tools::Origin::BuiltIn,
            reason: "tools may then create, edit, move and delete files there; each change \
                     still asks unless you allowed that tool, and deletes always ask"
                .into(),
            details: path.display().to_string(),
        }
    }

    crate::internal! {
        /// As [`FolderService::add`], also setting whether tools may change files there
        /// (`None`: a re-added folder keeps its setting, a new one is read-only), with no
        /// question: front ends use [`FolderService::add_writable`].
        fn add_with(
            &self,
            path: &Path,
            writable: Option<bool>,
        ) -> Result<(FolderSummary, ScanReport)> {
        let folders = self.folders();
        let mut folder = folders.add(path)?;
        if let Some(w) = writable
            && w != folder.writable
        {
            folders.set_writable(folder.id, w)?;
            folder.writable = w;
        }
        let report = folders.reconcile(&folder)?;
        self.queue_ingest()?;
        let summary = self.summary_of(&folders.find(Path::new(&folder.path))?.unwrap_or(folder))?;
        Ok((summary, report))
        }
    }

    /// Stops watching the folder at `path`: its files' rows, chunks and vectors go (derived
    /// data only; the files themselves are not touched).
    pub fn remove(&self, path: &Path) -> Result<Folder> {
        self.folders().remove(path)
    }

    /// Every watched folder with its counts.
    pub fn list(&self) -> Result<Vec<FolderSummary>> {
        self.folders()
            .list()?
            .iter()
            .map(|f| self.summary_of(f))
            .collect()
    }

    fn summary_of(&self, f: &Folder) -> Result<FolderSummary> {
        let files = self.folders().counts(f.id)?;
        let id = f.id;
        let chunks = self.hearth.inner.store.read_blocking(move |c| {
            c.query_row(
                "SELECT coalesce(sum(chunks), 0) FROM folder_files WHERE folder_id = ?1",
                [id],
                |r| r.get::<_, i64>(0),
            )
        })?;
        // A watch state counts only while the process that wrote it runs.
        let run_dir = self.hearth.inner.store.data_dir().run_dir();
        let watch = f.watch.as_deref().filter(|_| {
            f.watch_owner
                .as_deref()
                .is_none_or(|o| super::liveness::alive(&run_dir, o))
        });
        let state = if f.paused {
            FolderState::Paused
        } else if !f.available {
            FolderState::Unavailable
        } else if files.pending > 0 {
            FolderState::Indexing
        } else if watch == Some("polling") {
            FolderState::Polling
        } else if watch == Some("watching") {
            FolderState::Watching
        } else {
            FolderState::Idle
        };
        let watch_reason = f.watch_reason.clone().filter(|_| watch == Some("polling"));
        let chunks_embedded = match self.hearth.inner.embedder.get() {
            Some(e) => crate::folders::vectors::embedded_in_folder(
                &self.hearth.inner.store,
                id,
                e.model_id(),
            )?,
            None => 0,
        };
        Ok(FolderSummary {
            id: f.id,
            path: f.path.clone(),
            state,
            files,
            chunks: chunks.max(0) as u64,
            chunks_embedded,
            last_indexed: f.last_indexed,
            watch_reason,
            writable: f.writable,
        })
    }

    /// The indexed passage of chunk `id` (a search hit, an answer's source), with its text.
    /// `not_found` when it is gone: its file changed, was deleted or its folder removed.
    pub fn passage(&self, id: i64) -> Result<PassageView> {
        crate::folders::cite::passage(&self.hearth.inner.store, id)?.ok_or_else(|| {
            Error::NotFound(
                "this passage is no longer indexed: its file changed or is gone".to_owned(),
            )
        })
    }

    /// The file of chunk `id`, for the user to open or reveal: only a regular file that,
    /// links resolved, is still inside its watched folder (never what a link points to
    /// elsewhere, never a path the caller makes up).
    pub fn file_of(&self, id: i64) -> Result<std::path::PathBuf> {
        let p = self.passage(id)?;
        let gone = || Error::NotFound(format!("{} is no longer there", p.path));
        let root = std::fs::canonicalize(&p.folder).map_err(|_| gone())?;
        let file = std::fs::canonicalize(&p.path).map_err(|_| gone())?;
        if !file.starts_with(&root) {
            return Err(Error::InvalidInput(format!(
                "{} now leads outside its watched folder; Hearth will not open it",
                p.path
            )));
        }
        match std::fs::metadata(&file) {
            Ok(m) if m.is_file() => Ok(file),
            _ => Err(gone()),
        }
    }

    /// What "Open" on a citation does with chunk `id`'s file: `(path, reveal)` — opened
    /// with the OS's default app only when it is a document; a launcher or executable
    /// (`.bat`, `.desktop`, `.url`, an execute bit, …: `folders::rule::is_launcher`) is
    /// shown in its folder instead, whatever was asked (`reveal` true).
    pub fn open_target(&self, id: i64, reveal: bool) -> Result<(std::path::PathBuf, bool)> {
        let file = self.file_of(id)?;
        let launcher = crate::folders::rule::is_launcher(&file);
        if launcher && !reveal {
            tracing::info!("a cited file of a launcher type is shown in its folder, not opened");
        }
        Ok((file, reveal || launcher))
    }

    /// How many folders are watched, and how many of them are paused (the tray's
    /// "Pause indexing": ticked when all are, greyed out with none).
    pub fn paused_counts(&self) -> Result<(usize, usize)> {
        let list = self.folders().list()?;
        Ok((list.len(), list.iter().filter(|f| f.paused).count()))
    }

    /// "Pause indexing" from the tray: pauses every folder, or resumes them all when all
    /// are paused. Returns whether indexing is now paused.
    pub fn toggle_pause_all(&self) -> Result<bool> {
        let (all, paused) = self.paused_counts()?;
        let pause = !(all > 0 && paused == all);
        self.set_paused(None, pause)?;
        Ok(pause)
    }

    /// The entries the walk met in the folder at `path` (all statuses, or only `status`).
    pub fn files(&self, path: &Path, status: Option<FileStatus>) -> Result<Vec<FileRow>> {
        self.folders().files(path, status)
    }

    /// Pauses or resumes the folder at `path`, or every folder. Persisted.
    pub fn set_paused(&self, path: Option<&Path>, paused: bool) -> Result<Vec<Folder>> {
        let folders = self.folders();
        let targets = match path {
            Some(p) => vec![p.to_path_buf()],
            None => folders.list()?.into_iter().map(|f| f.path.into()).collect(),
        };
        let changed = targets
            .iter()
            .map(|p| folders.set_paused(p, paused))
            .collect::<Result<Vec<_>>>()?;
        if !paused {
            self.queue_ingest()?;
        }
        Ok(changed)
    }

    /// Lets tools create, change and delete files in the watched folder at `path`, or no
    /// longer (the Folders screen's toggle). Making it writable lowers caution: the user
    /// confirms it on `surface` first (the app's consent window, the terminal, or
    /// `--yes`), else `confirmation_required` and nothing changes. Read-only again is never
    /// asked.
    pub async fn set_writable(
        &self,
        path: &Path,
        writable: bool,
        surface: &dyn crate::tools::gate::Consent,
    ) -> Result<()> {
        let folders = self.folders();
        // Unknown folders are refused before anyone is asked.
        folders.require(path)?;
        if writable {
            crate::tools::gate::confirm(surface, &Self::writable_act(path)).await?;
        }
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || folders.set_writable_at(&path, writable).map(|_| ()))
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }

    /// The reconcile pass over every folder: changes made while nothing ran are noticed.
    pub fn scan(&self) -> Result<ScanReport> {
        let folders = self.folders();
        let mut total = ScanReport::default();
        for f in folders.list()? {
            let r = folders.reconcile(&f)?;
            total.seen += r.seen;
            total.queued += r.queued;
            total.removed += r.removed;
            total.moved += r.moved;
            total.skipped += r.skipped;
            total.unavailable |= r.unavailable;
        }
        Ok(total)
    }

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
    fn embed_all(
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

    /// Queues the ingest job (which embeds after indexing) when chunks lack a vector from
    /// `model`: the embedding model changed. Returns whether it did.
    pub(super) fn queue_vectors(&self, model: &str) -> Result<bool> {
        let (done, total) = crate::folders::vectors::counts(&self.hearth.inner.store, model)?;
        if done >= total {
            return Ok(false);
        }
        self.queue_ingest()?;
        Ok(true)
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
                        Some(*o) != me.as_deref() && super::liveness::alive(&run_dir, o)
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
    fn drain(
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

    /// Runs the queue here if no other process does (the ingest job). Returns how many
    /// files were handled; `None` when another process holds the indexer's lock.
    pub(super) fn run_queue(&self, stop: &dyn Fn() -> bool) -> Result<Option<u64>> {
        let lock_path = self.hearth.inner.store.data_dir().index_lock_path();
        let Some(_lock) = IndexLock::try_acquire(&lock_path)? else {
            return Ok(None);
        };
        let worker = IndexOptions::default().worker()?;
        let mut indexer = Indexer::new(self.hearth.inner.store.clone(), worker, Limits::default());
        let events = self.hearth.inner.events.clone();
        let report = indexer.run(stop, &mut |p| {
            let _ = events.send(crate::events::Event::IndexProgress {
                done: p.done,
                total: p.total,
            });
        })?;
        drop(indexer);
        drop(_lock);
        // Then vectors, at the embedder's speed; keyword search works meanwhile.
        self.embed_all(&lock_path, false, stop, &mut |_| {})?;
        Ok(Some(report.indexed + report.skipped + report.failed))
    }

    fn runnable_pending(&self) -> Result<u64> {
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

    /// Searches the indexed chunks `scope` lets through, for at most `limit` passages
    /// ([`SEARCH_RESULTS`] when `None`; always 1 to [`SEARCH_RESULTS_MAX`]). Hybrid falls
    /// back to keyword search, saying so, while chunks have no vectors.
    pub fn search(
        &self,
        text: &str,
        limit: Option<usize>,
        mode: Mode,
        scope: &SearchScope<'_>,
    ) -> Result<Found> {
        let k = limit.unwrap_or(SEARCH_RESULTS).clamp(1, SEARCH_RESULTS_MAX);
        let folder_id = match scope.folder {
            Some(p) => Some(
                self.folders()
                    .find(p)?
                    .ok_or_else(|| {
                        Error::NotFound(format!("{} is not a watched folder", p.display()))
                    })?
                    .id,
            ),
            None => None,
        };
        let filter = crate::folders::search::Filter {
            folder: folder_id,
            extension: scope.extension.map(str::to_owned),
            modified_since: scope.modified_since,
        };
        let store = &self.hearth.inner.store;
        let embedder = self.hearth.inner.embedder.get();
        let with_vectors = match &embedder {
            Some(e) => crate::folders::vectors::any(store, e.model_id())?,
            None => false,
        };
        let no_vectors = if embedder.is_none() {
            "no embedding model is available"
        } else {
            "no chunk has a vector yet"
        };
        match (mode, embedder) {
            (Mode::Bm25, _) => Ok(Found {
                mode: Mode::Bm25,
                warning: None,
                results: crate::folders::search::keyword(store, text, k, &filter)?,
            }),
            (Mode::Hybrid, Some(e)) if with_vectors => {
                let q = e.embed_query(text)?;
                Ok(Found {
                    mode: Mode::Hybrid,
                    warning: None,
                    results: crate::folders::search::hybrid(
                        store,
                        text,
                        e.model_id(),
                        &q,
                        k,
                        &filter,
                    )?,
                })
            }
            (Mode::Vector, Some(e)) if with_vectors => {
                let q = e.embed_query(text)?;
                Ok(Found {
                    mode: Mode::Vector,
                    warning: None,
                    results: crate::folders::search::vector(store, e.model_id(), &q, k, &filter)?,
                })
            }
            (Mode::Hybrid, _) => Ok(Found {
                mode: Mode::Bm25,
                warning: Some(format!(
                    "{no_vectors}: these are keyword (bm25) results only"
                )),
                results: crate::folders::search::keyword(store, text, k, &filter)?,
            }),
            (Mode::Vector, _) => Ok(Found {
                mode: Mode::Vector,
                warning: Some(format!("{no_vectors}: vector search finds nothing")),
                results: Vec::new(),
            }),
        }
    }

    /// Queues the ingest job unless one is already waiting.
    fn queue_ingest(&self) -> Result<()> {
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
