//! Where a file tool may reach: a path the model gives, resolved (after every symlink)
//! inside a watched folder — and, for a tool that changes files, a folder the user made
//! writable. Anything else is refused with a message the model can act on.
//!
//! The rules: no `..` component at all (even one that would stay inside); an absolute path
//! must be inside a watched folder; a relative one is taken relative to the watched folder
//! it exists in (or, for a new file, whose folder holds its parent), and must be
//! unambiguous; what the indexer does not read (`folders::rule`: hidden, ignored, a
//! secret place) is marked `excluded`, and the gate asks before any tool touches it, so
//! watching `~` does not silently expose `~/.ssh`. The resolution
//! is done again immediately before a call runs (`Resolved::still_valid`), so a parent
//! swapped for a symlink after the user approved is refused.

use std::path::{Component, Path, PathBuf};

use crate::folders::Folder;

/// What a tool does with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads an existing file or folder.
    Read,
    /// Creates a new entry (the parent must exist; the entry must not).
    Create,
    /// Changes or removes an existing entry.
    Change,
}

/// A path resolved inside a watched folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, with every symlink of its existing part resolved.
    pub path: PathBuf,
    /// The watched folder it is in.
    pub folder: PathBuf,
    given: String,
    access: Access,
    /// Why Hearth does not read it on its own (hidden, ignored, a secret place): the call
    /// then asks, whatever its tier, grants or `--allow-writes`.
    pub excluded: Option<String>,
}

impl Resolved {
    /// Resolves the same path again against `folders`: the call runs only if it still
    /// lands on the same place (nothing was swapped for a link since it was shown).
    pub fn still_valid(&self, folders: &[Folder]) -> Result<(), String> {
        let again = resolve(&self.given, folders, self.access)?;
        if again.path != self.path {
            return Err(format!(
                "{} changed since it was checked (it now resolves to another place); \
                 the call was not run",
                self.given
            ));
        }
        Ok(())
    }
}

/// Resolves `given` for `access` among the watched `folders`.
pub fn resolve(given: &str, folders: &[Folder], access: Access) -> Result<Resolved, String> {
    let given_path = Path::new(given);
    if given.trim().is_empty() {
        return Err("the path is empty; give a file's path inside a watched folder".into());
    }
    if given.contains('\0') {
        return Err("the path contains a NUL character".into());
    }
    if given_path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "{given}: `..` is not allowed in paths; give the path inside a watched folder"
        ));
    }
    if folders.is_empty() {
        return Err(
            "no folder is watched, so no file can be reached; the user can add one \
                    on the Folders screen or with `hearth folders add`"
                .into(),
        );
    }
    let candidates: Vec<(PathBuf, &Folder)> = if given_path.is_absolute() {
        folders
            .iter()
            .filter(|f| given_path.starts_with(&f.path) || within_canonical(given_path, f))
            .map(|f| (given_path.to_path_buf(), f))
            .collect()
    } else {
        let rel = given_path
            .components()
            .filter(|c| *c != Component::CurDir)
            .collect::<PathBuf>();
        folders
            .iter()
            .map(|f| (Path::new(&f.path).join(&rel), f))
            .filter(|(p, _)| match access {
                Access::Create => p.parent().is_some_and(Path::exists),
                _ => p.symlink_metadata().is_ok(),
            })
            .collect()
    };
    let (joined, folder) = match candidates.as_slice() {
        [] if given_path.is_absolute() => {
            return Err(format!(
                "{given} is outside every watched folder; tools reach only files in: {}",
                names(folders)
            ));
        }
        [] => {
            return Err(format!(
                "{given} was not found in any watched folder ({})",
                names(folders)
            ));
        }
        [one] => one.clone(),
        _ => {
            return Err(format!(
                "{given} exists in more than one watched folder; give its absolute path"
            ));
        }
    };
    let root = std::fs::canonicalize(&folder.path)
        .map_err(|e| format!("the watched folder {} cannot be reached: {e}", folder.path))?;
    // Resolve what exists: the entry itself (read, change) or its parent (create).
    let path = match access {
        Access::Create => {
            let name = joined
                .file_name()
                .ok_or_else(|| format!("{given} names no file"))?;
            let parent = joined
                .parent()
                .ok_or_else(|| format!("{given} names no file"))?;
            let parent = std::fs::canonicalize(parent)
                .map_err(|e| format!("the folder of {given} cannot be reached: {e}"))?;
            parent.join(name)
        }
        _ => std::fs::canonicalize(&joined).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("{given} does not exist"),
            _ => format!("{given} cannot be reached: {e}"),
        })?,
    };
    if !path.starts_with(&root) || path == root && access != Access::Read {
        return Err(format!(
            "{given} resolves to {}, outside the watched folder {} (through a symbolic link); \
             tools never follow links out of a folder",
            path.display(),
            folder.path
        ));
    }
    if access != Access::Read && !folder.writable {
        return Err(format!(
            "{} is read-only for tools: the user can make it writable on the Folders screen \
             or with `hearth folders add {} --writable`",
            folder.path, folder.path
        ));
    }
    // The one rule of what Hearth reads in a folder (`folders::rule`): an excluded entry
    // is not refused here — the gate asks the user, saying why (never a silent read).
    let excluded = crate::folders::rule::excluded(&root, &path);
    Ok(Resolved {
        path,
        folder: root,
        given: given.to_owned(),
        access,
        excluded,
    })
}

/// True when `path`, canonicalized as far as it exists, is inside `folder` (a watched
/// folder given through a link, e.g. `/tmp` → `/private/tmp` on macOS).
fn within_canonical(path: &Path, folder: &Folder) -> bool {
    let mut existing = path;
    while existing.symlink_metadata().is_err() {
        match existing.parent() {
            Some(p) => existing = p,
            None => return false,
        }
    }
    std::fs::canonicalize(existing).is_ok_and(|p| p.starts_with(&folder.path))
}

/// The watched folders' paths, for messages.
fn names(folders: &[Folder]) -> String {
    folders
        .iter()
        .map(|f| f.path.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
