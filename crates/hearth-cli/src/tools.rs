//! `hearth tools`, and the terminal consent prompt of `hearth chat`.

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::pin::Pin;

use hearth_core::Hearth;
use hearth_core::{Consent, ConsentAnswer as Answer, ConsentRequest};

use crate::args::{AuditCommand, GrantsCommand, ToolsCommand};
use crate::open_options;
use crate::output::{Failure, Out};

pub fn run(out: &Out, command: ToolsCommand) -> Result<(), Failure> {
    match command {
        ToolsCommand::List => {
            let tools = Hearth::open_oneshot(&open_options()?)?.tools()?;
            if out.json {
                let rows: Vec<_> = tools
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "name": t.name,
                            "origin": t.origin,
                            "risk": t.risk,
                            "risk_source": t.risk_source,
                            "enabled": t.enabled,
                        })
                    })
                    .collect();
                out.print_json(&rows);
            } else {
                for t in tools {
                    println!(
                        "{:<32} {:<12} {:<12} {}",
                        t.name,
                        t.risk.as_str(),
                        t.origin.label(),
                        if t.enabled { "on" } else { "off" }
                    );
                }
            }
            Ok(())
        }
        ToolsCommand::Risk { tool, risk, yes } => {
            let risk = match risk.as_str() {
                "read" => hearth_core::Risk::Read,
                "write" => hearth_core::Risk::Write,
                _ => hearth_core::Risk::Destructive,
            };
            let mcp = Hearth::open_oneshot(&open_options()?)?.mcp();
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failure::new("internal", e.to_string()))?
                .block_on(mcp.set_risk(&tool, risk, crate::mcp::surface(yes).as_ref()))?;
            if out.json {
                out.print_json(
                    &serde_json::json!({"name": tool, "risk": risk, "risk_source": "user"}),
                );
            } else {
                println!("{tool} is now {}.", risk.as_str());
            }
            Ok(())
        }
    }
}

/// `hearth grants`.
pub fn grants(out: &Out, command: GrantsCommand) -> Result<(), Failure> {
    let activity = Hearth::open_oneshot(&open_options()?)?.activity();
    match command {
        GrantsCommand::List => {
            let rows = activity.grants()?;
            if out.json {
                out.print_json(&rows);
            } else if rows.is_empty() {
                println!("No grants: write tools ask before they run.");
            } else {
                for g in rows {
                    let scope = match &g.conversation {
                        Some(c) => format!("conversation {c}"),
                        None => "always".into(),
                    };
                    println!(
                        "{:<5} {:<16} {:<10} {scope}  ({})",
                        g.id, g.tool, g.origin, g.covers
                    );
                }
            }
        }
        GrantsCommand::Revoke { id, all } => {
            let revoked = if all {
                activity.revoke_all_grants()?
            } else {
                let id =
                    id.ok_or_else(|| Failure::new("invalid_input", "give a grant's id or --all"))?;
                activity.revoke_grant(id)?;
                1
            };
            if out.json {
                out.print_json(&serde_json::json!({"revoked": revoked}));
            } else {
                println!(
                    "Revoked {revoked} grant{}.",
                    if revoked == 1 { "" } else { "s" }
                );
            }
        }
    }
    Ok(())
}

/// `hearth audit`; the exit code. `verify` exits 1 when the chain is broken (after its
/// report).
pub fn audit(out: &Out, command: AuditCommand) -> Result<u8, Failure> {
    let activity = Hearth::open_oneshot(&open_options()?)?.activity();
    match command {
        AuditCommand::List { kind, tool, limit } => {
            let rows = activity.audit(&hearth_core::AuditFilter { kind, tool, limit })?;
            if out.json {
                let rows: Vec<_> = rows
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "seq": e.seq,
                            "kind": e.kind,
                            "tool": e.tool,
                            "risk": e.risk,
                            "decision": e.decision,
                            "decided_by": e.decided_by,
                            "time": e.time,
                            "payload_redacted": e.payload_redacted,
                            "summary": e.summary,
                        })
                    })
                    .collect();
                out.print_json(&rows);
            } else {
                for e in rows {
                    let what = match e.kind.as_str() {
                        "tool_call" => format!(
                            "{} {} {} by {}",
                            e.tool.as_deref().unwrap_or("?"),
                            e.risk.as_deref().unwrap_or("?"),
                            e.decision.as_deref().unwrap_or("?"),
                            e.decided_by.as_deref().unwrap_or("?")
                        ),
                        _ => e
                            .summary
                            .as_object()
                            .map(|o| {
                                o.iter()
                                    .map(|(k, v)| {
                                        format!(
                                            "{k}={}",
                                            v.as_str().map_or(v.to_string(), str::to_owned)
                                        )
                                    })
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            })
                            .unwrap_or_default(),
                    };
                    println!(
                        "{:<6} {} {:<9} {what}{}",
                        e.seq,
                        jiff::Timestamp::from_millisecond(e.time)
                            .map(|t| t
                                .to_zoned(jiff::tz::TimeZone::system())
                                .strftime("%Y-%m-%d %H:%M:%S")
                                .to_string())
                            .unwrap_or_default(),
                        e.kind,
                        if e.payload_redacted {
                            " (payload redacted)"
                        } else {
                            ""
                        }
                    );
                }
            }
            Ok(0)
        }
        AuditCommand::Verify => {
            let v = activity.verify_audit()?;
            if out.json {
                out.print_json(&v);
            } else if v.ok {
                println!(
                    "The audit log checks out: {} entries, chain intact.",
                    v.entries
                );
            } else {
                println!(
                    "The audit log is BROKEN at entry {}: {}",
                    v.first_bad_seq.unwrap_or(0),
                    v.problem.as_deref().unwrap_or("")
                );
            }
            Ok(if v.ok { 0 } else { 1 })
        }
    }
}

/// Asks on the controlling terminal (`/dev/tty`), never on stdin: text piped into
/// `hearth chat` cannot answer. No terminal, or end of input, is no answer (denied as
/// `policy_no_tty`).
pub struct TtyConsent;

impl Consent for TtyConsent {
    fn ask<'a>(
        &'a self,
        request: &'a ConsentRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        let prompt = prompt_text(request);
        let offers = (request.offers_conversation, request.offers_always);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || ask_tty(&prompt, offers))
                .await
                .unwrap_or(Answer::NoSurface)
        })
    }
}

/// What starts every question Hearth asks on the terminal: the terminal's attributes reset
/// (a model's text cannot leave it concealed or recoloured: its escape sequences never
/// reach the terminal, and this undoes any that could), then a marker line in reverse
/// video, which no escaped text can produce (`hearth_core::display::prose`).
pub const PROMPT_MARKER: &str = "\u{1b}[0m\n\u{1b}[7m\u{1b}[1m ▶ HEARTH ASKS (this line is Hearth's own, never the model's) \u{1b}[0m\n";

/// The prompt as `docs/cli.md` shows it. Every text in it that came from outside (the
/// tool's name, why it asks, what came before) is escaped with `display::escape`; the
/// arguments and the preview were escaped by the core.
pub fn prompt_text(r: &ConsentRequest) -> String {
    use hearth_core::display::escape;
    let indent = |text: &str| {
        text.lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // An act that lowers caution (not a tool call) is confirmed with the same prompt.
    let mut p = if r.call_id == "confirm" {
        format!(
            "{PROMPT_MARKER}Hearth asks you to confirm: {} ({})\n  why asked: {}\n",
            escape(&r.tool),
            escape(&r.origin.label()),
            escape(&r.reason)
        )
    } else {
        format!(
            "{PROMPT_MARKER}Hearth wants to run a tool.\n  tool:      {} ({})\n  risk:      {}\n  why asked: {}\n",
            escape(&r.tool),
            escape(&r.origin.label()),
            r.risk.as_str(),
            escape(&r.reason)
        )
    };
    if let Some(by) = &r.escalated_by {
        p.push_str(&format!("  before it: {}\n", escape(by)));
    }
    let label = if r.call_id == "confirm" {
        "details"
    } else {
        "arguments"
    };
    p.push_str(&format!("  {label}:\n{}\n", indent(&r.arguments)));
    if let Some(preview) = &r.preview {
        p.push_str(&format!("  preview:\n{}\n", indent(preview)));
    }
    p.push_str(match (r.offers_conversation, r.offers_always) {
        (true, true) => {
            "Allow? [y] once, [c] for this conversation, [a] always, [n] deny (n REASON to say why): "
        }
        (true, false) => "Allow? [y] once, [c] for this chat, [n] deny (n REASON to say why): ",
        _ => "Allow? [y] once, [n] deny (n REASON to say why): ",
    });
    p
}

/// The controlling terminal, to read the answer from and write the question to: `/dev/tty`
/// on Unix; the console's own `CONIN$` and `CONOUT$` on Windows (never stdin, which a pipe
/// may fill). `None` when there is none.
#[cfg(not(windows))]
fn open_terminal() -> Option<(std::fs::File, std::fs::File)> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    let writer = tty.try_clone().ok()?;
    Some((tty, writer))
}

/// Windows: the console's input and output buffers (not compiled on these machines).
#[cfg(windows)]
fn open_terminal() -> Option<(std::fs::File, std::fs::File)> {
    let input = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("CONIN$")
        .ok()?;
    let output = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("CONOUT$")
        .ok()?;
    Some((input, output))
}

/// Asks on the terminal; `offers` is (for this conversation, always).
fn ask_tty(prompt: &str, (offers_conversation, offers_always): (bool, bool)) -> Answer {
    let Some((tty, mut writer)) = open_terminal() else {
        return Answer::NoSurface;
    };
    let mut reader = BufReader::new(tty);
    loop {
        if writer
            .write_all(prompt.as_bytes())
            .and_then(|()| writer.flush())
            .is_err()
        {
            return Answer::NoSurface;
        }
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return Answer::NoSurface,
            Ok(_) => {}
        }
        let line = line.trim();
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match word.to_lowercase().as_str() {
            "y" | "yes" => return Answer::AllowOnce,
            "c" if offers_conversation => return Answer::AllowConversation,
            "a" if offers_always => return Answer::AllowAlways,
            "n" | "no" => {
                let reason = rest.trim();
                return Answer::Deny((!reason.is_empty()).then(|| reason.to_owned()));
            }
            _ => {
                let _ = writeln!(writer, "Please answer y or n.");
            }
        }
    }
}
