//! The worker process of the built-in model: started on first use, one per Hearth process
//! with one model loaded, ended when Hearth ends, started again after it crashed or unloaded
//! itself when idle.
//!
//! - **Start.** `hearth-llama-worker` (beside this binary, or `HEARTH_LLAMA_WORKER`) with a
//!   cleared environment, its token written on stdin, and stdin kept open. It prints one
//!   JSON line when the model is loaded (its port and context) or an error and exits.
//! - **Dies with Hearth.** stdin's end (Hearth exited or was killed) ends it; on Linux the
//!   kernel also kills it when the thread that started it ends (`PR_SET_PDEATHSIG`), so
//!   workers are started from one thread that lives as long as the process. On Windows it
//!   joins a Job Object that kills its processes when Hearth's handle to it closes, i.e. when
//!   Hearth ends however it ends (a process group alone does not die with a killed parent).
//! - **Crashes.** An abort, a segfault or an out-of-memory kill in llama.cpp ends the worker
//!   only: the turn in flight ends `interrupted` with what arrived, and the next call starts
//!   a new worker — after a pause that doubles with each crash in a row (at most 8 s).
//! - **Idle.** The worker exits by itself after `idle` without requests (default 10
//!   minutes), which frees the model's memory; the next call starts it again.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::{Error, Result};

/// The worker's file name.
pub const WORKER_NAME: &str = if cfg!(windows) {
    "hearth-llama-worker.exe"
} else {
    "hearth-llama-worker"
};

/// How long a model may take to load before the start counts as failed.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(180);

/// The longest pause before a start after crashes.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// What to run: the model and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSpec {
    pub name: String,
    pub path: PathBuf,
    pub n_ctx: u32,
    pub idle: Duration,
}

/// What runs now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerState {
    pub running: bool,
    pub model: Option<String>,
    pub pid: Option<u32>,
    pub n_ctx: Option<u32>,
    /// Resident memory of the worker in bytes (Linux).
    pub resident_bytes: Option<u64>,
    /// Starts since this process began, and crashes among them.
    pub starts: u32,
    pub crashes: u32,
}

struct Running {
    child: Child,
    /// Held open: its end tells the worker to exit.
    _stdin: ChildStdin,
    spec: WorkerSpec,
    url: String,
    token: Zeroizing<String>,
    n_ctx: u32,
}

#[derive(Default)]
struct State {
    running: Option<Running>,
    starts: u32,
    crashes: u32,
    /// Crashes in a row, for the pause before the next start.
    in_a_row: u32,
    last_crash: Option<Instant>,
}

/// The one supervisor of this process.
pub struct Supervisor {
    state: Mutex<State>,
    launcher: Mutex<Option<mpsc::Sender<Launch>>>,
}

struct Launch {
    command: Command,
    reply: mpsc::Sender<std::io::Result<Child>>,
}

/// The supervisor of this process.
pub fn supervisor() -> &'static Supervisor {
    static ONE: OnceLock<Supervisor> = OnceLock::new();
    ONE.get_or_init(|| Supervisor {
        state: Mutex::new(State::default()),
        launcher: Mutex::new(None),
    })
}

/// Where the worker binary is: `HEARTH_LLAMA_WORKER`, else beside this executable (the app,
/// the CLI and the packages put it there).
pub fn worker_program() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("HEARTH_LLAMA_WORKER").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| Error::LocalModel(format!("cannot find this program: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    // Test binaries live in target/<profile>/deps, the worker one level up.
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        let p = d.join(WORKER_NAME);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(Error::LocalModel(format!(
        "the built-in model's engine ({WORKER_NAME}) is not installed beside Hearth"
    )))
}

fn random_token() -> Zeroizing<String> {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = Zeroizing::new(hex::encode(bytes));
    bytes.fill(0);
    token
}

impl Supervisor {
    /// Starts `command` from the launcher thread (see the module's notes on
    /// `PR_SET_PDEATHSIG`).
    fn spawn(&self, command: Command) -> std::io::Result<Child> {
        let (reply, answer) = mpsc::channel();
        let mut guard = self
            .launcher
            .lock()
            .map_err(|_| std::io::Error::other("the launcher is poisoned"))?;
        if guard.is_none() {
            let (tx, rx) = mpsc::channel::<Launch>();
            std::thread::Builder::new()
                .name("hearth-worker-launcher".into())
                .spawn(move || {
                    while let Ok(mut launch) = rx.recv() {
                        let _ = launch.reply.send(launch.command.spawn());
                    }
                })?;
            *guard = Some(tx);
        }
        let sent = guard
            .as_ref()
            .map(|tx| tx.send(Launch { command, reply }).is_ok())
            .unwrap_or(false);
        drop(guard);
        if !sent {
            return Err(std::io::Error::other("the launcher thread ended"));
        }
        answer
            .recv()
            .map_err(|_| std::io::Error::other("the launcher thread ended"))?
    }

    /// The running worker's base URL and token for `spec`, starting it (and ending one
    /// running another model) when needed. Blocking: up to [`LOAD_TIMEOUT`].
    pub fn ensure(&self, spec: &WorkerSpec) -> Result<(String, Zeroizing<String>)> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| Error::LocalModel("the model supervisor is poisoned".into()))?;
        reap(&mut state);
        if let Some(run) = state.running.as_mut() {
            if run.spec == *spec {
                return Ok((run.url.clone(), run.token.clone()));
            }
            let _ = run.child.kill();
            let _ = run.child.wait();
            state.running = None;
        }
        if state.in_a_row > 0
            && let Some(at) = state.last_crash
        {
            let pause = Duration::from_millis(250u64 << state.in_a_row.min(5)).min(MAX_BACKOFF);
            if let Some(left) = pause.checked_sub(at.elapsed()) {
                std::thread::sleep(left);
            }
        }
        state.starts += 1;
        match self.start(spec) {
            Ok(run) => {
                watch();
                let out = (run.url.clone(), run.token.clone());
                state.running = Some(run);
                state.in_a_row = 0;
                Ok(out)
            }
            Err(e) => {
                state.in_a_row += 1;
                state.last_crash = Some(Instant::now());
                Err(e)
            }
        }
    }

    fn start(&self, spec: &WorkerSpec) -> Result<Running> {
        let program = worker_program()?;
        let mut command = Command::new(&program);
        command
            .arg("--model")
            .arg(&spec.path)
            .args(["--name", &spec.name])
            .args(["--ctx", &spec.n_ctx.to_string()])
            .args(["--idle-exit", &spec.idle.as_secs().max(1).to_string()])
            .env_clear()
            .env("HEARTH_PARENT_PID", std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(n) = std::env::var("HEARTH_TEST_LLAMA_MIN_TOKENS")
            .ok()
            .filter(|v| v.parse::<u32>().is_ok())
        {
            command.args(["--min-tokens", &n]);
        }
        for pass in ["HEARTH_LLAMA_LOG", "SystemRoot"] {
            if let Some(v) = std::env::var_os(pass) {
                command.env(pass, v);
            }
        }
        let mut child = self
            .spawn(command)
            .map_err(|e| Error::LocalModel(format!("the built-in model's engine did not start: {e}")))?;
        #[cfg(windows)]
        if let Err(e) = windows_job::dies_with_this_process(&child) {
            // stdin's end still stops it when Hearth exits.
            tracing::warn!(error = %e, "could not put the model worker in Hearth's job object");
        }
        let token = random_token();
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| Error::LocalModel("the engine has no stdin".into()))?;
        let wrote = stdin
            .write_all(token.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush());
        let stdout = child.stdout.take();
        let ready = match (wrote, stdout) {
            (Ok(()), Some(out)) => read_ready(out, LOAD_TIMEOUT),
            _ => Err("the engine closed its pipes".to_owned()),
        };
        let ready = match ready {
            Ok(r) => r,
            Err(detail) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::LocalModel(format!(
                    "the built-in model {} could not start: {detail}",
                    spec.name
                )));
            }
        };
        tracing::info!(model = %spec.name, pid = child.id(), n_ctx = ready.n_ctx, "started the built-in model's worker");
        Ok(Running {
            child,
            _stdin: stdin,
            spec: spec.clone(),
            url: format!("http://127.0.0.1:{}/v1", ready.port),
            token,
            n_ctx: ready.n_ctx,
        })
    }

    /// What runs now (Settings → Models, `hearth model status`).
    pub fn state(&self) -> WorkerState {
        let Ok(mut state) = self.state.lock() else {
            return WorkerState::default();
        };
        let (starts, crashes) = (state.starts, state.crashes);
        let mut out = WorkerState {
            starts,
            crashes,
            ..WorkerState::default()
        };
        if let Some(run) = state.running.as_mut()
            && matches!(run.child.try_wait(), Ok(None))
        {
            let pid = run.child.id();
            out.running = true;
            out.model = Some(run.spec.name.clone());
            out.pid = Some(pid);
            out.n_ctx = Some(run.n_ctx);
            out.resident_bytes = resident_bytes(pid);
        }
        out
    }

    /// Ends the worker (a model removed or switched; the app quitting).
    pub fn stop(&self) {
        if let Ok(mut state) = self.state.lock()
            && let Some(mut run) = state.running.take()
        {
            let _ = run.child.kill();
            let _ = run.child.wait();
        }
    }
}

/// Forgets a worker that has ended, counting a crash (exit 0 is the idle unload), so its
/// process is reaped and never lingers as a zombie.
fn reap(state: &mut State) {
    let Some(run) = state.running.as_mut() else {
        return;
    };
    match run.child.try_wait() {
        Ok(None) => return,
        Ok(Some(status)) if !status.success() => {
            tracing::warn!(%status, "the built-in model's worker crashed");
            state.crashes += 1;
            state.in_a_row += 1;
            state.last_crash = Some(Instant::now());
        }
        Ok(Some(_)) => tracing::info!("the built-in model unloaded after being idle"),
        Err(_) => {}
    }
    state.running = None;
}

/// Starts, once per process, the thread that reaps a worker soon after it ends (an idle
/// unload happens while nothing asks the supervisor anything).
fn watch() {
    static WATCHING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if WATCHING.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let started = std::thread::Builder::new()
        .name("hearth-worker-reaper".into())
        .spawn(|| {
            loop {
                std::thread::sleep(REAP_EVERY);
                if let Ok(mut state) = supervisor().state.lock() {
                    reap(&mut state);
                }
            }
        });
    if started.is_err() {
        WATCHING.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How often an ended worker is looked for.
const REAP_EVERY: Duration = Duration::from_secs(1);

#[derive(Deserialize)]
struct Ready {
    port: u16,
    n_ctx: u32,
}

/// The worker's first line: ready (port, context) or why not. Bounded in size and time.
fn read_ready(out: impl Read + Send + 'static, within: Duration) -> std::result::Result<Ready, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let got = BufReader::new(out.take(64 * 1024)).read_line(&mut line);
        let _ = tx.send(got.map(|_| line));
    });
    let line = match rx.recv_timeout(within) {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(_) => return Err(format!("it did not load within {} s", within.as_secs())),
    };
    if line.trim().is_empty() {
        return Err("it exited while loading the model (crashed, or out of memory)".into());
    }
    let v: serde_json::Value =
        serde_json::from_str(line.trim()).map_err(|_| "it answered something else than its ready line".to_owned())?;
    if let Some(e) = v["error"].as_str() {
        return Err(e.chars().take(300).collect());
    }
    serde_json::from_value(v).map_err(|e| format!("its ready line is malformed ({e})"))
}

#[cfg(target_os = "linux")]
fn resident_bytes(pid: u32) -> Option<u64> {
    super::proc_bytes(&format!("/proc/{pid}/status"), "VmRSS:")
}

#[cfg(not(target_os = "linux"))]
fn resident_bytes(_pid: u32) -> Option<u64> {
    None
}

/// Windows: the Job Object every worker of this process joins. Its one handle is this
/// process's, never closed, so the system closes it when Hearth ends — killed included —
/// and `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` then ends the workers. Compiled by the Windows
/// CI job, not on these Linux machines.
#[cfg(windows)]
mod windows_job {
    use std::os::windows::io::AsRawHandle;
    use std::process::Child;
    use std::sync::OnceLock;

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOBOBJECT_BASIC_LIMIT_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JobObjectExtendedLimitInformation,
        SetInformationJobObject,
    };

    struct Job(HANDLE);

    // SAFETY: a job object's handle may be used from any thread.
    unsafe impl Send for Job {}
    // SAFETY: as above; the handle is only read.
    unsafe impl Sync for Job {}

    static JOB: OnceLock<Option<Job>> = OnceLock::new();

    fn create() -> Option<Job> {
        // SAFETY: null attributes and name make an unnamed job with default security.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return None;
        }
        let info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION {
            BasicLimitInformation: JOBOBJECT_BASIC_LIMIT_INFORMATION {
                LimitFlags: JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
                ..Default::default()
            },
            ..Default::default()
        };
        // SAFETY: `info` is a valid JOBOBJECT_EXTENDED_LIMIT_INFORMATION of the size given,
        // alive for the call.
        let set = unsafe {
            SetInformationJobObject(
                handle,
                JobObjectExtendedLimitInformation,
                (&raw const info).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if set == 0 {
            // SAFETY: `handle` is the job just created, closed once.
            unsafe { CloseHandle(handle) };
            return None;
        }
        Some(Job(handle))
    }

    /// Puts `child` in the job: it ends when this process does.
    pub(super) fn dies_with_this_process(child: &Child) -> std::io::Result<()> {
        let Some(job) = JOB.get_or_init(create) else {
            return Err(std::io::Error::other("no job object could be created"));
        };
        // SAFETY: the job's handle lives as long as the process; the child's while `child`
        // is borrowed.
        let assigned = unsafe { AssignProcessToJobObject(job.0, child.as_raw_handle()) };
        if assigned == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}
