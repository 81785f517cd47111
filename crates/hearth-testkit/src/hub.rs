//! A model hub on 127.0.0.1 serving files the way huggingface.co does: each
//! `/<repo>/resolve/<commit>/<file>` redirects (with `X-Repo-Commit`) to where the bytes are.
//! Only the pinned commit resolves.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The commit the hub serves (the one Hearth pins).
pub const COMMIT: &str = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";

/// How the hub behaves.
#[derive(Clone, Copy, Debug)]
pub enum HubMode {
    Serve,
    /// Every `resolve` answers this status.
    Status(StatusCode),
    /// Serves the small files, then breaks off the weights (model.safetensors, a .gguf) halfway the first time it
    /// is asked for it whole (a request with a `Range` gets the rest).
    BreakWeights,
    /// Every `resolve` redirects to another host (`downloads.elsewhere.invalid`).
    RedirectAway,
    /// Serves a tokenizer.json with one byte changed (a tampered or moved release).
    TamperTokenizer,
    /// Streams config.json forever, with no length (a hostile or broken server).
    EndlessConfig,
    /// Sends the weights 1 MiB at a time with this pause between (a test watches the
    /// download's progress).
    Paced(std::time::Duration),
}

#[derive(Clone)]
struct Hub {
    files: Arc<HashMap<String, Bytes>>,
    mode: HubMode,
    requests: Arc<AtomicUsize>,
    /// Bytes of the weights (model.safetensors, a .gguf) sent so far.
    weights_sent: Arc<AtomicUsize>,
    /// The `Range` headers received, in order.
    ranges: Arc<Mutex<Vec<String>>>,
    broke: Arc<AtomicBool>,
}

/// The running hub; stops when dropped.
pub struct HubServer {
    /// What `HF_ENDPOINT` should be.
    pub endpoint: String,
    requests: Arc<AtomicUsize>,
    weights_sent: Arc<AtomicUsize>,
    ranges: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HubServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HubServer {
    /// Serves `files` (name → bytes) of the repository `repo` (e.g.
    /// `sentence-transformers/all-MiniLM-L6-v2`).
    pub async fn start(repo: &str, files: HashMap<String, Vec<u8>>, mode: HubMode) -> Self {
        Self::start_at(repo, COMMIT, files, mode).await
    }

    /// The same, serving `repo` at the pinned `commit` (another model's).
    pub async fn start_at(
        repo: &str,
        commit: &str,
        files: HashMap<String, Vec<u8>>,
        mode: HubMode,
    ) -> Self {
        let hub = Hub {
            files: Arc::new(
                files
                    .into_iter()
                    .map(|(name, bytes)| (name, Bytes::from(bytes)))
                    .collect(),
            ),
            mode,
            requests: Arc::new(AtomicUsize::new(0)),
            weights_sent: Arc::new(AtomicUsize::new(0)),
            ranges: Arc::new(Mutex::new(Vec::new())),
            broke: Arc::new(AtomicBool::new(false)),
        };
        let (requests, weights_sent, ranges) = (
            hub.requests.clone(),
            hub.weights_sent.clone(),
            hub.ranges.clone(),
        );
        let app = axum::Router::new()
            .route(&format!("/{repo}/resolve/{commit}/{{file}}"), get(resolve))
            .route("/cdn/{file}", get(cdn))
            .with_state(hub);
        let (addr, task) = crate::serve(app).await;
        HubServer {
            endpoint: format!("http://{addr}"),
            requests,
            weights_sent,
            ranges,
            task,
        }
    }

    /// Requests so far (resolves and downloads).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Bytes of the weights (model.safetensors, a .gguf) the hub has sent so far.
    pub fn weights_sent(&self) -> usize {
        self.weights_sent.load(Ordering::SeqCst)
    }

    /// The `Range` headers the hub received, in order.
    pub fn ranges(&self) -> Vec<String> {
        self.ranges.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

async fn resolve(State(hub): State<Hub>, UrlPath(file): UrlPath<String>) -> Response {
    hub.requests.fetch_add(1, Ordering::SeqCst);
    if let HubMode::Status(code) = hub.mode {
        return (code, "nope").into_response();
    }
    if !hub.files.contains_key(&file) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let location = if matches!(hub.mode, HubMode::RedirectAway) {
        format!("http://downloads.elsewhere.invalid/cdn/{file}")
    } else {
        format!("/cdn/{file}")
    };
    (
        StatusCode::FOUND,
        [
            (header::LOCATION, location),
            (
                header::HeaderName::from_static("x-repo-commit"),
                COMMIT.to_owned(),
            ),
        ],
    )
        .into_response()
}

async fn cdn(
    State(hub): State<Hub>,
    UrlPath(file): UrlPath<String>,
    headers: HeaderMap,
) -> Response {
    hub.requests.fetch_add(1, Ordering::SeqCst);
    let Some(bytes) = hub.files.get(&file).cloned() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let weights = file == "model.safetensors" || file.ends_with(".gguf");
    // `Range: bytes=N-`, as a CDN answers it: 206 with the rest.
    if let Some(range) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) {
        if let Ok(mut r) = hub.ranges.lock() {
            r.push(range.to_owned());
        }
        let from = range
            .strip_prefix("bytes=")
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|n| n.parse::<usize>().ok());
        return match from {
            Some(n) if n < bytes.len() => {
                let rest = bytes.slice(n..);
                if weights {
                    hub.weights_sent.fetch_add(rest.len(), Ordering::SeqCst);
                }
                (
                    StatusCode::PARTIAL_CONTENT,
                    [(
                        header::CONTENT_RANGE,
                        format!("bytes {n}-{}/{}", bytes.len() - 1, bytes.len()),
                    )],
                    rest,
                )
                    .into_response()
            }
            _ => StatusCode::RANGE_NOT_SATISFIABLE.into_response(),
        };
    }
    if matches!(hub.mode, HubMode::TamperTokenizer) && file == "tokenizer.json" {
        let mut changed = bytes.to_vec();
        if let Some(b) = changed.last_mut() {
            *b ^= 1;
        }
        return (StatusCode::OK, changed).into_response();
    }
    if matches!(hub.mode, HubMode::EndlessConfig) && file == "config.json" {
        let block = Bytes::from(vec![b' '; 64 * 1024]);
        let endless =
            futures_util::stream::repeat_with(move || Ok::<Bytes, std::io::Error>(block.clone()));
        return Response::builder()
            .body(Body::from_stream(endless))
            .expect("response");
    }
    if matches!(hub.mode, HubMode::BreakWeights)
        && weights
        && !hub.broke.swap(true, Ordering::SeqCst)
    {
        let total = bytes.len();
        let half = bytes.slice(..total / 2);
        hub.weights_sent.fetch_add(half.len(), Ordering::SeqCst);
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            vec![Ok(half), Err(std::io::Error::other("server went away"))];
        return Response::builder()
            .header(header::CONTENT_LENGTH, total)
            .body(Body::from_stream(futures_util::stream::iter(chunks)))
            .expect("response");
    }
    if weights {
        hub.weights_sent.fetch_add(bytes.len(), Ordering::SeqCst);
    }
    if let (HubMode::Paced(pause), true) = (hub.mode, weights) {
        let total = bytes.len();
        let chunks = futures_util::stream::unfold(0usize, move |at| {
            let bytes = bytes.clone();
            async move {
                if at >= bytes.len() {
                    return None;
                }
                if at > 0 {
                    tokio::time::sleep(pause).await;
                }
                let end = (at + (1 << 20)).min(bytes.len());
                Some((Ok::<Bytes, std::io::Error>(bytes.slice(at..end)), end))
            }
        });
        return Response::builder()
            .header(header::CONTENT_LENGTH, total)
            .body(Body::from_stream(chunks))
            .expect("response");
    }
    bytes.into_response()
}
