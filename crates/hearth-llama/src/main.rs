//! `hearth-llama-worker`: loads one GGUF model and serves it on 127.0.0.1 until its parent
//! goes. Started by the engine (never by people), with:
//!
//! ```text
//! hearth-llama-worker --model PATH --name NAME [--ctx N] [--threads N] [--slots N]
//!                     [--idle-exit SECONDS]
//! ```
//!
//! The parent writes the bearer token as the first line of stdin and keeps stdin open:
//! stdin's end (the parent exited or was killed) ends the worker, and on Linux so does the
//! parent's death (`PR_SET_PDEATHSIG`). Once the model is loaded the worker prints one JSON
//! line on stdout — `{"port":…,"n_ctx":…,"n_ctx_train":…,"architecture":…}` — or
//! `{"error":…}` and exits 3 when the model cannot load.

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};

use clap::Parser;
use zeroize::Zeroizing;

use hearth_llama::engine::{self, EngineConfig};
use hearth_llama::server::{Shared, router};
use hearth_llama::template::{CHATML, ChatTemplate};

#[derive(Parser)]
#[command(
    name = "hearth-llama-worker",
    version,
    about = "Hearth's built-in model worker (started by Hearth)"
)]
struct Args {
    /// The GGUF file.
    #[arg(long)]
    model: PathBuf,
    /// The name the API reports.
    #[arg(long, default_value = "builtin")]
    name: String,
    /// Context window in tokens (default: the model's trained length, at most 8192).
    #[arg(long)]
    ctx: Option<u32>,
    /// Decoding threads (default: the cores, at most 8).
    #[arg(long)]
    threads: Option<i32>,
    /// Conversations whose prompt cache is kept.
    #[arg(long, default_value_t = 4)]
    slots: u32,
    /// Exit after this many seconds without a request (the model's memory is freed; the
    /// parent starts the worker again when needed). 0 never.
    #[arg(long, default_value_t = 600)]
    idle_exit: u64,
    /// Suppress the end of generation until this many tokens (tests).
    #[arg(long, default_value_t = 0)]
    min_tokens: u32,
}

fn say(v: &serde_json::Value) {
    println!("{v}");
}

/// The exit code when stdin ends: 0 while all is well; a failure's own code once one is
/// being reported (the parent may close stdin as soon as it reads the error line).
static ON_EOF: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Reports `error` on stdout and exits with `code`.
fn fail(error: serde_json::Value, code: i32) -> ! {
    ON_EOF.store(code, std::sync::atomic::Ordering::SeqCst);
    say(&error);
    leave(code)
}

fn main() {
    die_with_parent();
    let args = Args::parse();
    // The token: the first line of stdin, never argv or the environment.
    let mut line = Zeroizing::new(String::new());
    let read = {
        // Unbuffered, byte by byte up to the newline: nothing after it is read here.
        let mut raw = std::io::stdin().lock();
        let mut byte = [0u8; 1];
        let mut bytes = Vec::new();
        let result = loop {
            match raw.read(&mut byte) {
                Ok(1) if byte[0] != b'\n' && bytes.len() < 1024 => bytes.push(byte[0]),
                Ok(_) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        line.push_str(&String::from_utf8_lossy(&bytes));
        zeroize::Zeroize::zeroize(&mut bytes);
        result
    };
    let token = Zeroizing::new(line.trim().to_owned());
    if read.is_err() || token.len() < 32 {
        fail(serde_json::json!({"error": "no token on stdin"}), 2);
    }
    // The parent holds stdin open for the worker's whole life: its end is the parent's.
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        leave(ON_EOF.load(std::sync::atomic::Ordering::SeqCst));
    });

    if let Err(e) = cpu_supported() {
        fail(serde_json::json!({ "error": e }), 3);
    }
    let (tx, rx) = mpsc::channel();
    let config = EngineConfig {
        model: args.model,
        n_ctx: args.ctx,
        threads: args.threads,
        slots: args.slots,
        min_tokens: args.min_tokens,
    };
    let activity = Arc::new(engine::Activity::default());
    let info = match engine::start(config, rx, activity.clone()) {
        Ok((info, _thread)) => info,
        Err(e) => {
            fail(serde_json::json!({"error": e.to_string()}), 3);
        }
    };
    let source = info.template.as_deref().unwrap_or(CHATML);
    let format = hearth_llama::toolcall::format_for(source);
    let template = match ChatTemplate::new(source, &info.bos, &info.eos) {
        Ok(t) => t,
        Err(e) => {
            fail(serde_json::json!({"error": e.to_string()}), 3);
        }
    };
    if args.idle_exit > 0 {
        let idle = std::time::Duration::from_secs(args.idle_exit);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(idle.min(std::time::Duration::from_secs(2)));
                if activity.idle_for() >= idle {
                    leave(0);
                }
            }
        });
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            fail(serde_json::json!({"error": e.to_string()}), 2);
        }
    };
    let ready = serde_json::json!({
        "n_ctx": info.n_ctx,
        "n_ctx_train": info.n_ctx_train,
        "architecture": info.architecture,
    });
    let shared = Arc::new(Shared {
        token,
        name: args.name,
        info,
        template,
        format,
        engine: Mutex::new(tx),
    });
    let code = runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(("127.0.0.1", 0)).await {
            Ok(l) => l,
            Err(e) => {
                fail(
                    serde_json::json!({"error": format!("cannot listen on loopback: {e}")}),
                    2,
                );
            }
        };
        let port = listener.local_addr().map_or(0, |a| a.port());
        let mut ready = ready;
        ready["port"] = serde_json::json!(port);
        say(&ready);
        match axum::serve(listener, router(shared)).await {
            Ok(()) => 0,
            Err(_) => 2,
        }
    });
    leave(code);
}

/// The processor has the instructions llama.cpp was built for (`.cargo/config.toml` sets
/// them for dev and test builds): a clear error instead of SIGILL on an older one.
fn cpu_supported() -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    {
        let on = |v: Option<&str>| v == Some("ON");
        let wanted = [
            (
                "AVX",
                on(option_env!("GGML_AVX")),
                std::arch::is_x86_feature_detected!("avx"),
            ),
            (
                "AVX2",
                on(option_env!("GGML_AVX2")),
                std::arch::is_x86_feature_detected!("avx2"),
            ),
            (
                "FMA",
                on(option_env!("GGML_FMA")),
                std::arch::is_x86_feature_detected!("fma"),
            ),
            (
                "F16C",
                on(option_env!("GGML_F16C")),
                std::arch::is_x86_feature_detected!("f16c"),
            ),
            (
                "BMI2",
                on(option_env!("GGML_BMI2")),
                std::arch::is_x86_feature_detected!("bmi2"),
            ),
        ];
        let missing: Vec<&str> = wanted
            .iter()
            .filter(|(_, built, has)| *built && !*has)
            .map(|(name, _, _)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "this build of the engine needs processor instructions this computer lacks ({}); install Hearth's release package, which chooses them at run time",
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

/// Ends the process at once, from any thread: no atexit handlers or C++ static destructors
/// (llama.cpp's would wait on the engine thread mid-decode).
fn leave(code: i32) -> ! {
    #[cfg(unix)]
    {
        // SAFETY: _exit ends the process; it touches no Rust state.
        unsafe { libc::_exit(code) }
    }
    #[cfg(not(unix))]
    {
        std::process::exit(code)
    }
}

/// On Linux, the kernel kills the worker when the thread that started it dies; the parent
/// starts workers from one long-lived thread for this reason. Elsewhere stdin's end is the
/// signal (and on Windows the parent's Job Object).
fn die_with_parent() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and has no memory effects.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        }
        // The parent may have died before the call: then we were re-parented already.
        if let Some(expected) = std::env::var("HEARTH_PARENT_PID")
            .ok()
            .and_then(|p| p.parse::<i32>().ok())
        {
            // SAFETY: getppid has no preconditions.
            if unsafe { libc::getppid() } != expected {
                std::process::exit(0);
            }
        }
    }
}
