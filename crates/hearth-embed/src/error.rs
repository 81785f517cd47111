//! How getting or running the local embedding model can fail.

use std::path::PathBuf;

/// A failure of the local embedding model; wrapped in the engine's `Error::Service`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// `HEARTH_EMBED_MODEL_DIR` (or an explicit model folder) lacks a file the model needs.
    #[error(
        "the embedding model folder {dir} is incomplete: {missing} not found (looked in {looked}). \
         Point HEARTH_EMBED_MODEL_DIR at a folder with config.json, tokenizer.json and \
         model.safetensors (scripts/fetch-model.sh installs one), or unset it to download the model"
    )]
    ModelDirIncomplete {
        dir: PathBuf,
        missing: String,
        looked: String,
    },

    /// The model is not on disk and could not be downloaded.
    #[error(
        "the embedding model {model} is not installed (looked in {looked}) and downloading {url} \
         failed: {detail}. Check the network (or HF_ENDPOINT), or set HEARTH_EMBED_MODEL_DIR to a \
         folder with config.json, tokenizer.json and model.safetensors"
    )]
    Download {
        model: String,
        looked: String,
        url: String,
        detail: String,
    },

    /// No folder to find or keep the model in.
    #[error(
        "no home directory to keep the embedding model in; set HF_HOME or HEARTH_EMBED_MODEL_DIR"
    )]
    NoCacheDir,

    /// A model file is there but cannot be read as what it should be.
    #[error(
        "the embedding model file {path} is damaged ({detail}); delete it and Hearth will fetch it again"
    )]
    Corrupt { path: PathBuf, detail: String },

    /// The model failed while computing embeddings.
    #[error("computing embeddings failed: {0}")]
    Inference(String),
}

impl EmbedError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::ModelDirIncomplete { .. } | EmbedError::NoCacheDir => "embed_model_missing",
            EmbedError::Download { .. } => "embed_download_failed",
            EmbedError::Corrupt { .. } => "embed_model_corrupt",
            EmbedError::Inference(_) => "embed_failed",
        }
    }
}

impl From<EmbedError> for hearth_base::Error {
    fn from(e: EmbedError) -> Self {
        hearth_base::Error::Service(hearth_base::ServiceError::new(e.code(), e))
    }
}
