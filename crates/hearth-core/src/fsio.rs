//! Crash-safe file writes, shared by the store's key and id files, the model download and
//! memory exports: write a temporary file beside the target, fsync it, rename it over the
//! target, fsync the directory. A crash leaves the old file or the new one, never a torn
//! one. **Invariant:** depends on nothing in the crate but the error type.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Writes `bytes` to `path` atomically. With `private`, the file is created with mode 0600
/// on Unix (readable by the user only).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    write_atomic_with(path, private, |f| f.write_all(bytes)).map(|_| ())
}

/// Like [`write_atomic`], with the content written by `fill` into the open temporary file
/// (buffered); returns what `fill` returned. On any error the temporary file is removed
/// and the target is untouched.
pub(crate) fn write_atomic_with<T>(
    path: &Path,
    private: bool,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<T>,
) -> Result<T> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = temp_beside(path);
    let written = (|| {
        let file = open_new(&tmp, private)?;
        let mut w = std::io::BufWriter::new(file);
        let out = fill(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(out)
    })();
    let out = match written {
        Ok(out) => out,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(path, e));
        }
    };
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    sync_dir(dir);
    Ok(out)
}

fn open_new(path: &Path, private: bool) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    options.open(path)
}

/// A name beside `path` that no other writer uses: `<name>.<pid>.<n>.tmp`.
fn temp_beside(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{}.{n}.tmp", std::process::id()));
    PathBuf::from(name)
}

/// Flushes a directory entry change (rename, unlink) to disk where the OS supports it.
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("f.txt");
        write_atomic(&path, b"old", false).expect("write");
        let failed = write_atomic_with(&path, false, |w| {
            w.write_all(b"half")?;
            Err::<(), _>(std::io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        let names: Vec<_> = std::fs::read_dir(tmp.path()).expect("dir").collect();
        assert_eq!(names.len(), 1, "the temporary file is gone");
    }

    #[cfg(unix)]
    #[test]
    fn a_private_file_is_readable_by_the_user_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("secret.txt");
        write_atomic(&path, b"x", true).expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
