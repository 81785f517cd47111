//! Which embedder the user chose, and the handle the engine shares so the choice can
//! change while the app runs.

use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::{Embedder, LocalModel};
use crate::{Error, Result};

/// The setting that holds the choice.
pub const SETTING: &str = "embedding";

/// Where vectors for memory (and file) search come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EmbeddingChoice {
    /// A model run in-process (used once its files are on this computer); a setting saved
    /// before there was a choice of local model means the default one.
    Local {
        #[serde(default)]
        model: LocalModel,
    },
    /// A provider's embeddings API; `dimensions` is measured when the choice is made.
    Provider {
        provider: String,
        model: String,
        dimensions: usize,
    },
    /// No vectors: search is keyword-only.
    Off,
}

impl Default for EmbeddingChoice {
    fn default() -> Self {
        EmbeddingChoice::local()
    }
}

impl EmbeddingChoice {
    /// The default local model.
    pub fn local() -> Self {
        EmbeddingChoice::Local {
            model: LocalModel::default(),
        }
    }

    /// Parses `local` (the default local model), `local:MODEL` (e.g.
    /// `local:bge-small-en-v1.5`), `off` or `PROVIDER:MODEL` (dimensions still to be
    /// measured: 0).
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "local" => Ok(EmbeddingChoice::local()),
            "off" | "none" => Ok(EmbeddingChoice::Off),
            other => match other.split_once(':') {
                Some(("local", m)) => Ok(EmbeddingChoice::Local {
                    model: LocalModel::parse(m)?,
                }),
                Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => {
                    Ok(EmbeddingChoice::Provider {
                        provider: p.trim().to_owned(),
                        model: m.trim().to_owned(),
                        dimensions: 0,
                    })
                }
                _ => Err(Error::InvalidInput(format!(
                    "unknown embedding choice {other:?}: use local, local:MODEL, off, or PROVIDER:MODEL"
                ))),
            },
        }
    }

    /// The choice as a form gives it: `kind` is `local` (with a local model's id, or none
    /// for the default), `off` or `provider`, the last with a provider and its model (the
    /// app's Memory screen). Same rules as [`parse`].
    ///
    /// [`parse`]: EmbeddingChoice::parse
    pub fn from_form(kind: &str, provider: Option<&str>, model: Option<&str>) -> Result<Self> {
        match kind.trim() {
            "provider" => match (provider.map(str::trim), model.map(str::trim)) {
                (Some(p), Some(m)) if !p.is_empty() && !m.is_empty() && !p.contains(':') => {
                    Self::parse(&format!("{p}:{m}"))
                }
                _ => Err(Error::InvalidInput(
                    "choose a provider and type its embedding model".into(),
                )),
            },
            "local" => match model.map(str::trim).filter(|m| !m.is_empty()) {
                Some(m) => Ok(EmbeddingChoice::Local {
                    model: LocalModel::parse(m)?,
                }),
                None => Ok(EmbeddingChoice::local()),
            },
            "off" => Self::parse(kind),
            other => Err(Error::InvalidInput(format!(
                "unknown embedding choice {other:?}: use local, off, or a provider's model"
            ))),
        }
    }

    /// How the choice is written on the command line.
    pub fn label(&self) -> String {
        match self {
            EmbeddingChoice::Local { model } if *model == LocalModel::default() => "local".into(),
            EmbeddingChoice::Local { model } => format!("local:{}", model.id()),
            EmbeddingChoice::Off => "off".into(),
            EmbeddingChoice::Provider {
                provider, model, ..
            } => format!("{provider}:{model}"),
        }
    }
}

/// The embedder in use, shared by search, the memory block and learning; swapped when
/// the user changes the choice or the local model finishes downloading.
#[derive(Clone, Default)]
pub struct EmbedderSlot(Arc<RwLock<Option<Arc<dyn Embedder>>>>);

impl EmbedderSlot {
    pub fn new(embedder: Option<Arc<dyn Embedder>>) -> Self {
        EmbedderSlot(Arc::new(RwLock::new(embedder)))
    }

    /// The embedder now (none: keyword-only).
    pub fn get(&self) -> Option<Arc<dyn Embedder>> {
        self.0
            .read()
            .map(|e| e.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    pub fn set(&self, embedder: Option<Arc<dyn Embedder>>) {
        match self.0.write() {
            Ok(mut e) => *e = embedder,
            Err(p) => *p.into_inner() = embedder,
        }
    }
}

impl std::fmt::Debug for EmbedderSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EmbedderSlot")
            .field(&self.get().map(|e| e.model_id().to_owned()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_print() {
        assert_eq!(
            EmbeddingChoice::parse("local").ok(),
            Some(EmbeddingChoice::local())
        );
        let bge = EmbeddingChoice::parse("local:bge-small-en-v1.5").ok();
        assert_eq!(
            bge,
            Some(EmbeddingChoice::Local {
                model: LocalModel::BgeSmall
            })
        );
        assert_eq!(
            bge.map(|c| c.label()).as_deref(),
            Some("local:bge-small-en-v1.5")
        );
        assert!(EmbeddingChoice::parse("local:gpt-4").is_err());
        assert_eq!(
            EmbeddingChoice::from_form("local", None, Some("bge-small-en-v1.5")).ok(),
            Some(EmbeddingChoice::Local {
                model: LocalModel::BgeSmall
            })
        );
        assert_eq!(
            EmbeddingChoice::parse("off").ok(),
            Some(EmbeddingChoice::Off)
        );
        let p = EmbeddingChoice::parse("ollama:nomic-embed-text:v1.5").ok();
        assert_eq!(
            p,
            Some(EmbeddingChoice::Provider {
                provider: "ollama".into(),
                model: "nomic-embed-text:v1.5".into(),
                dimensions: 0
            })
        );
        assert_eq!(
            p.map(|c| c.label()).as_deref(),
            Some("ollama:nomic-embed-text:v1.5")
        );
        assert!(EmbeddingChoice::parse("ollama:").is_err());
        assert!(EmbeddingChoice::parse("nonsense").is_err());
    }

    #[test]
    fn a_local_choice_saved_before_there_were_models_is_the_default_model() {
        let old: Option<EmbeddingChoice> =
            serde_json::from_value(serde_json::json!({"kind": "local"})).ok();
        assert_eq!(old, Some(EmbeddingChoice::local()));
        assert_eq!(
            serde_json::to_value(EmbeddingChoice::Local {
                model: LocalModel::BgeSmall
            })
            .ok(),
            Some(serde_json::json!({"kind": "local", "model": "bge-small-en-v1.5"}))
        );
    }

    #[test]
    fn the_setting_is_tagged_json() {
        let json = serde_json::to_value(EmbeddingChoice::Provider {
            provider: "p".into(),
            model: "m".into(),
            dimensions: 8,
        })
        .ok();
        assert_eq!(
            json,
            Some(
                serde_json::json!({"kind": "provider", "provider": "p", "model": "m", "dimensions": 8})
            )
        );
    }
}
