//! The direction of dependency inside `hearth-core`'s own modules (ARCHITECTURE.md,
//! "Module layers"): a lower module never imports a higher one. Between crates the
//! compiler keeps the direction (`crate_graph.rs` lists what each crate may name). Reads every `crate::…` path in `src/` and
//! fails on an edge that points upward and is not in `KNOWN_UPWARD` — the edges the
//! engine issue (9) found and has not removed yet. The list may only shrink: an edge that
//! no longer exists must be taken off it too, so the ratchet cannot silently loosen.

use std::collections::BTreeSet;
use std::path::Path;

/// Each top-level module and its layer (0 lowest).
const LAYERS: &[(&str, u8)] = &[
    // The crates below the engine, under the names `lib.rs` gives them (their own
    // dependencies are kept by Cargo: `crate_graph.rs`).
    ("error", 0),
    ("types", 0),
    ("time", 0),
    ("failpoint", 0),
    ("fsio", 0),
    ("paths", 0),
    ("store", 0),
    ("audit", 0),
    ("tokens", 0),
    ("rank", 0),
    ("llm", 0),
    ("embed", 0),
    ("folders", 0),
    ("memory", 0),
    // The engine's own modules.
    ("display", 0),
    ("pricing", 1),
    ("route", 1),
    ("models", 2),
    ("context", 2),
    ("conversations", 2),
    ("providers", 2),
    ("builtin", 2),
    ("learn", 2),
    ("usage", 2),
    ("budget", 2),
    ("tools", 2),
    ("chat", 3),
    ("events", 4),
    ("hearth", 4),
    ("entry", 4),
];

/// Upward edges still in the code, as `from -> to`. Remove a line when its edge goes.
/// (Empty since `error` stopped naming `llm` and `embed`: their failures reach it as an
/// opaque `ServiceError`.) A new upward edge must be removed, not listed here.
const KNOWN_UPWARD: &[&str] = &[];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src").flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The edges `from -> to` between top-level modules, read from `crate::to` paths.
fn edges() -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexports = root_reexports(&src.join("lib.rs"));
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut edges = BTreeSet::new();
    for path in all {
        let rel = path.strip_prefix(&src).expect("inside src");
        let from = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|s| s.trim_end_matches(".rs").to_owned())
            .expect("a name");
        if from == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        // Test modules may reach anywhere; comments (doc links) are no imports.
        let text: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (i, _) in text.match_indices("crate::") {
            for to in targets(&text[i + 7..], &reexports) {
                if to != from && layer(&to).is_some() {
                    edges.insert((from.clone(), to));
                }
            }
        }
    }
    edges
}

/// The names `lib.rs` re-exports at the crate root and the module each comes from
/// (`pub use hearth::{Hearth, …}` → `Hearth` is `hearth`), so `crate::Hearth` counts as an
/// edge to `hearth` and a re-export is no way around the layers.
fn root_reexports(lib: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(lib).expect("read lib.rs");
    let mut out = Vec::new();
    for item in text.split("pub use ").skip(1) {
        let item = &item[..item.find(';').expect("a `;` after `pub use`")];
        let module = item.split("::").next().unwrap_or("").trim().to_owned();
        let names = item.rsplit("::").next().unwrap_or("");
        for name in names
            .trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace())
            .split(',')
        {
            let name = name.trim();
            if !name.is_empty() {
                out.push((name.to_owned(), module.clone()));
            }
        }
    }
    out
}

/// The top-level modules a path after `crate::` names: `memory::…` → memory;
/// `Hearth` → the module it is re-exported from; `{DataDir, llm::LlmError}` → each item's.
fn targets(rest: &str, reexports: &[(String, String)]) -> Vec<String> {
    let items: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
        let end = group.find('}').unwrap_or(group.len());
        group[..end].split(',').collect()
    } else {
        vec![rest]
    };
    let mut out = Vec::new();
    for item in items {
        let ident: String = item
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push(ident);
        } else if let Some((_, module)) = reexports.iter().find(|(n, _)| *n == ident) {
            out.push(module.clone());
        }
    }
    out
}

#[test]
fn reexports_and_brace_groups_count_as_edges() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexports = root_reexports(&src.join("lib.rs"));
    assert_eq!(targets("Hearth;", &reexports), ["hearth"]);
    assert_eq!(
        targets("{DataDir, llm::LlmError};", &reexports),
        ["paths", "llm"]
    );
    assert_eq!(targets("memory::Memories", &reexports), ["memory"]);
}

#[test]
fn every_module_has_a_layer() {
    for (from, to) in edges() {
        assert!(
            layer(&from).is_some(),
            "module {from} has no layer in LAYERS"
        );
        assert!(layer(&to).is_some(), "module {to} has no layer in LAYERS");
    }
}

#[test]
fn a_lower_module_never_imports_a_higher_one() {
    let upward: BTreeSet<String> = edges()
        .into_iter()
        .filter(|(f, t)| layer(f).unwrap_or(0) < layer(t).unwrap_or(0))
        .map(|(f, t)| format!("{f} -> {t}"))
        .collect();
    let known: BTreeSet<String> = KNOWN_UPWARD.iter().map(|s| (*s).to_owned()).collect();
    let new: Vec<&String> = upward.difference(&known).collect();
    assert!(
        new.is_empty(),
        "upward imports (a lower module importing a higher one; see ARCHITECTURE.md): {new:?}"
    );
    let gone: Vec<&String> = known.difference(&upward).collect();
    assert!(
        gone.is_empty(),
        "these known upward edges are gone: take them off KNOWN_UPWARD: {gone:?}"
    );
}
