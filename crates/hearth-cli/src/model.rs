//! `hearth model …`: the built-in model.

use hearth_core::{BuiltinModel, Hearth};
use serde_json::json;

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
    let fit = match &m.problem {
        Some(p) => format!("cannot run: {p}"),
        None => format!(
            "{} on disk, needs {} of memory at {} tokens of context",
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

pub fn run(out: &Out, command: ModelCommand) -> Result<(), Failure> {
    let hearth = Hearth::open_oneshot(&open_options()?)?;
    let builtin = hearth.builtin();
    match command {
        ModelCommand::List => {
            let models = builtin.list()?;
            if out.json {
                out.print_json(&json!({ "installed": models }));
            } else if models.is_empty() {
                println!("No built-in model yet. Add a GGUF file with `hearth model add PATH`.");
            } else {
                for m in &models {
                    println!("{}", line(m));
                }
            }
        }
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
