//! The one downloader for the model files Hearth fetches: the embedding model's files now,
//! and the built-in model's weights next. Every byte is treated as hostile until its hash
//! says otherwise.
//!
//! - Redirects are followed by hand, and only to the URL's own host or to the hosts the
//!   caller allows (the hub's download hosts). Any other host is refused before it is
//!   contacted.
//! - Free disk space is checked against the announced size before the first byte is
//!   written. The probe can be replaced in tests (`HEARTH_TEST_FREE_BYTES`).
//! - Bytes go to `.<name>.part` beside the destination. The file is locked while written,
//!   so a second process cannot interleave its bytes. A download that breaks keeps its
//!   part, and the next attempt asks for the rest with an HTTP `Range`. The bytes already
//!   there are hashed, not fetched again.
//! - A file over its size cap, or one whose SHA-256 is not the pinned one, is deleted. It
//!   is never installed and never resumed. The part is renamed into place only after its
//!   hash matches.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// Bytes between two progress reports.
const PROGRESS_STEP: u64 = 1 << 20;

/// Download progress: `(file name, bytes so far, total bytes if the server said)`.
pub type Progress = dyn Fn(&str, u64, Option<u64>) + Send + Sync;

/// One file to fetch.
pub struct Fetch<'a> {
    pub url: &'a str,
    /// Where the file goes once its hash matches.
    pub dest: &'a Path,
    /// Its pinned SHA-256 (hex), when known.
    pub sha256: Option<&'a str>,
    /// The most bytes it may have: a server that sends more is cut off and the part deleted.
    pub max_bytes: u64,
    /// Hosts a redirect may lead to besides the URL's own: exact names, or `.suffix` for a
    /// domain and its subdomains.
    pub allowed_hosts: &'a [&'a str],
    pub progress: Option<&'a Progress>,
}

/// Why a fetch failed.
#[derive(Debug)]
pub enum Failed {
    /// The server or the network: what happened, for the user. The bytes that arrived stay
    /// in the part for the next attempt.
    Network(String),
    /// The bytes are wrong (too many, or not the pinned file): the part is deleted.
    Refused(String),
    /// Writing on this computer failed.
    Disk(Error),
}

impl Failed {
    /// What happened, for the user (`Disk` carries its own error).
    pub fn detail(self) -> Result<String, Error> {
        match self {
            Failed::Network(d) | Failed::Refused(d) => Ok(d),
            Failed::Disk(e) => Err(e),
        }
    }
}

/// The part file of `dest`: `.<name>.part` beside it.
pub fn part_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.part"))
}

/// Fetches `f.url` into `f.dest`, resuming a part left by an earlier attempt. Returns the
/// file's size.
pub async fn fetch(http: &reqwest::Client, f: &Fetch<'_>) -> Result<u64, Failed> {
    let part = part_path(f.dest);
    let disk = |e| Failed::Disk(Error::io(&part, e));
    let mut out = File::options()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&part)
        .map_err(disk)?;
    if out.try_lock().is_err() {
        return Err(Failed::Disk(Error::Busy(format!(
            "another Hearth is downloading {} right now; try again when it is done",
            f.dest.display()
        ))));
    }
    let result = fetch_into(http, f, &mut out, &part).await;
    match &result {
        Ok(_) => {
            out.sync_all().map_err(disk)?;
            drop(out);
            std::fs::rename(&part, f.dest).map_err(|e| Failed::Disk(Error::io(f.dest, e)))?;
        }
        // What arrived stays for the next attempt, unless nothing did.
        Err(Failed::Network(_)) | Err(Failed::Disk(_)) => {
            let empty = out.metadata().map(|m| m.len() == 0).unwrap_or(false);
            drop(out);
            if empty {
                let _ = std::fs::remove_file(&part);
            }
        }
        Err(Failed::Refused(_)) => {
            drop(out);
            let _ = std::fs::remove_file(&part);
        }
    }
    result
}

async fn fetch_into(
    http: &reqwest::Client,
    f: &Fetch<'_>,
    out: &mut File,
    part: &Path,
) -> Result<u64, Failed> {
    let disk = |e| Failed::Disk(Error::io(part, e));
    let name = f
        .dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let have = out.metadata().map_err(disk)?.len();
    let (response, resumed) = get(http, f.url, f.allowed_hosts, have)
        .await
        .map_err(Failed::Network)?;
    let mut hasher = Sha256::new();
    let mut done = 0u64;
    if resumed {
        // The bytes already here count toward the hash and the size, not the transfer.
        out.seek(SeekFrom::Start(0)).map_err(disk)?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = out.read(&mut buf).map_err(disk)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            done += n as u64;
        }
        tracing::info!(file = %name, bytes = done, "resuming a download");
    } else {
        out.set_len(0).map_err(disk)?;
        out.seek(SeekFrom::Start(0)).map_err(disk)?;
    }
    let total = response.content_length().map(|rest| rest + done);
    let too_large = || {
        Failed::Refused(format!(
            "{name} is larger than {} MiB; this is not the model, and nothing was installed",
            f.max_bytes / (1024 * 1024)
        ))
    };
    if total.is_some_and(|t| t > f.max_bytes) {
        return Err(too_large());
    }
    let needed = total.unwrap_or(f.max_bytes).saturating_sub(done);
    if let Some(free) = free_bytes(part)
        && free < needed
    {
        return Err(Failed::Refused(format!(
            "not enough free disk for {name}: it needs {} MiB more and {} MiB are free; \
             nothing was downloaded",
            needed.div_ceil(1 << 20),
            free / (1 << 20)
        )));
    }
    let mut reported = done;
    if let Some(p) = f.progress {
        p(&name, done, total);
    }
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Failed::Network(format!("the download broke ({e})")))?;
        if done + chunk.len() as u64 > f.max_bytes {
            return Err(too_large());
        }
        hasher.update(&chunk);
        out.write_all(&chunk).map_err(disk)?;
        done += chunk.len() as u64;
        // At most one report per MiB (and the last), not one per network chunk.
        if let Some(p) = f.progress
            && (done - reported >= PROGRESS_STEP || Some(done) == total)
        {
            p(&name, done, total);
            reported = done;
        }
    }
    if let Some(p) = f.progress
        && reported != done
    {
        p(&name, done, total);
    }
    if let Some(total) = total
        && done != total
    {
        return Err(Failed::Network(format!(
            "the download broke after {done} of {total} bytes"
        )));
    }
    let actual = hex::encode(hasher.finalize());
    if let Some(expected) = f.sha256
        && actual != expected
    {
        return Err(Failed::Refused(format!(
            "{name} is not the pinned release (sha256 {actual}, expected {expected}); nothing was installed"
        )));
    }
    Ok(done)
}

/// The HTTP client downloads use: redirects off (`fetch` follows them by hand, to allowed
/// hosts only), bounded connect and read waits.
pub fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(15))
        .read_timeout(std::time::Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("Hearth/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The free bytes on the disk holding `path`: `HEARTH_TEST_FREE_BYTES` in tests, else the
/// file system's count for unprivileged users. `None`: unknown (the download goes on).
pub fn free_bytes(path: &Path) -> Option<u64> {
    if let Some(n) = hearth_base::failpoint::free_bytes() {
        return Some(n);
    }
    #[cfg(unix)]
    {
        let dir = path.parent()?;
        let s = rustix::fs::statvfs(dir).ok()?;
        Some(s.f_bavail.saturating_mul(s.f_frsize))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Whether a redirect may lead to `host`: the first URL's own host, or one the caller
/// allows (`.hf.co` allows `hf.co` and its subdomains).
fn host_allowed(host: &str, first: &str, allowed: &[&str]) -> bool {
    host.eq_ignore_ascii_case(first)
        || allowed.iter().any(|a| match a.strip_prefix('.') {
            Some(domain) => {
                host.eq_ignore_ascii_case(domain)
                    || host
                        .to_ascii_lowercase()
                        .ends_with(&format!(".{}", domain.to_ascii_lowercase()))
            }
            None => host.eq_ignore_ascii_case(a),
        })
}

/// GETs `url`, asking for the bytes from `from` on when there are some already, and
/// following up to 10 redirects by hand, each only to an allowed host. Returns the
/// response and whether it continues the part (`206` from `from`); a `200` starts over.
/// Fails on any other status.
async fn get(
    http: &reqwest::Client,
    url: &str,
    allowed: &[&str],
    from: u64,
) -> Result<(reqwest::Response, bool), String> {
    let mut url = reqwest::Url::parse(url).map_err(|e| format!("bad URL ({e})"))?;
    let first = url.host_str().unwrap_or_default().to_owned();
    for _ in 0..10 {
        let mut request = http.get(url.clone());
        if from > 0 {
            request = request.header(reqwest::header::RANGE, format!("bytes={from}-"));
        }
        let response = request.send().await.map_err(|e| {
            let mut detail = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                detail = format!("{detail}: {s}");
                source = s.source();
            }
            detail
        })?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("HTTP {status} without a Location"))?;
            let next = url
                .join(location)
                .map_err(|e| format!("bad redirect ({e})"))?;
            let host = next.host_str().unwrap_or_default();
            if !host_allowed(host, &first, allowed) {
                return Err(format!(
                    "the hub redirected to {host}, which is not one of its download hosts; \
                     nothing was downloaded from it"
                ));
            }
            url = next;
            continue;
        }
        if status == reqwest::StatusCode::RANGE_NOT_SATISFIABLE && from > 0 {
            // The part is not a prefix the server knows: start over.
            return Box::pin(get(http, url.as_str(), allowed, 0))
                .await
                .map(|(r, _)| (r, false));
        }
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let resumed = status == reqwest::StatusCode::PARTIAL_CONTENT
            && response
                .headers()
                .get(reqwest::header::CONTENT_RANGE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("bytes "))
                .and_then(|v| v.split('-').next())
                .and_then(|start| start.parse::<u64>().ok())
                == Some(from);
        if status == reqwest::StatusCode::PARTIAL_CONTENT && !resumed {
            // A part that does not follow ours: ask for the whole file.
            return Box::pin(get(http, url.as_str(), allowed, 0))
                .await
                .map(|(r, _)| (r, false));
        }
        return Ok((response, resumed));
    }
    Err("too many redirects".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_may_lead_only_to_the_first_host_or_an_allowed_one() {
        let allowed = [".hf.co", "cdn-lfs.huggingface.co"];
        assert!(host_allowed("huggingface.co", "huggingface.co", &allowed));
        assert!(host_allowed(
            "cas-bridge.xethub.hf.co",
            "huggingface.co",
            &allowed
        ));
        assert!(host_allowed("hf.co", "huggingface.co", &allowed));
        assert!(host_allowed(
            "CDN-LFS.huggingface.co",
            "huggingface.co",
            &allowed
        ));
        assert!(!host_allowed("evilhf.co", "huggingface.co", &allowed));
        assert!(!host_allowed(
            "hf.co.evil.example",
            "huggingface.co",
            &allowed
        ));
        assert!(!host_allowed(
            "cdn-lfs-us-1.huggingface.co",
            "huggingface.co",
            &allowed
        ));
    }

    #[tokio::test]
    async fn a_part_another_process_is_writing_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("model.gguf");
        let part = part_path(&dest);
        std::fs::write(&part, b"half").expect("part");
        let held = File::options()
            .read(true)
            .write(true)
            .open(&part)
            .expect("open");
        held.lock().expect("lock");
        let fetched = fetch(
            &reqwest::Client::new(),
            &Fetch {
                url: "http://127.0.0.1:9/model.gguf",
                dest: &dest,
                sha256: None,
                max_bytes: 1 << 20,
                allowed_hosts: &[],
                progress: None,
            },
        )
        .await;
        assert!(
            matches!(fetched, Err(Failed::Disk(Error::Busy(_)))),
            "{fetched:?}"
        );
        assert_eq!(std::fs::read(&part).expect("read"), b"half");
        assert!(!dest.exists());
    }

    #[test]
    fn the_part_sits_beside_its_file_hidden() {
        assert_eq!(
            part_path(Path::new("/m/snap/model.safetensors")),
            Path::new("/m/snap/.model.safetensors.part")
        );
    }
}
