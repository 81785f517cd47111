//! `hearth mcp`: MCP servers and their tools.

use std::collections::BTreeMap;

use hearth_core::{Hearth, McpToolInfo, NewServer};
use serde_json::json;

use crate::args::McpCommand;
use crate::open_options;
use crate::output::{Failure, Out};

/// Where an act that lowers caution is confirmed: ahead with `--yes`, else on the terminal
/// (none there: `confirmation_required`).
pub fn surface(yes: bool) -> Box<dyn hearth_core::Consent> {
    if yes {
        Box::new(hearth_core::ConfirmedAhead)
    } else {
        Box::new(crate::tools::TtyConsent)
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new("internal", e.to_string()))
}

/// Reads each named value (a secret) from the terminal, or a line of stdin each.
fn read_values(names: &[String], what: &str) -> Result<BTreeMap<String, String>, Failure> {
    let mut out = BTreeMap::new();
    for name in names {
        let value = crate::secrets::read_secret_line(&format!("Value of {what} {name}: "))?;
        out.insert(name.clone(), value);
    }
    Ok(out)
}

/// A server's claim for a tool, in words.
fn claim_words(claim: hearth_core::Risk, open_world: bool) -> String {
    let tier = match claim {
        hearth_core::Risk::Read => "read-only",
        hearth_core::Risk::Write => "reversible write",
        hearth_core::Risk::Destructive => "destructive",
    };
    if open_world {
        format!("{tier}, reaches outside")
    } else {
        tier.to_owned()
    }
}

fn print_tools(tools: &[McpToolInfo]) {
    if tools.is_empty() {
        println!("No tools.");
    }
    for t in tools {
        let why = match t.risk_source {
            "unconfirmed" => "labels not confirmed",
            "labels_accepted" => "labels accepted",
            _ => "set by you",
        };
        println!(
            "{:<40} {:<11} {:<20} claims {:<28} {}",
            t.name,
            t.risk.as_str(),
            why,
            claim_words(t.claim, t.claim_open_world),
            t.state.as_str()
        );
    }
}

fn target_of(t: &hearth_core::McpTransport) -> String {
    match t {
        hearth_core::McpTransport::Stdio { command, args } => {
            format!("{} {}", command.display(), args.join(" "))
                .trim_end()
                .to_owned()
        }
        hearth_core::McpTransport::Http { url } => url.clone(),
    }
}

pub fn run(out: &Out, command: McpCommand) -> Result<(), Failure> {
    let opts = open_options()?;
    match command {
        McpCommand::Add {
            name,
            url,
            env,
            header,
            replace,
            yes,
            command,
        } => {
            let env = read_values(&env, "environment variable")?;
            let headers = read_values(&header, "header")?;
            let mut command = command.into_iter();
            let new = NewServer {
                name,
                command: command.next(),
                args: command.collect(),
                url,
                env,
                headers,
            };
            let report = runtime()?.block_on(async {
                let hearth = Hearth::open_oneshot(&opts)?;
                let mcp = hearth.mcp();
                let report = mcp.add(new, replace, surface(yes).as_ref()).await;
                mcp.shutdown().await;
                report
            })?;
            if out.json {
                out.print_json(&report);
            } else {
                println!(
                    "Added {} with {} tools; none is offered until you approve them:",
                    report.server.name,
                    report.tools.len()
                );
                print_tools(&report.tools);
                println!("Approve with: hearth mcp approve {}", report.server.name);
            }
            Ok(())
        }
        McpCommand::List => {
            let servers = Hearth::open_oneshot(&opts)?.mcp().list()?;
            if out.json {
                out.print_json(&servers);
            } else if servers.is_empty() {
                println!("No MCP servers. Add one with: hearth mcp add NAME -- COMMAND ARGS…");
            } else {
                for s in servers {
                    println!(
                        "{:<20} {:<8} {:<4} {}",
                        s.name,
                        s.state,
                        if s.enabled { "on" } else { "off" },
                        target_of(&s.transport)
                    );
                }
            }
            Ok(())
        }
        McpCommand::Tools { name } => {
            let tools = runtime()?.block_on(async {
                let hearth = Hearth::open_oneshot(&opts)?;
                let mcp = hearth.mcp();
                let tools = mcp.tools(&name).await;
                mcp.shutdown().await;
                tools
            })?;
            if out.json {
                out.print_json(&tools);
            } else {
                print_tools(&tools);
            }
            Ok(())
        }
        McpCommand::Approve {
            name,
            tools,
            accept_labels,
            yes,
        } => {
            let mcp = Hearth::open_oneshot(&opts)?.mcp();
            // The core asks (each tool with its claim) on the terminal, or takes --yes.
            let n = runtime()?.block_on(mcp.approve(
                &name,
                &tools,
                accept_labels,
                surface(yes).as_ref(),
            ))?;
            if out.json {
                out.print_json(
                    &json!({"server": name, "approved": n, "labels_accepted": accept_labels}),
                );
            } else if accept_labels {
                println!(
                    "Approved {n} tools of {name} with the server's labels as their tiers; they are offered in chats now."
                );
            } else {
                println!(
                    "Approved {n} tools of {name}; they are offered in chats now and ask every time (labels not confirmed: hearth mcp approve {name} --accept-labels, or hearth tools risk TOOL read|write)."
                );
            }
            Ok(())
        }
        McpCommand::Review { name } => {
            let reviews = Hearth::open_oneshot(&opts)?.mcp().review(&name)?;
            if out.json {
                out.print_json(&reviews);
            } else if reviews.is_empty() {
                println!("Nothing to review: every tool of {name} is as you approved it.");
            } else {
                for r in reviews {
                    println!("{} ({})", r.name, r.state.as_str());
                    if r.risk_lowered {
                        println!("  WARNING: its annotations now ask for less care than before.");
                    }
                    print!("{}", r.diff);
                }
                println!("Approve what you reviewed with: hearth mcp approve {name} [TOOL…]");
            }
            Ok(())
        }
        McpCommand::Remove { name, yes } => {
            if !yes
                && !crate::secrets::confirm(&format!(
                    "Remove the MCP server {name}, its tools and its secrets?"
                ))
            {
                return Err(Failure::new(
                    "confirmation_required",
                    "not confirmed: run on a terminal and type yes, or pass --yes",
                ));
            }
            runtime()?.block_on(async {
                let hearth = Hearth::open_oneshot(&opts)?;
                hearth.mcp().remove(&name).await
            })?;
            if out.json {
                out.print_json(&json!({"removed": name}));
            } else {
                println!("Removed {name}.");
            }
            Ok(())
        }
        McpCommand::Import {
            file,
            claude_desktop: _,
            replace,
            yes,
        } => {
            let mcp = Hearth::open_oneshot(&opts)?.mcp();
            let rt = runtime()?;
            let surface = surface(yes);
            let report = match file {
                Some(f) if f.as_os_str() == "-" => rt.block_on(mcp.import_reader(
                    std::io::stdin().lock(),
                    replace,
                    surface.as_ref(),
                ))?,
                Some(f) => rt.block_on(mcp.import_file(&f, replace, surface.as_ref()))?,
                None => {
                    let path = hearth_core::McpService::claude_desktop_config()?;
                    if !out.json {
                        println!("Reading {}", path.display());
                    }
                    rt.block_on(mcp.import_file(&path, replace, surface.as_ref()))?
                }
            };
            if out.json {
                out.print_json(&report);
            } else {
                for s in &report.imported {
                    println!(
                        "Imported {} ({}).",
                        s.server.name,
                        target_of(&s.server.transport)
                    );
                    for n in &s.notes {
                        println!("  note: {n}");
                    }
                }
                for s in &report.skipped {
                    println!("Skipped {}: {}.", s.name, s.reason);
                }
                if !report.imported.is_empty() {
                    println!(
                        "Nothing was started or approved: list a server's tools with `hearth mcp tools NAME`, then `hearth mcp approve NAME`."
                    );
                }
            }
            Ok(())
        }
        McpCommand::Export {
            file,
            include_secrets,
            yes,
        } => {
            if include_secrets {
                eprintln!(
                    "warning: the export will hold your MCP servers' secret values (API keys, tokens) in plain text."
                );
                if !yes && !crate::secrets::confirm("Write the secret values?") {
                    return Err(Failure::new(
                        "confirmation_required",
                        "not confirmed: run on a terminal and type yes, or pass --yes",
                    ));
                }
            }
            let mcp = Hearth::open_oneshot(&opts)?.mcp();
            match file {
                Some(f) => {
                    let n = mcp.export_to(&f, include_secrets)?;
                    if out.json {
                        out.print_json(
                            &json!({"exported": n, "file": f, "secrets": include_secrets}),
                        );
                    } else {
                        println!("Exported {n} servers to {}.", f.display());
                    }
                }
                None => {
                    let doc = mcp.export(include_secrets)?;
                    let text = serde_json::to_string_pretty(&doc)
                        .map_err(|e| Failure::new("internal", e.to_string()))?;
                    ::std::println!("{}", hearth_core::display::json_for_terminal(&text));
                }
            }
            Ok(())
        }
        McpCommand::Enable { name } => set_enabled(out, &opts, &name, true),
        McpCommand::Disable { name } => set_enabled(out, &opts, &name, false),
    }
}

fn set_enabled(
    out: &Out,
    opts: &hearth_core::OpenOptions,
    name: &str,
    enabled: bool,
) -> Result<(), Failure> {
    let row = runtime()?.block_on(async {
        let hearth = Hearth::open_oneshot(opts)?;
        hearth.mcp().set_enabled(name, enabled).await
    })?;
    if out.json {
        out.print_json(&row);
    } else if enabled {
        println!("{name} is on.");
    } else {
        println!("{name} is off: none of its tools is offered.");
    }
    Ok(())
}
