//! `hearth providers …`

use hearth_core::ModelEdit;
use hearth_core::{Hearth, ProviderService};
use hearth_core::{NewProvider, Preset, Slot};
use serde_json::json;
use zeroize::Zeroizing;

use crate::args::{ModelsCommand, ProvidersCommand};
use crate::output::{Failure, Out};
use crate::{open_options, secrets};

fn providers() -> Result<ProviderService, Failure> {
    Ok(Hearth::open_oneshot(&open_options()?)?.providers())
}

pub fn run(out: &Out, command: ProvidersCommand) -> Result<(), Failure> {
    match command {
        ProvidersCommand::Add {
            name,
            preset,
            url,
            model,
            fast_model,
            context_window,
        } => {
            let preset = Preset::parse(&preset)?;
            let key = secrets::read_secret_line(&format!("API key for {name} (empty for none): "))?;
            let key = Some(Zeroizing::new(key));
            let cfg = providers()?.add(
                NewProvider {
                    name,
                    preset,
                    base_url: url,
                    model,
                    fast_model,
                    context_window,
                },
                key,
            )?;
            if out.json {
                out.print_json(&cfg);
            } else {
                println!(
                    "Added provider {} ({}, {}); key stored in: {}",
                    cfg.name, cfg.preset, cfg.base_url, cfg.key_location
                );
            }
        }
        ProvidersCommand::List => {
            let list = providers()?.list()?;
            if out.json {
                out.print_json(&list);
            } else if list.is_empty() {
                println!(
                    "No providers yet. Add one with: hearth providers add local --preset ollama --model llama3.2"
                );
            } else {
                for p in list {
                    let default = if p.is_default { " (default)" } else { "" };
                    let model = p.model.as_deref().unwrap_or("-");
                    println!(
                        "{}{default}  {}  {}  model {model}  key: {}",
                        p.name, p.preset, p.base_url, p.key_location
                    );
                }
            }
        }
        ProvidersCommand::Test { name } => {
            let providers = providers()?;
            let models = runtime()?.block_on(providers.test(&name))?;
            if out.json {
                let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
                out.print_json(&json!({ "ok": true, "models": ids, "details": models }));
            } else {
                println!("{name} answers; {} models:", models.len());
                for m in &models {
                    match m.context_window {
                        Some(w) => {
                            println!("  {}  window {w} ({})", m.id, m.window_source.as_str())
                        }
                        None => println!("  {}  window unknown", m.id),
                    }
                }
            }
        }
        ProvidersCommand::Detect => {
            let providers = providers()?;
            let found = runtime()?.block_on(providers.detect_local())?;
            if out.json {
                out.print_json(&found);
            } else if found.is_empty() {
                println!(
                    "No local model server is running. Start Ollama (ollama serve), LM Studio's server or llama.cpp's llama-server, or add a cloud provider."
                );
            } else {
                for d in found {
                    let configured = d
                        .configured_as
                        .map(|n| format!(" (configured as {n})"))
                        .unwrap_or_default();
                    println!(
                        "{} at {}{configured}: {} models: {}",
                        d.preset.label(),
                        d.base_url,
                        d.models.len(),
                        d.models.join(", ")
                    );
                }
            }
        }
        ProvidersCommand::Slots {
            main,
            fast,
            fallback,
            enable_fallback,
            no_fallback,
        } => {
            let providers = providers()?;
            let mut choices = providers.slot_choices()?;
            let changing = main.is_some()
                || fast.is_some()
                || fallback.is_some()
                || enable_fallback
                || no_fallback;
            if let Some(m) = main {
                choices.main = Some(Slot::parse(&m)?);
            }
            match fast.as_deref() {
                None => {}
                Some("same") => choices.fast = None,
                Some(f) => choices.fast = Some(Slot::parse(f)?),
            }
            match fallback.as_deref() {
                None => {}
                Some("none") => {
                    choices.fallback = None;
                    choices.fallback_enabled = false;
                }
                Some(f) => choices.fallback = Some(Slot::parse(f)?),
            }
            if enable_fallback {
                choices.fallback_enabled = true;
            }
            if no_fallback {
                choices.fallback_enabled = false;
            }
            if changing {
                providers.set_slots(&choices)?;
            }
            if out.json {
                out.print_json(&choices);
            } else {
                let show = |s: &Option<Slot>, none: &str| {
                    s.as_ref()
                        .map(|s| format!("{}:{}", s.provider, s.model))
                        .unwrap_or_else(|| none.to_owned())
                };
                println!(
                    "main      {}",
                    show(&choices.main, "(the default provider's model)")
                );
                println!("fast      {}", show(&choices.fast, "(same as main)"));
                println!(
                    "fallback  {}{}",
                    show(&choices.fallback, "(none)"),
                    if choices.fallback_enabled {
                        ""
                    } else {
                        " [off]"
                    }
                );
            }
        }
        ProvidersCommand::Routing {
            on,
            off,
            cascade,
            no_cascade,
        } => {
            let hearth = Hearth::open_oneshot(&open_options()?)?;
            let mut settings = hearth.routing()?;
            if on || off || cascade || no_cascade {
                if on || off {
                    settings.enabled = on;
                }
                if cascade || no_cascade {
                    settings.cascade = cascade;
                }
                hearth.set_routing(settings)?;
            }
            let settings = hearth.routing()?;
            if out.json {
                out.print_json(&settings);
            } else {
                println!(
                    "routing   {}",
                    if settings.enabled {
                        "on: the fast model answers what the rules find simple"
                    } else {
                        "off: the main model answers every message"
                    }
                );
                println!(
                    "cascade   {}",
                    if settings.cascade {
                        "on: a fast answer that fails a check is answered again by the main model"
                    } else {
                        "off"
                    }
                );
            }
        }
        ProvidersCommand::Cache {
            on,
            off,
            ttl_hours,
            clear,
            semantic,
            no_semantic,
            similarity,
        } => {
            let hearth = Hearth::open_oneshot(&open_options()?)?;
            let mut settings = hearth.response_cache()?;
            if on || off || ttl_hours.is_some() || semantic || no_semantic || similarity.is_some() {
                if on || off {
                    settings.enabled = on;
                }
                if semantic || no_semantic {
                    settings.semantic = semantic;
                }
                if let Some(h) = ttl_hours {
                    settings.ttl_hours = h;
                }
                if let Some(s) = similarity {
                    settings.similarity = s;
                }
                hearth.set_response_cache(settings)?;
            }
            let cleared = if clear {
                hearth.clear_response_cache()?
            } else {
                0
            };
            let settings = hearth.response_cache()?;
            let entries = hearth.response_cache_entries()?;
            let semantic_entries = hearth.semantic_cache_entries()?;
            if out.json {
                out.print_json(&serde_json::json!({
                    "enabled": settings.enabled,
                    "ttl_hours": settings.ttl_hours,
                    "entries": entries,
                    "semantic": settings.semantic,
                    "similarity": (f64::from(settings.similarity) * 1000.0).round() / 1000.0,
                    "semantic_entries": semantic_entries,
                    "cleared": cleared,
                }));
            } else {
                println!(
                    "response cache   {} (answers kept {} h; {entries} saved)",
                    if settings.enabled { "on" } else { "off" },
                    settings.ttl_hours
                );
                println!(
                    "semantic cache   {} (similarity ≥ {:.2}; {semantic_entries} saved)",
                    if settings.semantic {
                        "on: stateless questions only"
                    } else {
                        "off"
                    },
                    settings.similarity
                );
                if clear {
                    println!("removed {cleared} saved answer(s)");
                }
            }
        }
        ProvidersCommand::Remove { name, yes } => {
            if !yes && !secrets::confirm(&format!("Remove provider {name} and its stored API key?"))
            {
                return Err(Failure::new(
                    "confirmation_required",
                    "not confirmed: run on a terminal and type yes, or pass --yes",
                ));
            }
            providers()?.remove(&name)?;
            if out.json {
                out.print_json(&json!({ "removed": name }));
            } else {
                println!("Removed provider {name}.");
            }
        }
    }
    Ok(())
}

/// A runtime for the one network call of `test` and `detect`.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new("internal", e.to_string()))
}

/// `hearth models …`
pub fn models(out: &Out, command: ModelsCommand) -> Result<(), Failure> {
    let models = Hearth::open_oneshot(&open_options()?)?.models();
    let list = match command {
        ModelsCommand::List => models.list()?,
        ModelsCommand::Set {
            model,
            window,
            input_price,
            output_price,
            cached_price,
        } => models.set(ModelEdit {
            model,
            context_window: window,
            input_usd_per_mtok: input_price,
            output_usd_per_mtok: output_price,
            cached_usd_per_mtok: cached_price,
        })?,
        ModelsCommand::Reset { model } => models.reset(&model)?,
    };
    if out.json {
        out.print_json(&list);
    } else {
        let num = |v: Option<f64>| v.map(|p| format!("{p}")).unwrap_or_else(|| "-".into());
        println!("model  window  input  output  cached  (USD per million tokens; * edited)");
        for m in list {
            println!(
                "{}{}  {}  {}  {}  {}",
                m.model,
                if m.edited { " *" } else { "" },
                m.context_window
                    .map(|w| w.to_string())
                    .unwrap_or_else(|| "-".into()),
                num(m.input_usd_per_mtok),
                num(m.output_usd_per_mtok),
                num(m.cached_usd_per_mtok)
            );
        }
    }
    Ok(())
}

/// `hearth usage`: the ledger, grouped, with its total.
/// `USD` or `none` → the cap to set (`Some(None)` removes it).
fn cap_arg(flag: &str, v: Option<String>) -> Result<Option<Option<f64>>, Failure> {
    match v.as_deref() {
        None => Ok(None),
        Some("none") => Ok(Some(None)),
        Some(n) => n
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|v| Some(Some(v)))
            .ok_or_else(|| {
                Failure::new(
                    "invalid_input",
                    format!(
                        "--{flag} {}: a number of USD, or none",
                        hearth_core::display::escape(n)
                    ),
                )
            }),
    }
}

/// `hearth usage budget`: shows, or sets then shows, the spending caps and where each
/// stands.
pub fn budget(
    out: &Out,
    daily: Option<String>,
    monthly: Option<String>,
    provider: Option<String>,
) -> Result<(), Failure> {
    let (daily, monthly) = (cap_arg("daily", daily)?, cap_arg("monthly", monthly)?);
    let hearth = Hearth::open_oneshot(&open_options()?)?;
    if daily.is_some() || monthly.is_some() {
        hearth.set_budget(provider.as_deref(), daily, monthly)?;
    } else if provider.is_some() {
        return Err(Failure::new(
            "invalid_input",
            "--provider sets that provider's caps: give --daily or --monthly too",
        ));
    }
    let settings = hearth.budgets()?;
    let status = hearth.budget_status()?;
    if out.json {
        out.print_json(&serde_json::json!({
            "caps": settings,
            "status": status,
            "notice_at": hearth_core::BUDGET_NOTICE_AT,
        }));
        return Ok(());
    }
    if status.is_empty() {
        println!("no spending caps (set one with --daily or --monthly)");
    }
    for s in &status {
        let period = match s.period {
            hearth_core::BudgetPeriod::Day => "daily",
            hearth_core::BudgetPeriod::Month => "monthly",
        };
        let who = s
            .provider
            .as_deref()
            .map(hearth_core::display::prose)
            .unwrap_or_else(|| "overall".into());
        println!(
            "{:<20} {:<8} ${:>9.4} of ${:>9.2}  {:>4.0} %",
            who,
            period,
            s.spent_usd,
            s.cap_usd,
            s.share() * 100.0
        );
    }
    Ok(())
}

pub fn usage(out: &Out, since: Option<&str>, by: &str) -> Result<(), Failure> {
    let group = hearth_core::UsageGroup::parse(by)
        .ok_or_else(|| Failure::new("invalid_input", format!("--by {by}: model, slot or day")))?;
    let report = Hearth::open_oneshot(&open_options()?)?.usage(since, group)?;
    if out.json {
        out.print_json(&report);
        return Ok(());
    }
    let cost = |r: &hearth_core::UsageRow| {
        let known = format!("${:.4}", r.cost_usd);
        if r.calls_without_price > 0 {
            format!(
                "{known} + {} call(s) of unknown price",
                r.calls_without_price
            )
        } else {
            known
        }
    };
    let latency = |r: &hearth_core::UsageRow| match (r.latency_ms_p50, r.latency_ms_p95) {
        (Some(a), Some(b)) => format!("{a}/{b} ms"),
        _ => "-".to_owned(),
    };
    println!(
        "{:<32} {:>6} {:>10} {:>10} {:>10}  {:<14} cost",
        by, "calls", "in", "out", "cached", "p50/p95"
    );
    for r in report.rows.iter().chain(std::iter::once(&report.total)) {
        println!(
            "{:<32} {:>6} {:>10} {:>10} {:>10}  {:<14} {}",
            hearth_core::display::prose(&r.key),
            r.calls,
            r.input_tokens,
            r.output_tokens,
            r.cached_input_tokens,
            latency(r),
            cost(r)
        );
    }
    if let Some(ratio) = report.cache_hit_ratio {
        println!(
            "prompt cache: {:.0} % of prompt tokens read from the provider's cache",
            ratio * 100.0
        );
    }
    let routing = &report.routing;
    println!(
        "answers: {} fast, {} main ({} escalated), {} from the response cache",
        routing.fast, routing.strong, routing.escalated, routing.cached
    );
    match (routing.always_strong_usd, routing.saved_usd) {
        (Some(strong), Some(saved)) if routing.fast > 0 || routing.escalated > 0 => println!(
            "routing saved about ${saved:.4}: the fast answers cost ${:.4}, ${strong:.4} on the main model",
            routing.fast_cost_usd
        ),
        (None, _) if routing.fast > 0 => {
            println!("routing savings: unknown (the main model has no price)")
        }
        _ => {}
    }
    Ok(())
}
