//! The `hearth` binary as scripts and people use it: output shapes, exit codes, and key
//! management that survives being killed at any step.

use std::path::PathBuf;
use std::process::{Command, Output};

use hearth_core::store::{OpenOptions, Store};
use hearth_core::{DataDir, KeyBackend, Passphrase};
use serde_json::Value;

const PASSPHRASE: &str = "a long and memorable passphrase";

struct Home {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("hearth");
        Self { _tmp: tmp, root }
    }

    /// `hearth ARGS` with this data dir and the given key backend for a new database.
    fn cmd(&self, backend: KeyBackend, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hearth"));
        c.args(args)
            .env("HEARTH_HOME", &self.root)
            .env("HEARTH_KEY_BACKEND", backend.as_str())
            // Passphrases are always at hand; tests that need them absent remove them.
            .env("HEARTH_PASSPHRASE", PASSPHRASE)
            .env("HEARTH_NEW_PASSPHRASE", PASSPHRASE)
            .env_remove("HEARTH_TEST_CRASH_AT")
            .env_remove("HEARTH_LOG")
            .stdin(std::process::Stdio::null());
        c
    }

    fn run(&self, backend: KeyBackend, args: &[&str]) -> Output {
        self.cmd(backend, args).output().expect("run hearth")
    }

    fn json(&self, backend: KeyBackend, args: &[&str]) -> Value {
        let out = self.run(backend, args);
        assert!(
            out.status.success(),
            "hearth {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON on stdout")
    }

    fn options(&self, backend: KeyBackend) -> OpenOptions {
        let mut o = OpenOptions::new(DataDir::new(&self.root));
        o.new_key_backend = backend;
        o.passphrase = Some(Passphrase::new(PASSPHRASE).expect("passphrase"));
        o
    }
}

fn require_keyring() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "this test needs the real Secret Service: run it under scripts/with-keyring.sh (make test does)"
    );
}

fn error_code(out: &Output) -> String {
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON error on stdout");
    v["error"]["code"].as_str().expect("error.code").to_owned()
}

#[test]
fn doctor_reports_an_encrypted_database_with_both_search_modules() {
    let home = Home::new();
    let v = home.json(KeyBackend::File, &["doctor", "--json"]);
    assert_eq!(v["data_dir"], home.root.display().to_string());
    assert_eq!(
        v["db_path"],
        home.root.join("hearth.db").display().to_string()
    );
    assert_eq!(v["schema_version"], hearth_core::store::migrations::LATEST);
    assert_eq!(v["encrypted"], true);
    assert_eq!(v["fts5"], true);
    assert_eq!(v["vec0"], true);
    assert_eq!(v["key_backend"], "file");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        v["commit"],
        built_from(),
        "the commit this binary was built from"
    );
    assert!(
        v["sqlcipher_version"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert_eq!(
        v["warnings"].as_array().map(Vec::len),
        Some(1),
        "the file backend warns"
    );
    let mut redacted = v.clone();
    for k in [
        "version",
        "commit",
        "data_dir",
        "db_path",
        "db_id",
        "sqlite_version",
        "sqlcipher_version",
        "sqlite_vec_version",
    ] {
        redacted[k] = Value::String(format!("[{k}]"));
    }
    insta::assert_json_snapshot!("doctor_json", redacted);
    // The same database is found again, not re-created.
    let again = home.json(KeyBackend::File, &["doctor", "--json"]);
    assert_eq!(again["db_id"], v["db_id"]);
}

/// The commit of this checkout, as the build script names it ("unknown" outside git).
fn built_from() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[test]
fn version_names_the_release_and_the_commit_it_was_built_from() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--version")
        .output()
        .expect("run hearth --version");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("hearth {} ({})", env!("CARGO_PKG_VERSION"), built_from())
    );
}

#[test]
fn doctor_prints_readable_lines_without_json() {
    let home = Home::new();
    let out = home.run(KeyBackend::File, &["doctor"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("encrypted") && l.ends_with("true")),
        "{text}"
    );
    assert!(
        text.contains("warning: The database key is stored in a plain file"),
        "{text}"
    );
}

#[test]
fn usage_errors_exit_2_and_speak_json_when_asked() {
    let home = Home::new();
    let out = home.run(KeyBackend::File, &["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = home.run(KeyBackend::File, &["frobnicate", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(error_code(&out), "usage");
    assert!(!home.root.exists(), "a usage error writes nothing");
}

#[test]
fn a_wrong_key_fails_with_a_typed_json_error_and_changes_nothing() {
    let home = Home::new();
    home.json(KeyBackend::File, &["doctor", "--json"]);
    let other = Home::new();
    other.json(KeyBackend::File, &["doctor", "--json"]);
    std::fs::copy(other.root.join("hearth.key"), home.root.join("hearth.key")).expect("swap key");
    let before = std::fs::read(home.root.join("hearth.db")).expect("db");
    let out = home.run(KeyBackend::File, &["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(error_code(&out), "wrong_key");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("file is not a database"), "{all}");
    assert!(
        !all.contains("hmac check failed"),
        "SQLCipher's own log leaked: {all}"
    );
    assert_eq!(
        before,
        std::fs::read(home.root.join("hearth.db")).expect("db")
    );
}

#[test]
fn without_a_keyring_hearth_explains_the_fallbacks_and_writes_nothing() {
    let home = Home::new();
    let out = home
        .cmd(KeyBackend::Keyring, &["doctor", "--json"])
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/hearth-test-bus",
        )
        .env_remove("DISPLAY")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(error_code(&out), "keyring_unavailable");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let msg = v["error"]["message"].as_str().expect("message");
    assert!(
        msg.contains("HEARTH_KEY_BACKEND=file") && msg.contains("HEARTH_KEY_BACKEND=passphrase"),
        "{msg}"
    );
    assert!(
        !home.root.exists(),
        "nothing may be written without a key store"
    );
}

#[test]
fn the_default_data_dir_follows_xdg_when_hearth_home_is_unset() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let xdg = tmp.path().join("xdg-data");
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["doctor", "--json"])
        .env_remove("HEARTH_HOME")
        .env("HOME", tmp.path())
        .env("XDG_DATA_HOME", &xdg)
        .env("HEARTH_KEY_BACKEND", "file")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["data_dir"], xdg.join("hearth").display().to_string());
    assert_eq!(
        hearth_core::paths::default_data_dir()
            .ok()
            .map(|p| p.starts_with(tmp.path())),
        Some(false),
        "the test process itself is not redirected"
    );
}

#[test]
fn a_passphrase_database_needs_its_passphrase() {
    let home = Home::new();
    home.json(KeyBackend::Passphrase, &["doctor", "--json"]);
    let out = home
        .cmd(KeyBackend::Passphrase, &["doctor", "--json"])
        .env_remove("HEARTH_PASSPHRASE")
        .output()
        .expect("run");
    assert_eq!(error_code(&out), "passphrase_required");
    let out = home
        .cmd(KeyBackend::Passphrase, &["doctor", "--json"])
        .env("HEARTH_PASSPHRASE", "wrong")
        .output()
        .expect("run");
    assert_eq!(error_code(&out), "wrong_passphrase");
}

#[test]
fn key_export_needs_confirmation_and_import_restores_a_lost_key() {
    let home = Home::new();
    home.json(KeyBackend::File, &["doctor", "--json"]);
    let out = home.run(KeyBackend::File, &["key", "export", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(error_code(&out), "confirmation_required");
    let v = home.json(KeyBackend::File, &["key", "export", "--yes", "--json"]);
    let recovery = v["recovery_key"].as_str().expect("key").to_owned();
    assert_eq!(recovery.replace('-', "").len(), 64);

    std::fs::remove_file(home.root.join("hearth.key")).expect("lose the key");
    let out = home.run(KeyBackend::File, &["doctor", "--json"]);
    assert_eq!(error_code(&out), "key_missing");

    // A wrong recovery key is refused; the right one restores access.
    let mut wrong = home.cmd(KeyBackend::File, &["key", "import", "--json"]);
    let out = feed(&mut wrong, &"0".repeat(64));
    assert_eq!(error_code(&out), "wrong_key");
    let mut import = home.cmd(KeyBackend::File, &["key", "import", "--json"]);
    let out = feed(&mut import, &recovery);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    home.json(KeyBackend::File, &["doctor", "--json"]);
}

fn feed(cmd: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{stdin}\n").as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Puts a marker row in the database through the engine.
fn put_marker(home: &Home, backend: KeyBackend) -> String {
    let marker = format!("marker-{}", std::process::id());
    let store = Store::open(&home.options(backend)).expect("open");
    store.set_setting("test.marker", &marker).expect("set");
    marker
}

fn read_marker(home: &Home, backend: KeyBackend) -> Option<String> {
    let store = Store::open(&home.options(backend)).expect("open after crash");
    store.setting::<String>("test.marker").expect("read")
}

fn crash_at(home: &Home, backend: KeyBackend, args: &[&str], point: &str) {
    let out = home
        .cmd(backend, args)
        .env("HEARTH_TEST_CRASH_AT", point)
        .env("HEARTH_NEW_PASSPHRASE", PASSPHRASE)
        .output()
        .expect("run");
    assert!(
        !out.status.success(),
        "{args:?} should have died at {point}"
    );
    assert_eq!(
        out.status.code(),
        None,
        "killed by a signal at {point}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn key_copies(home: &Home, id: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    if home.root.join("hearth.key").exists() {
        found.push("file");
    }
    if home.root.join("hearth.wrapped-key").exists() {
        found.push("passphrase");
    }
    if keyring::Entry::new("hearth", &format!("db-{id}"))
        .and_then(|e| e.get_password())
        .is_ok()
    {
        found.push("keyring");
    }
    found
}

fn rotate_survives_a_kill_at_every_step(backend: KeyBackend) {
    let home = Home::new();
    let marker = put_marker(&home, backend);
    for point in ["rotate.pending_saved", "rotate.rekeyed", "rotate.promoted"] {
        let before =
            home.json(backend, &["key", "export", "--yes", "--json"])["recovery_key"].clone();
        crash_at(&home, backend, &["key", "rotate"], point);
        assert_eq!(
            read_marker(&home, backend).as_deref(),
            Some(marker.as_str()),
            "after a kill at {point}"
        );
        let after =
            home.json(backend, &["key", "export", "--yes", "--json"])["recovery_key"].clone();
        if point == "rotate.pending_saved" {
            assert_eq!(
                before, after,
                "a rotation killed before the re-key keeps the old key"
            );
        } else {
            assert_ne!(
                before, after,
                "a rotation killed after the re-key finishes at next open"
            );
        }
    }
    let before = home.json(backend, &["key", "export", "--yes", "--json"])["recovery_key"].clone();
    assert_eq!(
        home.json(backend, &["key", "rotate", "--json"])["rotated"],
        true
    );
    let after = home.json(backend, &["key", "export", "--yes", "--json"])["recovery_key"].clone();
    assert_ne!(before, after);
    assert_eq!(
        read_marker(&home, backend).as_deref(),
        Some(marker.as_str())
    );
}

#[test]
fn key_rotation_survives_a_kill_at_every_step_with_the_file_backend() {
    rotate_survives_a_kill_at_every_step(KeyBackend::File);
}

#[test]
fn key_rotation_survives_a_kill_at_every_step_with_the_keyring_backend() {
    require_keyring();
    rotate_survives_a_kill_at_every_step(KeyBackend::Keyring);
}

#[test]
fn the_key_moves_between_all_backends_and_a_kill_leaves_no_stray_copy() {
    require_keyring();
    let home = Home::new();
    let marker = put_marker(&home, KeyBackend::File);
    let id = home.json(KeyBackend::File, &["doctor", "--json"])["db_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let recovery =
        home.json(KeyBackend::File, &["key", "export", "--yes", "--json"])["recovery_key"].clone();
    let moves = [
        (KeyBackend::File, KeyBackend::Keyring),
        (KeyBackend::Keyring, KeyBackend::Passphrase),
        (KeyBackend::Passphrase, KeyBackend::File),
    ];
    for (from, to) in moves {
        for point in ["move.marked", "move.saved", "move.switched", "move.wiped"] {
            crash_at(&home, from, &["key", "backend", to.as_str()], point);
            // The next open tidies up: exactly one backend holds the key.
            let backend = home.json(from, &["doctor", "--json"])["key_backend"]
                .as_str()
                .expect("backend")
                .to_owned();
            assert_eq!(
                key_copies(&home, &id),
                vec![backend.as_str()],
                "after a kill at {point} moving {from}→{to}"
            );
            if backend != from.as_str() {
                // It got far enough to switch; move it back to test the next step.
                home.json(to, &["key", "backend", from.as_str(), "--json"]);
            }
        }
        let v = home
            .cmd(from, &["key", "backend", to.as_str(), "--json"])
            .env("HEARTH_NEW_PASSPHRASE", PASSPHRASE)
            .output()
            .expect("run");
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
        assert_eq!(key_copies(&home, &id), vec![to.as_str()]);
        assert_eq!(read_marker(&home, to).as_deref(), Some(marker.as_str()));
        // The key itself never changed, so the recovery key still holds.
        assert_eq!(
            home.json(to, &["key", "export", "--yes", "--json"])["recovery_key"],
            recovery
        );
    }
}

#[test]
fn updates_start_unanswered_and_on_and_off_are_what_the_app_reads() {
    let home = Home::new();
    let file = KeyBackend::File;
    let shown = home.json(file, &["updates", "show", "--json"]);
    assert_eq!(
        shown,
        serde_json::json!({ "check": null, "last_checked_at": null })
    );
    let on = home.json(file, &["updates", "on", "--json"]);
    assert_eq!(on["check"], Value::Bool(true));
    // The engine the app runs on reads the same answer: a check is due now.
    let hearth = hearth_core::Hearth::open_oneshot(&home.options(file)).expect("open");
    let now = hearth_core::now_millis();
    assert!(hearth.updates().due(now).expect("due"));
    let off = home.json(file, &["updates", "off", "--json"]);
    assert_eq!(off["check"], Value::Bool(false));
    assert!(!hearth.updates().due(now).expect("due"));
    let text = home.run(file, &["updates", "show"]);
    assert_eq!(
        String::from_utf8_lossy(&text.stdout),
        "automatic update checks: off\nlast checked: never\n"
    );
}
