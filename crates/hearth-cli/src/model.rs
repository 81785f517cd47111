//! `hearth model …`: the built-in model.

use std::io::IsTerminal;

use hearth_core::{BuiltinModel, CatalogModel, Hearth};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::args::ModelCommand;
use crate::open_options;
use crate::output::{Failure, Out};

fn size(bytes: u64) -> String {
    let mb = bytes as f64 / 1_048_576.0;
    if mb >= 1024.0 {
        format!("{:.1} GB", mb / 1024.0)
    } else {
        format!("{mb:.0} MB")
    }
}

fn line(m: &BuiltinModel) -> String {
    let mut marks = Vec::new();
    if m.main {
        marks.push("chat");
    }
    if m.fast {
        marks.push("background");
    }
    let used = if marks.is_empty() {
        String::new()
    } else {
        format!("  [{}]", marks.join(", "))
    };
    let speed = m
        .model
        .tokens_per_s
        .map(|t| format!(", {t:.1} tokens/s here at its last answer"))
        .unwrap_or_default();
    let fit = match &m.problem {
        Some(p) => format!("cannot run: {p}"),
        None => format!(
            "{} on disk, needs {} of memory at {} tokens of context{speed}",
            size(m.model.bytes),
            size(m.memory_bytes),
            m.context
        ),
    };
    format!(
        "{}  ({}, {})  {fit}{used}\n  {}",
        hearth_core::display::escape(&m.model.name),
        hearth_core::display::escape(&m.model.architecture),
        m.model.source,
        hearth_core::display::escape(&m.model.path.display().to_string())
    )
}

fn catalog_line(m: &CatalogModel) -> String {
    let mut notes = Vec::new();
    if m.recommended {
        notes.push("recommended".to_owned());
    }
    if m.installed {
        notes.push("installed".to_owned());
    }
    if !m.fits {
        notes.push("too large for this computer's memory".to_owned());
    } else if !m.fits_disk {
        notes.push("not enough free disk".to_owned());
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("  [{}]", notes.join(", "))
    };
    format!(
        "{}  {} {} {}, {} to download, needs {} of memory at {} tokens{notes}",
        hearth_core::display::escape(&m.entry.name),
        hearth_core::display::escape(&m.entry.label),
        hearth_core::display::escape(&m.entry.quantisation),
        hearth_core::display::escape(&m.entry.licence),
        size(m.entry.bytes),
        size(m.memory_bytes),
        m.context
    )
}

fn download(out: &Out, hearth: &Hearth, name: &str) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new("internal", e.to_string()))?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} {eta} left",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(format!(
            "downloading {}",
            hearth_core::display::escape(name)
        ));
        bar
    });
    let shown = bar.clone();
    let json = out.json;
    let progress = std::sync::Arc::new(move |p: hearth_core::DownloadProgress| {
        if let Some(bar) = &shown {
            if let Some(t) = p.total {
                bar.set_length(t);
            }
            bar.set_position(p.done);
        } else if json {
            // One JSON line per step on stderr (stdout keeps the one result).
            if let Ok(line) = serde_json::to_string(&p) {
                eprintln!("{line}");
            }
        }
    });
    let builtin = hearth.builtin();
    let result = runtime.block_on(async {
        let cancel = CancellationToken::new();
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        builtin.download(name, progress, &cancel).await
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let model = result?;
    if out.json {
        out.print_json(&model);
    } else {
        println!("installed {}", line(&model));
    }
    Ok(())
}

pub fn run(out: &Out, command: ModelCommand) -> Result<(), Failure> {
    let hearth = Hearth::open_oneshot(&open_options()?)?;
    let builtin = hearth.builtin();
    match command {
        ModelCommand::List => {
            let models = builtin.list()?;
            let catalog = builtin.catalog()?;
            if out.json {
                out.print_json(&json!({ "installed": models, "catalog": catalog }));
            } else {
                if models.is_empty() {
                    println!(
                        "No built-in model yet: download one below (`hearth model download NAME`) or add a GGUF file (`hearth model add PATH`)."
                    );
                } else {
                    println!("Installed:");
                    for m in &models {
                        println!("{}", line(m));
                    }
                }
                println!("To download:");
                for m in &catalog {
                    println!("{}", catalog_line(m));
                }
            }
        }
        ModelCommand::Recommend => {
            let Some(m) = builtin.recommend()? else {
                return Err(Failure::new(
                    "not_found",
                    "no model in the catalogue fits this computer's memory and free disk",
                ));
            };
            if out.json {
                out.print_json(&m);
            } else {
                println!("{}", catalog_line(&m));
            }
        }
        ModelCommand::Download { name } => download(out, &hearth, &name)?,
        ModelCommand::Add { path, name } => {
            let model = builtin.add(&path, name.as_deref())?;
            if out.json {
                out.print_json(&model);
            } else {
                println!("added {}", line(&model));
            }
        }
        ModelCommand::Remove { name } => {
            builtin.remove(&name)?;
            if out.json {
                out.print_json(&json!({ "removed": name }));
            } else {
                println!("removed {}", hearth_core::display::escape(&name));
            }
        }
        ModelCommand::Use { name, fast } => {
            let model = builtin.choose(&name, fast)?;
            if out.json {
                out.print_json(&model);
            } else {
                println!("using {}", line(&model));
            }
        }
        ModelCommand::Status => {
            let status = builtin.status()?;
            if out.json {
                out.print_json(&status);
            } else {
                let name = |n: &Option<String>| {
                    n.as_deref()
                        .map_or_else(|| "none".to_owned(), hearth_core::display::escape)
                };
                println!(
                    "engine: {}",
                    if status.engine_installed {
                        "installed"
                    } else {
                        "missing (hearth-llama-worker is not beside hearth)"
                    }
                );
                println!("chat model: {}", name(&status.main));
                println!("background model: {}", name(&status.fast));
                match (status.worker.running, &status.worker.model) {
                    (true, Some(m)) => println!(
                        "worker: running {} (pid {}, {} resident)",
                        hearth_core::display::escape(m),
                        status.worker.pid.unwrap_or(0),
                        status
                            .worker
                            .resident_bytes
                            .map_or_else(|| "?".into(), size)
                    ),
                    _ => println!("worker: not running in this process (it starts on first use)"),
                }
                println!(
                    "unloads after {} min without work",
                    status.idle_unload_s / 60
                );
            }
        }
    }
    Ok(())
}
