//! `hearth key …`

use hearth_core::{Hearth, KeyBackend, PASSPHRASE_ENV, Passphrase, RecoveryKey};
use serde_json::json;

use crate::output::{Failure, Out};
use crate::{open_options, secrets};

const NEW_PASSPHRASE_ENV: &str = "HEARTH_NEW_PASSPHRASE";

pub fn export(out: &Out, yes: bool) -> Result<(), Failure> {
    let warning = "The recovery key opens all of your Hearth data. Anyone who sees it can read \
                   everything Hearth knows about you. Store it somewhere safe, offline.";
    if !yes {
        eprintln!("warning: {warning}");
        if !secrets::confirm("Show the recovery key?") {
            return Err(Failure::new(
                "confirmation_required",
                "not confirmed: run on a terminal and type yes, or pass --yes",
            ));
        }
    }
    let opts = open_options()?;
    let key = Hearth::keys(&opts).export_recovery()?;
    if out.json {
        out.print_json(&json!({ "recovery_key": key.expose(), "warning": warning }));
    } else {
        if yes {
            eprintln!("warning: {warning}");
        }
        println!("{}", key.expose());
    }
    Ok(())
}

pub fn backend(out: &Out, backend: &str) -> Result<(), Failure> {
    let to: KeyBackend = backend.parse()?;
    let keys = Hearth::keys(&open_options()?);
    let from = keys.backend()?;
    let new_passphrase = if to == KeyBackend::Passphrase && from != Some(KeyBackend::Passphrase) {
        Some(
            match std::env::var(NEW_PASSPHRASE_ENV)
                .ok()
                .filter(|s| !s.is_empty())
            {
                Some(p) => Passphrase::new(p)?,
                None => secrets::ask_passphrase("New passphrase: ", true)?,
            },
        )
    } else {
        None
    };
    keys.move_to(to, new_passphrase.as_ref())?;
    if let Some(w) = to.warning() {
        eprintln!("warning: {w}");
    }
    if out.json {
        out.print_json(
            &json!({ "key_backend": to.as_str(), "previous": from.map(|b| b.as_str()) }),
        );
    } else {
        println!("The database key is now kept in: {to}");
    }
    Ok(())
}

pub fn rotate(out: &Out) -> Result<(), Failure> {
    Hearth::keys(&open_options()?).rotate()?;
    if out.json {
        out.print_json(&json!({ "rotated": true }));
    } else {
        println!(
            "The database is now encrypted with a new key. Earlier recovery keys no longer work."
        );
    }
    Ok(())
}

pub fn import(out: &Out) -> Result<(), Failure> {
    let text = secrets::read_secret_line("Recovery key: ")?;
    let recovery = RecoveryKey::parse(&text)?;
    let mut opts = hearth_core::OpenOptions::from_env()?;
    let backend = opts.existing_key_backend()?.unwrap_or(opts.new_key_backend);
    if backend == KeyBackend::Passphrase && opts.passphrase.is_none() {
        opts.passphrase = Some(secrets::ask_passphrase(
            &format!("New passphrase to protect the key (or set {PASSPHRASE_ENV}): "),
            true,
        )?);
    }
    Hearth::keys(&opts).import_recovery(&recovery)?;
    if out.json {
        out.print_json(&json!({ "imported": true, "key_backend": backend.as_str() }));
    } else {
        println!("The recovery key opens the database and is now stored in: {backend}");
    }
    Ok(())
}
