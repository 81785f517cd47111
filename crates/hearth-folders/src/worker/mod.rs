//! The extraction worker: a child process that reads files and returns their chunks. A
//! Rust thread cannot be killed, and parsers panic, loop or overflow their stack on hostile
//! input, so extraction never runs in the app: the same binary started with [`WORKER_ARG`]
//! serves requests on stdin, one JSON line each, and answers one JSON line each on stdout.
//! The parent ([`Worker`]) reuses one child across files, kills it when a file takes longer
//! than the timeout (default 30 s), and starts a new one for the next file; a child that
//! dies mid-file (a stack overflow, the address-space limit) fails only that file.
//!
//! Memory is limited on every platform. The rule is the parent's and the same everywhere:
//! while it waits for an answer it reads the child's resident memory every few
//! milliseconds, and a child over the limit (default 2 GiB) is killed and its file fails as
//! too large ("reading it needed over … MiB of memory"). The OS adds a hard cap where it
//! has one, for a burst faster than the watch: the child limits its own address space on
//! Unix (`RLIMIT_AS`, the limit plus [`ADDRESS_HEADROOM_MIB`]: mimalloc reserves large
//! ranges up front), and on Windows the parent puts it in a Job Object whose process memory
//! limit is the limit (and which kills it when Hearth goes). Resident memory is read from
//! `/proc` on Linux, `proc_pidinfo` on macOS; Windows relies on the Job Object. The child
//! refuses an answer over the output cap; the parent reads at most the cap plus a margin
//! per answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Reason;
use super::chunk::Draft;
use super::extract::{Kind, Limits, Refusal};

mod limits;

#[cfg(windows)]
use limits::job;
use limits::{limit_address_space, over_limit, resident_bytes};

/// The hidden first argument that makes a Hearth binary (the CLI, the app) serve
/// extraction requests instead of starting.
pub const WORKER_ARG: &str = "__extract-worker";

/// How long one file may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The worker's resident memory limit by default, in MiB.
pub const DEFAULT_MEMORY_MIB: u64 = 2048;

/// The room the worker's address space has above its memory limit, in MiB (Unix): reserved,
/// never-touched ranges are not memory used, so the hard cap sits above the watched limit.
pub const ADDRESS_HEADROOM_MIB: u64 = 2048;

/// The largest answer the parent reads, in bytes (a file's chunks as JSON).
pub const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;

/// One request: extract and chunk the file at `path` as `kind`.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    path: PathBuf,
    kind: Kind,
    limits: Limits,
    /// Answer with the file's text, cut to this many bytes, instead of its chunks (the
    /// `read_file` tool).
    #[serde(default)]
    text_only: Option<usize>,
}

/// One answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Chunks {
        hash: String,
        chunks: Vec<Draft>,
    },
    Refused(Refusal),
    /// The text of a `text_only` request, and whether it was cut.
    Text {
        text: String,
        cut: bool,
    },
}

/// What extraction made of a file.
#[derive(Debug, Clone, PartialEq)]
pub enum Extraction {
    /// The file's chunks and the SHA-256 of its bytes.
    Chunks { hash: String, chunks: Vec<Draft> },
    /// No text, and why.
    Refused(Refusal),
}

/// How to start the worker: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub timeout: Duration,
    pub memory_mib: u64,
}

impl WorkerCommand {
    /// This very binary with [`WORKER_ARG`] (the CLI and the app both handle it).
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::program(std::env::current_exe()?))
    }

    /// `program` with [`WORKER_ARG`]. `HEARTH_EXTRACT_TIMEOUT_MS` and
    /// `HEARTH_EXTRACT_MEMORY_MIB` (at least 256) override the timeout per file and the
    /// memory limit.
    pub fn program(program: PathBuf) -> Self {
        let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        Self {
            program,
            args: vec![WORKER_ARG.to_owned()],
            timeout: env("HEARTH_EXTRACT_TIMEOUT_MS")
                .filter(|&ms| ms > 0)
                .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
            memory_mib: env("HEARTH_EXTRACT_MEMORY_MIB")
                .filter(|&m| m >= 256)
                .unwrap_or(DEFAULT_MEMORY_MIB),
        }
    }
}

/// The child side: serves requests from stdin until it closes. Returns the exit code.
/// Front ends call this when their first argument is [`WORKER_ARG`], before anything else.
pub fn serve() -> i32 {
    // A panic is answered as a failed file, not printed over the parent's terminal.
    std::panic::set_hook(Box::new(|_| {}));
    let memory_mib = std::env::var("HEARTH_EXTRACT_MEMORY_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(DEFAULT_MEMORY_MIB);
    limit_address_space(memory_mib.saturating_add(ADDRESS_HEADROOM_MIB));
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut line = String::new();
    let mut input = stdin.lock().take(0);
    loop {
        line.clear();
        // A request is a path and a few numbers: 64 KiB bounds it.
        input.set_limit(64 * 1024);
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return 0,
            Ok(_) => {}
        }
        let answer = match serde_json::from_str::<Request>(&line) {
            Ok(req) => answer(&req),
            Err(_) => Answer::Refused(Refusal::new(Reason::Corrupt, "a malformed request")),
        };
        let mut out = serde_json::to_vec(&answer).unwrap_or_default();
        if out.len() as u64 > MAX_ANSWER_BYTES {
            out = serde_json::to_vec(&Answer::Refused(Refusal::new(
                Reason::TooLarge,
                "its text is too large to index",
            )))
            .unwrap_or_default();
        }
        out.push(b'\n');
        if stdout
            .write_all(&out)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return 0;
        }
    }
}

fn answer(req: &Request) -> Answer {
    // Test points per file name: a slow parser (`HEARTH_TEST_DELAY_AT=extract:NAME:MS`) and
    // a crashing one (`HEARTH_TEST_CRASH_AT=extract:NAME`).
    let name = req
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    crate::failpoint::alloc(&format!("extract:{name}"));
    crate::failpoint::delay(&format!("extract:{name}"));
    crate::failpoint::hit(&format!("extract:{name}"));
    if let Some(max) = req.text_only {
        return match std::panic::catch_unwind(|| {
            super::extract::extract(&req.path, req.kind, &req.limits)
        }) {
            Ok(Ok(doc)) => {
                let mut text = doc.text;
                let cut = text.len() > max;
                if cut {
                    let mut end = max;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                }
                Answer::Text { text, cut }
            }
            Ok(Err(refusal)) => Answer::Refused(refusal),
            Err(_) => Answer::Refused(Refusal::new(
                Reason::Corrupt,
                format!("the {} reader failed on it", req.kind.as_str()),
            )),
        };
    }
    let result = std::panic::catch_unwind(|| {
        super::extract::extract(&req.path, req.kind, &req.limits)
            .map(|doc| (doc.hash.clone(), super::chunk::chunk(&doc)))
    });
    match result {
        Ok(Ok((hash, chunks))) if chunks.is_empty() => {
            let _ = hash;
            Answer::Refused(Refusal::new(
                Reason::NoText,
                "the file has no text to index",
            ))
        }
        Ok(Ok((hash, chunks))) => Answer::Chunks { hash, chunks },
        Ok(Err(refusal)) => Answer::Refused(refusal),
        Err(_) => Answer::Refused(Refusal::new(
            Reason::Corrupt,
            format!("the {} reader failed on it", req.kind.as_str()),
        )),
    }
}

/// The variables the extraction worker keeps of Hearth's environment: temp folders, the
/// Windows system root, backtraces, and the test hooks (`HEARTH_TEST_*`, read only by
/// builds that compile them in). Nothing else — never a passphrase, a key or a token.
pub fn worker_env(
    all: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    const KEEP: &[&str] = &[
        "TMPDIR",
        "TMP",
        "TEMP",
        "SYSTEMROOT",
        "SystemRoot",
        "RUST_BACKTRACE",
    ];
    all.filter(|(k, _)| {
        let k = k.to_string_lossy();
        KEEP.contains(&k.as_ref()) || k.starts_with("HEARTH_TEST_")
    })
    .collect()
}

/// A running child: its stdin, and a thread reading its answers.
struct Running {
    child: Child,
    stdin: ChildStdin,
    answers: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    /// Windows: the job that caps its memory (dropped after the child is killed).
    #[cfg(windows)]
    _job: job::Job,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The parent side: one child reused across files, replaced after a timeout or a crash.
pub struct Worker {
    command: WorkerCommand,
    running: Option<Running>,
    /// Children started (the first and every restart): tests count restarts by it.
    pub started: usize,
}

impl Worker {
    pub fn new(command: WorkerCommand) -> Self {
        Self {
            command,
            running: None,
            started: 0,
        }
    }

    fn start(&mut self) -> std::io::Result<&mut Running> {
        if self.running.is_none() {
            let mut child = Command::new(&self.command.program)
                .args(&self.command.args)
                // A cleared environment: the worker reads hostile files, so it gets none
                // of Hearth's secrets (`HEARTH_PASSPHRASE`, `HEARTH_API_KEY`, …).
                .env_clear()
                .envs(worker_env(std::env::vars_os()))
                .env(
                    "HEARTH_EXTRACT_MEMORY_MIB",
                    self.command.memory_mib.to_string(),
                )
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| {
                    // Said of the worker, not of the file being read (a missing program
                    // must not read as a missing document).
                    std::io::Error::new(
                        e.kind(),
                        format!(
                            "could not start the extraction worker {}: {e}",
                            self.command.program.display()
                        ),
                    )
                })?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                let _ = child.kill();
                return Err(std::io::Error::other("the worker has no pipes"));
            };
            let (tx, rx) = mpsc::channel();
            std::thread::Builder::new()
                .name("extract-answers".into())
                .spawn(move || read_answers(stdout, tx))?;
            #[cfg(windows)]
            let job = match job::confine(&child, self.command.memory_mib) {
                Ok(job) => job,
                Err(e) => {
                    // No cap, no worker: a file that eats memory must not take the machine.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(std::io::Error::other(format!(
                        "could not limit the extraction worker's memory: {e}"
                    )));
                }
            };
            self.started += 1;
            self.running = Some(Running {
                child,
                stdin,
                answers: rx,
                #[cfg(windows)]
                _job: job,
            });
        }
        self.running
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the worker did not start"))
    }

    /// Extracts and chunks `path`. Never fails on the file's account: a crash, a timeout
    /// or a malformed answer is a [`Refusal`]; only starting the worker can fail.
    pub fn extract(
        &mut self,
        path: &Path,
        kind: Kind,
        limits: Limits,
    ) -> std::io::Result<Extraction> {
        let request = Request {
            path: path.to_path_buf(),
            kind,
            limits,
            text_only: None,
        };
        Ok(match self.ask(&request, &|| false)? {
            Answer::Chunks { hash, chunks } => Extraction::Chunks { hash, chunks },
            Answer::Refused(r) => Extraction::Refused(r),
            Answer::Text { .. } => {
                self.running = None;
                Extraction::Refused(Refusal::new(
                    Reason::Corrupt,
                    "the extraction worker gave a malformed answer",
                ))
            }
        })
    }

    /// The text of `path` (a PDF, a DOCX, a web page …), at most `max_bytes` of it, and
    /// whether it was cut. `stopped` is asked every few milliseconds while the child works:
    /// when it says yes, the child is killed (and reaped) and the result is an
    /// `Interrupted` error. Never fails on the file's account; only starting the worker (or
    /// the stop) can fail.
    pub fn extract_text(
        &mut self,
        path: &Path,
        kind: Kind,
        limits: Limits,
        max_bytes: usize,
        stopped: &dyn Fn() -> bool,
    ) -> std::io::Result<Result<(String, bool), Refusal>> {
        let request = Request {
            path: path.to_path_buf(),
            kind,
            limits,
            text_only: Some(max_bytes),
        };
        Ok(match self.ask(&request, stopped)? {
            Answer::Text { text, cut } => Ok((text, cut)),
            Answer::Refused(r) => Err(r),
            Answer::Chunks { .. } => {
                self.running = None;
                Err(Refusal::new(
                    Reason::Corrupt,
                    "the extraction worker gave a malformed answer",
                ))
            }
        })
    }

    /// The pid of the running child, if one is running (tests watch it die).
    pub fn child_pid(&self) -> Option<u32> {
        self.running.as_ref().map(|r| r.child.id())
    }

    /// Sends `request` and waits for its answer: up to the timeout, and while `stopped`
    /// says no (asked every [`STOP_POLL`]).
    fn ask(&mut self, request: &Request, stopped: &dyn Fn() -> bool) -> std::io::Result<Answer> {
        let timeout = self.command.timeout;
        let request = serde_json::to_vec(request).map_err(std::io::Error::other)?;
        let running = self.start()?;
        let sent = running
            .stdin
            .write_all(&request)
            .and_then(|()| running.stdin.write_all(b"\n"))
            .and_then(|()| running.stdin.flush());
        if sent.is_err() {
            // The child had died since the last file: a new one gets this file.
            self.running = None;
            let running = self.start()?;
            running.stdin.write_all(&request)?;
            running.stdin.write_all(b"\n")?;
            running.stdin.flush()?;
        }
        let Some(running) = self.running.as_mut() else {
            return Err(std::io::Error::other("the worker did not start"));
        };
        let started = std::time::Instant::now();
        let limit_mib = self.command.memory_mib;
        let pid = running.child.id();
        let received = loop {
            let left = timeout.saturating_sub(started.elapsed());
            match running.answers.recv_timeout(left.min(STOP_POLL)) {
                Err(mpsc::RecvTimeoutError::Timeout) if stopped() => {
                    // Dropping the child kills it and waits for it.
                    self.running = None;
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::Interrupted,
                        "the reading was stopped",
                    ));
                }
                Err(mpsc::RecvTimeoutError::Timeout)
                    if over_limit(resident_bytes(pid), limit_mib) =>
                {
                    self.running = None;
                    return Ok(Answer::Refused(Refusal::new(
                        Reason::TooLarge,
                        format!("reading it needed over {limit_mib} MiB of memory"),
                    )));
                }
                Err(mpsc::RecvTimeoutError::Timeout) if !left.is_zero() => continue,
                other => break other,
            }
        };
        let answer = match received {
            Ok(Ok(line)) => match serde_json::from_slice::<Answer>(&line) {
                Ok(answer) => answer,
                Err(_) => {
                    self.running = None;
                    Answer::Refused(Refusal::new(
                        Reason::Corrupt,
                        "the extraction worker gave a malformed answer",
                    ))
                }
            },
            Ok(Err(e)) => {
                self.running = None;
                let too_large = e.kind() == std::io::ErrorKind::FileTooLarge;
                Answer::Refused(if too_large {
                    Refusal::new(Reason::TooLarge, "its text is too large to index")
                } else {
                    Refusal::new(Reason::Corrupt, "the extraction worker stopped on it")
                })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.running = None;
                Answer::Refused(Refusal::new(
                    Reason::Timeout,
                    format!("reading it took over {:.1} s", timeout.as_secs_f64()),
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.running = None;
                Answer::Refused(Refusal::new(
                    Reason::Corrupt,
                    "the extraction worker crashed on it",
                ))
            }
        };
        Ok(answer)
    }
}

/// How often a waiting [`Worker::extract_text`] asks whether it was stopped (and the
/// child's memory is read).
const STOP_POLL: Duration = Duration::from_millis(20);

/// Reads answers (one line each, at most [`MAX_ANSWER_BYTES`]) until the child's stdout
/// closes or an answer is too long.
fn read_answers(stdout: std::process::ChildStdout, tx: mpsc::Sender<std::io::Result<Vec<u8>>>) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    loop {
        let mut line = Vec::new();
        let mut limited = (&mut reader).take(MAX_ANSWER_BYTES + 1);
        match limited.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) if line.last() != Some(&b'\n') => {
                let e = if line.len() as u64 > MAX_ANSWER_BYTES {
                    std::io::Error::new(std::io::ErrorKind::FileTooLarge, "answer too long")
                } else {
                    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "worker died")
                };
                let _ = tx.send(Err(e));
                return;
            }
            Ok(_) => {
                if tx.send(Ok(line)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

#[cfg(test)]
mod env_tests {
    use std::ffi::OsString;

    #[test]
    fn the_worker_gets_none_of_hearths_secrets() {
        let all = [
            ("HEARTH_PASSPHRASE", "hunter2"),
            ("HEARTH_API_KEY", "sk-live"),
            ("OPENAI_API_KEY", "sk-2"),
            ("HOME", "/home/ada"),
            ("TMPDIR", "/tmp"),
            ("HEARTH_TEST_DELAY_AT", "extract:x:1"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<String> = super::worker_env(all.into_iter())
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(kept, ["TMPDIR", "HEARTH_TEST_DELAY_AT"]);
    }
}
