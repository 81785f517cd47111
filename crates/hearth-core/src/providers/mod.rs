//! Configured providers: presets, the default one, and where their API keys live (the OS
//! keyring, or the encrypted database under the file/passphrase key backends — never a
//! config file, argv or a log).
//!
//! `config`: the configured providers and their keys; `slots`: which model does which job
//! (main, fast, fallback, or the environment's one-off provider); `detect`: local servers
//! running now. This module: the presets.

mod config;
mod detect;
mod slots;

pub use config::{ModelListing, NewProvider, ProviderConfig, Providers};
pub use detect::{DETECT_TIMEOUT, DetectedServer, detect_local, local_candidates};
pub use slots::{NO_PROVIDER_HINT, Slot, SlotChoices, resolve_slots, slots_from_env};

use serde::Serialize;

use crate::llm::Protocol;
use crate::{Error, Result};

/// A known kind of provider with its default endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    OpenAi,
    Anthropic,
    OpenRouter,
    Ollama,
    LmStudio,
    LlamaCpp,
    Vllm,
    Custom,
}

impl Preset {
    /// Every preset, for help texts and pickers.
    pub const ALL: [Preset; 8] = [
        Preset::OpenAi,
        Preset::Anthropic,
        Preset::OpenRouter,
        Preset::Ollama,
        Preset::LmStudio,
        Preset::LlamaCpp,
        Preset::Vllm,
        Preset::Custom,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::OpenAi => "openai",
            Preset::Anthropic => "anthropic",
            Preset::OpenRouter => "openrouter",
            Preset::Ollama => "ollama",
            Preset::LmStudio => "lmstudio",
            Preset::LlamaCpp => "llamacpp",
            Preset::Vllm => "vllm",
            Preset::Custom => "custom",
        }
    }

    /// The preset named `s`.
    pub fn parse(s: &str) -> Result<Self> {
        Preset::ALL
            .into_iter()
            .find(|p| p.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.as_str()).collect();
                Error::InvalidInput(format!(
                    "unknown preset {s:?}: use one of {}",
                    names.join(", ")
                ))
            })
    }

    /// The name people know it by.
    pub fn label(self) -> &'static str {
        match self {
            Preset::OpenAi => "OpenAI",
            Preset::Anthropic => "Anthropic",
            Preset::OpenRouter => "OpenRouter",
            Preset::Ollama => "Ollama",
            Preset::LmStudio => "LM Studio",
            Preset::LlamaCpp => "llama.cpp server",
            Preset::Vllm => "vLLM",
            Preset::Custom => "Custom (OpenAI-compatible)",
        }
    }

    /// Runs on this computer by default.
    pub fn is_local(self) -> bool {
        matches!(
            self,
            Preset::Ollama | Preset::LmStudio | Preset::LlamaCpp | Preset::Vllm
        )
    }

    /// The default base URL (with `/v1`); `Custom` has none.
    pub fn base_url(self) -> Option<&'static str> {
        match self {
            Preset::OpenAi => Some("https://api.openai.com/v1"),
            Preset::Anthropic => Some("https://api.anthropic.com/v1"),
            Preset::OpenRouter => Some("https://openrouter.ai/api/v1"),
            Preset::Ollama => Some("http://127.0.0.1:11434/v1"),
            Preset::LmStudio => Some("http://127.0.0.1:1234/v1"),
            Preset::LlamaCpp => Some("http://127.0.0.1:8080/v1"),
            Preset::Vllm => Some("http://127.0.0.1:8000/v1"),
            Preset::Custom => None,
        }
    }

    /// The wire protocol.
    pub fn protocol(self) -> Protocol {
        match self {
            Preset::Anthropic => Protocol::Anthropic,
            _ => Protocol::OpenAiCompatible,
        }
    }

    /// Whether the provider normally needs an API key (local servers do not).
    pub fn needs_key(self) -> bool {
        matches!(
            self,
            Preset::OpenAi | Preset::Anthropic | Preset::OpenRouter
        )
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.is_empty())
}
