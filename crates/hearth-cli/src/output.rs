//! How results and failures are printed, and the exit codes.

use std::process::ExitCode;

use serde::Serialize;

/// A command failure: a stable code and a message for people.
#[derive(Debug)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

impl Failure {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl From<hearth_core::Error> for Failure {
    fn from(e: hearth_core::Error) -> Self {
        Self::new(e.code(), e.to_string())
    }
}

/// Where output goes: human text, or JSON with `--json`.
pub struct Out {
    pub json: bool,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorFields<'a>,
}

#[derive(Serialize)]
struct ErrorFields<'a> {
    code: &'a str,
    message: &'a str,
}

impl Out {
    pub fn print_json<T: Serialize>(&self, value: &T) {
        match serde_json::to_string_pretty(value) {
            // serde_json escapes C0 controls; C1 controls and bidi overrides are made
            // `\uXXXX` too, so the JSON says the same and a terminal acts on none of it.
            Ok(s) => ::std::println!("{}", hearth_core::display::json_for_terminal(&s)),
            Err(e) => eprintln!("error: could not serialise output: {e}"),
        }
    }

    /// Prints a failure and returns exit code 1.
    pub fn fail(&self, f: Failure) -> ExitCode {
        if self.json {
            self.print_json(&ErrorBody {
                error: ErrorFields {
                    code: &f.code,
                    message: &f.message,
                },
            });
        } else {
            eprintln!("error: {}", f.message);
        }
        ExitCode::from(1)
    }
}

/// Handles a command line clap could not parse: help and version exit 0, errors exit 2.
pub fn usage_error(e: clap::Error, json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if json {
        let text = e.render().to_string();
        let message = text
            .lines()
            .next()
            .unwrap_or("usage error")
            .trim_start_matches("error: ");
        Out { json: true }.print_json(&ErrorBody {
            error: ErrorFields {
                code: "usage",
                message,
            },
        });
    } else {
        let _ = e.print();
    }
    ExitCode::from(2)
}
