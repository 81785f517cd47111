// Included by the binaries' build scripts (`include!`): sets `HEARTH_COMMIT`, the commit the
// binary was built from, for `hearth --version`, `hearth doctor` and Settings → About.
// `HEARTH_COMMIT` in the build's environment wins (a build from a source archive); outside
// a git checkout it is "unknown". Reruns when HEAD moves or the build comes from another
// checkout (`HEARTH_CHECKOUT`, set by `.cargo/config.toml`).

fn emit_commit() {
    println!("cargo:rerun-if-env-changed=HEARTH_COMMIT");
    // Set by `.cargo/config.toml` to the checkout's folder: cargo keeps the paths below as
    // the absolute paths of the checkout that last ran this script, so a target folder
    // shared by two checkouts would otherwise watch the other one's `.git` and keep its
    // commit. A build from another checkout reruns this script.
    println!("cargo:rerun-if-env-changed=HEARTH_CHECKOUT");
    // Read when the script runs, not baked in when it was compiled: a target folder shared
    // by two checkouts runs one compiled script for both.
    let package =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&package)
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    if let Some(absolute) = git(&["rev-parse", "--absolute-git-dir"]) {
        // Watched by a path relative to this package (`../../.git`) where it can be.
        let relative =
            std::path::Path::new(&git(&["rev-parse", "--show-cdup"]).unwrap_or_default())
                .join(".git");
        let dir = if package.join(&relative).is_dir() {
            relative
        } else {
            std::path::PathBuf::from(absolute)
        };
        let dir = dir.as_path();
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let reference = dir.join(&branch);
            if reference.exists() {
                println!("cargo:rerun-if-changed={}", reference.display());
            }
        }
        if dir.join("packed-refs").exists() {
            println!(
                "cargo:rerun-if-changed={}",
                dir.join("packed-refs").display()
            );
        }
        // After `git pack-refs` (git gc) the branch has no file of its own when this runs,
        // and the next commit writes one: the folder of branches sees it (cargo scans a
        // folder's files), and HEAD's log grows with every commit and checkout.
        for watched in [
            dir.join("refs").join("heads"),
            dir.join("logs").join("HEAD"),
        ] {
            if watched.exists() {
                println!("cargo:rerun-if-changed={}", watched.display());
            }
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
