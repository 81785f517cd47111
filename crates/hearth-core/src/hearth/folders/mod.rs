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

mod indexing;

pub use indexing::WatchingFolders;

/// The job that indexes pending files of watched folders (the ingest lane).
pub const INGEST_JOB: &str = "folder_ingest";

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
    /// How often a folder the system will not watch is checked for changes, in seconds
    /// (the engine's one number, for every front end to show).
    pub poll_every_s: u64,
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

impl IndexOptions {
    /// The extraction worker: the one given, else this binary with the hidden argument.
    fn worker(&self) -> Result<WorkerCommand> {
        match &self.worker {
            Some(w) => Ok(w.clone()),
            None => WorkerCommand::current_exe().map_err(|e| Error::io("current executable", e)),
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
            poll_every_s: crate::folders::watch::FolderWatcher::poll_every()
                .as_millis()
                .div_ceil(1000) as u64,
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
}
