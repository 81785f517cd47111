//! The file work the built-ins share: bounded reads, listings, checked changes, moves that
//! never replace, the trash.

use super::*;

/// A folder's entries, one per line: kind, size, name (hidden and ignored ones left out).
pub(super) fn list(root: &std::path::Path, dir: &std::path::Path) -> std::io::Result<String> {
    let mut rows = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        // What the indexer does not read is not listed either (`folders::rule`).
        if crate::folders::rule::excluded(root, &e.path()).is_some() {
            continue;
        }
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        let kind = if meta.is_dir() {
            "folder"
        } else if meta.is_file() {
            "file"
        } else if meta.file_type().is_symlink() {
            "link"
        } else {
            "other"
        };
        rows.push((kind, meta.len(), name));
    }
    rows.sort_by(|a, b| a.2.cmp(&b.2));
    let total = rows.len();
    let mut out: Vec<String> = rows
        .into_iter()
        .take(LIST_MAX)
        .map(|(k, len, n)| match k {
            "file" => format!("{k}\t{len}\t{n}"),
            _ => format!("{k}\t-\t{n}"),
        })
        .collect();
    if total > LIST_MAX {
        out.push(format!("[{} more not shown]", total - LIST_MAX));
    }
    if out.is_empty() {
        return Ok("(empty)".into());
    }
    Ok(out.join("\n"))
}

/// A file's text, bounded: PDFs, DOCX and web pages through the extraction worker (a
/// child the user's stop kills), anything else as text (binary files refused).
pub(super) fn read_any(
    path: &std::path::Path,
    env: &Env,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<String, String> {
    use crate::folders::extract::{Kind, Limits};
    let kind = match Kind::of(path) {
        Some(k @ (Kind::Pdf | Kind::Docx | Kind::Html)) => k,
        Some(_) => return read_text(path),
        None => {
            return Err(format!(
                "{} is not a document read_file can read (images, media and archives are not)",
                path.display()
            ));
        }
    };
    let command = match &env.worker {
        Some(c) => c.clone(),
        None => crate::folders::worker::WorkerCommand::current_exe()
            .map_err(|e| format!("the document reader could not start: {e}"))?,
    };
    let mut worker = crate::folders::worker::Worker::new(command);
    match worker.extract_text(path, kind, Limits::default(), READ_MAX_BYTES, &|| {
        cancel.is_cancelled()
    }) {
        Ok(Ok((mut text, cut))) => {
            if cut {
                text.push_str(&format!(
                    "\n[the document is longer; only its first {READ_MAX_BYTES} bytes of text are shown]"
                ));
            }
            Ok(text)
        }
        Ok(Err(refusal)) => Err(format!(
            "could not read {}: {}",
            path.display(),
            refusal.message
        )),
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
            Err("the reading was stopped by the user".into())
        }
        Err(e) => Err(format!("could not read {}: {e}", path.display())),
    }
}

/// A file's text, bounded; binary files are refused.
pub(super) fn read_text(path: &std::path::Path) -> Result<String, String> {
    let (buf, cut) = read_prefix(path, READ_MAX_BYTES)?;
    if buf.contains(&0) {
        return Err(format!("{} is a binary file, not text", path.display()));
    }
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if cut {
        text.push_str(&format!(
            "\n[the file is longer; only its first {READ_MAX_BYTES} bytes are shown]"
        ));
    }
    Ok(text)
}

/// The first `max` bytes of a file, and whether there was more.
pub(super) fn read_prefix(path: &std::path::Path, max: usize) -> Result<(Vec<u8>, bool), String> {
    use std::io::Read;
    let f =
        std::fs::File::open(path).map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let mut buf = Vec::new();
    f.take(max as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let cut = buf.len() > max;
    buf.truncate(max);
    Ok((buf, cut))
}


/// The files a delete of `path` removes (a folder's, walked without following links).
pub(super) fn files_under(path: &std::path::Path) -> Vec<String> {
    if !path.is_dir() {
        return vec![path.display().to_string()];
    }
    let mut out = Vec::new();
    let mut count = 0usize;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else {
                count += 1;
                if out.len() < LIST_MAX {
                    out.push(p.display().to_string());
                }
            }
        }
    }
    out.sort();
    if count > out.len() {
        out.push(format!("… and {} more files", count - out.len()));
    }
    if count == 0 {
        out.push(format!("{} (an empty folder)", path.display()));
    }
    out
}

pub(super) fn listing(files: &[String]) -> String {
    files
        .iter()
        .map(|f| format!("  {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The target of an edit or overwrite, and its current text (bounded, text only).
pub(super) fn changeable(given: &str, folders: &[Folder]) -> Result<(Resolved, String), String> {
    let r = resolve(given, folders, Access::Change).map_err(|e| {
        if e.ends_with("does not exist") || e.contains("was not found") {
            format!("{e}; use create_file for a new file")
        } else {
            e
        }
    })?;
    if !r.path.is_file() {
        return Err(format!(
            "{given} is not an existing regular file; use create_file for a new one"
        ));
    }
    let bytes = read_bounded(&r.path, CHANGE_MAX_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{given} is not UTF-8 text; it cannot be edited here"))?;
    if text.contains('\0') {
        return Err(format!("{given} is a binary file, not text"));
    }
    Ok((r, text))
}

pub(super) fn read_bounded(path: &std::path::Path, max: usize) -> Result<Vec<u8>, String> {
    let (buf, cut) = read_prefix(path, max)?;
    if cut {
        return Err(format!(
            "{} is larger than {max} bytes; it cannot be changed here",
            path.display()
        ));
    }
    Ok(buf)
}

pub(super) fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// The change from `old` to `new`, with its diff and the hash of `old`.
pub(super) fn change(target: Resolved, old: &str, new: String) -> Result<Action, String> {
    if old == new {
        return Err("the new content is the same as the file's; nothing to change".into());
    }
    let name = target.path.display().to_string();
    let diff = similar::TextDiff::from_lines(old, new.as_str())
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string();
    Ok(Action::Change(Change {
        old_hash: sha256(old.as_bytes()),
        target,
        new,
        diff,
    }))
}

/// Writes a change if the file still has the content its diff was made from; keeps the
/// file's permissions. Atomic: a crash leaves the old file or the new one.
pub(super) fn apply_change(c: &Change) -> Result<(), String> {
    let path = &c.target.path;
    let now = read_bounded(path, CHANGE_MAX_BYTES)?;
    if sha256(&now) != c.old_hash {
        return Err(format!(
            "{} changed after the user saw this change (its content is no longer the one \
             the diff was made from); nothing was written. Read it again and propose the \
             change again.",
            path.display()
        ));
    }
    let perms = std::fs::metadata(path).map(|m| m.permissions()).ok();
    crate::fsio::write_atomic(path, c.new.as_bytes(), false)
        .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    if let Some(p) = perms {
        let _ = std::fs::set_permissions(path, p);
    }
    Ok(())
}

/// Renames `from` to `to`, failing (never replacing) when `to` exists.
pub(super) fn move_no_replace(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    // Linux `renameat2(RENAME_NOREPLACE)`, macOS `renameatx_np(RENAME_EXCL)`: the kernel
    // refuses an existing destination, with no window between a check and the rename.
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE).map_err(std::io::Error::from)
    }
    // Windows: `MoveFileExW` without `MOVEFILE_REPLACE_EXISTING` fails on an existing
    // destination (`std::fs::rename` passes that flag). Not compiled on these machines.
    #[cfg(windows)]
    {
        use std::os::windows::ffi::OsStrExt;
        let wide = |p: &std::path::Path| -> Vec<u16> {
            p.as_os_str()
                .encode_wide()
                .chain(std::iter::once(0))
                .collect()
        };
        let (f, t) = (wide(from), wide(to));
        // SAFETY: both are NUL-terminated UTF-16 strings that outlive the call.
        let ok = unsafe {
            windows_sys::Win32::Storage::FileSystem::MoveFileExW(
                f.as_ptr(),
                t.as_ptr(),
                windows_sys::Win32::Storage::FileSystem::MOVEFILE_WRITE_THROUGH,
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    // Elsewhere: a hard link cannot replace (files); a folder is refused if one is there.
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_vendor = "apple",
        windows
    )))]
    {
        if to.symlink_metadata().is_ok() {
            return Err(std::io::ErrorKind::AlreadyExists.into());
        }
        std::fs::rename(from, to)
    }
}

/// Moves `path` to the OS trash (`HEARTH_TEST_FAIL_AT=trash`: the trash refuses, so the
/// tests reach the permanent-delete question).
pub(super) fn trash_delete(path: &std::path::Path) -> Result<(), String> {
    if crate::failpoint::fails_at("trash") {
        return Err("the trash is not available".into());
    }
    trash::delete(path).map_err(|e| e.to_string())
}
