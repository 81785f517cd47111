//! One live connection to an MCP server over the official Rust SDK (`rmcp`): stdio (a child
//! process in its own process group, its stderr kept in a capped ring in memory) or
//! Streamable HTTP (our own `reqwest` client, redirects off). Hearth declares no client
//! capability: no sampling, no roots, no elicitation.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, PaginatedRequestParams, ProtocolVersion, Tool,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;

use super::Definition;
use super::config::{Secrets, Transport, child_cwd, child_env};
use crate::tools::external::ExternalOutput;

/// How long a server may take to answer `initialize`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines of a server's stderr kept (in memory only: servers echo arguments and paths).
pub const LOG_LINES: usize = 200;
/// Bytes of one stderr line kept.
const LOG_LINE_BYTES: usize = 2000;
/// Tools read from one server at most.
const MAX_TOOLS: usize = 500;
/// One `tools/list` request may take this long (`HEARTH_MCP_REQUEST_TIMEOUT_MS`).
pub const LIST_REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// A whole listing, every page, may take this long (`HEARTH_MCP_LIST_TIMEOUT_MS`).
pub const LIST_TIMEOUT: Duration = Duration::from_secs(60);
/// Pages of `tools/list` read at most (`HEARTH_MCP_MAX_PAGES`): a server that keeps
/// answering with a fresh cursor is a runaway, not a big catalogue.
pub const MAX_PAGES: usize = 50;

/// The listing's limits: the defaults, or the environment's (tests hit the page cap, not
/// a timer).
#[derive(Debug, Clone, Copy)]
pub struct ListLimits {
    pub request: Duration,
    pub total: Duration,
    pub pages: usize,
}

impl ListLimits {
    pub fn from_env() -> Self {
        let ms = |name: &str, default: Duration| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
                .map_or(default, Duration::from_millis)
        };
        Self {
            request: ms("HEARTH_MCP_REQUEST_TIMEOUT_MS", LIST_REQUEST_TIMEOUT),
            total: ms("HEARTH_MCP_LIST_TIMEOUT_MS", LIST_TIMEOUT),
            pages: std::env::var("HEARTH_MCP_MAX_PAGES")
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|n| *n > 0)
                .unwrap_or(MAX_PAGES),
        }
    }
}
/// Characters of a tool's description kept.
const MAX_DESCRIPTION: usize = 8 * 1024;
/// Bytes of one call's result kept.
const MAX_RESULT_BYTES: usize = 1024 * 1024;

/// A server's recent stderr lines, newest last. Never written to a file or the log.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<VecDeque<String>>>);

impl Logs {
    pub fn push(&self, line: &str) {
        let mut cut = line.len().min(LOG_LINE_BYTES);
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Ok(mut q) = self.0.lock() {
            if q.len() == LOG_LINES {
                q.pop_front();
            }
            q.push_back(line[..cut].to_owned());
        }
    }

    /// The last `n` lines.
    pub fn tail(&self, n: usize) -> Vec<String> {
        self.0
            .lock()
            .map(|q| q.iter().skip(q.len().saturating_sub(n)).cloned().collect())
            .unwrap_or_default()
    }
}

#[derive(Clone)]
struct Handler {
    changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("hearth", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// Why a server could not be reached.
#[derive(Debug, Clone)]
pub struct StartError {
    pub detail: String,
    /// Its last stderr lines (stdio), for the user.
    pub stderr: Vec<String>,
}

/// A running server.
pub struct Connection {
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    runtime: tokio::runtime::Handle,
    changed: Arc<AtomicBool>,
    /// What the server said about itself (untrusted; shown, never put in a system prompt).
    pub instructions: Option<String>,
    pub logs: Logs,
}

impl Connection {
    /// Starts (stdio) or connects to (HTTP) a server and runs `initialize`.
    pub async fn start(
        transport: &Transport,
        secrets: &Secrets,
        logs: Logs,
    ) -> Result<Self, StartError> {
        let changed = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            changed: changed.clone(),
        };
        let fail = |detail: String, logs: &Logs| StartError {
            detail,
            stderr: logs.tail(20),
        };
        let service = match transport {
            Transport::Stdio { command, args } => {
                let t = spawn_stdio(command, args, &secrets.env, &logs).map_err(|e| {
                    fail(format!("could not start {}: {e}", command.display()), &logs)
                })?;
                tokio::time::timeout(START_TIMEOUT, handler.serve(t)).await
            }
            Transport::Http { url } => {
                let t = http_transport(url, &secrets.headers).map_err(|e| fail(e, &logs))?;
                tokio::time::timeout(START_TIMEOUT, handler.serve(t)).await
            }
        };
        let service = match service {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                // Let the child's last words reach the ring before they are shown.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(fail(format!("initialize failed: {e}"), &logs));
            }
            Err(_) => {
                return Err(fail(
                    format!("no answer to initialize in {} s", START_TIMEOUT.as_secs()),
                    &logs,
                ));
            }
        };
        let instructions = service.peer_info().and_then(|i| i.instructions.clone());
        Ok(Self {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            runtime: tokio::runtime::Handle::current(),
            changed,
            instructions,
            logs,
        })
    }

    /// The server has gone (its process died, its stream closed).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// True once after the server said its tool list changed.
    pub fn take_list_changed(&self) -> bool {
        self.changed.swap(false, Ordering::SeqCst)
    }

    /// Every tool the server lists (following pagination), as definitions — within
    /// `limits`: each request and the whole listing have a time limit, and a server that
    /// sends more than `limits.pages` pages is refused (a runaway: it would never end).
    pub async fn list_tools(&self, limits: ListLimits) -> Result<Vec<Definition>, String> {
        let listing = async {
            let mut out = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..limits.pages {
                let page = tokio::time::timeout(
                    limits.request,
                    self.peer
                        .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))),
                )
                .await
                .map_err(|_| {
                    format!(
                        "tools/list did not answer within {} s",
                        limits.request.as_secs_f32()
                    )
                })?
                .map_err(|e| format!("tools/list failed: {e}"))?;
                out.extend(page.tools.iter().map(definition_of));
                cursor = page.next_cursor;
                if cursor.is_none() || out.len() >= MAX_TOOLS {
                    out.truncate(MAX_TOOLS);
                    return Ok(out);
                }
            }
            Err(format!(
                "tools/list sent more than {} pages without ending; Hearth stopped reading it",
                limits.pages
            ))
        };
        tokio::time::timeout(limits.total, listing)
            .await
            .map_err(|_| {
                format!(
                    "listing its tools took longer than {} s",
                    limits.total.as_secs_f32()
                )
            })?
    }

    /// Calls a tool. Dropping the future (the user's stop, the call's time limit) sends
    /// `notifications/cancelled` to the server.
    pub fn call(
        &self,
        name: String,
        arguments: Value,
    ) -> impl std::future::Future<Output = ExternalOutput> + Send + 'static {
        let peer = self.peer.clone();
        async move {
            let args = match arguments {
                Value::Object(m) => m,
                _ => serde_json::Map::new(),
            };
            match peer
                .call_tool(CallToolRequestParams::new(name).with_arguments(args))
                .await
            {
                Ok(r) => output_of(&r),
                Err(e) => ExternalOutput {
                    text: format!("the server failed to answer: {e}"),
                    ok: false,
                    transient: true,
                },
            }
        }
    }

    /// Ends the session (stdio: closes stdin, then SIGTERM and SIGKILL to the process
    /// group; HTTP: deletes the session), waiting at most `within`.
    pub async fn close(&self, within: Duration) {
        let service = self.service.lock().ok().and_then(|mut s| s.take());
        if let Some(mut s) = service {
            let _ = s.close_with_timeout(within).await;
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // rmcp's drop spawns the child's kill on the runtime: make sure there is one. The
        // process group is also killed synchronously by `KillOnDrop`.
        let _guard = self.runtime.enter();
        if let Ok(mut s) = self.service.lock() {
            drop(s.take());
        }
    }
}

fn spawn_stdio(
    command: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    logs: &Logs,
) -> std::io::Result<rmcp::transport::TokioChildProcess> {
    use process_wrap::tokio::{CommandWrap, KillOnDrop};
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(child_env(|k| std::env::var_os(k), command, env));
    if let Some(dir) = child_cwd(|k| std::env::var_os(k), command) {
        cmd.current_dir(dir);
    }
    let mut wrapped = CommandWrap::from(cmd);
    #[cfg(unix)]
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    // Windows: a Job Object, so `npx`'s grandchildren die with the server (not compiled on
    // these machines).
    #[cfg(windows)]
    wrapped.wrap(process_wrap::tokio::JobObject);
    wrapped.wrap(KillOnDrop);
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(stderr) = stderr {
        let logs = logs.clone();
        tokio::spawn(drain_lines(stderr, logs));
    }
    Ok(transport)
}

/// Reads a child's stderr to its end into `logs`, a line at a time, each bounded.
async fn drain_lines(mut from: impl tokio::io::AsyncRead + Unpin, logs: Logs) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                logs.push(String::from_utf8_lossy(&line).trim_end());
                line.clear();
            } else if line.len() < LOG_LINE_BYTES {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        logs.push(String::from_utf8_lossy(&line).trim_end());
    }
}

fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "{} is not an http(s) URL",
            super::config::redact_url(url)
        ));
    }
    super::config::check_secrets_travel(url, !headers.is_empty())?;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("could not build the HTTP client: {e}"))?;
    let mut map = std::collections::HashMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("{k:?} is not a valid header name"))?;
        let value =
            HeaderValue::from_str(v).map_err(|_| format!("the value of {k} is not valid"))?;
        map.insert(name, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(map);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        http, config,
    ))
}

fn definition_of(t: &Tool) -> Definition {
    let mut description = t.description.as_deref().unwrap_or_default().to_owned();
    if description.len() > MAX_DESCRIPTION {
        let mut cut = MAX_DESCRIPTION;
        while !description.is_char_boundary(cut) {
            cut -= 1;
        }
        description.truncate(cut);
    }
    Definition {
        name: t.name.to_string(),
        description,
        input_schema: Value::Object((*t.input_schema).clone()),
        annotations: t
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok())
            .unwrap_or(Value::Null),
    }
}

/// What the model and the user get of a result: its text blocks, a line for each other
/// block, and the structured content when the text does not already say it.
fn output_of(r: &CallToolResult) -> ExternalOutput {
    let mut parts: Vec<String> = Vec::new();
    for block in &r.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            other => {
                let v = serde_json::to_value(other).unwrap_or(Value::Null);
                let kind = v.get("type").and_then(Value::as_str).unwrap_or("content");
                let mime = v.get("mimeType").and_then(Value::as_str).unwrap_or("");
                let uri = v
                    .get("uri")
                    .or_else(|| v.pointer("/resource/uri"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let text = v.pointer("/resource/text").and_then(Value::as_str);
                match text {
                    Some(t) => parts.push(t.to_owned()),
                    None => parts.push(format!("[{kind} {mime} {uri}]").replace("  ", " ")),
                }
            }
        }
    }
    let mut text = parts.join("\n");
    if let Some(s) = &r.structured_content
        && !said_by(s, &text)
    {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str("structuredContent: ");
        text.push_str(&s.to_string());
    }
    if text.len() > MAX_RESULT_BYTES {
        text = crate::tools::truncate_observation(&text, MAX_RESULT_BYTES);
    }
    ExternalOutput {
        text,
        ok: r.is_error != Some(true),
        transient: false,
    }
}

/// Every string in `v` appears in `text` (so showing `v` would only repeat it).
fn said_by(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => text.contains(s.as_str()),
        Value::Number(_) | Value::Bool(_) => text.contains(&v.to_string()),
        Value::Object(m) => !m.is_empty() && m.values().all(|x| said_by(x, text)),
        Value::Array(a) => !a.is_empty() && a.iter().all(|x| said_by(x, text)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: Vec<ContentBlock>, structured: Option<Value>) -> CallToolResult {
        let mut r = CallToolResult::success(content);
        r.structured_content = structured;
        r
    }

    #[test]
    fn structured_content_is_passed_on_unless_the_text_already_says_it() {
        let weather = serde_json::json!({"conditions": "Light rain", "humidity": 82});
        // Only structured content: it is the output.
        let out = output_of(&result(vec![], Some(weather.clone())));
        assert_eq!(
            out.text,
            r#"structuredContent: {"conditions":"Light rain","humidity":82}"#
        );
        // A text that says all of it: no repetition.
        let said = ContentBlock::text(weather.to_string());
        let out = output_of(&result(vec![said], Some(weather.clone())));
        assert_eq!(out.text, weather.to_string());
        // A text that says part of it: both.
        let part = ContentBlock::text("Light rain");
        let out = output_of(&result(vec![part], Some(weather)));
        assert!(
            out.text.starts_with("Light rain\nstructuredContent: "),
            "{}",
            out.text
        );
    }
}
