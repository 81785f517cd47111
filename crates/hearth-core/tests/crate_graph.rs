//! The workspace's crate graph (ARCHITECTURE.md, "Crates and their invariants"): each
//! crate names only the Hearth crates below it, so a "never" is a compile error — a crate
//! cannot import what is not its dependency. This test keeps the list of allowed edges in
//! one place: adding a Hearth dependency to a crate's `Cargo.toml` (`llm → store`, a
//! front end → `hearth-store`) fails here until the design (and this list) says so.

use std::collections::BTreeSet;
use std::path::Path;

/// Every workspace crate and the Hearth crates its normal build may depend on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("crates/hearth-base", &[]),
    ("crates/hearth-text", &[]),
    ("crates/hearth-store", &["hearth-base"]),
    ("crates/hearth-llm", &["hearth-base"]),
    // The built-in model's worker: a process of its own, with no Hearth crate at all (it
    // holds no key and opens no database), and nothing links it.
    ("crates/hearth-llama", &[]),
    ("crates/hearth-embed", &["hearth-base", "hearth-llm"]),
    (
        "crates/hearth-folders",
        &["hearth-base", "hearth-store", "hearth-embed", "hearth-text"],
    ),
    (
        "crates/hearth-memory",
        &["hearth-base", "hearth-store", "hearth-embed", "hearth-text"],
    ),
    (
        "crates/hearth-core",
        &[
            "hearth-base",
            "hearth-store",
            "hearth-llm",
            "hearth-embed",
            "hearth-text",
            "hearth-folders",
            "hearth-memory",
        ],
    ),
    // The evaluation harnesses: the façade and the public crates below, for the CLI only.
    (
        "crates/hearth-eval",
        &[
            "hearth-base",
            "hearth-core",
            "hearth-embed",
            "hearth-folders",
            "hearth-memory",
            "hearth-store",
            "hearth-text",
        ],
    ),
    // The front ends: the façade only (and the CLI's `hearth eval`).
    ("crates/hearth-cli", &["hearth-core", "hearth-eval"]),
    ("src-tauri", &["hearth-core"]),
];

/// The `hearth-*` names in a manifest's normal dependency tables (`[dependencies]` and
/// `[target.'…'.dependencies]`; dev- and build-dependencies are not the product's).
fn hearth_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut normal = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let table = line.trim_matches(|c| c == '[' || c == ']');
            normal = table == "dependencies"
                || (table.starts_with("target.") && table.ends_with(".dependencies"));
            continue;
        }
        if normal && line.starts_with("hearth-") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            out.insert(name);
        }
    }
    out
}

#[test]
fn each_crate_depends_only_on_the_hearth_crates_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (dir, allowed) in ALLOWED {
        let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{dir}/Cargo.toml: {e}"));
        let found = hearth_dependencies(&manifest);
        let allowed: BTreeSet<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
        let extra: Vec<&String> = found.difference(&allowed).collect();
        assert!(
            extra.is_empty(),
            "{dir} depends on {extra:?}, which the crate graph forbids (ARCHITECTURE.md)"
        );
    }
}

/// Nothing but the CLI depends on the evaluation harnesses: the engine and the app never
/// ship them.
#[test]
fn only_the_cli_uses_the_evaluation_harnesses() {
    for (dir, allowed) in ALLOWED {
        if *dir != "crates/hearth-cli" {
            assert!(
                !allowed.contains(&"hearth-eval"),
                "{dir} may not use hearth-eval"
            );
        }
    }
}

#[test]
fn every_workspace_crate_is_in_the_graph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let members = workspace
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("a members list");
    for member in members.split(',') {
        let member = member.trim().trim_matches('"');
        if member.is_empty() || member.starts_with("tests/") || member.ends_with("testkit") {
            continue;
        }
        assert!(
            ALLOWED.iter().any(|(dir, _)| *dir == member),
            "{member} is a workspace crate without a line in ALLOWED"
        );
    }
}

#[test]
fn the_reader_sees_normal_and_platform_dependencies_only() {
    let manifest = "[dependencies]\nhearth-base.workspace = true\nserde = \"1\"\n\
                    [target.'cfg(unix)'.dependencies]\nhearth-store = { workspace = true }\n\
                    [dev-dependencies]\nhearth-testkit.workspace = true\n";
    let found: Vec<String> = hearth_dependencies(manifest).into_iter().collect();
    assert_eq!(found, ["hearth-base", "hearth-store"]);
}
