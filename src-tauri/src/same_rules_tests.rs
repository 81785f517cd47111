//! The app and the CLI refuse the same mistakes with the same error: each mistake goes
//! through the shell's own command functions (on Tauri's mock runtime, with the real
//! engine) and through the `hearth` binary on the same data folder. The rules live in the
//! engine, so neither front end can drift from the other.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use hearth_core::{DataDir, Hearth, KeyBackend, OpenOptions};
use serde_json::Value;
use tauri::Manager;
use tauri::test::{MockRuntime, mock_builder, mock_context, noop_assets};

use crate::dto::{
    Args, ErrorDto, ForgetMemoriesArgs, GrantIdArgs, McpNameArgs, SearchDocumentsArgs,
    SendMessageArgs, ShortcutStatus,
};
use crate::state::AppState;

/// The `hearth` binary the workspace build put beside this test's own directory.
fn hearth_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join(format!("hearth{}", std::env::consts::EXE_SUFFIX)))
        .expect("target dir");
    assert!(
        bin.exists(),
        "{} is missing: build the workspace first (`cargo build --workspace`; make test does)",
        bin.display()
    );
    bin
}

struct Both {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    app: tauri::App<MockRuntime>,
    window: tauri::WebviewWindow<MockRuntime>,
}

impl Both {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("hearth");
        let mut opts = OpenOptions::new(DataDir::new(&root));
        opts.new_key_backend = KeyBackend::File;
        let hearth = Hearth::open(&opts).map_err(ErrorDto::from);
        let state = AppState {
            hearth,
            shortcut: Mutex::new(ShortcutStatus {
                accelerator: String::new(),
                registered: false,
                error: None,
            }),
            turns: Mutex::default(),
            next_turn: Default::default(),
            jobs: Mutex::new(None),
            watching: Mutex::new(None),
            consent: std::sync::Arc::new(hearth_core::ConsentQueue::new(|_| {})),
            download: Mutex::new(None),
        };
        let app = mock_builder()
            .manage(state)
            .build(mock_context(noop_assets()))
            .expect("mock app");
        let window = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .expect("main window");
        Self {
            _tmp: tmp,
            root,
            app,
            window,
        }
    }

    /// `hearth ARGS --json`: the error code, or the JSON printed.
    fn cli(&self, args: &[&str]) -> Result<Value, String> {
        let out = Command::new(hearth_bin())
            .args(args)
            .arg("--json")
            .env("HEARTH_HOME", &self.root)
            .env("HEARTH_KEY_BACKEND", "file")
            .env_remove("HEARTH_PROVIDER_URL")
            .env_remove("HEARTH_MODEL")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run hearth");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        match v["error"]["code"].as_str() {
            Some(code) => Err(code.to_owned()),
            None if out.status.success() => Ok(v),
            None => panic!(
                "hearth {args:?} failed without a JSON error: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    fn state(&self) -> tauri::State<'_, AppState> {
        self.app.state::<AppState>()
    }
}

fn code<T>(r: Result<T, ErrorDto>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.code,
    }
}

fn cli_code(r: Result<Value, String>) -> String {
    r.err().unwrap_or_else(|| "ok".into())
}

#[test]
fn the_app_and_the_cli_refuse_the_same_mistakes_with_the_same_error() {
    let both = Both::new();
    let day = 86_400_000_i64;
    let now = hearth_core::now_millis();

    // An empty or blank message is refused before anything is sent (no provider is set
    // up either: the message is checked first, the same way in both).
    let shell = code(crate::chat_cmd::send_message(
        both.app.handle().clone(),
        both.window.as_ref().clone(),
        both.state(),
        Args(SendMessageArgs {
            conversation_id: None,
            text: "  \n ".into(),
            temporary: false,
            over_budget: None,
            tier: None,
        }),
    ));
    assert_eq!(shell, "invalid_input");
    assert_eq!(cli_code(both.cli(&["chat", "--no-wait", "  \n "])), shell);

    // An unknown grant.
    let shell = code(tauri::async_runtime::block_on(
        crate::tools_cmd::revoke_grant(both.state(), Args(GrantIdArgs { id: 4242 })),
    ));
    assert_eq!(shell, "not_found");
    assert_eq!(cli_code(both.cli(&["grants", "revoke", "4242"])), shell);

    // A forget range whose first day is after its last, and one in the future; nothing
    // is deleted.
    for (from, to, cli_from, cli_to) in [
        (now - day, now - 2 * day, "2026-05-02", "2026-05-01"),
        (now + 2 * day, now + 3 * day, "2099-01-01", "2099-01-02"),
    ] {
        let shell = code(tauri::async_runtime::block_on(
            crate::memory_cmd::forget_memories(
                both.state(),
                Args(ForgetMemoriesArgs {
                    all: false,
                    from: Some(from),
                    to: Some(to),
                }),
            ),
        ));
        assert_eq!(shell, "invalid_input", "{cli_from}..{cli_to}");
        let cli = both.cli(&[
            "memory", "forget", "--from", cli_from, "--to", cli_to, "--yes",
        ]);
        assert_eq!(cli_code(cli), shell, "{cli_from}..{cli_to}");
    }

    // An MCP server that does not exist.
    let shell = code(tauri::async_runtime::block_on(
        crate::mcp_cmd::remove_mcp_server(
            both.state(),
            Args(McpNameArgs {
                name: "nope".into(),
            }),
        ),
    ));
    assert_eq!(shell, "not_found");
    assert_eq!(
        cli_code(both.cli(&["mcp", "remove", "nope", "--yes"])),
        shell
    );

    // An unknown search mode.
    let search = |mode: &str, limit: Option<u32>| {
        tauri::async_runtime::block_on(crate::folders_cmd::search_documents(
            both.state(),
            Args(SearchDocumentsArgs {
                query: "lantern".into(),
                folder: None,
                mode: Some(mode.into()),
                limit,
            }),
        ))
    };
    let shell = code(search("fuzzy", None));
    assert_eq!(shell, "invalid_input");
    assert_eq!(
        cli_code(both.cli(&["search", "lantern", "--mode", "fuzzy"])),
        shell
    );

    // Search limits are decided once: 0 gives one passage, 10,000 gives 50, with 60 files
    // that match.
    let docs = both.root.parent().expect("tmp").join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    for i in 0..60 {
        std::fs::write(
            docs.join(format!("note{i:02}.txt")),
            format!("note {i}: the brass lantern hangs by the door\n"),
        )
        .expect("write");
    }
    both.cli(&["folders", "add", &docs.to_string_lossy()])
        .expect("folders add");
    both.cli(&["index", "--wait"]).expect("index");
    for (asked, expected) in [(0_u32, 1_usize), (10_000, 50), (7, 7)] {
        let shell = search("bm25", Some(asked)).expect("shell search");
        assert_eq!(shell.results.len(), expected, "shell, {asked} asked");
        let cli = both
            .cli(&[
                "search",
                "lantern",
                "--mode",
                "bm25",
                "--k",
                &asked.to_string(),
            ])
            .expect("cli search");
        assert_eq!(
            cli["results"].as_array().map(Vec::len),
            Some(expected),
            "cli, {asked} asked"
        );
    }
}
