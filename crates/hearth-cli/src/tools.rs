//! `hearth tools`, and the terminal consent prompt of `hearth chat`.

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::pin::Pin;

use hearth_core::Hearth;
use hearth_core::tools::gate::{Answer, Consent, ConsentRequest};

use crate::args::ToolsCommand;
use crate::open_options;
use crate::output::{Failure, Out};

pub fn run(out: &Out, command: ToolsCommand) -> Result<(), Failure> {
    match command {
        ToolsCommand::List => {
            let tools = Hearth::open_oneshot(&open_options()?)?.tools();
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
                        "{:<16} {:<12} {:<9} {}",
                        t.name,
                        t.risk.as_str(),
                        t.origin.label(),
                        if t.enabled { "on" } else { "off" }
                    );
                }
            }
            Ok(())
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
        let offers_always = request.offers_always;
        Box::pin(async move {
            tokio::task::spawn_blocking(move || ask_tty(&prompt, offers_always))
                .await
                .unwrap_or(Answer::NoSurface)
        })
    }
}

/// The prompt as `docs/cli.md` shows it.
pub fn prompt_text(r: &ConsentRequest) -> String {
    let indent = |text: &str| {
        text.lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut p = format!(
        "\nHearth wants to run a tool.\n  tool:      {} ({})\n  risk:      {}\n  why asked: {}\n",
        r.tool,
        r.origin.label(),
        r.risk.as_str(),
        r.reason
    );
    if let Some(by) = &r.escalated_by {
        p.push_str(&format!("  before it: {by}\n"));
    }
    p.push_str(&format!("  arguments:\n{}\n", indent(&r.arguments)));
    if let Some(preview) = &r.preview {
        p.push_str(&format!("  preview:\n{}\n", indent(preview)));
    }
    p.push_str(if r.offers_always {
        "Allow? [y] once, [c] for this conversation, [a] always, [n] deny (n REASON to say why): "
    } else {
        "Allow? [y] once, [n] deny (n REASON to say why): "
    });
    p
}

fn ask_tty(prompt: &str, offers_always: bool) -> Answer {
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return Answer::NoSurface;
    };
    let Ok(mut writer) = tty.try_clone() else {
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
            "c" if offers_always => return Answer::AllowConversation,
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
