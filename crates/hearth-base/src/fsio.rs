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
pub fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    write_atomic_with(path, private, |f| f.write_all(bytes)).map(|_| ())
}

/// Like [`write_atomic`], with the content written by `fill` into the open temporary file
/// (buffered); returns what `fill` returned. On any error the temporary file is removed
/// and the target is untouched.
pub fn write_atomic_with<T>(
    path: &Path,
    private: bool,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<T>,
) -> Result<T> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let written_tmp = create_temp_beside(path, private);
    let (tmp, file) = match written_tmp {
        Ok(t) => t,
        Err(e) => return Err(Error::io(path, e)),
    };
    let written = (|| {
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

/// Creates a new file at `path` exclusively (`O_CREAT | O_EXCL`, and `O_NOFOLLOW` on Unix):
/// it fails if anything — a file, a link planted there — already has that name, so a
/// write never goes through a link to somewhere else.
fn open_new(path: &Path, private: bool) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc_nofollow());
        if private {
            options.mode(0o600);
        }
    }
    #[cfg(not(unix))]
    let _ = private;
    options.open(path)
}

/// `O_NOFOLLOW` (the value differs by platform; 0 where it is unknown: `O_EXCL` alone then
/// refuses an existing link).
#[cfg(unix)]
const fn libc_nofollow() -> i32 {
    #[cfg(target_os = "linux")]
    {
        0o400000
    }
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    {
        0x0100
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd"
    )))]
    {
        0
    }
}

/// A temporary file beside `path`, created exclusively under a random name no one can
/// predict (`.<name>.<16 random hex>.tmp`), so a file or link planted beside the target
/// (a shared folder, an export directory) cannot redirect the write.
fn create_temp_beside(path: &Path, private: bool) -> std::io::Result<(PathBuf, File)> {
    use rand::RngCore;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut last = None;
    for _ in 0..8 {
        let mut bytes = [0u8; 8];
        rand::rng().fill_bytes(&mut bytes);
        let tmp = dir.join(format!(".{name}.{}.tmp", hex::encode(bytes)));
        match open_new(&tmp, private) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name was free")))
}

/// Flushes a directory entry change (rename, unlink) to disk where the OS supports it.
pub fn sync_dir(dir: &Path) {
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
    fn a_link_planted_where_a_file_is_created_is_refused_and_its_target_untouched() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let victim = tmp.path().join("victim.txt");
        std::fs::write(&victim, "keep").expect("write");
        let planted = tmp.path().join("planted.tmp");
        std::os::unix::fs::symlink(&victim, &planted).expect("symlink");
        let refused = open_new(&planted, false);
        assert!(refused.is_err());
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
        // Temporary names are not predictable: two writes use two different names.
        let path = tmp.path().join("out.txt");
        let (a, _) = create_temp_beside(&path, false).expect("temp");
        let (b, _) = create_temp_beside(&path, false).expect("temp");
        assert_ne!(a, b);
        assert!(
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".out.txt."))
        );
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
