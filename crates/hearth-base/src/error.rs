//! The engine's one error type. Every variant says what the user can do about it.
//!
//! This module is at the bottom of the layers (the store returns this type), so it names
//! no module above it: a provider's or the embedder's failure reaches it as an opaque
//! [`ServiceError`] — its stable code, its message and the typed original inside —
//! which `llm` and `embed` build with `From` on their own error types.

use std::path::{Path, PathBuf};

/// Result with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

const FALLBACKS: &str = "Start a D-Bus session with a Secret Service (GNOME Keyring, KeePassXC, KWallet) and \
try again, or choose an explicit fallback: HEARTH_KEY_BACKEND=file keeps the key in a file \
readable only by you beside the database, HEARTH_KEY_BACKEND=passphrase derives it from a \
passphrase (HEARTH_PASSPHRASE or a prompt).";

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key we have does not open the database.
    #[error(
        "the key does not open the database at {path}: it was encrypted with another key. \
         Nothing was changed. If you have a recovery key, run `hearth key import`."
    )]
    WrongKey { path: PathBuf },

    /// The database exists but its key is nowhere to be found.
    #[error(
        "the database at {path} exists but its key was not found in {backend}. Nothing was \
         changed. If you have a recovery key, run `hearth key import`; to start over, move the \
         data folder away."
    )]
    KeyMissing { path: PathBuf, backend: String },

    /// The OS keyring could not be reached.
    #[error("the system keyring is not available ({detail}). {FALLBACKS}")]
    KeyringUnavailable { detail: String },

    /// The key is protected by a passphrase and none was given.
    #[error(
        "this database's key is protected by a passphrase: set HEARTH_PASSPHRASE or run in a terminal to be asked"
    )]
    PassphraseRequired,

    /// The passphrase given does not unlock the key.
    #[error("the passphrase does not unlock the database key; nothing was changed")]
    WrongPassphrase,

    /// Another process holds a lock on the database longer than we wait.
    #[error("the database is busy in another process (is Hearth running?): {detail}")]
    Locked { detail: String },

    /// The database was written by a newer Hearth.
    #[error(
        "the database has schema version {found}, newer than this Hearth understands ({supported}); \
         update Hearth. Nothing was changed."
    )]
    SchemaTooNew { found: u32, supported: u32 },

    /// The disk is full.
    #[error("the disk is full; nothing was saved. Free some space and try again")]
    DiskFull,

    /// A file is not what we expected (a damaged sidecar or key file).
    #[error("{path}: {detail}")]
    Corrupt { path: PathBuf, detail: String },

    /// The input given does not make sense.
    #[error("{0}")]
    InvalidInput(String),
    /// The thing asked for does not exist (a memory, a conversation…).
    #[error("{0}")]
    NotFound(String),
    /// No model is configured (no provider, no `HEARTH_PROVIDER_URL`); says how to add one.
    #[error("{0}")]
    NoProvider(String),

    /// No home directory to put the data directory in.
    #[error("no home directory found; set HEARTH_HOME to the folder Hearth should use")]
    NoHomeDir,

    /// A file system operation failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// SQLite reported an error we do not classify further.
    #[error("database error: {0}")]
    Database(String),

    /// A service the engine calls failed: a provider (an `LlmError`) or the local
    /// embedding model (an `EmbedError`). [`ServiceError::downcast_ref`] gives the original.
    #[error(transparent)]
    Service(ServiceError),

    /// An MCP server did not start or did not answer `initialize`.
    #[error(
        "the MCP server {server} did not start: {detail}{}",
        stderr_tail(stderr)
    )]
    McpStart {
        server: String,
        detail: String,
        /// Its last stderr lines (shown to the user, never logged).
        stderr: Vec<String>,
    },

    /// An act that lowers caution (adding an MCP server, approving its tools, accepting
    /// its labels, lowering a tier) was not confirmed on the consent surface.
    #[error("not confirmed: {0}")]
    NotConfirmed(String),
    /// A background task was cancelled or panicked.
    #[error("internal task failed: {0}")]
    Task(String),
    /// The same work is already under way in this process (one model download at a time).
    #[error("{0}")]
    Busy(String),

    /// The built-in model cannot be used: not a model file, cut short, an architecture the
    /// engine cannot run, too large for this computer, or its engine is missing.
    #[error("{0}")]
    LocalModel(String),

    /// A job's lease ran out and another worker took the job over: this worker's result
    /// is not applied.
    #[error("the job was taken over by another worker")]
    LeaseLost,

    /// A priced call would cross a spending cap the user set: it was not sent. The message
    /// names the cap and the three ways on (send this message anyway, use a local model,
    /// raise the cap).
    #[error("{0}")]
    OverBudget(String),
}

impl Error {
    /// A stable machine-readable code, used in `--json` output and the app's IPC errors.
    pub fn code(&self) -> &'static str {
        match self {
            Error::WrongKey { .. } => "wrong_key",
            Error::KeyMissing { .. } => "key_missing",
            Error::KeyringUnavailable { .. } => "keyring_unavailable",
            Error::PassphraseRequired => "passphrase_required",
            Error::WrongPassphrase => "wrong_passphrase",
            Error::Locked { .. } => "locked",
            Error::SchemaTooNew { .. } => "schema_too_new",
            Error::DiskFull => "disk_full",
            Error::Corrupt { .. } => "corrupt",
            Error::InvalidInput(_) => "invalid_input",
            Error::NotFound(_) => "not_found",
            Error::NoProvider(_) => "no_provider",
            Error::NoHomeDir => "no_home_dir",
            Error::Io { .. } => "io",
            Error::LeaseLost => "lease_lost",
            Error::OverBudget(_) => "over_budget",
            Error::Database(_) => "database",
            Error::Service(e) => e.code,
            Error::Task(_) => "internal",
            Error::McpStart { .. } => "mcp_start_failed",
            Error::NotConfirmed(_) => "confirmation_required",
            Error::Busy(_) => "busy",
            Error::LocalModel(_) => "local_model",
        }
    }

    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        if source.raw_os_error() == Some(28) {
            return Error::DiskFull;
        }
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    pub fn corrupt(path: impl AsRef<Path>, detail: impl Into<String>) -> Self {
        Error::Corrupt {
            path: path.as_ref().to_path_buf(),
            detail: detail.into(),
        }
    }
}

/// A failure of a service above the store (a provider, the embedder), carried by the
/// layer-0 [`Error`] without naming its type. Display and source are the original's.
#[derive(Debug)]
pub struct ServiceError {
    code: &'static str,
    inner: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl ServiceError {
    /// Wraps a service's own error with its stable code.
    pub fn new(code: &'static str, inner: impl std::error::Error + Send + Sync + 'static) -> Self {
        ServiceError {
            code,
            inner: Box::new(inner),
        }
    }

    /// The service's stable code (`provider_auth`, `embed_model_missing`, …).
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The service's typed error, if it is a `T` (`LlmError`, `EmbedError`).
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.inner.downcast_ref::<T>()
    }
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl std::error::Error for ServiceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

fn stderr_tail(lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let tail: Vec<&str> = lines
        .iter()
        .skip(lines.len().saturating_sub(5))
        .map(String::as_str)
        .collect();
    format!("\nits last words:\n  {}", tail.join("\n  "))
}
