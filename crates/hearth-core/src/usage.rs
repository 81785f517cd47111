//! The usage ledger: one row per provider call — the chat turn's, the fast model's
//! compaction and memory extraction alike — with tokens, latency, outcome and cost
//! (SPEC §7). Content-free: no text is ever written here.

use rusqlite::params;

use crate::Result;
use crate::llm::ChatModel;
use crate::models::ModelTable;
use crate::store::Store;
use crate::time::now_millis;
use crate::types::Usage;

/// One provider call, as the ledger records it.
pub(crate) struct Call<'a> {
    pub conversation: Option<&'a str>,
    pub message: Option<i64>,
    /// What the call was for: `main` (an answer), `fallback` (an answer by the fallback
    /// model), `learning` (memory extraction) or `compaction` (a rolling summary).
    /// Older rows name the last two `fast`.
    pub slot: &'a str,
    pub model: &'a ChatModel,
    pub usage: Usage,
    pub latency_ms: i64,
    /// `ok`, `stopped`, `empty` or an error code.
    pub outcome: &'a str,
}

/// Writes one ledger row, its cost from `models` (`NULL` when the price is unknown).
pub(crate) fn record(store: &Store, models: &ModelTable, call: Call<'_>) -> Result<()> {
    let Call {
        conversation,
        message,
        slot,
        model,
        usage,
        latency_ms,
        outcome,
    } = call;
    let (conversation, slot, provider, name, outcome) = (
        conversation.map(str::to_owned),
        slot.to_owned(),
        model.provider.name.clone(),
        model.model.clone(),
        outcome.to_owned(),
    );
    let cost = models.cost(&model.provider.base_url, &model.model, usage);
    store.write_blocking(move |c| {
        c.execute(
            "INSERT INTO usage_ledger (conversation_id, message_id, slot, provider, model, input_tokens, output_tokens,
               cached_input_tokens, cache_write_tokens, latency_ms, outcome, created_at, cost_usd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                conversation,
                message,
                slot,
                provider,
                name,
                usage.input_tokens as i64,
                usage.output_tokens as i64,
                usage.cached_input_tokens as i64,
                usage.cache_write_tokens as i64,
                latency_ms,
                outcome,
                now_millis(),
                cost
            ],
        )?;
        Ok(())
    })
}

/// Marks the ledger row of an answer a cascade is replacing (`outcome` `escalated`), so its
/// cost stays counted against routing once the answer is gone.
pub(crate) fn mark_escalated(store: &Store, answer: i64) -> Result<()> {
    store.write_blocking(move |c| {
        c.execute(
            "UPDATE usage_ledger SET outcome = 'escalated' WHERE message_id = ?1 AND outcome = 'ok'",
            [answer],
        )?;
        Ok(())
    })
}

/// How a usage report groups the ledger's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageGroup {
    /// By `provider/model`.
    Model,
    /// By slot (`main`, `fallback`, `learning`, `compaction`).
    Slot,
    /// By local calendar day (days end at local midnight).
    Day,
}

impl UsageGroup {
    /// `model`, `slot` or `day`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "model" => Some(Self::Model),
            "slot" => Some(Self::Slot),
            "day" => Some(Self::Day),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Slot => "slot",
            Self::Day => "day",
        }
    }
}

/// The ledger's calls of one group, summed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct UsageRow {
    /// The model (`provider/model`), the slot, or the local day (`2026-12-07`); `total`
    /// for the sum of all.
    pub key: String,
    pub calls: u64,
    /// Calls that failed (any outcome but `ok`, `stopped` and `empty`).
    pub failed_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_tokens: u64,
    /// USD of the calls whose price is known.
    pub cost_usd: f64,
    /// Calls whose model has no known price: their cost is unknown, never counted as 0.
    pub calls_without_price: u64,
    /// Latency of the calls, median and 95th percentile (ms); `None` without calls.
    pub latency_ms_p50: Option<u64>,
    pub latency_ms_p95: Option<u64>,
}

/// What `hearth usage` prints: the calls since a local day, grouped, and their total.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UsageReport {
    /// The first local day counted (`None`: the whole ledger).
    pub since: Option<String>,
    pub by: &'static str,
    pub rows: Vec<UsageRow>,
    pub total: UsageRow,
    /// Prompt tokens read from a provider's cache, of all prompt tokens (`None`: no calls).
    pub cache_hit_ratio: Option<f64>,
    /// What the router decided for the saved answers, and what it saved.
    pub routing: RoutingReport,
}

/// The router's decisions over the saved answers (temporary chats keep none), and an
/// estimate of what routing saved against sending everything to the main model.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RoutingReport {
    /// Answers by the fast model.
    pub fast: u64,
    /// Answers by the main model (escalated ones included).
    pub strong: u64,
    /// Main-model answers that replaced a fast one (cascade).
    pub escalated: u64,
    /// Answers from the response cache (no model called).
    pub cached: u64,
    /// What the fast answers cost, plus the fast answers a cascade threw away (USD).
    pub fast_cost_usd: f64,
    /// The fast answers' tokens at the main model's price — what they would have cost on it
    /// (`None`: its price is unknown).
    pub always_strong_usd: Option<f64>,
    /// `always_strong_usd − fast_cost_usd` (`None` when the main model's price is unknown).
    pub saved_usd: Option<f64>,
}

/// The ledger since local midnight of `since` (`YYYY-MM-DD`), grouped `by`; `strong_cost`
/// prices a call's tokens at the main model's price (for the routing estimate).
pub(crate) fn report(
    store: &Store,
    since: Option<&str>,
    by: UsageGroup,
    strong_cost: impl Fn(Usage) -> Option<f64>,
) -> Result<UsageReport> {
    let since = since.map(str::to_owned);
    if let Some(day) = &since {
        let valid = day.len() == 10
            && day.chars().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    c == '-'
                } else {
                    c.is_ascii_digit()
                }
            });
        if !valid {
            return Err(crate::Error::InvalidInput(format!(
                "{day:?} is not a date like 2026-12-01"
            )));
        }
    }
    let key = match by {
        UsageGroup::Model => "provider || '/' || model",
        UsageGroup::Slot => "slot",
        UsageGroup::Day => "date(created_at / 1000, 'unixepoch', 'localtime')",
    };
    let since_for_query = since.clone();
    type Line = (String, i64, i64, i64, i64, i64, Option<f64>, String);
    type Fast = (i64, i64, i64, Option<f64>, bool);
    type Gathered = (Vec<Line>, (i64, i64, i64, i64), Vec<Fast>);
    let (from, lines): (Option<i64>, Gathered) = store.read_blocking(move |c| {
        // Local midnight of the day, as SQLite's C library knows the local time zone
        // (`NULL` for a day that does not exist, e.g. 2026-13-45).
        let from: Option<i64> = match &since_for_query {
            Some(day) => c.query_row(
                "SELECT CAST(strftime('%s', ?1, 'utc') AS INTEGER) * 1000",
                [day],
                |r| r.get(0),
            )?,
            None => None,
        };
        if since_for_query.is_some() && from.is_none() {
            return Ok((None, (Vec::new(), (0, 0, 0, 0), Vec::new())));
        }
        let mut stmt = c.prepare(&format!(
            "SELECT {key}, input_tokens, output_tokens, cached_input_tokens, cache_write_tokens,
                    latency_ms, cost_usd, outcome
               FROM usage_ledger WHERE created_at >= ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([from.unwrap_or(i64::MIN)], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })?;
        let lines = rows.collect::<rusqlite::Result<Vec<Line>>>()?;
        drop(stmt);
        let start = from.unwrap_or(i64::MIN);
        // The router's decisions, from the saved answers.
        let counts: (i64, i64, i64, i64) = c.query_row(
            "SELECT COALESCE(SUM(json_extract(turn_json, '$.route.tier') = 'fast'), 0),
                    COALESCE(SUM(json_extract(turn_json, '$.route.tier') = 'strong'), 0),
                    COALESCE(SUM(json_extract(turn_json, '$.route.escalated_from') IS NOT NULL), 0),
                    COALESCE(SUM(json_extract(turn_json, '$.cached') = 1), 0)
               FROM messages
              WHERE role = 'assistant' AND turn_json IS NOT NULL AND created_at >= ?1",
            [start],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        // The calls of fast answers, and of fast answers a cascade replaced.
        let mut stmt = c.prepare(
            "SELECT l.input_tokens, l.output_tokens, l.cached_input_tokens, l.cost_usd,
                    l.outcome = 'escalated'
               FROM usage_ledger l LEFT JOIN messages m ON m.id = l.message_id
              WHERE l.created_at >= ?1 AND l.slot = 'main'
                AND (l.outcome = 'escalated'
                     OR (json_extract(m.turn_json, '$.route.tier') = 'fast'))",
        )?;
        let fast = stmt
            .query_map([start], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<f64>>(3)?,
                    r.get::<_, bool>(4)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((from, (lines, counts, fast)))
    })?;
    let (lines, counts, fast_calls) = lines;
    if let Some(day) = &since
        && from.is_none()
    {
        return Err(crate::Error::InvalidInput(format!(
            "{day:?} is not a date like 2026-12-01"
        )));
    }
    let mut groups: std::collections::BTreeMap<String, (UsageRow, Vec<u64>)> =
        std::collections::BTreeMap::new();
    let mut all: (UsageRow, Vec<u64>) = (
        UsageRow {
            key: "total".into(),
            ..UsageRow::default()
        },
        Vec::new(),
    );
    for (k, input, output, cached, written, latency, cost, outcome) in lines {
        let group = groups.entry(k.clone()).or_insert_with(|| {
            (
                UsageRow {
                    key: k,
                    ..UsageRow::default()
                },
                Vec::new(),
            )
        });
        for (row, latencies) in [&mut *group, &mut all] {
            row.calls += 1;
            row.failed_calls += u64::from(!matches!(
                outcome.as_str(),
                "ok" | "stopped" | "empty" | "escalated"
            ));
            row.input_tokens += input.max(0) as u64;
            row.output_tokens += output.max(0) as u64;
            row.cached_input_tokens += cached.max(0) as u64;
            row.cache_write_tokens += written.max(0) as u64;
            match cost {
                Some(c) if c.is_finite() => row.cost_usd += c,
                _ => row.calls_without_price += 1,
            }
            latencies.push(latency.max(0) as u64);
        }
    }
    let finish = |(mut row, mut latencies): (UsageRow, Vec<u64>)| {
        latencies.sort_unstable();
        let at = |q: f64| {
            (!latencies.is_empty()).then(|| {
                let i = ((latencies.len() as f64 - 1.0) * q).round() as usize;
                latencies[i.min(latencies.len() - 1)]
            })
        };
        row.latency_ms_p50 = at(0.5);
        row.latency_ms_p95 = at(0.95);
        row
    };
    let n = |v: i64| v.max(0) as u64;
    let mut routing = RoutingReport {
        fast: n(counts.0),
        strong: n(counts.1),
        escalated: n(counts.2),
        cached: n(counts.3),
        ..RoutingReport::default()
    };
    let mut strong_total = Some(0.0);
    for (input, output, cached, cost, thrown_away) in fast_calls {
        routing.fast_cost_usd += cost.filter(|c| c.is_finite()).unwrap_or(0.0);
        // A fast answer the cascade replaced is what routing wasted: the main model's
        // answer to that request is paid in both worlds.
        if thrown_away {
            continue;
        }
        let usage = Usage {
            input_tokens: n(input),
            output_tokens: n(output),
            cached_input_tokens: n(cached),
            ..Usage::default()
        };
        strong_total = strong_total.and_then(|t| strong_cost(usage).map(|c| t + c));
    }
    routing.always_strong_usd = strong_total;
    routing.saved_usd = strong_total.map(|t| t - routing.fast_cost_usd);
    let total = finish(all);
    let cache_hit_ratio = (total.input_tokens > 0)
        .then(|| total.cached_input_tokens as f64 / total.input_tokens as f64);
    Ok(UsageReport {
        since,
        by: by.as_str(),
        rows: groups.into_values().map(finish).collect(),
        total,
        cache_hit_ratio,
        routing,
    })
}
