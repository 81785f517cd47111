//! Providers, model slots and the model table.

use serde::Serialize;
use ts_rs::TS;

use super::ErrorDto;

/// A provider preset offered by "Add provider".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PresetDto {
    /// `openai`, `anthropic`, `openrouter`, `ollama`, `lmstudio`, `llamacpp`, `vllm`, `custom`.
    pub id: String,
    pub label: String,
    /// The default base URL (ends in `/v1` for OpenAI-compatible servers); `null` for custom.
    pub base_url: Option<String>,
    pub needs_key: bool,
    /// `openai` (Chat Completions) or `anthropic` (Messages).
    pub protocol: String,
    /// Runs on this computer (Ollama, LM Studio, llama.cpp).
    pub local: bool,
}

/// A configured provider (never with its key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProviderDto {
    pub name: String,
    pub preset: String,
    pub protocol: String,
    pub base_url: String,
    /// Where its API key is kept: `none`, `keyring` or `database` (encrypted).
    pub key_location: String,
}

/// A model a provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ModelDto {
    pub id: String,
    pub context_window: Option<u32>,
    /// Where the window comes from: `server`, `user` (the editable table), `table` (built in) or `unknown`.
    pub window_source: String,
}

/// The result of "Test connection".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProviderTestDto {
    pub ok: bool,
    pub models: Vec<ModelDto>,
    pub error: Option<ErrorDto>,
}

/// A model server found running on this computer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DetectedServerDto {
    pub preset: String,
    pub label: String,
    pub base_url: String,
    pub models: Vec<String>,
    /// The name of the configured provider already pointing at it, if any.
    pub configured_as: Option<String>,
}

/// A provider and one of its models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[ts(export)]
pub struct SlotDto {
    pub provider: String,
    pub model: String,
}

/// Which models answer (`main`), summarise and extract (`fast`), and stand in when the main
/// one fails (`fallback`, used only when enabled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SlotsDto {
    pub main: Option<SlotDto>,
    pub fast: Option<SlotDto>,
    pub fallback: Option<SlotDto>,
    pub fallback_enabled: bool,
    /// HEARTH_PROVIDER_URL is set: the environment's one-off provider overrides these.
    pub from_env: bool,
}

/// A row of the model table: context window and prices, built in or edited by the user.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ModelInfoDto {
    /// A model name or name prefix (`gpt-4o` covers `gpt-4o-2024-08-06`).
    pub model: String,
    pub context_window: Option<u32>,
    pub input_usd_per_mtok: Option<f64>,
    pub output_usd_per_mtok: Option<f64>,
    pub cached_usd_per_mtok: Option<f64>,
    /// The user changed or added this row.
    pub edited: bool,
}

/// Where one spending cap stands.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct StandingDto {
    /// `day` or `month`.
    pub period: String,
    /// `null`: the overall cap.
    pub provider: Option<String>,
    pub spent_usd: f64,
    pub cap_usd: f64,
    /// "You have spent $4.10 of your daily budget of $5.00 (82 %)."
    pub text: String,
}

impl From<hearth_core::BudgetStanding> for StandingDto {
    fn from(s: hearth_core::BudgetStanding) -> Self {
        Self {
            period: match s.period {
                hearth_core::BudgetPeriod::Day => "day",
                hearth_core::BudgetPeriod::Month => "month",
            }
            .to_owned(),
            text: s.describe(),
            provider: s.provider,
            spent_usd: s.spent_usd,
            cap_usd: s.cap_usd,
        }
    }
}

/// One provider's caps.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ProviderCapsDto {
    pub provider: String,
    pub daily_usd: Option<f64>,
    pub monthly_usd: Option<f64>,
}

/// Settings → Spending: the caps, where each stands, and the router's switches.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct SpendingDto {
    pub daily_usd: Option<f64>,
    pub monthly_usd: Option<f64>,
    pub providers: Vec<ProviderCapsDto>,
    pub status: Vec<StandingDto>,
    /// The router picks the fast or the main model for each message.
    pub routing: bool,
    /// Fast answers that fail a check are answered again by the main model.
    pub cascade: bool,
}

/// The ledger's calls of one group (a day, a model, a slot), summed.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct UsageRowDto {
    /// `2026-12-07`, `provider/model`, or `main` / `fallback` / `learning` / `compaction`.
    pub key: String,
    #[ts(type = "number")]
    pub calls: u64,
    #[ts(type = "number")]
    pub failed_calls: u64,
    #[ts(type = "number")]
    pub input_tokens: u64,
    #[ts(type = "number")]
    pub output_tokens: u64,
    #[ts(type = "number")]
    pub cached_input_tokens: u64,
    /// USD of the calls whose price is known.
    pub cost_usd: f64,
    /// Calls whose price is unknown ("cost unknown", never counted as 0).
    #[ts(type = "number")]
    pub calls_without_price: u64,
    #[ts(type = "number | null")]
    pub latency_ms_p50: Option<u64>,
    #[ts(type = "number | null")]
    pub latency_ms_p95: Option<u64>,
}

impl From<hearth_core::UsageRow> for UsageRowDto {
    fn from(r: hearth_core::UsageRow) -> Self {
        Self {
            key: r.key,
            calls: r.calls,
            failed_calls: r.failed_calls,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cached_input_tokens: r.cached_input_tokens,
            cost_usd: r.cost_usd,
            calls_without_price: r.calls_without_price,
            latency_ms_p50: r.latency_ms_p50,
            latency_ms_p95: r.latency_ms_p95,
        }
    }
}

/// The router's decisions and what routing saved.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RoutingDto {
    #[ts(type = "number")]
    pub fast: u64,
    #[ts(type = "number")]
    pub strong: u64,
    #[ts(type = "number")]
    pub escalated: u64,
    #[ts(type = "number")]
    pub cached: u64,
    pub fast_cost_usd: f64,
    pub always_strong_usd: Option<f64>,
    pub saved_usd: Option<f64>,
}

/// The Usage screen: spend per day, by model and by slot since a day, the budgets, the
/// prompt-cache hit ratio and the router's decisions.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct UsageDto {
    pub since: String,
    pub days: Vec<UsageRowDto>,
    pub models: Vec<UsageRowDto>,
    pub slots: Vec<UsageRowDto>,
    pub total: UsageRowDto,
    pub cache_hit_ratio: Option<f64>,
    pub routing: RoutingDto,
    pub budgets: Vec<StandingDto>,
}
