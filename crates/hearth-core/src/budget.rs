//! Spending caps (SPEC §7): daily and monthly, overall and per provider, in USD; days and
//! months end at local midnight.
//!
//! Before a priced call its cost is estimated — the prompt's tokens, and the output at the
//! request's limit — and **reserved** in the database, so a turn, background work and
//! another Hearth process cannot all pass a cap their calls cross together. The ledger's
//! real cost replaces the reservation when the call is recorded. A call that would cross a
//! cap is not sent ([`Error::OverBudget`], which names the three ways on: this message
//! anyway, a local model, a higher cap). Background work (learning, compaction) pauses
//! first: at [`NOTICE_AT`] of a cap, while the user's own messages go on to 100 %. Local
//! models cost nothing and are never held back; a model whose price is unknown is allowed
//! and its calls are counted apart ("cost unknown"), never as zero.

use std::collections::BTreeMap;

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use crate::llm::ChatModel;
use crate::models::ModelTable;
use crate::store::Store;
use crate::time::now_millis;
use crate::types::Usage;
use crate::{Error, Result};

/// The settings key of [`BudgetSettings`].
pub const BUDGET_SETTING: &str = "budgets";

/// The share of a cap at which the user is told, and background work pauses.
pub const NOTICE_AT: f64 = 0.8;

/// How long a reservation holds if its process dies before releasing it.
const RESERVATION_TTL_MS: i64 = 15 * 60 * 1000;

/// A daily and a monthly cap (USD; `None`: no cap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Caps {
    #[serde(default)]
    pub daily_usd: Option<f64>,
    #[serde(default)]
    pub monthly_usd: Option<f64>,
}

impl Caps {
    fn is_empty(&self) -> bool {
        self.daily_usd.is_none() && self.monthly_usd.is_none()
    }
}

/// The user's caps: overall, and per provider (by its name).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetSettings {
    #[serde(default)]
    pub overall: Caps,
    #[serde(default)]
    pub providers: BTreeMap<String, Caps>,
}

impl BudgetSettings {
    /// Sets (or with `None` removes) caps: overall when `provider` is `None`.
    pub fn set(
        &mut self,
        provider: Option<&str>,
        daily: Option<Option<f64>>,
        monthly: Option<Option<f64>>,
    ) -> Result<()> {
        for v in [daily, monthly].into_iter().flatten().flatten() {
            if !v.is_finite() || !(0.0..=1_000_000.0).contains(&v) {
                return Err(Error::InvalidInput(
                    "a cap must be between 0 and 1000000 USD".into(),
                ));
            }
        }
        let caps = match provider {
            None => &mut self.overall,
            Some(p) => self.providers.entry(p.to_owned()).or_default(),
        };
        if let Some(d) = daily {
            caps.daily_usd = d;
        }
        if let Some(m) = monthly {
            caps.monthly_usd = m;
        }
        self.providers.retain(|_, c| !c.is_empty());
        Ok(())
    }
}

/// A day or a month, ending at local midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Day,
    Month,
}

impl Period {
    fn word(self) -> &'static str {
        match self {
            Period::Day => "daily",
            Period::Month => "monthly",
        }
    }
}

/// Where one cap stands: spent (the ledger's priced calls since the period began, and the
/// calls in flight), against the cap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
    pub period: Period,
    /// `None`: the overall cap.
    pub provider: Option<String>,
    pub spent_usd: f64,
    pub cap_usd: f64,
}

impl Standing {
    /// Spent as a share of the cap (1 for a cap of 0).
    pub fn share(&self) -> f64 {
        if self.cap_usd > 0.0 {
            self.spent_usd / self.cap_usd
        } else {
            1.0
        }
    }

    /// "your daily budget" / "your monthly budget for openai".
    fn name(&self) -> String {
        match &self.provider {
            None => format!("your {} budget", self.period.word()),
            Some(p) => format!("your {} budget for {p}", self.period.word()),
        }
    }

    /// "You have spent $4.10 of your daily budget of $5.00 (82 %)."
    pub fn describe(&self) -> String {
        format!(
            "You have spent ${:.2} of {} of ${:.2} ({:.0} %).",
            self.spent_usd,
            self.name(),
            self.cap_usd,
            self.share() * 100.0
        )
    }
}

/// Who a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// The user's turn; `anyway`: the user chose to send this message over the cap.
    User { anyway: bool },
    /// Learning or compaction: pauses first, at [`NOTICE_AT`] of a cap.
    Background,
}

/// A call's reservation, held until its real cost is in the ledger.
#[derive(Debug)]
#[must_use = "release it once the call's cost is recorded"]
pub(crate) struct Reservation {
    id: Option<i64>,
}

impl Reservation {
    /// No reservation (an unpriced or free call).
    pub fn none() -> Self {
        Self { id: None }
    }
}

/// Local midnight today and on the first of this month, in Unix milliseconds.
fn period_starts() -> Result<(i64, i64)> {
    let now = jiff::Zoned::now();
    let day = now
        .start_of_day()
        .map_err(|e| Error::InvalidInput(e.to_string()))?;
    let month = now
        .first_of_month()
        .and_then(|d| d.start_of_day())
        .map_err(|e| Error::InvalidInput(e.to_string()))?;
    Ok((
        day.timestamp().as_millisecond(),
        month.timestamp().as_millisecond(),
    ))
}

/// Spent since `since`: the ledger's priced calls and the reservations still held, for one
/// provider or all.
fn spent(c: &Connection, since: i64, provider: Option<&str>, now: i64) -> rusqlite::Result<f64> {
    let ledger: f64 = c.query_row(
        "SELECT COALESCE(SUM(cost_usd), 0) FROM usage_ledger
         WHERE created_at >= ?1 AND (?2 IS NULL OR provider = ?2)",
        params![since, provider],
        |r| r.get(0),
    )?;
    let held: f64 = c.query_row(
        "SELECT COALESCE(SUM(usd), 0) FROM budget_reservations
         WHERE expires_at > ?1 AND (?2 IS NULL OR provider = ?2)",
        params![now, provider],
        |r| r.get(0),
    )?;
    Ok(ledger + held)
}

/// Every cap that applies to `provider` (all of them for `None`), with what is spent.
fn standings(
    c: &Connection,
    settings: &BudgetSettings,
    provider: Option<&str>,
    (day, month): (i64, i64),
) -> rusqlite::Result<Vec<Standing>> {
    let now = now_millis();
    let mut caps: Vec<(Option<&str>, &Caps)> = vec![(None, &settings.overall)];
    for (name, c) in &settings.providers {
        if provider.is_none_or(|p| p == name) {
            caps.push((Some(name.as_str()), c));
        }
    }
    let mut out = Vec::new();
    for (who, caps) in caps {
        for (period, cap, since) in [
            (Period::Day, caps.daily_usd, day),
            (Period::Month, caps.monthly_usd, month),
        ] {
            if let Some(cap) = cap {
                out.push(Standing {
                    period,
                    provider: who.map(str::to_owned),
                    spent_usd: spent(c, since, who, now)?,
                    cap_usd: cap,
                });
            }
        }
    }
    Ok(out)
}

/// The user's caps.
pub(crate) fn settings(store: &Store) -> Result<BudgetSettings> {
    Ok(store.setting(BUDGET_SETTING)?.unwrap_or_default())
}

/// Where every cap stands now.
pub(crate) fn status(store: &Store) -> Result<Vec<Standing>> {
    let settings = settings(store)?;
    let starts = period_starts()?;
    store.read_blocking(|c| standings(c, &settings, None, starts))
}

/// The cap closest to full at or past [`NOTICE_AT`], after a call (`None`: none is).
pub(crate) fn notice(store: &Store, provider: &str) -> Result<Option<Standing>> {
    let settings = settings(store)?;
    if settings == BudgetSettings::default() {
        return Ok(None);
    }
    let starts = period_starts()?;
    let all = store.read_blocking(|c| standings(c, &settings, Some(provider), starts))?;
    Ok(all
        .into_iter()
        .filter(|s| s.share() >= NOTICE_AT)
        .max_by(|a, b| a.share().total_cmp(&b.share())))
}

/// What a call of `model` may cost at most: `input_tokens` in, `max_output` out. `None`
/// when its price is unknown; 0 for a local model.
pub(crate) fn estimate(
    models: &ModelTable,
    model: &ChatModel,
    input_tokens: u64,
    max_output: u64,
) -> Option<f64> {
    models.cost(
        &model.provider.base_url,
        &model.model,
        Usage {
            input_tokens,
            output_tokens: max_output,
            ..Usage::default()
        },
    )
}

/// Reserves what a call of `model` may cost, or refuses it when that would cross a cap
/// (for background work: [`NOTICE_AT`] of one). Free and unpriced calls reserve nothing.
pub(crate) fn reserve(
    store: &Store,
    models: &ModelTable,
    model: &ChatModel,
    (input_tokens, max_output): (u64, u64),
    work: Work,
) -> Result<Reservation> {
    let Some(usd) = estimate(models, model, input_tokens, max_output).filter(|u| *u > 0.0) else {
        return Ok(Reservation::none());
    };
    let settings = settings(store)?;
    if settings == BudgetSettings::default() {
        return Ok(Reservation::none());
    }
    let starts = period_starts()?;
    let provider = model.provider.name.clone();
    let crossed = store.write_blocking(|c| {
        let now = now_millis();
        let tx = c.transaction()?;
        tx.execute(
            "DELETE FROM budget_reservations WHERE expires_at <= ?1",
            [now],
        )?;
        let all = standings(&tx, &settings, Some(&provider), starts)?;
        let limit = |cap: f64| match work {
            Work::User { anyway: true } => f64::INFINITY,
            Work::User { anyway: false } => cap,
            Work::Background => cap * NOTICE_AT,
        };
        if let Some(over) = all
            .into_iter()
            .find(|s| s.spent_usd + usd > limit(s.cap_usd) + 1e-12)
        {
            return Ok(Err(over));
        }
        tx.execute(
            "INSERT INTO budget_reservations (provider, usd, expires_at) VALUES (?1, ?2, ?3)",
            params![provider, usd, now + RESERVATION_TTL_MS],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(Ok(id))
    })?;
    match crossed {
        Ok(id) => Ok(Reservation { id: Some(id) }),
        Err(over) => {
            tracing::info!(period = ?over.period, background = work == Work::Background, "a call would cross a spending cap; not sent");
            Err(Error::OverBudget(refusal(&over, usd, work)))
        }
    }
}

/// Why a call was not sent, and the three ways on.
fn refusal(over: &Standing, estimate: f64, work: Work) -> String {
    match work {
        Work::Background => format!(
            "Background work (learning, summarising) is paused: {} {}",
            over.describe(),
            "It resumes when the period ends or the cap is raised."
        ),
        Work::User { .. } => format!(
            "This message was not sent: it would cross {} (${:.2} of ${:.2} spent; it may cost up to ${:.4}). \
             Send this message anyway, switch to a local model, or raise the cap.",
            over.name(),
            over.spent_usd,
            over.cap_usd,
            estimate
        ),
    }
}

/// Holds the reservation at the call's real cost until the ledger has it (the tool loop
/// records its calls' usage once, at the end of the turn). `None`: the price is unknown.
pub(crate) fn settle(store: &Store, reservation: &Reservation, usd: Option<f64>) -> Result<()> {
    let Some(id) = reservation.id else {
        return Ok(());
    };
    store.write_blocking(|c| {
        c.execute(
            "UPDATE budget_reservations SET usd = ?2 WHERE id = ?1",
            params![id, usd.unwrap_or(0.0)],
        )?;
        Ok(())
    })
}

/// Lets reservations go once their calls' real cost is in the ledger.
pub(crate) fn release(store: &Store, reservations: Vec<Reservation>) -> Result<()> {
    let ids: Vec<i64> = reservations.into_iter().filter_map(|r| r.id).collect();
    if ids.is_empty() {
        return Ok(());
    }
    store.write_blocking(|c| {
        let tx = c.transaction()?;
        for id in &ids {
            tx.execute("DELETE FROM budget_reservations WHERE id = ?1", [id])?;
        }
        tx.commit()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_set_removed_and_checked() {
        let mut s = BudgetSettings::default();
        s.set(None, Some(Some(5.0)), None).expect("set");
        s.set(Some("openai"), None, Some(Some(40.0))).expect("set");
        assert_eq!(s.overall.daily_usd, Some(5.0));
        assert_eq!(s.providers["openai"].monthly_usd, Some(40.0));
        s.set(Some("openai"), None, Some(None)).expect("unset");
        assert!(s.providers.is_empty(), "an empty provider entry goes");
        assert!(s.set(None, Some(Some(-1.0)), None).is_err());
        assert!(s.set(None, Some(Some(f64::NAN)), None).is_err());
        let standing = Standing {
            period: Period::Day,
            provider: None,
            spent_usd: 4.1,
            cap_usd: 5.0,
        };
        assert_eq!(
            standing.describe(),
            "You have spent $4.10 of your daily budget of $5.00 (82 %)."
        );
    }
}
