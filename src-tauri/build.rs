//! The app's commands are declared once, in `commands.in.rs`. From that table this build
//! step derives everything else that must agree with it: the permission manifest (Tauri
//! generates an `allow-<command>` permission for each command declared), each window's
//! capability file (`capabilities/*.json`: exactly the commands that window may call), and
//! the handler list `lib.rs` registers (`$OUT_DIR/handler.rs`).

include!("commands.in.rs");

/// The windows: label, capability identifier, what the capability is for.
const WINDOWS: &[(&str, &str, &str)] = &[
    (
        "main",
        "main-window",
        "The main window: chat, providers, status, settings, and opening the quick prompt.",
    ),
    (
        "quick",
        "quick-window",
        "The quick-prompt window: ask one question, stop it, hide itself, open the answer in the main window.",
    ),
];

/// A window's capability file.
fn capability(label: &str, identifier: &str, description: &str) -> String {
    let mut permissions = vec![
        "core:event:allow-listen".to_owned(),
        "core:event:allow-unlisten".to_owned(),
    ];
    for c in COMMANDS.iter().filter(|c| c.windows.contains(&label)) {
        permissions.push(format!("allow-{}", c.name.replace('_', "-")));
    }
    let list: Vec<String> = permissions.iter().map(|p| format!("    \"{p}\"")).collect();
    format!(
        "{{\n  \"$schema\": \"../gen/schemas/desktop-schema.json\",\n  \"identifier\": \"{identifier}\",\n  \"description\": \"{description}\",\n  \"windows\": [\"{label}\"],\n  \"permissions\": [\n{}\n  ]\n}}\n",
        list.join(",\n")
    )
}

/// Writes `path` only when its text changes (so the build does not loop on it).
fn write_if_changed(path: &std::path::Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text)
        && let Err(e) = std::fs::write(path, text)
    {
        panic!("could not write {}: {e}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-changed=commands.in.rs");
    for (label, identifier, description) in WINDOWS {
        let path = std::path::Path::new("capabilities").join(format!("{identifier}.json"));
        write_if_changed(&path, &capability(label, identifier, description));
    }
    let out = std::env::var("OUT_DIR").unwrap_or_else(|e| panic!("OUT_DIR: {e}"));
    let handlers: Vec<String> = COMMANDS
        .iter()
        .map(|c| format!("    crate::{}::{},", c.module, c.name))
        .collect();
    write_if_changed(
        &std::path::Path::new(&out).join("handler.rs"),
        &format!("tauri::generate_handler![\n{}\n]\n", handlers.join("\n")),
    );
    let names: Vec<&'static str> = COMMANDS.iter().map(|c| c.name).collect();
    let manifest = tauri_build::AppManifest::new().commands(Box::leak(names.into_boxed_slice()));
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        panic!("tauri build step failed: {e:#}");
    }
}
