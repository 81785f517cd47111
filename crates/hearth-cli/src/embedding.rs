//! `hearth embedding …`: the model behind memory search.

use std::io::IsTerminal;

use hearth_core::EmbeddingChoice;
use hearth_core::Hearth;
use hearth_core::JobId;
use hearth_core::{EmbeddingStatus, Event};
use serde_json::json;

use crate::args::EmbeddingCommand;
use crate::open_options;
use crate::output::{Failure, Out};

pub fn run(out: &Out, command: EmbeddingCommand) -> Result<(), Failure> {
    let hearth = Hearth::open_oneshot(&open_options()?)?;
    match command {
        EmbeddingCommand::Show => {
            let status = hearth.embedding_status()?;
            if out.json {
                out.print_json(&status);
            } else {
                print_status(&status);
            }
            Ok(())
        }
        EmbeddingCommand::Use { choice, no_wait } => {
            let choice = EmbeddingChoice::parse(&choice)?;
            let job = hearth.set_embedding(choice)?;
            let status = hearth.embedding_status()?;
            if matches!(status.choice, EmbeddingChoice::Local { .. }) && status.model.is_none() {
                eprintln!(
                    "note: the local model is not on this computer yet; run `hearth embedding download`. Until then search is keyword-only."
                );
            }
            finish(out, &hearth, job, no_wait)
        }
        EmbeddingCommand::Download { no_wait } => {
            let terminal = std::io::stderr().is_terminal();
            let progress = move |file: &str, done: u64, total: Option<u64>| {
                let mb = |b: u64| b as f64 / 1_048_576.0;
                let line = match total {
                    Some(t) => format!("downloading {file}: {:.1} / {:.1} MB", mb(done), mb(t)),
                    None => format!("downloading {file}: {:.1} MB", mb(done)),
                };
                if terminal {
                    ::std::eprint!("\r{line}\x1b[K");
                } else if total == Some(done) {
                    eprintln!("{line}");
                }
            };
            let job = hearth.download_local_model(Some(&progress))?;
            if terminal {
                eprintln!();
            }
            finish(out, &hearth, job, no_wait)
        }
    }
}

/// Waits for the re-embedding `job` (unless `no_wait`), with progress on stderr, and prints
/// the outcome.
fn finish(out: &Out, hearth: &Hearth, job: Option<JobId>, no_wait: bool) -> Result<(), Failure> {
    let mut embedded = 0;
    if let (Some(job), false) = (job, no_wait) {
        let mut events = hearth.subscribe();
        let terminal = std::io::stderr().is_terminal();
        std::thread::spawn(move || {
            while let Ok(event) = events.blocking_recv() {
                if let Event::EmbeddingProgress { model, done, total } = event {
                    if terminal {
                        ::std::eprint!("\rembedding memories with {model}: {done}/{total}\x1b[K");
                    } else if done == total {
                        eprintln!("embedding memories with {model}: {done}/{total}");
                    }
                }
            }
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::new("internal", e.to_string()))?;
        let result = runtime.block_on(hearth.jobs().run_job(job));
        if terminal {
            eprintln!();
        }
        if let Some(hearth_core::JobResult::Embedded(n)) = result? {
            embedded = n;
        }
    }
    // Then the passages of watched folders, if the model changed under them.
    let mut chunks_embedded = 0;
    if !no_wait {
        let terminal = std::io::stderr().is_terminal();
        let mut shown = false;
        chunks_embedded = hearth.folders().embed_vectors(&mut |p| {
            shown = true;
            if terminal {
                ::std::eprint!(
                    "\rembedding passages of watched folders: {}/{}\x1b[K",
                    p.done,
                    p.total
                );
            } else if p.done == p.total {
                eprintln!(
                    "embedding passages of watched folders: {}/{}",
                    p.done, p.total
                );
            }
        })?;
        if terminal && shown {
            eprintln!();
        }
    }
    let status = hearth.embedding_status()?;
    if out.json {
        out.print_json(&json!({
            "status": status,
            "embedded": embedded,
            "chunks_embedded": chunks_embedded,
            "job": if no_wait { job } else { None },
        }));
    } else {
        print_status(&status);
        if no_wait && job.is_some() {
            println!(
                "memories and passages of watched folders will be embedded in the background (the app, or the next `hearth embedding use` without --no-wait)"
            );
        }
    }
    Ok(())
}

fn print_status(s: &EmbeddingStatus) {
    println!("choice      {}", s.label);
    match (&s.model, s.dimensions) {
        (Some(m), Some(d)) => println!("model       {m} ({d} dimensions)"),
        _ => println!("model       none: memory search is keyword-only"),
    }
    println!(
        "local model {}",
        if s.local_model_on_disk {
            "on this computer"
        } else {
            "not downloaded (hearth embedding download)"
        }
    );
    for m in &s.local_models {
        println!(
            "  local:{:<20} {}{}",
            m.id,
            m.description,
            if m.on_disk { ", on this computer" } else { "" }
        );
    }
    println!("memories    {}/{} have vectors", s.embedded, s.memories);
}
