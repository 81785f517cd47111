//! Where Hearth keeps its files. One function decides it for the CLI and the app alike.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Environment variable that overrides the data directory.
pub const HOME_ENV: &str = "HEARTH_HOME";

/// Where the app writes exports: the user's Downloads folder, else their home.
pub fn export_dir() -> Result<PathBuf> {
    // Never a shared temp folder: an export is plaintext.
    directories::UserDirs::new()
        .map(|u| {
            u.download_dir()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| u.home_dir().to_path_buf())
        })
        .ok_or(Error::NoHomeDir)
}

/// The data directory: `$HEARTH_HOME` when set and non-empty, else the platform's data dir
/// (`~/.local/share/hearth` on Linux, `~/Library/Application Support/app.hearth.Hearth` on
/// macOS, `%APPDATA%\hearth\Hearth\data` on Windows).
pub fn default_data_dir() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    directories::ProjectDirs::from("app", "hearth", "Hearth")
        .map(|dirs| dirs.data_dir().to_path_buf())
        .ok_or(Error::NoHomeDir)
}

/// The files inside one data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// A data directory at `root` (nothing is created).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The data directory chosen by [`default_data_dir`].
    pub fn from_env() -> Result<Self> {
        default_data_dir().map(Self::new)
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The encrypted database.
    pub fn db_path(&self) -> PathBuf {
        self.root.join("hearth.db")
    }

    /// The plaintext sidecar naming the database id and where its key lives (no secrets).
    pub fn sidecar_path(&self) -> PathBuf {
        self.root.join("hearth.id.json")
    }

    /// The key file of the `file` key backend (mode 0600).
    pub fn key_file_path(&self) -> PathBuf {
        self.root.join("hearth.key")
    }

    /// The passphrase-wrapped key of the `passphrase` key backend.
    pub fn wrapped_key_path(&self) -> PathBuf {
        self.root.join("hearth.wrapped-key")
    }

    /// Liveness files of the processes using the store (`run/<process id>.lock`, each held
    /// locked by its process while it runs), so a dead turn is recognised at once.
    pub fn run_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    /// The indexer's lock: held by the one process indexing watched folders (the kernel
    /// frees it when that process dies, even by kill -9).
    pub fn index_lock_path(&self) -> PathBuf {
        self.root.join("index.lock")
    }

    /// Downloaded built-in models (public weights, not encrypted).
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// Log files.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// Webview profile data of the desktop app.
    pub fn webview_dir(&self) -> PathBuf {
        self.root.join("webview")
    }

    /// Creates the directory (0700 on Unix) if missing.
    pub fn create(&self) -> Result<()> {
        std::fs::create_dir_all(&self.root).map_err(|e| Error::io(&self.root, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let perms = std::fs::Permissions::from_mode(0o700);
            std::fs::set_permissions(&self.root, perms).map_err(|e| Error::io(&self.root, e))?;
        }
        Ok(())
    }
}

/// The Hugging Face hub cache the local embedding model is looked for and downloaded in:
/// `HF_HUB_CACHE`, `$HF_HOME/hub`, `$XDG_CACHE_HOME/huggingface/hub` or
/// `~/.cache/huggingface/hub` (the layout `huggingface_hub` uses, so a model another tool
/// downloaded is found); `None` without a home folder.
pub fn hf_hub_cache() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    var("HF_HUB_CACHE").map(PathBuf::from).or_else(|| {
        let hf_home = var("HF_HOME").map(PathBuf::from).or_else(|| {
            let cache = var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().join(".cache")))?;
            Some(cache.join("huggingface"))
        })?;
        Some(hf_home.join("hub"))
    })
}

/// Where the windows keep their webview data when there is no data folder to put it in
/// (no home folder, a bad `HEARTH_HOME`): the app still starts, to say what is wrong. The
/// windows then show only that error, so nothing of the user's lands there.
pub fn fallback_webview_dir() -> PathBuf {
    std::env::temp_dir().join("hearth-webview")
}
