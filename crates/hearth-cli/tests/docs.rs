//! `docs/cli.md` is the contract scripts rely on: it quotes every command's help verbatim
//! and documents every JSON field; these tests fail when the binary and the doc disagree.

use std::process::Command;

const COMMANDS: &[&[&str]] = &[
    &[],
    &["doctor"],
    &["chat"],
    &["providers"],
    &["providers", "add"],
    &["providers", "list"],
    &["providers", "test"],
    &["providers", "remove"],
    &["providers", "detect"],
    &["providers", "slots"],
    &["providers", "routing"],
    &["providers", "cache"],
    &["usage"],
    &["usage", "budget"],
    &["memory"],
    &["memory", "list"],
    &["memory", "add"],
    &["memory", "edit"],
    &["memory", "pin"],
    &["memory", "unpin"],
    &["memory", "delete"],
    &["memory", "restore"],
    &["memory", "show"],
    &["memory", "proposals"],
    &["memory", "accept"],
    &["memory", "reject"],
    &["memory", "forget"],
    &["memory", "export"],
    &["memory", "import"],
    &["folders"],
    &["folders", "add"],
    &["folders", "remove"],
    &["folders", "list"],
    &["folders", "files"],
    &["folders", "pause"],
    &["folders", "resume"],
    &["index"],
    &["tools"],
    &["tools", "list"],
    &["grants"],
    &["grants", "list"],
    &["grants", "revoke"],
    &["audit"],
    &["audit", "list"],
    &["audit", "verify"],
    &["search"],
    &["jobs"],
    &["jobs", "run"],
    &["embedding"],
    &["embedding", "show"],
    &["embedding", "use"],
    &["embedding", "download"],
    &["eval"],
    &["eval", "memory"],
    &["models"],
    &["models", "list"],
    &["models", "set"],
    &["models", "reset"],
    &["conversations"],
    &["conversations", "list"],
    &["conversations", "show"],
    &["conversations", "search"],
    &["conversations", "rename"],
    &["conversations", "delete"],
    &["key"],
    &["key", "export"],
    &["key", "backend"],
    &["key", "rotate"],
    &["key", "import"],
];

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md");
    std::fs::read_to_string(path).expect("docs/cli.md exists")
}

#[test]
fn every_commands_help_is_quoted_verbatim_in_the_doc() {
    let doc = doc();
    for args in COMMANDS {
        let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(*args)
            .arg("--help")
            .output()
            .expect("run");
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).expect("utf8");
        let block = format!(
            "```text\n$ hearth {}--help\n{}```",
            args.iter().map(|a| format!("{a} ")).collect::<String>(),
            help
        );
        assert!(
            doc.contains(&block),
            "docs/cli.md is missing or has an outdated help block for `hearth {}` \
             (edit docs/cli.md.in, then run `python3 docs/gen-cli-md.py PATH/TO/hearth`); expected:\n{block}",
            args.join(" ")
        );
    }
}

#[test]
fn every_doctor_field_is_documented() {
    let doc = doc();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["doctor", "--json"])
        .env("HEARTH_HOME", tmp.path().join("h"))
        .env("HEARTH_KEY_BACKEND", "file")
        .output()
        .expect("run");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for key in v.as_object().expect("object").keys() {
        assert!(
            doc.contains(&format!("| `{key}` |")),
            "doctor field `{key}` is not in docs/cli.md"
        );
    }
}

#[test]
fn every_error_code_the_engine_can_return_is_documented() {
    let doc = doc();
    for code in [
        "usage",
        "wrong_key",
        "key_missing",
        "keyring_unavailable",
        "passphrase_required",
        "wrong_passphrase",
        "locked",
        "schema_too_new",
        "disk_full",
        "corrupt",
        "invalid_input",
        "no_home_dir",
        "io",
        "database",
        "internal",
        "confirmation_required",
        "not_found",
        "lease_lost",
        "over_budget",
        "provider_redirect",
        "provider_insecure",
    ] {
        assert!(
            doc.contains(&format!("| `{code}` |")),
            "error code `{code}` is not in docs/cli.md"
        );
    }
}
