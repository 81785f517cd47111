// Included by the binaries' build scripts (`include!`): sets `HEARTH_COMMIT`, the commit the
// binary was built from, for `hearth --version`, `hearth doctor` and Settings → About.
// `HEARTH_COMMIT` in the build's environment wins (a build from a source archive); outside
// a git checkout it is "unknown". Rebuilds only when HEAD moves.

fn emit_commit() {
    println!("cargo:rerun-if-env-changed=HEARTH_COMMIT");
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = std::path::Path::new(&dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let reference = dir.join(&branch);
            if reference.exists() {
                println!("cargo:rerun-if-changed={}", reference.display());
            }
        }
        if dir.join("packed-refs").exists() {
            println!("cargo:rerun-if-changed={}", dir.join("packed-refs").display());
        }
    }
    let commit = std::env::var("HEARTH_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=10", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // One token: nothing but what a commit id can hold reaches the binary.
    let commit: String = commit
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
        .take(40)
        .collect();
    println!("cargo:rustc-env=HEARTH_COMMIT={commit}");
}
