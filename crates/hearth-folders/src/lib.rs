//! hearth-folders — watched folders: the folders the user picked, and every entry
//! the walk meets in them with its state. `add` canonicalizes and registers a folder
//! (the same id on re-add; a folder inside or around a watched one is refused, naming it);
//! [`Folders::reconcile`] walks a folder ([`walk`]) and brings its rows up to date — new
//! and changed files become `pending`, files that went are removed, what cannot be indexed
//! is `skipped` with a fixed reason — so changes made while nothing ran are noticed.
//! [`index`] takes the pending files: the extraction worker ([`worker`], a child process
//! running [`extract`] and [`chunk`]) reads each, and its chunks are committed with their
//! FTS rows in one transaction; [`search`] finds them.
//!
//! **Invariant:** the app's process never parses a file's content (that is the extraction
//! worker's, in a child process); the walk reads metadata only, and never follows a link
//! out of the folder.
//!
//! **Never depends on** a provider, memory, tools, chat or the engine (its Hearth
//! dependencies are `hearth-base`, `hearth-store`, `hearth-embed` and `hearth-text`): what
//! a file says is data to index and cite, and nothing here can send it to a model or act
//! on it. Kept by this crate's `Cargo.toml`.

pub mod chunk;
pub mod cite;
pub mod extract;
pub mod index;
pub mod lexical;
pub mod rule;
pub mod search;
pub mod vector_index;
pub mod vectors;
pub mod walk;
pub mod watch;
pub mod worker;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

pub use walk::{DEFAULT_IGNORED_DIRS, Entry, Found, MAX_FILE_BYTES};

use hearth_base::{Error, Result, failpoint, time};
use hearth_embed as embed;
use hearth_store::{self as store, audit};
use hearth_text::{rank, tokens};

use crate::store::Store;
use crate::time::{Millis, now_millis};

/// A file's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Indexed,
    Pending,
    Skipped,
    Failed,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Indexed => "indexed",
            FileStatus::Pending => "pending",
            FileStatus::Skipped => "skipped",
            FileStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "indexed" => FileStatus::Indexed,
            "pending" => FileStatus::Pending,
            "skipped" => FileStatus::Skipped,
            "failed" => FileStatus::Failed,
            other => {
                return Err(Error::InvalidInput(format!(
                    "unknown status {other:?} (indexed, pending, skipped or failed)"
                )));
            }
        })
    }
}

/// Why a file is skipped or failed: a fixed code (`docs/cli.md`), with a message beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    TooLarge,
    Binary,
    Encrypted,
    Corrupt,
    Unreadable,
    SymlinkLoop,
    SymlinkOutside,
    NotRegular,
    Timeout,
    Unsupported,
    NoText,
    Empty,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::TooLarge => "too_large",
            Reason::Binary => "binary",
            Reason::Encrypted => "encrypted",
            Reason::Corrupt => "corrupt",
            Reason::Unreadable => "unreadable",
            Reason::SymlinkLoop => "symlink_loop",
            Reason::SymlinkOutside => "symlink_outside",
            Reason::NotRegular => "not_regular",
            Reason::Timeout => "timeout",
            Reason::Unsupported => "unsupported",
            Reason::NoText => "no_text",
            Reason::Empty => "empty",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "too_large" => Reason::TooLarge,
            "binary" => Reason::Binary,
            "encrypted" => Reason::Encrypted,
            "corrupt" => Reason::Corrupt,
            "unreadable" => Reason::Unreadable,
            "symlink_loop" => Reason::SymlinkLoop,
            "symlink_outside" => Reason::SymlinkOutside,
            "not_regular" => Reason::NotRegular,
            "timeout" => Reason::Timeout,
            "unsupported" => Reason::Unsupported,
            "no_text" => Reason::NoText,
            "empty" => Reason::Empty,
            _ => return None,
        })
    }
}

/// A watched folder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Folder {
    pub id: i64,
    /// Canonical and absolute.
    pub path: String,
    pub paused: bool,
    /// False while the path is gone (an unmounted drive): its index is kept.
    pub available: bool,
    pub added_at: Millis,
    pub scanned_at: Option<Millis>,
    pub last_indexed: Option<Millis>,
    /// How it is watched, as the watching process last wrote it: `watching`, `polling`
    /// (with why) or none; `watch_owner` is that process's liveness id.
    pub watch: Option<String>,
    pub watch_reason: Option<String>,
    pub watch_owner: Option<String>,
    /// Tools may create, change and delete files here (`folders add --writable`).
    pub writable: bool,
}

/// How many of a folder's files are in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FileCounts {
    pub indexed: u64,
    pub pending: u64,
    pub skipped: u64,
    pub failed: u64,
}

/// One entry the walk met, as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileRow {
    /// Absolute.
    pub path: String,
    pub status: FileStatus,
    pub reason_code: Option<Reason>,
    pub message: Option<String>,
    pub size: Option<u64>,
}

/// What a reconcile pass changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ScanReport {
    /// Entries the walk met (not ignored).
    pub seen: u64,
    /// New or changed files, now pending.
    pub queued: u64,
    /// Rows of files that are gone.
    pub removed: u64,
    /// Files renamed or moved inside the folder: their rows moved, nothing re-read.
    pub moved: u64,
    /// Entries skipped, with their reason.
    pub skipped: u64,
    /// The folder's path was gone: nothing was changed, its index is kept.
    pub unavailable: bool,
}

/// A file row as read: relative path, status, reason, message, size.
type StoredRow = (String, String, Option<String>, Option<String>, Option<i64>);

/// What a reconcile pass compares: size, mtime, file id, and the status.
type Fingerprint = (Option<i64>, Option<i64>, Option<String>, String);

/// The watched folders in the store.
#[derive(Clone)]
pub struct Folders {
    store: Store,
}

const FOLDER_COLUMNS: &str = "id, path, paused, available, added_at, scanned_at, last_indexed, watch, watch_reason, watch_owner, writable";

fn row_to_folder(r: &rusqlite::Row<'_>) -> rusqlite::Result<Folder> {
    Ok(Folder {
        id: r.get(0)?,
        path: r.get(1)?,
        paused: r.get(2)?,
        available: r.get(3)?,
        added_at: r.get(4)?,
        scanned_at: r.get(5)?,
        last_indexed: r.get(6)?,
        watch: r.get(7)?,
        watch_reason: r.get(8)?,
        watch_owner: r.get(9)?,
        writable: r.get(10)?,
    })
}

/// `path` made absolute and canonical, and checked to be a folder.
fn canonical_folder(path: &Path) -> Result<PathBuf> {
    let canonical = std::fs::canonicalize(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::InvalidInput(format!("{} does not exist", path.display()))
        }
        _ => Error::io(path, e),
    })?;
    if !canonical.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{} is a file, not a folder; add the folder it is in",
            path.display()
        )));
    }
    if canonical.to_str().is_none() {
        return Err(Error::InvalidInput(format!(
            "{} has a name that is not UTF-8; Hearth cannot watch it",
            path.display()
        )));
    }
    Ok(canonical)
}

impl Folders {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Registers `path` (canonicalized): the same folder again gives the same id. A missing
    /// path, a file, or a folder inside or around a watched one is refused with a clear
    /// error (watching both would index the same files twice).
    pub fn add(&self, path: &Path) -> Result<Folder> {
        let canonical = canonical_folder(path)?;
        let text = canonical.to_string_lossy().into_owned();
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            if let Some(f) = tx
                .query_row(
                    &format!("SELECT {FOLDER_COLUMNS} FROM folders WHERE path = ?1"),
                    [&text],
                    row_to_folder,
                )
                .optional()?
            {
                return Ok(Ok(f));
            }
            let others: Vec<String> = tx
                .prepare("SELECT path FROM folders")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let new = Path::new(&text);
            for other in others {
                let o = Path::new(&other);
                if new.starts_with(o) {
                    return Ok(Err(Error::InvalidInput(format!(
                        "{text} is inside {other}, which is already watched"
                    ))));
                }
                if o.starts_with(new) {
                    return Ok(Err(Error::InvalidInput(format!(
                        "{text} contains {other}, which is already watched; remove it first"
                    ))));
                }
            }
            tx.execute(
                "INSERT INTO folders (path, added_at) VALUES (?1, ?2)",
                params![text, now_millis()],
            )?;
            let f = tx.query_row(
                &format!("SELECT {FOLDER_COLUMNS} FROM folders WHERE id = last_insert_rowid()"),
                [],
                row_to_folder,
            )?;
            tx.commit()?;
            Ok(Ok(f))
        })?
    }

    /// Makes folder `id` writable for tools, or not.
    pub fn set_writable(&self, id: i64, writable: bool) -> Result<()> {
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let n = tx.execute(
                "UPDATE folders SET writable = ?2 WHERE id = ?1 AND writable <> ?2",
                params![id, writable],
            )?;
            // Making a folder writable lowers caution: an audit entry either way (the path
            // is the payload, never the summary).
            if n > 0 {
                let path: String =
                    tx.query_row("SELECT path FROM folders WHERE id = ?1", [id], |r| r.get(0))?;
                crate::audit::append(
                    &tx,
                    &crate::audit::NewEntry {
                        kind: "folder",
                        summary: serde_json::json!({"op": "set_writable", "folder": id, "writable": writable}),
                        payload: serde_json::json!({"path": path}),
                        keep_payload: true,
                        conversation: None,
                        memory: None,
                    },
                )?;
            }
            tx.commit()
        })
    }

    /// Records how folder `id` is watched (`watching`, `polling` or none) by the process
    /// with liveness id `owner`.
    pub fn set_watch(
        &self,
        id: i64,
        watch: Option<&str>,
        reason: Option<&str>,
        owner: Option<&str>,
    ) -> Result<()> {
        let (watch, reason, owner) = (
            watch.map(str::to_owned),
            reason.map(str::to_owned),
            owner.map(str::to_owned),
        );
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE folders SET watch = ?2, watch_reason = ?3, watch_owner = ?4 WHERE id = ?1",
                params![id, watch, reason, owner],
            )
            .map(|_| ())
        })
    }

    /// Every watched folder, in the order added.
    pub fn list(&self) -> Result<Vec<Folder>> {
        self.store.read_blocking(|c| {
            let mut stmt =
                c.prepare(&format!("SELECT {FOLDER_COLUMNS} FROM folders ORDER BY id"))?;
            let rows = stmt.query_map([], row_to_folder)?;
            rows.collect()
        })
    }

    /// The watched folder at `path` (as given or canonical), if any.
    pub fn find(&self, path: &Path) -> Result<Option<Folder>> {
        let text = std::fs::canonicalize(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .to_string_lossy()
            .into_owned();
        let given = path.to_string_lossy().into_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                &format!("SELECT {FOLDER_COLUMNS} FROM folders WHERE path = ?1 OR path = ?2"),
                params![text, given],
                row_to_folder,
            )
            .optional()
        })
    }

    pub fn require(&self, path: &Path) -> Result<Folder> {
        self.find(path)?
            .ok_or_else(|| Error::NotFound(format!("{} is not a watched folder", path.display())))
    }

    /// Stops watching the folder at `path`; its rows (derived data only) go with it.
    pub fn remove(&self, path: &Path) -> Result<Folder> {
        let folder = self.require(path)?;
        let id = folder.id;
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            // Chunks go with their files (ON DELETE CASCADE), their FTS rows by trigger.
            tx.execute(
                "DELETE FROM chunks WHERE file_id IN (SELECT id FROM folder_files WHERE folder_id = ?1)",
                [id],
            )?;
            tx.execute("DELETE FROM folder_files WHERE folder_id = ?1", [id])?;
            tx.execute("DELETE FROM folders WHERE id = ?1", [id])?;
            // Rewrite the index's segments so no term of the removed text stays in them.
            tx.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')", [])?;
            tx.commit()
        })?;
        self.store.checkpoint_wal();
        Ok(folder)
    }

    /// Pauses or resumes the folder at `path` (persisted).
    pub fn set_paused(&self, path: &Path, paused: bool) -> Result<Folder> {
        let folder = self.require(path)?;
        let id = folder.id;
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE folders SET paused = ?1 WHERE id = ?2",
                params![paused, id],
            )
        })?;
        Ok(Folder { paused, ..folder })
    }

    /// Makes the watched folder at `path` writable for tools, or not (`not_found` if it is
    /// not watched).
    pub fn set_writable_at(&self, path: &Path, writable: bool) -> Result<Folder> {
        let folder = self.require(path)?;
        self.set_writable(folder.id, writable)?;
        Ok(Folder { writable, ..folder })
    }

    /// Counts of a folder's files by status.
    pub fn counts(&self, folder: i64) -> Result<FileCounts> {
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT status, count(*) FROM folder_files WHERE folder_id = ?1 GROUP BY status",
            )?;
            let mut counts = FileCounts::default();
            let rows = stmt.query_map([folder], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?;
            for row in rows {
                let (status, n) = row?;
                let n = n.max(0) as u64;
                match status.as_str() {
                    "indexed" => counts.indexed = n,
                    "pending" => counts.pending = n,
                    "skipped" => counts.skipped = n,
                    _ => counts.failed = n,
                }
            }
            Ok(counts)
        })
    }

    /// The entries the walk met in the folder at `path`, by path; only those in `status`
    /// when given.
    pub fn files(&self, path: &Path, status: Option<FileStatus>) -> Result<Vec<FileRow>> {
        let folder = self.require(path)?;
        let root = PathBuf::from(&folder.path);
        let rows: Vec<StoredRow> = self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT rel_path, status, reason_code, message, size FROM folder_files
                      WHERE folder_id = ?1 AND (?2 IS NULL OR status = ?2) ORDER BY rel_path",
            )?;
            let rows = stmt.query_map(params![folder.id, status.map(|s| s.as_str())], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?;
            rows.collect()
        })?;
        Ok(rows
            .into_iter()
            .map(|(rel, status, reason, message, size)| FileRow {
                path: root.join(rel).to_string_lossy().into_owned(),
                status: FileStatus::parse(&status).unwrap_or(FileStatus::Failed),
                reason_code: reason.as_deref().and_then(Reason::parse),
                message,
                size: size.map(|s| s.max(0) as u64),
            })
            .collect())
    }

    /// The reconcile pass over one folder: walks it and brings its rows up to date. New
    /// files and files whose size, mtime or file id changed become `pending`; rows of
    /// entries that are gone are removed; what cannot be indexed is `skipped` with its
    /// reason. A folder whose path is gone is marked unavailable and keeps its rows.
    pub fn reconcile(&self, folder: &Folder) -> Result<ScanReport> {
        let root = PathBuf::from(&folder.path);
        let id = folder.id;
        if !root.is_dir() {
            self.store.write_blocking(move |c| {
                c.execute("UPDATE folders SET available = 0 WHERE id = ?1", [id])
            })?;
            return Ok(ScanReport {
                unavailable: true,
                ..ScanReport::default()
            });
        }
        let found = walk::walk(&root, MAX_FILE_BYTES);
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let known: HashMap<String, Fingerprint> = {
                let mut stmt = tx.prepare(
                    "SELECT rel_path, size, mtime, file_id, status FROM folder_files WHERE folder_id = ?1",
                )?;
                let rows = stmt.query_map([id], |r| {
                    Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                })?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let mut report = ScanReport::default();
            let mut seen = std::collections::HashSet::new();
            for entry in &found {
                seen.insert(entry.rel_path.clone());
            }
            // Rows whose entry went, by file id: a new path with the same file id, size
            // and mtime is the same file renamed or moved, and its row (chunks, vectors)
            // moves with it instead of being indexed again.
            let mut gone: HashMap<String, (String, Option<i64>, Option<i64>)> = known
                .iter()
                .filter(|(rel, _)| !seen.contains(*rel))
                .filter_map(|(rel, k)| Some((k.2.clone()?, (rel.clone(), k.0, k.1))))
                .collect();
            let mut moved_from = std::collections::HashSet::new();
            for entry in &found {
                report.seen += 1;
                let size = entry.size.map(|s| s as i64);
                match entry.found {
                    Found::File => {
                        let unchanged = known.get(&entry.rel_path).is_some_and(|k| {
                            k.0 == size
                                && k.1 == entry.mtime
                                && k.2 == entry.file_id
                                && k.3 != "skipped"
                        });
                        if unchanged {
                            continue;
                        }
                        if !known.contains_key(&entry.rel_path)
                            && let Some(fid) = &entry.file_id
                            && let Some((old, osize, omtime)) = gone.get(fid)
                            && *osize == size
                            && *omtime == entry.mtime
                        {
                            tx.execute(
                                "UPDATE folder_files SET rel_path = ?1 WHERE folder_id = ?2 AND rel_path = ?3",
                                params![entry.rel_path, id, old],
                            )?;
                            moved_from.insert(old.clone());
                            gone.remove(fid);
                            report.moved += 1;
                            continue;
                        }
                        report.queued += 1;
                        tx.execute(
                            "INSERT INTO folder_files (folder_id, rel_path, size, mtime, file_id, hash, status, reason_code, message)
                             VALUES (?1, ?2, ?3, ?4, ?5, NULL, 'pending', NULL, NULL)
                             ON CONFLICT (folder_id, rel_path) DO UPDATE SET size = ?3, mtime = ?4,
                               file_id = ?5, status = 'pending', reason_code = NULL, message = NULL",
                            params![id, entry.rel_path, size, entry.mtime, entry.file_id],
                        )?;
                    }
                    Found::Skipped(reason, ref message) => {
                        report.skipped += 1;
                        tx.execute(
                            "INSERT INTO folder_files (folder_id, rel_path, size, mtime, file_id, hash, status, reason_code, message)
                             VALUES (?1, ?2, ?3, ?4, ?5, NULL, 'skipped', ?6, ?7)
                             ON CONFLICT (folder_id, rel_path) DO UPDATE SET size = ?3, mtime = ?4,
                               file_id = ?5, hash = NULL, status = 'skipped', reason_code = ?6, message = ?7, chunks = 0",
                            params![id, entry.rel_path, size, entry.mtime, entry.file_id, reason.as_str(), message],
                        )?;
                        tx.execute(
                            "DELETE FROM chunks WHERE file_id = (SELECT id FROM folder_files WHERE folder_id = ?1 AND rel_path = ?2)",
                            params![id, entry.rel_path],
                        )?;
                    }
                }
            }
            for rel in known.keys().filter(|k| !seen.contains(*k) && !moved_from.contains(*k)) {
                // Its chunks go with it (ON DELETE CASCADE), their FTS rows by trigger.
                tx.execute(
                    "DELETE FROM folder_files WHERE folder_id = ?1 AND rel_path = ?2",
                    params![id, rel],
                )?;
                report.removed += 1;
            }
            tx.execute(
                "UPDATE folders SET available = 1, scanned_at = ?1 WHERE id = ?2",
                params![now_millis(), id],
            )?;
            tx.commit()?;
            Ok(report)
        })
    }
}

#[cfg(test)]
mod tests;
