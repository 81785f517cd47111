//! `hearth memory …`

use hearth_core::{ExportFormat, Hearth, MemoryService};
use hearth_core::{Memory, MemoryFilter as Filter, MemoryKind as Kind, NewMemory};
use hearth_core::{Proposal, ProposalAction};
use serde_json::json;

use crate::args::MemoryCommand;
use crate::output::{Failure, Out};
use crate::{open_options, secrets};

fn memories() -> Result<MemoryService, Failure> {
    Ok(Hearth::open_oneshot(&open_options()?)?.memory())
}

fn proposal_line(p: &Proposal) -> String {
    let what = match (p.action, &p.proposed_text) {
        (ProposalAction::Update, Some(t)) => format!("change to: {t}"),
        (ProposalAction::Update, None) => "change it".to_owned(),
        (ProposalAction::Remove, _) => "remove it".to_owned(),
    };
    let also = p
        .new_memory
        .as_ref()
        .map(|m| format!("; then remember: {}", m.text))
        .unwrap_or_default();
    format!("{}  on {}: {what}{also}  ({})", p.id, p.memory_id, p.reason)
}

fn line(m: &Memory) -> String {
    let mut marks = Vec::new();
    if m.pinned {
        marks.push("pinned");
    }
    if m.critical {
        marks.push("critical");
    }
    if m.no_longer_true {
        marks.push("no longer true");
    }
    let marks = if marks.is_empty() {
        String::new()
    } else {
        format!(" [{}]", marks.join(", "))
    };
    format!("{}  {:<11} {}{marks}", m.id, m.kind.as_str(), m.text)
}

fn print_memory(out: &Out, m: &Memory) {
    if out.json {
        out.print_json(m);
    } else {
        println!("{}", line(m));
    }
}

pub fn run(out: &Out, command: MemoryCommand) -> Result<(), Failure> {
    let memories = memories()?;
    match command {
        MemoryCommand::List {
            kind,
            query,
            removed,
        } => {
            let filter = Filter {
                kind: kind.as_deref().map(Kind::parse).transpose()?,
                query,
                removed,
                ..Filter::default()
            };
            let list = memories.list(&filter)?;
            if out.json {
                out.print_json(&list);
            } else if list.is_empty() {
                println!(
                    "{}",
                    if removed {
                        "Nothing was removed recently."
                    } else {
                        "No memories yet. Add one with: hearth memory add \"I prefer short answers\" --kind instruction"
                    }
                );
            } else {
                for m in &list {
                    println!("{}", line(m));
                }
            }
        }
        MemoryCommand::Add {
            text,
            kind,
            pin,
            critical,
        } => {
            let mut new = NewMemory::manual(text, Kind::parse(&kind)?);
            new.pinned = pin;
            new.critical = critical;
            let m = memories.add(new)?;
            print_memory(out, &m);
        }
        MemoryCommand::Edit { id, text } => {
            let m = memories.edit(&id, &text)?;
            print_memory(out, &m);
        }
        MemoryCommand::Pin { id } => print_memory(out, &memories.set_pinned(&id, true)?),
        MemoryCommand::Unpin { id } => print_memory(out, &memories.set_pinned(&id, false)?),
        MemoryCommand::Delete { id } => {
            memories.delete(&id)?;
            if out.json {
                out.print_json(&json!({ "deleted": id }));
            } else {
                println!("Deleted {id} for good.");
            }
        }
        MemoryCommand::Restore { id } => print_memory(out, &memories.restore(&id)?),
        MemoryCommand::Show { id } => {
            let detail = memories.detail(&id)?;
            let (m, history) = (&detail.memory, &detail.history);
            if out.json {
                out.print_json(&json!({ "memory": m, "history": history }));
            } else {
                println!("{}", line(m));
                println!(
                    "source: {}",
                    serde_json::to_string(&m.source).unwrap_or_default()
                );
                println!("used {} times; status {}", m.use_count, m.status.as_str());
                for h in history {
                    let change = match (&h.old_text, &h.new_text) {
                        (Some(o), Some(n)) => format!(": {o} → {n}"),
                        (None, Some(n)) => format!(": {n}"),
                        _ => String::new(),
                    };
                    println!("  {} by {:?}{change}", h.op, h.actor);
                }
                for p in &detail.proposals {
                    println!("Hearth suggests: {}", proposal_line(p));
                }
            }
        }
        MemoryCommand::Proposals => {
            let list = memories.proposals()?;
            if out.json {
                out.print_json(&list);
            } else if list.is_empty() {
                println!("No proposals: Hearth suggests no change to your protected memories.");
            } else {
                for p in &list {
                    println!("{}", proposal_line(p));
                }
                println!(
                    "Accept with: hearth memory accept ID   Reject with: hearth memory reject ID"
                );
            }
        }
        MemoryCommand::Accept { id } => {
            let changes = memories.accept_proposal(&id)?;
            if out.json {
                out.print_json(&json!({ "accepted": id }));
            } else {
                let what: Vec<String> = changes
                    .iter()
                    .map(|c| format!("{} {}", c.op, c.memory_id))
                    .collect();
                println!("Accepted {id}: {}.", what.join(", "));
            }
        }
        MemoryCommand::Reject { id } => {
            memories.reject_proposal(&id)?;
            if out.json {
                out.print_json(&json!({ "rejected": id }));
            } else {
                println!("Rejected {id}; the memory stays as it is.");
            }
        }
        MemoryCommand::Forget { all, from, to, yes } => {
            let (what, range) = match (all, from, to) {
                (true, _, _) => ("every memory".to_owned(), None),
                (false, Some(f), Some(t)) => (
                    format!("the memories created from {f} to {t}"),
                    Some(MemoryService::day_range(&f, &t)?),
                ),
                _ => {
                    return Err(Failure::new(
                        "invalid_input",
                        "say what to forget: --all, or --from DATE --to DATE",
                    ));
                }
            };
            if !yes && !secrets::confirm(&format!("Delete {what} for good?")) {
                return Err(Failure::new(
                    "confirmation_required",
                    "not confirmed: run on a terminal and type yes, or pass --yes",
                ));
            }
            let n = match range {
                None => memories.forget_all()?,
                Some((from, to)) => memories.forget_between(from, to)?,
            };
            if out.json {
                out.print_json(&json!({ "deleted": n }));
            } else {
                println!("Forgot {n} memories for good.");
            }
        }
        MemoryCommand::Export { file, format } => {
            let format = match format {
                Some(f) => ExportFormat::parse(&f)?,
                None => ExportFormat::for_path(&file),
            };
            let n = memories.export_to(&file, format)?;
            eprintln!(
                "note: {} is not encrypted; anyone who can read it can read these memories.",
                file.display()
            );
            if out.json {
                out.print_json(&json!({ "exported": n, "file": file, "format": format }));
            } else {
                println!("Exported {n} memories to {}.", file.display());
            }
        }
        MemoryCommand::Import { file } => {
            let report = memories.import_file(&file)?;
            if out.json {
                out.print_json(&report);
            } else {
                println!(
                    "Imported {} memories; skipped {} you already had.",
                    report.added, report.skipped
                );
            }
        }
    }
    Ok(())
}

/// Says that `model` was not here, so only keywords were measured.
pub(crate) fn keywords_only_note(model: &str) {
    eprintln!(
        "note: {model} is not on this computer (set HEARTH_EMBED_MODEL_DIR, or choose it with \
         `hearth embedding use` and run `hearth embedding download`); measuring keywords only"
    );
}

/// `hearth eval memory --profile DIR [--distractors N] [--model NAME | --vectors FILE]`
pub fn eval_profile(
    out: &Out,
    dir: &std::path::Path,
    distractors: usize,
    model: &str,
    vectors: Option<&std::path::Path>,
) -> Result<(), Failure> {
    let report = match vectors {
        Some(file) => hearth_eval::memory_profile_with_vectors(dir, distractors, file)?,
        None => hearth_eval::memory_profile(dir, distractors, model)?,
    };
    if report.search_model.is_none() {
        keywords_only_note(model);
    }
    if out.json {
        out.print_json(&report);
    } else {
        println!(
            "{} requests, {} memories ({} generated about other people), search model: {}",
            report.n,
            report.memories,
            report.distractors,
            report
                .search_model
                .as_deref()
                .unwrap_or("none (keywords only)")
        );
        println!(
            "block hit rate {:.3} (budget {} tokens, {:.1} memories a block)",
            report.block_hit_rate, report.block_budget, report.block_size_mean
        );
        println!(
            "search R@1 {:.3}  R@5 {:.3}  MRR {:.3}",
            report.r1, report.r5, report.mrr
        );
        if let Some(rate) = report.multi_block_hit_rate {
            println!(
                "requests that need several memories: {}, all of them in the block for {rate:.3}",
                report.multi_n
            );
        }
        let t = &report.tagger;
        let or_none = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
        println!(
            "facet tagger: requests meeting their memories' facets {:.3}, memories tagged {:.3}, no longer true: recall {} precision {}",
            t.request_memory_agreement,
            t.memories_tagged,
            or_none(t.past_recall),
            or_none(t.past_precision)
        );
        if !report.misses.is_empty() {
            println!("missed: {}", report.misses.join(", "));
        }
    }
    Ok(())
}

/// `hearth eval memory --locomo PATH`
pub fn eval(out: &Out, path: &std::path::Path, model: &str) -> Result<(), Failure> {
    let measured = hearth_eval::memory_locomo(path, model)?;
    if measured.model.is_none() {
        keywords_only_note(model);
    }
    let rows = measured.rows;
    if out.json {
        out.print_json(&rows);
    } else {
        println!("set       mode    category  questions  R@5    R@10   MRR@10");
        for r in &rows {
            let cat = r
                .category
                .map(|c| c.to_string())
                .unwrap_or_else(|| "all".into());
            println!(
                "{:<9} {:<7} {:<9} {:>9}  {:.3}  {:.3}  {:.3}",
                r.set, r.mode, cat, r.questions, r.recall_at_5, r.recall_at_10, r.mrr_at_10
            );
        }
    }
    Ok(())
}
