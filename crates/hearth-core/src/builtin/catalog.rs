//! The models Hearth offers to download: public, non-gated GGUF files, each pinned to one
//! revision of its Hugging Face repository with its size and SHA-256. A download that does
//! not match is deleted, never installed (`hearth_embed::download`).
//!
//! **Where the hashes come from.** These machines cannot reach the hub, so no hash here was
//! computed from a downloaded file: each is the LFS object id of the file at the pinned
//! revision as recorded by the public source named in `sha256_source`. A wrong one can only
//! refuse a download ("the download does not match; nothing was installed"), never install
//! another file.

use serde::{Deserialize, Serialize};

/// One downloadable model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// The name Hearth uses (`hearth model download NAME`).
    pub name: String,
    pub label: String,
    pub family: String,
    pub parameters: String,
    pub quantisation: String,
    /// The Hugging Face repository and the revision it is pinned to.
    pub repo: String,
    pub revision: String,
    pub file: String,
    pub bytes: u64,
    pub sha256: String,
    /// Where the hash and size were read (see the module's notes).
    pub sha256_source: String,
    pub trained_context: u32,
    /// Bytes of KV cache per token of context (f16 keys and values).
    pub kv_bytes_per_token: u64,
    pub licence: String,
    /// Its template renders tools and the model was trained to call them.
    pub tools: bool,
    /// The machine's memory, in GiB, from which Hearth recommends it.
    pub recommended_from_gib: u32,
}

fn entry(
    name: &str,
    label: &str,
    (family, parameters, quantisation): (&str, &str, &str),
    (repo, revision, file): (&str, &str, &str),
    (bytes, sha256, source): (u64, &str, &str),
    (trained_context, kv_bytes_per_token): (u32, u64),
    (licence, recommended_from_gib): (&str, u32),
) -> CatalogEntry {
    CatalogEntry {
        name: name.into(),
        label: label.into(),
        family: family.into(),
        parameters: parameters.into(),
        quantisation: quantisation.into(),
        repo: repo.into(),
        revision: revision.into(),
        file: file.into(),
        bytes,
        sha256: sha256.into(),
        sha256_source: source.into(),
        trained_context,
        kv_bytes_per_token,
        licence: licence.into(),
        tools: true,
        recommended_from_gib,
    }
}

/// Several independent public pins of each file agree on its revision, size and hash
/// (listed in docs/decisions/0022); the hub itself could not be asked from here.
const SOURCE: &str = "public pins of this file at this revision (docs/decisions/0022)";

/// The built-in catalogue, smallest first: one for machines with little memory, the
/// default for 8 GB, a stronger one for 16 GB and more. All Apache-2.0, none gated.
pub fn builtin() -> Vec<CatalogEntry> {
    vec![
        entry(
            "qwen2.5-0.5b",
            "Qwen2.5 0.5B Instruct",
            ("qwen2", "0.5B", "Q4_K_M"),
            (
                "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
                "9217f5db79a29953eb74d5343926648285ec7e67",
                "qwen2.5-0.5b-instruct-q4_k_m.gguf",
            ),
            (
                491_400_032,
                "74a4da8c9fdbcd15bd1f6d01d621410d31c6fc00986f5eb687824e7b93d7a9db",
                SOURCE,
            ),
            // 24 layers × 2 KV heads × 64 dims × 2 (K and V) × 2 bytes.
            (32_768, 12_288),
            ("Apache-2.0", 0),
        ),
        entry(
            "qwen2.5-1.5b",
            "Qwen2.5 1.5B Instruct",
            ("qwen2", "1.5B", "Q4_K_M"),
            (
                "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
                "91cad51170dc346986eccefdc2dd33a9da36ead9",
                "qwen2.5-1.5b-instruct-q4_k_m.gguf",
            ),
            (
                1_117_320_736,
                "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
                SOURCE,
            ),
            // 28 layers × 2 KV heads × 128 dims × 2 × 2 bytes.
            (32_768, 28_672),
            // An "8 GB" computer reports a little under 8 GiB.
            ("Apache-2.0", 6),
        ),
        entry(
            "qwen2.5-7b",
            "Qwen2.5 7B Instruct",
            ("qwen2", "7B", "Q4_K_M"),
            (
                "bartowski/Qwen2.5-7B-Instruct-GGUF",
                "8911e8a47f92bac19d6f5c64a2e2095bd2f7d031",
                "Qwen2.5-7B-Instruct-Q4_K_M.gguf",
            ),
            (
                4_683_074_240,
                "65b8fcd92af6b4fefa935c625d1ac27ea29dcb6ee14589c55a8f115ceaaa1423",
                SOURCE,
            ),
            // 28 layers × 4 KV heads × 128 dims × 2 × 2 bytes.
            (32_768, 57_344),
            ("Apache-2.0", 14),
        ),
    ]
}

/// The catalogue in use: `HEARTH_MODEL_CATALOG` (a JSON array of entries, for tests and
/// administrators) replaces the built-in one.
pub fn current() -> crate::Result<Vec<CatalogEntry>> {
    match std::env::var_os("HEARTH_MODEL_CATALOG").filter(|v| !v.is_empty()) {
        None => Ok(builtin()),
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|e| crate::Error::io(&path, e))?;
            serde_json::from_str(&text).map_err(|e| {
                crate::Error::InvalidInput(format!(
                    "HEARTH_MODEL_CATALOG is not a JSON array of catalogue entries: {e}"
                ))
            })
        }
    }
}

/// Where downloads come from: `HEARTH_MODEL_HUB` (a mirror, or a test hub), else the hub.
pub fn hub_endpoint() -> String {
    std::env::var("HEARTH_MODEL_HUB")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into())
        .trim_end_matches('/')
        .to_owned()
}

impl CatalogEntry {
    /// The file's URL at the pinned revision.
    pub fn url(&self, endpoint: &str) -> String {
        format!(
            "{endpoint}/{}/resolve/{}/{}",
            self.repo, self.revision, self.file
        )
    }

    /// Memory it needs with a context of `n_ctx` tokens.
    pub fn memory_bytes(&self, n_ctx: u32) -> u64 {
        self.bytes
            .saturating_add(self.kv_bytes_per_token.saturating_mul(u64::from(n_ctx)))
            .saturating_add(super::OVERHEAD_BYTES)
    }
}
