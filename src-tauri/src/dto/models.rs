//! The built-in model (Settings → Models, the first-run choice).

use serde::Serialize;
use ts_rs::TS;

/// A model Hearth offers to download, as it would run on this computer.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct BuiltinCatalogDto {
    /// The name Hearth uses (`hearth model download NAME`).
    pub name: String,
    pub label: String,
    pub family: String,
    pub parameters: String,
    pub quantisation: String,
    pub licence: String,
    /// The download's size in bytes.
    pub bytes: f64,
    /// Memory it needs here at `context`, in bytes.
    pub memory_bytes: f64,
    pub context: u32,
    pub tools: bool,
    /// It fits this computer's memory, and its free disk.
    pub fits: bool,
    pub fits_disk: bool,
    /// The one Hearth recommends for this computer.
    pub recommended: bool,
    /// Downloaded already.
    pub installed: bool,
}

/// An installed built-in model.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct BuiltinModelDto {
    pub name: String,
    /// The GGUF file (in the data folder's `models/` when downloaded).
    pub path: String,
    /// `download` or `file` (added from disk, in place).
    pub source: String,
    pub architecture: String,
    pub bytes: f64,
    pub memory_bytes: f64,
    pub context: u32,
    pub tools: bool,
    pub fits: bool,
    /// The chat uses it; background work (learning, titles) uses it.
    pub main: bool,
    pub fast: bool,
    /// The file is missing or no longer a model Hearth can run.
    pub problem: Option<String>,
    /// Generation speed measured on this computer at its last use, tokens per second.
    pub tokens_per_s: Option<f64>,
}

/// What the engine is doing.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct BuiltinStatusDto {
    /// The engine's program is installed beside Hearth.
    pub engine_installed: bool,
    /// A model is loaded (its worker runs).
    pub running: bool,
    pub model: Option<String>,
    pub resident_bytes: Option<f64>,
    pub starts: u32,
    pub crashes: u32,
    pub main: Option<String>,
    pub fast: Option<String>,
    pub installed: u32,
    pub total_memory: Option<f64>,
    /// Seconds without work before the model unloads.
    pub idle_unload_s: f64,
    /// A download runs now (its model's name).
    pub downloading: Option<String>,
}

/// How a built-in model's download goes (`builtin_download_progress`).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct BuiltinDownloadEvent {
    pub name: String,
    pub done: f64,
    pub total: Option<f64>,
    pub bytes_per_s: Option<f64>,
    pub eta_s: Option<f64>,
}
