//! `hearth folders`, `hearth index` and `hearth search`: text or JSON over the façade's
//! folder service (every rule lives there).

use std::io::Write;
use std::path::Path;

use hearth_core::FileStatus;
use hearth_core::SearchMode as Mode;
use hearth_core::{FolderSummary, Hearth, IndexOptions};
use serde::Serialize;

use crate::args::FoldersCommand;
use crate::open_options;
use crate::output::{Failure, Out};

fn hearth() -> Result<Hearth, Failure> {
    Ok(Hearth::open_oneshot(&open_options()?)?)
}

pub fn run(out: &Out, command: FoldersCommand) -> Result<(), Failure> {
    let hearth = hearth()?;
    let folders = hearth.folders();
    match command {
        FoldersCommand::Add {
            path,
            writable,
            no_writable,
            yes,
        } => {
            let (folder, scan) = if writable || no_writable {
                // --writable is confirmed by the core on the terminal, or by --yes.
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Failure::new("internal", e.to_string()))?
                    .block_on(folders.add_writable(
                        &path,
                        writable,
                        crate::mcp::surface(yes).as_ref(),
                    ))?
            } else {
                folders.add(&path)?
            };
            if out.json {
                #[derive(Serialize)]
                struct Added<'a> {
                    #[serde(flatten)]
                    folder: &'a FolderSummary,
                    scan: hearth_core::ScanReport,
                }
                out.print_json(&Added {
                    folder: &folder,
                    scan,
                });
            } else {
                println!(
                    "Watching {}: {} files to index, {} skipped. `hearth index --wait` indexes them now (the app does it in the background).",
                    folder.path, folder.files.pending, folder.files.skipped
                );
            }
        }
        FoldersCommand::Remove { path } => {
            let removed = folders.remove(&path)?;
            if out.json {
                out.print_json(
                    &serde_json::json!({ "id": removed.id, "path": removed.path, "removed": true }),
                );
            } else {
                println!(
                    "Stopped watching {}; its index is gone (the files themselves are untouched).",
                    removed.path
                );
            }
        }
        FoldersCommand::List => {
            let list = folders.list()?;
            if out.json {
                out.print_json(&list);
            } else if list.is_empty() {
                println!("No watched folders. Add one with `hearth folders add PATH`.");
            } else {
                for f in &list {
                    println!(
                        "{}  [{}]  {} indexed, {} pending, {} skipped, {} failed; {} chunks",
                        f.path,
                        state_label(f),
                        f.files.indexed,
                        f.files.pending,
                        f.files.skipped,
                        f.files.failed,
                        f.chunks
                    );
                }
            }
        }
        FoldersCommand::Files { path, status } => {
            let status = status.as_deref().map(FileStatus::parse).transpose()?;
            let files = folders.files(&path, status)?;
            if out.json {
                #[derive(Serialize)]
                struct Row<'a> {
                    path: &'a str,
                    status: FileStatus,
                    reason_code: Option<hearth_core::FileReason>,
                    message: Option<&'a str>,
                }
                let rows: Vec<Row<'_>> = files
                    .iter()
                    .map(|f| Row {
                        path: &f.path,
                        status: f.status,
                        reason_code: f.reason_code,
                        message: f.message.as_deref(),
                    })
                    .collect();
                out.print_json(&rows);
            } else {
                for f in &files {
                    match (&f.reason_code, &f.message) {
                        (Some(r), Some(m)) => {
                            println!(
                                "{:<8} {}  ({}: {})",
                                f.status.as_str(),
                                f.path,
                                r.as_str(),
                                m
                            )
                        }
                        (Some(r), None) => {
                            println!("{:<8} {}  ({})", f.status.as_str(), f.path, r.as_str())
                        }
                        _ => println!("{:<8} {}", f.status.as_str(), f.path),
                    }
                }
            }
        }
        FoldersCommand::Pause { path } => pause(out, &hearth, path.as_deref(), true)?,
        FoldersCommand::Resume { path } => pause(out, &hearth, path.as_deref(), false)?,
    }
    Ok(())
}

fn state_label(f: &FolderSummary) -> String {
    match f.state {
        hearth_core::FolderState::Paused => "paused".into(),
        hearth_core::FolderState::Unavailable => "unavailable: its index is kept".into(),
        hearth_core::FolderState::Indexing => "indexing".into(),
        hearth_core::FolderState::Polling => format!(
            "up to date; polled every {} s (the system will not watch it)",
            f.poll_every_s
        ),
        hearth_core::FolderState::Watching => "up to date; watched for changes".into(),
        hearth_core::FolderState::Idle => "up to date".into(),
    }
}

fn pause(out: &Out, hearth: &Hearth, path: Option<&Path>, paused: bool) -> Result<(), Failure> {
    let changed = hearth.folders().set_paused(path, paused)?;
    if out.json {
        let rows: Vec<_> = changed
            .iter()
            .map(|f| serde_json::json!({ "path": f.path, "paused": f.paused }))
            .collect();
        out.print_json(&rows);
    } else {
        let verb = if paused { "Paused" } else { "Resumed" };
        if changed.is_empty() {
            println!("No watched folders.");
        }
        for f in &changed {
            println!("{verb} {}", f.path);
        }
    }
    Ok(())
}

pub fn index(out: &Out, wait: bool, wait_vectors: bool, watch: bool) -> Result<(), Failure> {
    let hearth = hearth()?;
    let options = IndexOptions {
        wait,
        wait_vectors,
        ..IndexOptions::default()
    };
    let json = out.json;
    let mut stderr = std::io::stderr();
    let live = std::io::IsTerminal::is_terminal(&stderr);
    let mut report = |p: &hearth_core::IndexProgress| {
        if json {
            if let Ok(line) = serde_json::to_string(p) {
                let _ = writeln!(stderr, "{}", hearth_core::display::json_for_terminal(&line));
            }
        } else {
            match p.phase {
                "scan" => {
                    let _ = writeln!(stderr, "{} files to index", p.total);
                }
                "done" => {}
                "embed" if live => {
                    let _ = write!(stderr, "\rvectors for {} of {} chunks   ", p.done, p.total);
                }
                "rescan" | "polling" => {
                    let _ = writeln!(
                        stderr,
                        "{}: {}",
                        if p.phase == "rescan" {
                            "walking again (too many changes at once)".to_owned()
                        } else {
                            format!(
                                "cannot watch, polling every {} s",
                                hearth_core::FOLDER_POLL_EVERY.as_secs()
                            )
                        },
                        hearth_core::display::prose(p.path.as_deref().unwrap_or(""))
                    );
                }
                _ if live => {
                    let _ = write!(stderr, "\rindexed {} of {} files", p.done, p.total);
                }
                _ => {}
            }
        }
    };
    let summary = hearth.folders().index(&options, &mut report)?;
    if watch {
        if !json {
            eprintln!(
                "watching {} folders; Ctrl-C stops",
                hearth.folders().list()?.len()
            );
        }
        hearth.folders().watch(&options, &|| false, &mut report)?;
    }
    if out.json {
        out.print_json(&summary);
    } else {
        if wait && live {
            eprintln!();
        }
        let f = &summary.files;
        println!(
            "{} indexed, {} pending, {} skipped, {} failed; {} chunks; vectors {}{}",
            f.indexed,
            f.pending,
            f.skipped,
            f.failed,
            summary.chunks,
            summary.vectors,
            summary
                .vectors_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

pub fn search(
    out: &Out,
    query: &str,
    k: Option<usize>,
    mode: &str,
    scope: &hearth_core::SearchScope<'_>,
) -> Result<(), Failure> {
    let mode = Mode::parse(mode)?;
    let hearth = hearth()?;
    let found = hearth.folders().search(query, k, mode, scope)?;
    if out.json {
        out.print_json(&found);
        return Ok(());
    }
    if let Some(w) = &found.warning {
        eprintln!("note: {w}");
    }
    if found.results.is_empty() {
        println!("Nothing found.");
    }
    for hit in &found.results {
        let place = hit.place();
        let heading = hit
            .heading
            .as_deref()
            .map(|h| format!(" — {h}"))
            .unwrap_or_default();
        println!(
            "{}. {} ({place}){heading}  [{:.3}]",
            hit.rank, hit.path, hit.score
        );
        println!(
            "   {}",
            hit.snippet.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
    Ok(())
}

/// `hearth eval retrieval --locomo PATH [--model M]`
pub fn eval_retrieval(out: &Out, path: &Path, model: &str) -> Result<(), Failure> {
    let mut stderr = std::io::stderr();
    let live = std::io::IsTerminal::is_terminal(&stderr);
    let json = out.json;
    let mut last = String::new();
    let report = hearth_eval::retrieval(path, model, &mut |conv, p| {
        if json {
            if let Ok(mut v) = serde_json::to_value(p) {
                v["conversation"] = conv.into();
                let _ = writeln!(
                    stderr,
                    "{}",
                    hearth_core::display::json_for_terminal(&v.to_string())
                );
            }
        } else if p.phase == "scan" || (live && p.phase != "done") {
            let what = match p.phase {
                "scan" => format!("conversation {conv}: {} session files", p.total),
                "embed" => format!(
                    "conversation {conv}: vectors for {} of {} chunks",
                    p.done, p.total
                ),
                _ => format!(
                    "conversation {conv}: indexed {} of {} files",
                    p.done, p.total
                ),
            };
            if what != last {
                let _ = write!(stderr, "\r{what:<72}");
                last = what;
            }
        }
    })?;
    if live && !json {
        let _ = writeln!(stderr);
    }
    if report.model.is_none() {
        crate::memory::keywords_only_note(model);
    }
    if out.json {
        out.print_json(&report);
        return Ok(());
    }
    println!(
        "LoCoMo over watched folders: {} session files, {} chunks; vectors: {}",
        report.files,
        report.chunks,
        report.model.as_deref().unwrap_or("none (keywords only)")
    );
    println!("split     mode    category  queries  nDCG@10  R@5    R@10   R@20   MRR@10");
    let tables = std::iter::once(("all".to_owned(), &report.overall))
        .chain(report.categories.iter().map(|(c, t)| (c.clone(), t)));
    let mut lines = Vec::new();
    for (category, table) in tables {
        for (split, modes) in &table.splits {
            for (mode, m) in modes {
                lines.push((
                    split_order(split),
                    *split,
                    mode_order(mode),
                    *mode,
                    category.clone(),
                    table.n_queries.get(split).copied().unwrap_or(0),
                    *m,
                ));
            }
        }
    }
    lines.sort_by(|a, b| (a.0, &a.4, a.2).cmp(&(b.0, &b.4, b.2)));
    for (_, split, _, mode, category, n, m) in lines {
        println!(
            "{split:<9} {mode:<7} {category:<9} {n:>7}  {:.3}    {:.3}  {:.3}  {:.3}  {:.3}",
            m.ndcg_at_10, m.recall_at_5, m.recall_at_10, m.recall_at_20, m.mrr_at_10
        );
    }
    Ok(())
}

fn split_order(s: &str) -> u8 {
    match s {
        "tuning" => 0,
        "reported" => 1,
        _ => 2,
    }
}

fn mode_order(m: &str) -> u8 {
    match m {
        "bm25" => 0,
        "vector" => 1,
        _ => 2,
    }
}
