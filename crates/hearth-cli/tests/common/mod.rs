//! Shared helpers of the CLI's integration tests: a private data folder and running
//! `hearth` in it against a scripted provider.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use hearth_core::store::{OpenOptions, Store};
use hearth_core::{DataDir, KeyBackend};
use hearth_testkit::llm_server::LlmServer;

pub struct Home {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Home {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("hearth");
        Self { _tmp: tmp, root }
    }

    pub fn cmd(&self, server: &LlmServer, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hearth"));
        // Chat tests are about chat: learning (an extra model call) is tested on its own.
        let args: Vec<&str> = match args.first() {
            Some(&"chat") if !args.contains(&"--learn") => {
                let mut a = vec!["chat", "--no-wait"];
                a.extend_from_slice(&args[1..]);
                a
            }
            _ => args
                .iter()
                .map(|a| a.trim_start_matches("--learn"))
                .filter(|a| !a.is_empty())
                .collect(),
        };
        c.args(args)
            .env("HEARTH_HOME", &self.root)
            .env("HEARTH_KEY_BACKEND", "file")
            .env("HEARTH_PROVIDER_URL", &server.base_url)
            .env("HEARTH_MODEL", "gpt-4o-mini")
            .env("HEARTH_API_KEY", "sk-cli-test")
            .stdin(Stdio::null());
        c
    }

    pub fn store(&self) -> Store {
        let mut o = OpenOptions::new(DataDir::new(&self.root));
        o.new_key_backend = KeyBackend::File;
        Store::open(&o).expect("open store")
    }
}

pub async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run hearth"))
        .await
        .expect("join")
}

pub fn conversation_id(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("conversation: "))
        .unwrap_or_else(|| panic!("no conversation id in stderr: {err}"))
        .trim()
        .to_owned()
}

/// `hearth ARGS` with `stdin` fed, no one-off provider in the environment.
pub async fn with_stdin(
    home: &Home,
    server: &LlmServer,
    args: &[&str],
    backend: &str,
    stdin: &str,
) -> Output {
    use std::io::Write;
    let mut cmd = home.cmd(server, args);
    cmd.env_remove("HEARTH_PROVIDER_URL")
        .env_remove("HEARTH_MODEL")
        .env_remove("HEARTH_API_KEY")
        .env("HEARTH_KEY_BACKEND", backend)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let stdin = stdin.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write");
        child.wait_with_output().expect("wait")
    })
    .await
    .expect("join")
}

pub fn provider_key_in_keyring(store: &Store, name: &str) -> Option<String> {
    keyring::Entry::new("hearth", &format!("provider-{}-{name}", store.db_id()))
        .and_then(|e| e.get_password())
        .ok()
}

/// The JSON a command printed on stdout; fails the test with both streams if it is not.
pub fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `hearth ARGS --json`, which must succeed; its JSON.
pub async fn hearth_ok(home: &Home, server: &LlmServer, args: &[&str]) -> serde_json::Value {
    hearth_ok_with(home, server, args, None).await
}

/// `hearth ARGS --json` with `stdin` piped in (no terminal), which must succeed; its JSON.
/// (`--json` goes right after the command, before any `--`.)
pub async fn hearth_ok_with(
    home: &Home,
    server: &LlmServer,
    args: &[&str],
    stdin: Option<&str>,
) -> serde_json::Value {
    let mut all = args.to_vec();
    all.insert(all.len().min(1), "--json");
    let cmd = home.cmd(server, &all);
    let out = match stdin {
        Some(text) => detached(cmd, Some(text)).await,
        None => output(cmd).await,
    };
    assert!(
        out.status.success(),
        "hearth {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

/// The JSON schema a structured-output request names (`memory_extraction`, …).
pub fn schema_name(body: &serde_json::Value) -> Option<String> {
    body["response_format"]["json_schema"]["name"]
        .as_str()
        .map(str::to_owned)
}

/// The text of a request's last message.
pub fn last_text(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// A streamed answer with `text`.
pub fn answer(text: &str) -> hearth_testkit::llm_server::Reply {
    hearth_testkit::llm_server::stream(hearth_testkit::llm_server::text_stream(&[text], None))
}

/// The `text` fields of a JSON array of memories, sorted.
pub fn texts(list: &serde_json::Value) -> Vec<String> {
    let mut t: Vec<String> = list
        .as_array()
        .expect("array")
        .iter()
        .map(|m| m["text"].as_str().unwrap_or("").to_owned())
        .collect();
    t.sort();
    t
}

/// A PDF with one page per text (Helvetica, one line each; an empty text is a page with
/// no text, as a scan is).
pub fn pdf(pages: &[&str]) -> Vec<u8> {
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        String::new(), // the page tree, once the pages' numbers are known
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into(),
    ];
    let mut kids = Vec::new();
    for text in pages {
        let content = if text.is_empty() {
            String::from("0 0 m 100 100 l S")
        } else {
            format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET")
        };
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
        let contents = objects.len();
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {contents} 0 R >>"
        ));
        kids.push(format!("{} 0 R", objects.len()));
    }
    objects[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids.join(" "),
        pages.len()
    );
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

pub fn call(id: &str, name: &str, args: &str) -> hearth_testkit::llm_server::Reply {
    hearth_testkit::llm_server::stream(hearth_testkit::llm_server::tool_call_stream(&[(
        id, name, args,
    )]))
}

/// `cmd` run in a new session: no controlling terminal, whatever the test runner has.
/// `stdin` is piped in (`None`: no stdin).
pub async fn detached(cmd: Command, stdin: Option<&str>) -> Output {
    let mut c = Command::new("setsid");
    c.arg("-w").arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let stdin = stdin.map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = c.spawn().expect("spawn setsid");
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        child.wait_with_output().expect("wait")
    })
    .await
    .expect("join")
}

/// `cmd` as `script` runs it on a pty of its own (with `cmd`'s environment), `redirect`
/// appended to its shell line (e.g. ` > out 2> err`; empty: everything on the terminal).
pub fn under_script(cmd: &Command, redirect: &str) -> Command {
    let mut line = String::from("exec");
    line.push_str(&format!(" '{}'", cmd.get_program().to_string_lossy()));
    for a in cmd.get_args() {
        line.push_str(&format!(
            " '{}'",
            a.to_string_lossy().replace('\'', "'\\''")
        ));
    }
    line.push_str(redirect);
    let mut c = Command::new("script");
    c.args(["-qec", &line, "/dev/null"]);
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c
}

/// `cmd` run on a real terminal (a pty by `script`), the user typing `typed`; stdout and
/// stderr go to files, so the terminal carries only the consent prompt. Returns the
/// command's JSON output and the terminal's text.
pub async fn on_a_terminal(
    cmd: Command,
    typed: &str,
    dir: &std::path::Path,
) -> (serde_json::Value, String) {
    let out = dir.join("out.json");
    let err = dir.join("err.txt");
    let c = under_script(
        &cmd,
        &format!(" > '{}' 2> '{}'", out.display(), err.display()),
    );
    let tty = detached(c, Some(typed)).await;
    let json = std::fs::read(&out).unwrap_or_default();
    let terminal = String::from_utf8_lossy(&tty.stdout).into_owned();
    let parsed = serde_json::from_slice(&json).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}\nterminal: {terminal}",
            String::from_utf8_lossy(&json),
            std::fs::read_to_string(&err).unwrap_or_default()
        )
    });
    (parsed, terminal)
}
