//! The built-in model: GGUF files Hearth runs itself, through llama.cpp in a worker process
//! (`hearth-llama-worker`, see [`supervisor`]). This module keeps the list of installed
//! models (in the encrypted database's settings; the weights are public files in the data
//! folder's `models/`, or where the user keeps a GGUF they added), checks a file before
//! anything loads it ([`gguf`]), decides whether it fits this computer and with what
//! context, and gives the chat the model slots to use when no other provider is set up.
//!
//! The worker speaks the OpenAI-compatible protocol on loopback, so a built-in turn goes
//! through the same client, retries, usage ledger, tool loop and consent gate as any
//! provider's; only [`Launch`](crate::llm::Launch) differs: it starts the worker on first
//! use and again after it crashed or unloaded itself.

pub mod catalog;
pub mod gguf;
pub mod supervisor;
pub mod yielding;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::llm::{ChatModel, Launch, LlmError, ModelSlots, Protocol, Provider};
use crate::store::Store;
use crate::{Error, Result};

pub use supervisor::{WorkerSpec, WorkerState, supervisor};

/// The provider name turns, usage and `--json` show for the built-in model.
pub const PROVIDER: &str = "builtin";

/// The settings key of the installed models and the choice among them.
const SETTING: &str = "builtin_models";

/// The context a model gets when the user set none (and memory allows).
pub const DEFAULT_CONTEXT: u32 = 8192;

/// The smallest context worth running a chat in.
pub const MIN_CONTEXT: u32 = 2048;

/// The worker exits after this long without work, freeing the model's memory.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(600);

/// Memory the worker needs beyond the weights and the KV cache (llama.cpp's compute
/// buffers, the process itself).
pub(crate) const OVERHEAD_BYTES: u64 = 384 * 1024 * 1024;

/// One installed model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstalledModel {
    pub name: String,
    /// The GGUF file: in the data folder's `models/` when downloaded, where the user keeps
    /// it when added from disk (never moved, never deleted by Hearth).
    pub path: PathBuf,
    pub bytes: u64,
    pub architecture: String,
    /// The model's trained context, from its header.
    pub trained_context: Option<u64>,
    /// `download` or `file`.
    pub source: String,
    pub added_at: i64,
    /// Its chat template renders tools (else the chat offers it none).
    #[serde(default)]
    pub tools: bool,
    /// Generation speed measured on this computer at its last use, in tokens per second.
    #[serde(default)]
    pub tokens_per_s: Option<f64>,
}

/// What Settings → Models and `hearth model list` show of an installed model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelView {
    #[serde(flatten)]
    pub model: InstalledModel,
    /// Memory it needs at the context it would get, in bytes.
    pub memory_bytes: u64,
    pub context: u32,
    pub fits: bool,
    /// The model the chat uses (main), and the one that does background work (fast).
    pub main: bool,
    pub fast: bool,
    /// The file is missing or no longer a model Hearth can run.
    pub problem: Option<String>,
}

/// The installed models and the user's choices, as saved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    pub models: Vec<InstalledModel>,
    pub main: Option<String>,
    pub fast: Option<String>,
    /// Context the user asked for, in tokens (within what the model and memory allow).
    #[serde(default)]
    pub context: Option<u32>,
    /// Seconds without work before the model unloads.
    #[serde(default)]
    pub idle_s: Option<u64>,
}

impl Installed {
    pub fn load(store: &Store) -> Result<Self> {
        Ok(store.setting(SETTING)?.unwrap_or_default())
    }

    pub fn save(&self, store: &Store) -> Result<()> {
        store.set_setting(SETTING, self)
    }

    pub fn get(&self, name: &str) -> Option<&InstalledModel> {
        self.models.iter().find(|m| m.name == name)
    }

    /// The model the chat uses: the chosen one, else the first installed.
    pub fn main_model(&self) -> Option<&InstalledModel> {
        self.main
            .as_deref()
            .and_then(|n| self.get(n))
            .or_else(|| self.models.first())
    }

    /// The model background work uses: the chosen fast one, else the main one.
    pub fn fast_model(&self) -> Option<&InstalledModel> {
        self.fast
            .as_deref()
            .and_then(|n| self.get(n))
            .or_else(|| self.main_model())
    }

    pub fn idle(&self) -> Duration {
        self.idle_s.map_or(DEFAULT_IDLE, Duration::from_secs)
    }
}

/// The context and memory a catalogue model would get here, and whether it fits (memory
/// and, for a download, the free disk).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogView {
    #[serde(flatten)]
    pub entry: catalog::CatalogEntry,
    pub context: u32,
    pub memory_bytes: u64,
    pub fits: bool,
    /// The free disk holds it (unknown counts as yes).
    pub fits_disk: bool,
    pub recommended: bool,
    pub installed: bool,
}

/// Each catalogue model as it would run here, with the one Hearth recommends marked: the
/// one for the most memory this computer has, among those that fit in memory and on disk.
pub fn catalog_views(installed: &Installed, models_dir: &Path) -> crate::Result<Vec<CatalogView>> {
    let total = total_memory();
    let free = crate::embed::download::free_bytes(&models_dir.join("probe"));
    let mut views: Vec<CatalogView> = catalog::current()?
        .into_iter()
        .map(|entry| {
            let mut context = installed
                .context
                .unwrap_or(DEFAULT_CONTEXT)
                .min(entry.trained_context)
                .max(256);
            let room = total.map(budget);
            while room.is_some_and(|r| entry.memory_bytes(context) > r)
                && context / 2 >= MIN_CONTEXT.min(entry.trained_context)
            {
                context /= 2;
            }
            let memory_bytes = entry.memory_bytes(context);
            let is_installed = installed.models.iter().any(|m| {
                m.source == "download" && m.path.file_name().is_some_and(|f| f == entry.file.as_str())
            });
            CatalogView {
                fits: room.is_none_or(|r| memory_bytes <= r),
                fits_disk: is_installed || free.is_none_or(|f| entry.bytes <= f),
                context,
                memory_bytes,
                recommended: false,
                installed: is_installed,
                entry,
            }
        })
        .collect();
    let gib = total.map_or(u64::MAX, |t| t / (1024 * 1024 * 1024));
    let pick = views
        .iter()
        .enumerate()
        .filter(|(_, v)| v.fits && v.fits_disk && u64::from(v.entry.recommended_from_gib) <= gib)
        .max_by_key(|(_, v)| (v.entry.recommended_from_gib, v.entry.bytes))
        .map(|(i, _)| i);
    if let Some(i) = pick {
        views[i].recommended = true;
    }
    Ok(views)
}

/// This computer's memory in bytes: `HEARTH_TEST_TOTAL_MEMORY` in tests, else what the OS
/// says (Linux: `/proc/meminfo`); `None` when unknown.
pub fn total_memory() -> Option<u64> {
    if let Some(v) = std::env::var("HEARTH_TEST_TOTAL_MEMORY")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Some(v);
    }
    #[cfg(target_os = "linux")]
    {
        proc_bytes("/proc/meminfo", "MemTotal:")
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// A `Key:   1234 kB` line of a `/proc` file, in bytes (Linux).
#[cfg(target_os = "linux")]
pub fn proc_bytes(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(key))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// How a model would run here: its context and the memory it needs then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub context: u32,
    pub memory_bytes: u64,
    pub fits: bool,
}

/// The memory a model may use: three quarters of this computer's (the system and the app
/// keep the rest).
fn budget(total: u64) -> u64 {
    total / 4 * 3
}

/// The context for `info` (the user's wish, capped by its training and by memory) and
/// whether it fits at all (at [`MIN_CONTEXT`]).
pub fn fit(info: &gguf::GgufInfo, wanted: Option<u32>, total: Option<u64>) -> Fit {
    let trained = info
        .context_length
        .map_or(DEFAULT_CONTEXT, |c| u32::try_from(c).unwrap_or(u32::MAX));
    let mut context = wanted.unwrap_or(DEFAULT_CONTEXT).min(trained).max(256);
    let need = |ctx: u32| {
        info.file_bytes
            .saturating_add(info.kv_bytes(u64::from(ctx)).unwrap_or(0))
            .saturating_add(OVERHEAD_BYTES)
    };
    let Some(total) = total else {
        return Fit {
            context,
            memory_bytes: need(context),
            fits: true,
        };
    };
    let room = budget(total);
    while need(context) > room && context / 2 >= MIN_CONTEXT.min(trained) {
        context /= 2;
    }
    Fit {
        context,
        memory_bytes: need(context),
        fits: need(context) <= room,
    }
}

fn gib(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let g = bytes as f64 / (1024.0 * 1024.0 * 1024.0);
    format!("{g:.1} GB")
}

/// Checks `path` as a model Hearth can run on this computer: its header (before anything
/// loads it) and its memory at the context it would get.
pub fn check(path: &Path, wanted_context: Option<u32>) -> Result<(gguf::GgufInfo, Fit)> {
    let info = gguf::inspect(path).map_err(|e| Error::LocalModel(e.to_string()))?;
    let total = total_memory();
    let fit = fit(&info, wanted_context, total);
    if !fit.fits {
        return Err(Error::LocalModel(format!(
            "{} needs about {} of memory and this computer has {}: choose a smaller model",
            path.display(),
            gib(fit.memory_bytes),
            total.map_or_else(|| "less".to_owned(), gib)
        )));
    }
    Ok((info, fit))
}

/// The spec the worker runs `model` with, after checking the file again (it may have
/// changed or gone since it was added).
pub fn spec_for(model: &InstalledModel, installed: &Installed) -> Result<WorkerSpec> {
    let (_, fit) = check(&model.path, installed.context)?;
    Ok(WorkerSpec {
        name: model.name.clone(),
        path: model.path.clone(),
        n_ctx: fit.context,
        idle: installed.idle(),
    })
}

/// Starts the worker for one model when a call needs it.
struct Launcher {
    spec: WorkerSpec,
}

impl Launch for Launcher {
    fn live(
        &self,
    ) -> futures_util::future::BoxFuture<'_, std::result::Result<(String, Zeroizing<String>), LlmError>>
    {
        Box::pin(async move {
            let spec = self.spec.clone();
            let started = tokio::task::spawn_blocking(move || supervisor().ensure(&spec)).await;
            match started {
                Ok(Ok(live)) => Ok(live),
                Ok(Err(e)) => Err(LlmError::Unavailable {
                    provider: PROVIDER.into(),
                    detail: e.to_string(),
                }),
                Err(e) => Err(LlmError::Unavailable {
                    provider: PROVIDER.into(),
                    detail: e.to_string(),
                }),
            }
        })
    }
}

fn chat_model(model: &InstalledModel, installed: &Installed) -> Result<ChatModel> {
    let spec = spec_for(model, installed)?;
    let context_window = Some(spec.n_ctx);
    Ok(ChatModel {
        provider: Provider {
            name: PROVIDER.into(),
            protocol: Protocol::OpenAiCompatible,
            // Replaced by the running worker's address before each call.
            base_url: "http://127.0.0.1/v1".into(),
            api_key: None,
            launch: Some(Arc::new(Launcher { spec })),
        },
        model: model.name.clone(),
        context_window,
    })
}

/// The installed built-in model `name` as a model slot holds it (the user chose it for the
/// main, fast or fallback slot beside cloud models); `None` when it is not installed.
pub fn slot_model(store: &Store, name: &str) -> Result<Option<ChatModel>> {
    let installed = Installed::load(store)?;
    installed
        .get(name)
        .map(|m| chat_model(m, &installed))
        .transpose()
}

/// The built-in model's slots, when one is installed (`None` otherwise); `model` names an
/// installed model to answer instead of the chosen one.
pub fn slots(store: &Store, model: Option<String>) -> Result<Option<ModelSlots>> {
    let installed = Installed::load(store)?;
    let main = match &model {
        Some(name) => Some(installed.get(name).ok_or_else(|| {
            Error::NotFound(format!(
                "there is no built-in model {name:?}; see `hearth model list`"
            ))
        })?),
        None => installed.main_model(),
    };
    let Some(main) = main else {
        return Ok(None);
    };
    let main = chat_model(main, &installed)?;
    let fast = match installed.fast_model() {
        Some(f) if f.name != main.model => chat_model(f, &installed)?,
        _ => main.clone(),
    };
    Ok(Some(ModelSlots {
        main,
        fast,
        fallback: None,
    }))
}

/// Whether the chat may offer tools to the built-in model `name`: only when its template
/// renders them (a model never taught to call tools would only lose the room they take).
/// How tokens are counted for `model`: the built-in model's own tokenizer (learned from
/// its worker, see `chat::learn_counts`), else by the model's name.
pub fn encoding_for(model: &crate::llm::ChatModel) -> crate::tokens::Encoding {
    if model.provider.name == PROVIDER {
        crate::tokens::Encoding::Model(crate::tokens::ModelTokens::for_key(&format!(
            "builtin:{}",
            model.model
        )))
    } else {
        crate::tokens::Encoding::for_model(&model.model)
    }
}

/// Records the generation speed of `name` measured over a streamed answer: `tokens`
/// output tokens whose text arrived over `secs` (the first token's time is not counted:
/// it is prompt processing). Too short an answer measures nothing.
pub fn record_speed(store: &Store, name: &str, tokens: u64, secs: f64) -> Result<()> {
    if tokens < 8 || secs <= 0.0 {
        return Ok(());
    }
    let mut installed = Installed::load(store)?;
    let Some(model) = installed.models.iter_mut().find(|m| m.name == name) else {
        return Ok(());
    };
    let rate = (tokens - 1) as f64 / secs;
    model.tokens_per_s = Some((rate * 10.0).round() / 10.0);
    installed.save(store)
}

pub fn offers_tools(store: &Store, name: &str) -> Result<bool> {
    Ok(Installed::load(store)?.get(name).is_some_and(|m| m.tools))
}

/// A name for a model file: its stem, lowercased, with anything but letters, digits, `-`,
/// `_` and `.` replaced.
pub fn name_from_path(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// Checks a model name people typed or a file implied.
pub fn valid_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 100
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(Error::InvalidInput(
            "a model name uses letters, digits, '-', '_' and '.' only (at most 100)".into(),
        ));
    }
    Ok(())
}

/// The view of `model` with its fit here.
pub fn view(model: &InstalledModel, installed: &Installed) -> ModelView {
    let main = installed.main_model().is_some_and(|m| m.name == model.name);
    let fast = installed.fast_model().is_some_and(|m| m.name == model.name);
    let (fit, problem) = match gguf::inspect(&model.path) {
        Ok(info) => {
            let f = fit(&info, installed.context, total_memory());
            let problem = (!f.fits).then(|| "too large for this computer's memory".to_owned());
            (f, problem)
        }
        Err(e) => (
            Fit {
                context: 0,
                memory_bytes: 0,
                fits: false,
            },
            Some(e.to_string()),
        ),
    };
    ModelView {
        model: model.clone(),
        memory_bytes: fit.memory_bytes,
        context: fit.context,
        fits: fit.fits,
        main,
        fast,
        problem,
    }
}
