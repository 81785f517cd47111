//! `hearth providers …`

use hearth_core::Hearth;
use hearth_core::llm::{LlmClient, RetryPolicy, Timeouts};
use hearth_core::providers::{NewProvider, Preset, Providers};
use serde_json::json;
use zeroize::Zeroizing;

use crate::args::ProvidersCommand;
use crate::output::{Failure, Out};
use crate::{open_options, secrets};

fn providers() -> Result<Providers, Failure> {
    let hearth = Hearth::open_oneshot(&open_options()?)?;
    Ok(Providers::new(hearth.store().clone()))
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
            let key = Some(Zeroizing::new(key)).filter(|k| !k.is_empty());
            if key.is_none() && preset.needs_key() {
                eprintln!(
                    "warning: no API key given; {} normally needs one",
                    preset.as_str()
                );
            }
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
            let cfg = providers.get(&name)?.ok_or_else(|| {
                Failure::new("invalid_input", format!("there is no provider {name}"))
            })?;
            let endpoint = providers.endpoint(&cfg)?;
            let client = LlmClient::new(
                RetryPolicy {
                    max_retries: 0,
                    ..RetryPolicy::default()
                },
                Timeouts::default(),
            )
            .map_err(hearth_core::Error::from)?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failure::new("internal", e.to_string()))?;
            let models = runtime
                .block_on(client.list_models(&endpoint))
                .map_err(hearth_core::Error::from)?;
            if out.json {
                out.print_json(&json!({ "ok": true, "models": models }));
            } else {
                println!(
                    "{name} answers; {} models: {}",
                    models.len(),
                    models.join(", ")
                );
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
            if !providers()?.remove(&name)? {
                return Err(Failure::new(
                    "invalid_input",
                    format!("there is no provider {name}"),
                ));
            }
            if out.json {
                out.print_json(&json!({ "removed": name }));
            } else {
                println!("Removed provider {name}.");
            }
        }
    }
    Ok(())
}
