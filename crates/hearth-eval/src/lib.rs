//! hearth-eval — the evaluation harnesses behind `hearth eval`: memory retrieval on LoCoMo
//! ([`locomo`]) and on a profile set ([`profile`]), and folder retrieval on LoCoMo through
//! the real pipeline ([`retrieval`]). Each runs in a private working folder of its own,
//! removed when it ends; nothing touches the user's data folder.
//!
//! **Used only by the CLI**, and **never by the engine**: the app does not ship it, and
//! no product rule may live here. It reaches the engine through the `Hearth` façade and
//! the public surface of the crates below (memory, folders, store, embedder), like any
//! other caller. Kept by the crates' `Cargo.toml` (`crate_graph.rs`).

pub mod locomo;
pub mod profile;
pub mod retrieval;
pub mod vectors;

use std::path::{Path, PathBuf};

use hearth_base::{Error, Result};
use hearth_core::{IndexProgress as Progress, LocalModel};

pub use profile::ProfileReport;
pub use retrieval::RetrievalReport;

/// A private working folder for one evaluation under the system's temp folder, created
/// exclusively under a random name and removed with everything in it when dropped.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new() -> Result<Self> {
        let base = std::env::temp_dir();
        for _ in 0..8 {
            let dir = base.join(format!("hearth-eval-{:016x}", rand::random::<u64>()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(&dir, e)),
            }
        }
        Err(Error::InvalidInput(format!(
            "could not make a working folder in {}",
            base.display()
        )))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The whole text of `path`, or `None` when it is larger than `max` bytes (read at most
/// `max + 1`).
fn read_bounded(path: &Path, max: u64) -> Result<Option<String>> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::io(path, e))?;
    Ok((text.len() as u64 <= max).then_some(text))
}

/// The local model named `model` for an evaluation, if its files are on this computer
/// (`None`: the evaluation measures keywords only, and its report says so).
fn eval_embedder(model: &str) -> Result<Option<hearth_embed::LocalEmbedder>> {
    hearth_embed::LocalEmbedder::installed_from_env_for(LocalModel::parse(model)?)
}

/// `hearth eval memory --profile DIR`: the profile set in `dir` with `distractors`
/// generated memories about other people, embedded with the local model `model` if it is
/// here, in a working folder of its own.
pub fn memory_profile(
    dir: &Path,
    distractors: usize,
    model: &str,
) -> Result<profile::ProfileReport> {
    let set = profile::load(dir)?;
    let embedder = eval_embedder(model)?;
    let work = WorkDir::new()?;
    profile::run(
        &set,
        distractors,
        embedder.as_ref().map(|e| e as &dyn hearth_embed::Embedder),
        &work.0,
    )
}

/// `hearth eval memory --profile DIR --vectors FILE`: the same, with each text's vector
/// read from `file` ([`vectors::FileVectors`]) instead of computed by a local model.
pub fn memory_profile_with_vectors(
    dir: &Path,
    distractors: usize,
    file: &Path,
) -> Result<profile::ProfileReport> {
    let set = profile::load(dir)?;
    let vectors = vectors::FileVectors::load(file)?;
    let work = WorkDir::new()?;
    let report = profile::run(&set, distractors, Some(&vectors), &work.0)?;
    vectors.check_complete()?;
    Ok(report)
}

/// What `hearth eval memory --locomo PATH` measured, and with which model (`None`:
/// keywords only, the model's files are not on this computer).
pub struct MemoryLocomo {
    pub rows: Vec<locomo::Row>,
    pub model: Option<String>,
}

/// `hearth eval memory --locomo PATH`, embedded with the local model `model` if it is here.
pub fn memory_locomo(path: &Path, model: &str) -> Result<MemoryLocomo> {
    let conversations = locomo::load(path)?;
    let embedder = eval_embedder(model)?;
    let work = WorkDir::new()?;
    let rows = locomo::run(
        &conversations,
        embedder.as_ref().map(|e| e as &dyn hearth_embed::Embedder),
        &work.0,
    )?;
    Ok(MemoryLocomo {
        rows,
        model: embedder.map(|e| hearth_embed::Embedder::model_id(&e).to_owned()),
    })
}

/// `hearth eval retrieval --locomo PATH`: [`retrieval_locomo`] in a working folder of its
/// own, with the local model `model`.
pub fn retrieval(
    path: &Path,
    model: &str,
    on: &mut dyn FnMut(&str, &Progress),
) -> Result<RetrievalReport> {
    let model = LocalModel::parse(model)?;
    let conversations = locomo::load(path)?;
    let work = WorkDir::new()?;
    retrieval::retrieval_locomo(
        &conversations,
        &work.0,
        &retrieval::RetrievalOptions {
            model: Some(model),
            worker: None,
        },
        on,
    )
}
