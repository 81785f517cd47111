//! The walk of one watched folder: every entry that is not ignored, classified from its
//! metadata alone (never opened). Ignored: what `.gitignore`, `.ignore` and `.hearthignore`
//! files say (the `ignore` crate, as ripgrep reads them), hidden files and folders, and the
//! usual build and dependency folders ([`DEFAULT_IGNORED_DIRS`]). Links are never followed:
//! one resolving outside the folder is `symlink_outside` (a later `search_documents` must not
//! serve `~/.ssh` through a link), a loop `symlink_loop`; FIFOs, sockets and devices are
//! `not_regular`; a file over the size cap is `too_large`.

use std::path::Path;

use super::Reason;
use crate::time::Millis;

/// Folders never walked into, wherever they are: version control, dependencies and build
/// output, which are large and not the user's writing.
pub const DEFAULT_IGNORED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "target",
    "build",
    "dist",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
];

/// Files larger than this are skipped as `too_large` (SPEC §5: 50 MB by default).
pub const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;

/// What the walk made of an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A regular file to extract.
    File,
    /// Not indexed, and why.
    Skipped(Reason, String),
}

/// One entry the walk met.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Relative to the folder, `/`-separated.
    pub rel_path: String,
    pub size: Option<u64>,
    pub mtime: Option<Millis>,
    /// `device:inode` where the OS has one.
    pub file_id: Option<String>,
    pub found: Found,
}

fn mtime(m: &std::fs::Metadata) -> Option<Millis> {
    let t = m.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    Some(format!("{}:{}", m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<String> {
    None
}

#[cfg(unix)]
fn is_special(t: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    t.is_fifo() || t.is_socket() || t.is_block_device() || t.is_char_device()
}

#[cfg(not(unix))]
fn is_special(t: &std::fs::FileType) -> bool {
    !t.is_file() && !t.is_dir() && !t.is_symlink()
}

/// Whether resolving a link failed because it loops.
fn is_loop(e: &std::io::Error) -> bool {
    #[cfg(target_os = "linux")]
    const ELOOP: i32 = 40;
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    const ELOOP: i32 = 62;
    #[cfg(not(any(
        target_os = "linux",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd"
    )))]
    const ELOOP: i32 = -1;
    e.raw_os_error() == Some(ELOOP)
}

/// Classifies a link at `path` inside `root` (canonical) without following it anywhere.
fn classify_link(root: &Path, path: &Path) -> Found {
    match std::fs::canonicalize(path) {
        Err(e) if is_loop(&e) => Found::Skipped(
            Reason::SymlinkLoop,
            "a link that leads back to itself".into(),
        ),
        Err(_) => Found::Skipped(Reason::Unreadable, "a link to nothing".into()),
        Ok(target) if !target.starts_with(root) => Found::Skipped(
            Reason::SymlinkOutside,
            "a link to something outside this folder; it is never read".into(),
        ),
        Ok(target) if target.is_dir() => Found::Skipped(
            Reason::NotRegular,
            "a link to a folder inside this one; its files are indexed where they are".into(),
        ),
        Ok(_) => Found::Skipped(
            Reason::NotRegular,
            "a link to a file inside this folder; the file is indexed where it is".into(),
        ),
    }
}

/// The path an `ignore` error is about, if it names one.
fn error_path(e: &ignore::Error) -> Option<&Path> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child),
        _ => None,
    }
}

fn relative(root: &Path, path: &Path) -> Option<(String, bool)> {
    let rel = path.strip_prefix(root).ok()?;
    let utf8 = rel.to_str().is_some();
    let text = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    Some((text, utf8))
}

/// Walks `root` (canonical): every entry that is not ignored and not a folder, sorted by
/// path. Reads metadata only.
pub fn walk(root: &Path, max_bytes: u64) -> Vec<Entry> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .add_custom_ignore_filename(".hearthignore")
        // The rule the file tools apply too (`rule`): hidden names, dependency and build
        // folders, the platform's secret places, the Windows hidden/system attribute.
        .filter_entry(|e| {
            if e.depth() == 0 {
                return true;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            let parent = e.path().parent().unwrap_or(e.path());
            super::rule::excluded_name(&e.file_name().to_string_lossy(), is_dir, parent).is_none()
                && !super::rule::hidden_by_attribute(e.path())
        })
        .build();
    for item in walker {
        let entry = match item {
            Ok(entry) => entry,
            Err(e) => {
                // A folder that cannot be read: say so on its own row.
                if let Some((rel, _)) = error_path(&e).and_then(|p| relative(root, p))
                    && !rel.is_empty()
                {
                    out.push(Entry {
                        rel_path: rel,
                        size: None,
                        mtime: None,
                        file_id: None,
                        found: Found::Skipped(Reason::Unreadable, "could not be read".into()),
                    });
                } else {
                    tracing::warn!("a watched folder has an entry that could not be read");
                }
                continue;
            }
        };
        let path = entry.path();
        let Some((rel_path, utf8)) = relative(root, path) else {
            continue;
        };
        if rel_path.is_empty() {
            continue;
        }
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            continue;
        }
        let meta = std::fs::symlink_metadata(path).ok();
        let (size, mtime, file_id) = match &meta {
            Some(m) => (Some(m.len()), mtime(m), file_id(m)),
            None => (None, None, None),
        };
        let found = if !utf8 {
            Found::Skipped(Reason::Unreadable, "its name is not valid UTF-8".into())
        } else if kind.is_symlink() {
            classify_link(root, path)
        } else if is_special(&kind) {
            Found::Skipped(
                Reason::NotRegular,
                "not a regular file (a pipe, socket or device); never opened".into(),
            )
        } else if meta.is_none() {
            Found::Skipped(Reason::Unreadable, "its details could not be read".into())
        } else if size.is_some_and(|s| s > max_bytes) {
            Found::Skipped(
                Reason::TooLarge,
                format!("larger than {} MB", max_bytes / (1024 * 1024)),
            )
        } else {
            Found::File
        };
        out.push(Entry {
            rel_path,
            size,
            mtime,
            file_id,
            found,
        });
    }
    out.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    out
}
