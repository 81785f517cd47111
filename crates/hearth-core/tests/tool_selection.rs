//! Tool selection over a real catalog: the reference filesystem and everything servers and a
//! server of ours serving 42 definitions modelled on popular MCP servers
//! (tests/mcp-servers/catalog.json), with Hearth's built-ins — over 60 tools. For the
//! messages of tests/mcp-servers/selection-eval.json (written before the ranking was tuned),
//! a right tool must be among the five whose full schemas go with the message for at least
//! 80% of them (chance: 5 of ~80, about 6%).

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hearth_core::embed::{EmbedderSlot, LocalEmbedder, ModelSource};
use hearth_core::tools::select::{TOP_K, ToolIndex, rank};
use hearth_core::types::ToolSpec;
use hearth_core::{Hearth, KeyBackend, NewServer};
use serde_json::{Value, json};

fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp-servers")
}

fn embedder() -> std::sync::Arc<LocalEmbedder> {
    static EMBEDDER: OnceLock<std::sync::Arc<LocalEmbedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let dir = std::env::var_os("HEARTH_EMBED_MODEL_DIR")
                .map(PathBuf::from)
                .expect("HEARTH_EMBED_MODEL_DIR (scripts/fetch-model.sh)");
            std::sync::Arc::new(LocalEmbedder::new(ModelSource::dir(dir)))
        })
        .clone()
}

fn server(name: &str, args: &[String]) -> NewServer {
    NewServer {
        name: name.into(),
        command: Some("node".into()),
        args: args.to_vec(),
        ..NewServer::default()
    }
}

/// Every tool the catalog holds, as the model would be offered it (name and description),
/// listed from the real servers.
async fn catalog(root: &Path) -> Vec<ToolSpec> {
    let hearth = Hearth::open(&common::options(root, KeyBackend::File)).expect("open");
    let mcp = hearth.mcp();
    let modules = servers_dir().join("node_modules/@modelcontextprotocol");
    let shared = root.join("shared");
    std::fs::create_dir_all(&shared).expect("mkdir");
    let path = |p: PathBuf| p.to_string_lossy().into_owned();
    for s in [
        server(
            "fs",
            &[
                path(modules.join("server-filesystem/dist/index.js")),
                path(shared),
            ],
        ),
        server(
            "ev",
            &[
                path(modules.join("server-everything/dist/index.js")),
                "stdio".into(),
            ],
        ),
        server("cat", &[path(servers_dir().join("catalog.mjs"))]),
    ] {
        let name = s.name.clone();
        let yes = hearth_core::tools::gate::ConfirmedAhead;
        mcp.add(s, false, &yes).await.expect("the server starts");
        mcp.approve(&name, &[], false, &yes).await.expect("approve");
    }
    mcp.shutdown().await;
    hearth
        .tools()
        .expect("tools")
        .into_iter()
        .filter(|t| t.enabled)
        .map(|t| ToolSpec {
            name: t.name,
            description: t.description,
            parameters: json!({"type": "object"}),
        })
        .collect()
}

fn messages() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(servers_dir().join("selection-eval.json")).expect("eval");
    let v: Value = serde_json::from_str(&text).expect("json");
    v["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["text"].as_str().expect("text").to_owned(),
                m["expected"]
                    .as_array()
                    .expect("expected")
                    .iter()
                    .map(|e| e.as_str().expect("name").to_owned())
                    .collect(),
            )
        })
        .collect()
}

/// The share of messages with a right tool in the top `TOP_K`, and the misses.
fn hit_rate(
    specs: &[ToolSpec],
    ranker: impl Fn(&str) -> Vec<usize>,
) -> (f64, Vec<(String, Vec<String>)>) {
    let messages = messages();
    let mut misses = Vec::new();
    for (text, expected) in &messages {
        let top: Vec<String> = ranker(text)
            .into_iter()
            .map(|i| specs[i].name.clone())
            .collect();
        if !top.iter().any(|t| expected.contains(t)) {
            misses.push((text.clone(), top));
        }
    }
    let rate = 1.0 - misses.len() as f64 / messages.len() as f64;
    (rate, misses)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_right_tool_is_in_the_top_five_for_most_messages_among_over_sixty() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let specs = catalog(tmp.path()).await;
    let mcp_tools = specs.iter().filter(|s| s.name.contains("__")).count();
    assert!(mcp_tools >= 60, "{mcp_tools} MCP tools");
    let messages = messages();
    assert!(messages.len() >= 30);
    // Every expected tool is one of the catalog's (a renamed tool cannot pass silently).
    for (_, expected) in &messages {
        for e in expected {
            assert!(specs.iter().any(|s| &s.name == e), "{e} is not offered");
        }
    }

    let index = ToolIndex::new(EmbedderSlot::new(Some(embedder())));
    let (by_embedding, misses) = hit_rate(&specs, |m| index.rank(&specs, m, TOP_K));
    let (by_keywords, keyword_misses) = hit_rate(&specs, |m| rank(&specs, m, TOP_K));
    println!(
        "tool selection over {} tools, {} messages: top-{TOP_K} hit rate {:.1}% by embedding (fused with BM25), {:.1}% by keywords alone (BM25)",
        specs.len(),
        messages.len(),
        by_embedding * 100.0,
        by_keywords * 100.0
    );
    println!("embedding misses: {misses:#?}\nkeyword misses: {keyword_misses:#?}");
    assert!(
        by_embedding >= 0.8,
        "{:.1}% by embedding; misses: {misses:#?}",
        by_embedding * 100.0
    );
    // The fallback without an embedder still beats chance by far.
    assert!(
        by_keywords >= 0.5,
        "{:.1}% by keywords",
        by_keywords * 100.0
    );
    // Without an embedder, the index is the keyword ranking.
    let keywords_only = ToolIndex::default();
    for (text, _) in &messages {
        assert_eq!(
            keywords_only.rank(&specs, text, TOP_K),
            rank(&specs, text, TOP_K)
        );
    }
}

/// A user whose server relists a changed tool while the question waits (issue 31: approve
/// pins what the user was shown, not what is stored when the answer comes).
struct RelistedWhileAsked(hearth_core::store::Store);

impl hearth_core::tools::gate::Consent for RelistedWhileAsked {
    fn ask<'a>(
        &'a self,
        _request: &'a hearth_core::tools::gate::ConsentRequest,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = hearth_core::tools::gate::Answer> + Send + 'a>,
    > {
        let store = self.0.clone();
        Box::pin(async move {
            store
                .write_blocking(|c| {
                    c.execute(
                        "UPDATE mcp_tools SET hash = 'relisted',
                           definition = replace(definition, 'Saves a note.', 'Sends your notes away.')",
                        [],
                    )
                })
                .expect("relist");
            hearth_core::tools::gate::Answer::AllowOnce
        })
    }
}

#[tokio::test]
async fn approve_pins_only_the_definitions_the_user_was_shown() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = common::options(tmp.path(), KeyBackend::File);
    let hearth = Hearth::open(&opts).expect("open");
    let mcp = hearth.mcp();
    let hostile = servers_dir().join("hostile.mjs");
    mcp.add(
        server(
            "notes",
            &[hostile.to_string_lossy().into_owned(), "notes-a".into()],
        ),
        false,
        &hearth_core::tools::gate::ConfirmedAhead,
    )
    .await
    .expect("the server starts");
    mcp.shutdown().await;
    let store = hearth_core::store::Store::open(&opts).expect("a second connection");
    let refused = mcp
        .approve("notes", &[], true, &RelistedWhileAsked(store))
        .await;
    let err = refused.expect_err("a definition changed while the user was asked");
    assert_eq!(err.code(), "invalid_input");
    assert!(
        err.to_string().contains("changed while you were asked"),
        "{err}"
    );
    let tools = mcp.known_tools("notes").expect("tools");
    assert!(
        tools.iter().all(
            |t| t.state == hearth_core::tools::mcp::ToolState::NeedsApproval && !t.labels_accepted
        ),
        "{tools:?}"
    );
}
