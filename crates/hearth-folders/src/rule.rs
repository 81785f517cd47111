//! **One rule decides what Hearth may read in a watched folder** (issue 31), for the
//! indexer's walk, every file tool and the passage view alike: an entry is *excluded* when
//! any part of its path below the watched folder is
//! - hidden (a name starting with `.`; on Windows the hidden or system attribute);
//! - a dependency or build folder ([`DEFAULT_IGNORED_DIRS`]);
//! - one of the platform's secret places: `AppData` or `Library` right under the user's
//!   home (Windows' and macOS's application data, with browser profiles, mail and
//!   keychains), a `Keychains` folder, a keychain file (`.keychain`, `.keychain-db`);
//!   `.ssh`, `.gnupg` and Linux browser profiles (`~/.mozilla`, `~/.config/…`) are hidden;
//! - listed in a `.gitignore`, `.ignore` or `.hearthignore` of the watched folder or of a
//!   folder between it and the entry (the user's own list: `.hearthignore`), read as
//!   ripgrep reads them — the deepest file that decides wins, and in one folder
//!   `.hearthignore` over `.ignore` over `.gitignore`.
//!
//! The indexer never reads an excluded entry (and drops one the rule newly excludes); a file
//! tool that names one gets a consent question saying why, never a silent read.

use std::path::{Component, Path};

use ignore::Match;
use ignore::gitignore::Gitignore;

use super::walk::DEFAULT_IGNORED_DIRS;

/// The ignore files read in each folder, the strongest first.
const IGNORE_FILES: &[&str] = &[".hearthignore", ".ignore", ".gitignore"];

/// Names that are secret places when they sit right under the user's home folder.
const HOME_SECRET_DIRS: &[&str] = &["AppData", "Library"];

/// Why `name` (a component of a path inside a watched folder; `is_dir` when it is a folder,
/// `parent` the folder holding it) is not read, if it is not — the checks that need no
/// ignore file, shared with the indexer's walk.
pub fn excluded_name(name: &str, is_dir: bool, parent: &Path) -> Option<String> {
    if name.starts_with('.') {
        return Some(format!("`{name}` is hidden"));
    }
    if is_dir && DEFAULT_IGNORED_DIRS.contains(&name) {
        return Some(format!("`{name}` is a dependency or build folder"));
    }
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".keychain") || lower.ends_with(".keychain-db") || name == "Keychains" {
        return Some(format!("`{name}` holds keychains"));
    }
    if is_dir && HOME_SECRET_DIRS.contains(&name) && is_home(parent) {
        return Some(format!(
            "`{name}` in the home folder holds applications' private data (browser profiles, \
             mail, keys)"
        ));
    }
    None
}

fn is_home(dir: &Path) -> bool {
    let Some(home) = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()) else {
        return false;
    };
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(dir) == canon(&home)
}

/// The Windows hidden or system attribute (not compiled on Linux or macOS).
#[cfg(windows)]
pub fn hidden_by_attribute(path: &Path) -> bool {
    use std::os::windows::fs::MetadataExt;
    const HIDDEN: u32 = 0x2;
    const SYSTEM: u32 = 0x4;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_attributes() & (HIDDEN | SYSTEM) != 0)
}

/// The Windows hidden or system attribute: none elsewhere.
#[cfg(not(windows))]
pub fn hidden_by_attribute(_path: &Path) -> bool {
    false
}

/// Why Hearth does not read `path` (absolute, resolved) inside the watched folder `root`
/// (canonical), if it does not: see the module's text. `None`: it may be read.
pub fn excluded(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    // Names first (no file read), then the attribute, then the ignore files.
    let mut at = root.to_path_buf();
    for (i, name) in parts.iter().enumerate() {
        let parent = at.clone();
        at.push(name);
        let is_dir = i + 1 < parts.len() || at.is_dir();
        if let Some(why) = excluded_name(&name.to_string_lossy(), is_dir, &parent) {
            return Some(why);
        }
        if hidden_by_attribute(&at) {
            return Some(format!(
                "`{}` is hidden (its hidden or system attribute)",
                name.to_string_lossy()
            ));
        }
    }
    ignored_by_file(root, path)
}

/// Which ignore file lists `path`, if one does (the deepest deciding file wins).
fn ignored_by_file(root: &Path, path: &Path) -> Option<String> {
    let is_dir = path.is_dir();
    // The folders from the entry's own folder up to the watched folder.
    let mut dirs: Vec<&Path> = path.ancestors().skip(1).collect();
    dirs.retain(|d| d.starts_with(root));
    for dir in dirs {
        for file in IGNORE_FILES {
            let f = dir.join(file);
            if !f.is_file() {
                continue;
            }
            let (matcher, _) = Gitignore::new(&f);
            match matcher.matched_path_or_any_parents(path, is_dir) {
                Match::Ignore(_) => {
                    let shown = f.strip_prefix(root).unwrap_or(&f);
                    return Some(format!("it is listed in {}", shown.display()));
                }
                Match::Whitelist(_) => return None,
                Match::None => {}
            }
        }
    }
    None
}

/// File types the OS would run rather than show: scripts, installers, launchers and links.
pub const LAUNCHER_EXTENSIONS: &[&str] = &[
    "bat", "cmd", "ps1", "vbs", "vbe", "js", "jse", "wsf", "wsh", "hta", "scr", "pif", "com",
    "exe", "msi", "msp", "command", "tool", "app", "url", "webloc", "desktop", "lnk", "jar", "sh",
    "appimage", "run", "reg", "inf", "scf",
];

/// Whether opening `path` with the OS's default handler could run something: a launcher or
/// executable type ([`LAUNCHER_EXTENSIONS`]), or, on Unix, any file with an execute bit.
/// Such a file is shown in its folder, never opened.
pub fn is_launcher(path: &Path) -> bool {
    let by_type = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .is_some_and(|e| LAUNCHER_EXTENSIONS.contains(&e.as_str()));
    by_type || has_execute_bit(path)
}

#[cfg(unix)]
fn has_execute_bit(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn has_execute_bit(_path: &Path) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        for (f, text) in files {
            let p = root.join(f);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
        }
        (dir, root)
    }

    #[test]
    fn ignore_files_hidden_names_and_secret_places_are_excluded_with_why() {
        let (_d, root) = tree(&[
            (".hearthignore", "private/\n*.key\n"),
            ("notes/.gitignore", "drafts.txt\n!keep.key\n"),
            ("private/diary.txt", "x"),
            ("a.key", "x"),
            ("notes/drafts.txt", "x"),
            ("notes/keep.key", "x"),
            ("notes/ok.txt", "x"),
            (".ssh/id_ed25519", "x"),
            ("node_modules/x/index.js", "x"),
            ("login.keychain-db", "x"),
        ]);
        let why = |rel: &str| excluded(&root, &root.join(rel));
        assert!(
            why("private/diary.txt").is_some_and(|w| w.contains(".hearthignore")),
            "{:?}",
            why("private/diary.txt")
        );
        assert!(why("a.key").is_some_and(|w| w.contains(".hearthignore")));
        assert!(why("notes/drafts.txt").is_some_and(|w| w.contains("notes/.gitignore")));
        // A deeper file's exception wins over the folder's own rule.
        assert_eq!(why("notes/keep.key"), None);
        assert_eq!(why("notes/ok.txt"), None);
        assert!(why(".ssh/id_ed25519").is_some_and(|w| w.contains("hidden")));
        assert!(why("node_modules/x/index.js").is_some_and(|w| w.contains("dependency")));
        assert!(why("login.keychain-db").is_some_and(|w| w.contains("keychain")));
    }

    #[test]
    fn launchers_and_executables_are_never_opened_documents_are() {
        let (_d, root) = tree(&[
            ("notes.md", "x"),
            ("report.PDF", "x"),
            ("run.bat", "x"),
            ("Open Me.desktop", "x"),
            ("site.URL", "x"),
            ("script", "x"),
        ]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let p = root.join("script");
            let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755));
            assert!(is_launcher(&p));
        }
        assert!(!is_launcher(&root.join("notes.md")));
        assert!(!is_launcher(&root.join("report.PDF")));
        for f in ["run.bat", "Open Me.desktop", "site.URL"] {
            assert!(is_launcher(&root.join(f)), "{f}");
        }
    }

    #[test]
    fn library_and_appdata_are_secret_only_right_under_home() {
        let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
        if let Some(home) = home {
            assert!(excluded_name("Library", true, &home).is_some());
            assert!(excluded_name("AppData", true, &home).is_some());
        }
        let elsewhere = Path::new("/srv/books");
        assert_eq!(excluded_name("Library", true, elsewhere), None);
        assert_eq!(excluded_name("Library", false, elsewhere), None);
    }
}
