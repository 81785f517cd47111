//! [`BuiltinService`]: the built-in model's use cases (Settings → Models, `hearth model`):
//! add a GGUF from disk, list, choose, remove, and what the worker is doing. Blocking: call
//! from `spawn_blocking` in async code.

use std::path::Path;

use serde::Serialize;

use super::Hearth;
use crate::builtin::{
    self, CatalogView, Installed, InstalledModel, ModelView, WorkerState, supervisor,
};
use crate::{Error, Result};

/// What `hearth model status` and Settings → Models show of the engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuiltinStatus {
    /// The worker of this process (the app's, or this CLI command's).
    #[serde(flatten)]
    pub worker: WorkerState,
    /// The model a chat would use.
    pub main: Option<String>,
    pub fast: Option<String>,
    pub installed: usize,
    /// This computer's memory in bytes, when known.
    pub total_memory: Option<u64>,
    /// Seconds without work before the model unloads.
    pub idle_unload_s: u64,
    /// The engine's program is beside Hearth.
    pub engine_installed: bool,
}

/// How a download goes: bytes so far (with what an earlier attempt left), the total, the
/// rate of this attempt and the time left at that rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DownloadProgress {
    pub done: u64,
    pub total: Option<u64>,
    pub bytes_per_s: Option<u64>,
    pub eta_s: Option<u64>,
}

/// One built-in model download at a time in this process.
static DOWNLOADING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

struct DownloadGuard;

impl DownloadGuard {
    fn take() -> Result<Self> {
        if DOWNLOADING.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::Busy(
                "a model is already downloading; wait for it to finish".into(),
            ));
        }
        Ok(Self)
    }
}

impl Drop for DownloadGuard {
    fn drop(&mut self) {
        DOWNLOADING.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The built-in model.
#[derive(Clone)]
pub struct BuiltinService {
    hearth: Hearth,
}

impl BuiltinService {
    pub(super) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    fn installed(&self) -> Result<Installed> {
        Installed::load(&self.hearth.inner.store)
    }

    /// Adds a GGUF the user has, in place (never copied, moved or deleted), after checking
    /// its header and that it fits this computer. `name` defaults to the file's stem. The
    /// first model added becomes the one the chat uses.
    pub fn add(&self, path: &Path, name: Option<&str>) -> Result<ModelView> {
        let path = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
        let name = match name {
            Some(n) => n.trim().to_owned(),
            None => builtin::name_from_path(&path),
        };
        builtin::valid_name(&name)?;
        let mut installed = self.installed()?;
        let (info, _) = builtin::check(&path, installed.context)?;
        let model = InstalledModel {
            name: name.clone(),
            path,
            bytes: info.file_bytes,
            architecture: info.architecture,
            trained_context: info.context_length,
            source: "file".into(),
            added_at: crate::time::now_millis(),
            tools: info.renders_tools,
            tokens_per_s: None,
        };
        installed.models.retain(|m| m.name != name);
        installed.models.push(model.clone());
        installed.save(&self.hearth.inner.store)?;
        Ok(builtin::view(&model, &installed))
    }

    /// Installed models, each with its fit here.
    pub fn list(&self) -> Result<Vec<ModelView>> {
        let installed = self.installed()?;
        Ok(installed
            .models
            .iter()
            .map(|m| builtin::view(m, &installed))
            .collect())
    }

    /// Forgets a model; a downloaded one's file is deleted (its disk freed), a file the
    /// user added stays where it is. `not_found` when there is none by that name.
    pub fn remove(&self, name: &str) -> Result<()> {
        let mut installed = self.installed()?;
        let Some(model) = installed.get(name).cloned() else {
            return Err(not_found(name));
        };
        if supervisor().state().model.as_deref() == Some(name) {
            supervisor().stop();
        }
        installed.models.retain(|m| m.name != name);
        for slot in [&mut installed.main, &mut installed.fast] {
            if slot.as_deref() == Some(name) {
                *slot = None;
            }
        }
        installed.save(&self.hearth.inner.store)?;
        if model.source == "download" {
            match std::fs::remove_file(&model.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&model.path, e)),
            }
        }
        Ok(())
    }

    /// Makes `name` the model the chat uses (`fast`: the one background work uses).
    pub fn choose(&self, name: &str, fast: bool) -> Result<ModelView> {
        let mut installed = self.installed()?;
        let Some(model) = installed.get(name).cloned() else {
            return Err(not_found(name));
        };
        builtin::check(&model.path, installed.context)?;
        if fast {
            installed.fast = Some(name.to_owned());
        } else {
            installed.main = Some(name.to_owned());
        }
        installed.save(&self.hearth.inner.store)?;
        Ok(builtin::view(&model, &installed))
    }

    /// Sets how long the model stays loaded without work (at least a minute).
    pub fn set_idle_unload(&self, seconds: u64) -> Result<()> {
        if seconds < 60 {
            return Err(Error::InvalidInput(
                "the model stays loaded at least 60 seconds".into(),
            ));
        }
        let mut installed = self.installed()?;
        installed.idle_s = Some(seconds);
        installed.save(&self.hearth.inner.store)
    }

    /// What the engine is doing now.
    pub fn status(&self) -> Result<BuiltinStatus> {
        let installed = self.installed()?;
        Ok(BuiltinStatus {
            worker: supervisor().state(),
            main: installed.main_model().map(|m| m.name.clone()),
            fast: installed.fast_model().map(|m| m.name.clone()),
            installed: installed.models.len(),
            total_memory: builtin::total_memory(),
            idle_unload_s: installed.idle().as_secs(),
            engine_installed: builtin::supervisor::worker_program().is_ok(),
        })
    }
}

impl BuiltinService {
    /// The models Hearth offers to download, each with its fit here; the recommended one
    /// marked.
    pub fn catalog(&self) -> Result<Vec<CatalogView>> {
        let dir = self.hearth.inner.store.data_dir().models_dir();
        builtin::catalog_views(&self.installed()?, &dir)
    }

    /// The model Hearth recommends for this computer, if any fits.
    pub fn recommend(&self) -> Result<Option<CatalogView>> {
        Ok(self.catalog()?.into_iter().find(|v| v.recommended))
    }

    /// Downloads catalogue model `name` into the data folder's `models/` and installs it:
    /// resumed from what an earlier attempt left, checked against its pinned size and
    /// SHA-256 (a mismatch deletes it: nothing is installed), its header checked before it
    /// is added. `cancel` stops it (what arrived stays for the next attempt).
    pub async fn download(
        &self,
        name: &str,
        on_progress: std::sync::Arc<dyn Fn(DownloadProgress) + Send + Sync>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<ModelView> {
        let this = self.clone();
        let n = name.to_owned();
        let view = tokio::task::spawn_blocking(move || {
            this.catalog()?
                .into_iter()
                .find(|v| v.entry.name == n)
                .ok_or_else(|| {
                    Error::NotFound(format!(
                        "there is no model {n:?} in the catalogue; see `hearth model list`"
                    ))
                })
        })
        .await
        .map_err(|e| Error::Task(e.to_string()))??;
        if !view.fits {
            return Err(Error::LocalModel(format!(
                "{} needs about {} MB of memory, more than this computer can give it",
                view.entry.label,
                view.memory_bytes / (1024 * 1024)
            )));
        }
        if !view.fits_disk && !view.installed {
            return Err(Error::LocalModel(format!(
                "not enough free disk for {}: it needs {} MB; nothing was downloaded",
                view.entry.label,
                view.entry.bytes / (1024 * 1024)
            )));
        }
        let _guard = DownloadGuard::take()?;
        let dir = self.hearth.inner.store.data_dir().models_dir();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let dest = dir.join(&view.entry.file);
        if !dest.exists() {
            let url = view.entry.url(&builtin::catalog::hub_endpoint());
            let http = crate::embed::download::client()
                .map_err(|e| Error::LocalModel(format!("cannot download: {e}")))?;
            let started = std::time::Instant::now();
            let first: std::sync::Mutex<Option<u64>> = std::sync::Mutex::new(None);
            let progress = move |_: &str, done: u64, total: Option<u64>| {
                let base = first
                    .lock()
                    .map(|mut f| *f.get_or_insert(done))
                    .unwrap_or(0);
                let secs = started.elapsed().as_secs_f64();
                let rate = (secs > 0.5)
                    .then(|| ((done.saturating_sub(base)) as f64 / secs) as u64)
                    .filter(|r| *r > 0);
                let eta_s = match (total, rate) {
                    (Some(t), Some(r)) => Some(t.saturating_sub(done) / r),
                    _ => None,
                };
                on_progress(DownloadProgress {
                    done,
                    total,
                    bytes_per_s: rate,
                    eta_s,
                });
            };
            let fetch = crate::embed::download::Fetch {
                url: &url,
                dest: &dest,
                sha256: Some(&view.entry.sha256),
                max_bytes: view.entry.bytes,
                allowed_hosts: crate::embed::HUB_DOWNLOAD_HOSTS,
                progress: Some(&progress),
            };
            let fetched = tokio::select! {
                r = crate::embed::download::fetch(&http, &fetch) => r,
                () = cancel.cancelled() => {
                    return Err(Error::LocalModel(format!(
                        "the download of {} was cancelled; download it again to resume",
                        view.entry.label
                    )));
                }
            };
            match fetched {
                Ok(_) => {}
                Err(crate::embed::download::Failed::Network(d)) => {
                    return Err(Error::LocalModel(format!(
                        "the download of {} broke: {d}; download it again to resume",
                        view.entry.label
                    )));
                }
                Err(crate::embed::download::Failed::Refused(d)) => {
                    return Err(Error::LocalModel(format!(
                        "the download does not match: {d}"
                    )));
                }
                Err(crate::embed::download::Failed::Disk(e)) => return Err(e),
            }
        }
        let this = self.clone();
        let entry = view.entry.clone();
        tokio::task::spawn_blocking(move || {
            let mut installed = this.installed()?;
            let (info, _) = builtin::check(&dest, installed.context)?;
            let model = InstalledModel {
                name: entry.name.clone(),
                path: dest,
                bytes: info.file_bytes,
                architecture: info.architecture,
                trained_context: info.context_length,
                source: "download".into(),
                added_at: crate::time::now_millis(),
                tools: info.renders_tools,
                tokens_per_s: None,
            };
            installed.models.retain(|m| m.name != entry.name);
            installed.models.push(model.clone());
            installed.save(&this.hearth.inner.store)?;
            Ok(builtin::view(&model, &installed))
        })
        .await
        .map_err(|e| Error::Task(e.to_string()))?
    }
}

fn not_found(name: &str) -> Error {
    Error::NotFound(format!(
        "there is no built-in model {name:?}; see `hearth model list`"
    ))
}
