//! [`BuiltinService`]: the built-in model's use cases (Settings → Models, `hearth model`):
//! add a GGUF from disk, list, choose, remove, and what the worker is doing. Blocking: call
//! from `spawn_blocking` in async code.

use std::path::Path;

use serde::Serialize;

use super::Hearth;
use crate::builtin::{self, Installed, InstalledModel, ModelView, WorkerState, supervisor};
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

fn not_found(name: &str) -> Error {
    Error::NotFound(format!(
        "there is no built-in model {name:?}; see `hearth model list`"
    ))
}
