//! `hearth`: the command-line interface over the same engine as the desktop app.
//! Its contract (flags, exit codes, JSON shapes) is `docs/cli.md`.
//!
//! **Never depends on** a crate below `hearth-core` (only the façade, and `hearth-eval` for
//! `hearth eval`): it parses, calls and prints, so it cannot hold a rule the app lacks.

// Every byte the CLI prints goes through the core's terminal escaping
// (`hearth_core::display::prose`): text from a model, a tool, an MCP server, a file or a
// stored conversation never reaches the terminal raw — no escape sequence, C1 control or
// bidi override of theirs can conceal, move or retitle anything. These shadow the standard
// macros in every module declared below; what must write control bytes of its own (a
// progress line's `\r`, JSON already escaped) calls `std::` explicitly.
macro_rules! println {
    () => { ::std::println!() };
    ($($arg:tt)*) => {
        ::std::println!("{}", hearth_core::display::prose(&::std::format!($($arg)*)))
    };
}
macro_rules! print {
    ($($arg:tt)*) => {
        ::std::print!("{}", hearth_core::display::prose(&::std::format!($($arg)*)))
    };
}
macro_rules! eprintln {
    () => { ::std::eprintln!() };
    ($($arg:tt)*) => {
        ::std::eprintln!("{}", hearth_core::display::prose(&::std::format!($($arg)*)))
    };
}
macro_rules! eprint {
    ($($arg:tt)*) => {
        ::std::eprint!("{}", hearth_core::display::prose(&::std::format!($($arg)*)))
    };
}

mod args;
mod chat;
mod embedding;
mod folders;
mod key;
mod mcp;
mod memory;
mod model;
mod output;
mod providers;
mod secrets;
mod tools;
mod updates;

use std::process::ExitCode;

use clap::Parser;
use hearth_core::{Hearth, OpenOptions};

use args::{
    Cli, Command, ConversationsCommand, EvalCommand, JobsCommand, KeyCommand, UsageCommand,
};
use output::{Failure, Out};

/// mimalloc keeps the pages of the embedder's large, short-lived tensors instead of
/// returning them to the kernel on every free (see the workspace Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns the pages mimalloc keeps to the system: the engine calls it after it drops a
/// model it had not used for the idle-unload time.
fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers; any thread may call it at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

fn main() -> ExitCode {
    // The extraction worker (this binary as the indexer's child) ends here.
    // SAFETY: first thing in main, before any other thread exists.
    if let Some(code) = unsafe { hearth_core::process_start() } {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    hearth_core::set_release_freed_memory(release_freed_memory);
    hearth_core::set_build_commit(env!("HEARTH_COMMIT"));
    let json_requested = std::env::args().any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return output::usage_error(e, json_requested),
    };
    init_logging();
    let out = Out { json: cli.json };
    let result = match cli.command {
        Command::Chat {
            conversation,
            model,
            provider,
            temporary,
            regenerate,
            edit,
            no_wait,
            no_tools,
            allow_writes,
            tier,
            over_budget,
            message,
        } => match chat::chat(
            &out,
            chat::Turn {
                conversation,
                model,
                provider,
                temporary,
                regenerate,
                edit,
                no_wait,
                no_tools,
                allow_writes,
                tier: hearth_core::TierChoice::parse(&tier).unwrap_or_default(),
                over_budget,
                message: message.unwrap_or_default(),
            },
        ) {
            Ok(0) => Ok(()),
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
        Command::Conversations { command } => match command {
            ConversationsCommand::List => chat::list(&out),
            ConversationsCommand::Show { id } => chat::show(&out, &id),
            ConversationsCommand::Search { text } => chat::search(&out, &text),
            ConversationsCommand::Rename { id, title } => chat::rename(&out, &id, &title),
            ConversationsCommand::Delete { id, yes } => chat::delete(&out, &id, yes),
        },
        Command::Usage {
            command:
                Some(UsageCommand::Budget {
                    daily,
                    monthly,
                    provider,
                }),
            ..
        } => providers::budget(&out, daily, monthly, provider),
        Command::Usage {
            command: None,
            since,
            by,
        } => providers::usage(&out, since.as_deref(), &by),
        Command::Providers { command } => providers::run(&out, command),
        Command::Models { command } => providers::models(&out, command),
        Command::Memory { command } => memory::run(&out, command),
        Command::Embedding { command } => embedding::run(&out, command),
        Command::Model { command } => model::run(&out, command),
        Command::Folders { command } => folders::run(&out, command),
        Command::Tools { command } => tools::run(&out, command),
        Command::Mcp { command } => mcp::run(&out, command),
        Command::Grants { command } => tools::grants(&out, command),
        Command::Audit { command } => match tools::audit(&out, command) {
            Ok(0) => Ok(()),
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
        Command::Index {
            wait,
            wait_vectors,
            watch,
        } => folders::index(&out, wait || wait_vectors || watch, wait_vectors, watch),
        Command::Search {
            query,
            k,
            mode,
            folder,
            file_type,
            modified_since,
        } => folders::search(
            &out,
            &query,
            k,
            &mode,
            &hearth_core::SearchScope {
                folder: folder.as_deref(),
                extension: file_type.as_deref(),
                modified_since,
            },
        ),
        Command::Eval {
            command:
                EvalCommand::Memory {
                    locomo,
                    profile,
                    distractors,
                    model,
                    vectors,
                },
        } => match (locomo, profile) {
            (Some(locomo), _) => memory::eval(&out, &locomo, &model),
            (None, Some(profile)) => {
                memory::eval_profile(&out, &profile, distractors, &model, vectors.as_deref())
            }
            (None, None) => Err(output::Failure::new(
                "invalid_input",
                "give --locomo PATH or --profile DIR",
            )),
        },
        Command::Eval {
            command: EvalCommand::Retrieval { locomo, model },
        } => folders::eval_retrieval(&out, &locomo, &model),
        Command::Jobs {
            command: JobsCommand::Run,
        } => run_jobs(&out),
        Command::Updates { command } => updates::run(&out, command),
        Command::Doctor => doctor(&out),
        Command::Key { command } => match command {
            KeyCommand::Export { yes } => key::export(&out, yes),
            KeyCommand::Backend { backend } => key::backend(&out, &backend),
            KeyCommand::Rotate => key::rotate(&out),
            KeyCommand::Import => key::import(&out),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => out.fail(failure),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HEARTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // A span's close says what step ran and how long it took (turn, model_call, tool_call);
    // spans carry no arguments or content.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// Options from the environment, with a passphrase asked for when one is needed.
pub(crate) fn open_options() -> Result<OpenOptions, Failure> {
    let mut opts = OpenOptions::from_env()?;
    let backend = opts.existing_key_backend()?.unwrap_or(opts.new_key_backend);
    if backend == hearth_core::KeyBackend::Passphrase && opts.passphrase.is_none() {
        let is_new = opts.existing_key_backend()?.is_none();
        opts.passphrase = Some(secrets::ask_passphrase(
            if is_new {
                "Choose a passphrase for Hearth's database: "
            } else {
                "Passphrase for Hearth's database: "
            },
            is_new,
        )?);
    }
    Ok(opts)
}

fn run_jobs(out: &Out) -> Result<(), Failure> {
    let opts = open_options()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new("internal", e.to_string()))?;
    let ran = runtime.block_on(async {
        let hearth = Hearth::open_oneshot(&opts)?;
        hearth.jobs().run_until_idle().await
    })?;
    let counts = Hearth::open_oneshot(&opts)?.status_blocking()?.jobs;
    if out.json {
        out.print_json(&serde_json::json!({ "ran": ran, "jobs": counts }));
    } else {
        println!(
            "Ran {ran} jobs; {} queued, {} running, {} failed.",
            counts.queued, counts.running, counts.failed
        );
    }
    Ok(())
}

fn doctor(out: &Out) -> Result<(), Failure> {
    let opts = open_options()?;
    let hearth = Hearth::open_oneshot(&opts)?;
    let status = hearth.status_blocking()?;
    if out.json {
        out.print_json(&status);
    } else {
        let s = &status;
        let rows: [(&str, String); 14] = [
            ("version", s.version.clone()),
            ("commit", s.commit.clone()),
            ("data_dir", s.data_dir.clone()),
            ("db_path", s.db_path.clone()),
            ("db_id", s.db_id.clone()),
            ("schema_version", s.schema_version.to_string()),
            ("sqlite_version", s.sqlite_version.clone()),
            ("sqlcipher_version", s.sqlcipher_version.clone()),
            ("sqlite_vec_version", s.sqlite_vec_version.clone()),
            ("key_backend", s.key_backend.clone()),
            ("encrypted", s.encrypted.to_string()),
            ("fts5", s.fts5.to_string()),
            ("vec0", s.vec0.to_string()),
            (
                "jobs",
                format!(
                    "{} queued, {} running, {} failed",
                    s.jobs.queued, s.jobs.running, s.jobs.failed
                ),
            ),
        ];
        for (name, value) in rows {
            println!("{name:<19} {value}");
        }
        for j in &s.failed_jobs {
            println!(
                "failed job          {} {} after {} attempts: {}",
                j.id,
                j.kind,
                j.attempts,
                j.code.as_deref().unwrap_or("unknown")
            );
        }
        for w in &s.warnings {
            println!("warning: {w}");
        }
    }
    Ok(())
}
