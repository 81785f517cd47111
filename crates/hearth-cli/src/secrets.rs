//! Reading secrets: never from argv; from the environment, stdin or a terminal prompt.

use std::io::{BufRead, IsTerminal};

use hearth_core::Passphrase;

use crate::output::Failure;

/// True when stdin is an interactive terminal.
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Asks for a passphrase on the terminal (twice when `confirm`).
pub fn ask_passphrase(prompt: &str, confirm: bool) -> Result<Passphrase, Failure> {
    if !stdin_is_terminal() {
        return Err(hearth_core::Error::PassphraseRequired.into());
    }
    let first = rpassword::prompt_password(prompt)
        .map_err(|e| Failure::new("io", format!("could not read the passphrase: {e}")))?;
    if confirm {
        let second = rpassword::prompt_password("Repeat the passphrase: ")
            .map_err(|e| Failure::new("io", format!("could not read the passphrase: {e}")))?;
        if first != second {
            return Err(Failure::new(
                "invalid_input",
                "the passphrases do not match",
            ));
        }
    }
    Ok(Passphrase::new(first)?)
}

/// Reads one secret line: prompted on a terminal, else the first line of stdin.
pub fn read_secret_line(prompt: &str) -> Result<String, Failure> {
    if stdin_is_terminal() {
        return rpassword::prompt_password(prompt)
            .map_err(|e| Failure::new("io", format!("could not read from the terminal: {e}")));
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Failure::new("io", format!("could not read stdin: {e}")))?;
    Ok(line.trim().to_owned())
}

/// Asks "yes/no" on the terminal; false when there is no terminal.
pub fn confirm(question: &str) -> bool {
    if !stdin_is_terminal() {
        return false;
    }
    eprint!("{question} Type yes to continue: ");
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).is_ok() && answer.trim() == "yes"
}
