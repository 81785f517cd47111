//! Routing (issue 36), run with `make bench`:
//!
//! 1. **Savings**, side by side in one run: two scripted mixes — the labelled set
//!    (`tests/data/routing/requests.tsv`) four times (264 requests, balanced) and an everyday
//!    mix of 240 requests, 7 quick ones in 10 — each go through the real `Hearth::chat`
//!    twice against a scripted server: once with routing and the cascade on, once with every
//!    request on the main model; gpt-4o and gpt-4o-mini at the price table's prices;
//!    conversations of six turns with the built-in tools offered. Each answer is as long as
//!    its request's label asks (a quick answer 90 tokens, a careful one 650), the prompt is
//!    what Hearth really sent (its bytes / 4), and one fast answer in eight is cut off (the
//!    cascade then pays for both). Costs come from the ledger (`Hearth::usage`). Target:
//!    ≥ 40 % saved. The router's accuracy on the labelled set is printed with it.
//! 2. **Overhead** per request (criterion): the routing decision, the response cache's key
//!    over a realistic request (40 history messages, 20 tools) and its lookup in a store
//!    holding 1,000 answers. Target: < 2 ms p50.
//! 3. **The semantic cache** (opt-in): on the labelled pairs
//!    (`tests/data/routing/semantic-pairs.tsv`, 20 that mean the same, 20 that do not), how
//!    many it would answer from the saved reply at the default threshold (0.95) and, to show
//!    what a lower one would cost, at 0.90 and 0.85 — right hits and wrong ones, with the
//!    local embedding model; and its overhead per request (criterion): the question's
//!    embedding, the scope key and the lookup among 1,000 saved questions.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_core::chat::{ChatModel, ChatOptions, ModelSlots, Sources};
use hearth_core::llm::{ChatRequest, Protocol, Provider};
use hearth_core::route::{self, Request, Tier, TierChoice};
use hearth_core::types::{Message, ToolSpec};
use hearth_core::{DataDir, Hearth, KeyBackend, ModelEdit, OpenOptions, RoutingSettings};
use hearth_testkit::llm_server::{End, LlmServer, Reply, text_stream};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Turns per conversation in the mixes (the history grows as in real use).
const TURNS_PER_CONVERSATION: usize = 6;

/// The labelled set: (label, context, request).
fn labelled() -> Vec<(Tier, String, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/routing/requests.tsv");
    let text = std::fs::read_to_string(&path).expect("read the labelled set");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            let label = Tier::parse(f.next()?)?;
            Some((label, f.next()?.to_owned(), f.next()?.to_owned()))
        })
        .collect()
}

/// A request as the user would send it: long ones carry their pasted text.
fn message(context: &str, request: &str) -> String {
    if context == "long" {
        format!(
            "{request}\n\n{}",
            "The quarterly figures show steady growth. ".repeat(300)
        )
    } else {
        request.to_owned()
    }
}

fn model(server: &LlmServer, name: &str) -> ChatModel {
    ChatModel {
        provider: Provider {
            name: "cloud".into(),
            protocol: Protocol::OpenAiCompatible,
            base_url: server.base_url.clone(),
            api_key: None,
            launch: None,
        },
        model: name.into(),
        context_window: None,
    }
}

/// The scripted server: answers as long as the request's label asks, one fast answer in
/// eight cut off at the length limit; the prompt's tokens are its bytes / 4.
fn server_replies(labels: Arc<Vec<(String, Tier)>>, fast_calls: Arc<AtomicUsize>) -> Reply {
    Reply::Dynamic(Arc::new(move |body: &Value| {
        let prompt = (body.to_string().len() / 4) as u64;
        let asked = body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let label = labels
            .iter()
            .find(|(text, _)| asked.starts_with(text.as_str()))
            .map_or(Tier::Strong, |(_, t)| *t);
        let output: u64 = if label == Tier::Fast { 90 } else { 650 };
        let fast_model = body["model"] == "gpt-4o-mini";
        if fast_model && fast_calls.fetch_add(1, Ordering::SeqCst) % 8 == 7 {
            return Reply::Stream {
                data: vec![
                    json!({"choices": [{"index": 0, "delta": {"content": "The answer is"}, "finish_reason": null}]}).to_string(),
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}).to_string(),
                    json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": output}}).to_string(),
                ],
                pace: Duration::ZERO,
                end: End::Done,
            };
        }
        // The answer's text is as long as its tokens, so the history grows as it would.
        let text = "word ".repeat(output as usize);
        Reply::Stream {
            data: text_stream(&[text.as_str()], Some((prompt, output, 0))),
            pace: Duration::ZERO,
            end: End::Done,
        }
    }))
}

/// Runs the mix through `Hearth::chat`; returns the ledger's total cost and the answers by
/// tier (fast, strong, escalated).
fn run_mix(
    routing: bool,
    mix: &[(Tier, String, String)],
    labels: Arc<Vec<(String, Tier)>>,
) -> (f64, u64, u64, u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let fast_calls = Arc::new(AtomicUsize::new(0));
        let replies = (0..mix.len() * 3)
            .map(|_| server_replies(labels.clone(), fast_calls.clone()))
            .collect();
        let server = LlmServer::start(replies).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opts = OpenOptions::new(DataDir::new(dir.path().join("data")));
        opts.new_key_backend = KeyBackend::File;
        let hearth = Hearth::open(&opts).expect("open");
        hearth.set_sources(Sources::default());
        // The price table's prices, applied to this local server.
        for (name, price) in [
            ("gpt-4o", (2.5, 10.0, 1.25)),
            ("gpt-4o-mini", (0.15, 0.6, 0.075)),
        ] {
            hearth
                .models()
                .set(ModelEdit {
                    model: name.into(),
                    context_window: None,
                    input_usd_per_mtok: Some(price.0),
                    output_usd_per_mtok: Some(price.1),
                    cached_usd_per_mtok: Some(price.2),
                })
                .expect("price");
        }
        hearth
            .set_routing(RoutingSettings {
                enabled: routing,
                cascade: routing,
            })
            .expect("routing");
        let slots = ModelSlots {
            main: model(&server, "gpt-4o"),
            fast: model(&server, "gpt-4o-mini"),
            fallback: None,
        };
        let mut conversation: Option<String> = None;
        for (i, (_, context, request)) in mix.iter().enumerate() {
            // Conversations of six turns, with the built-in tools offered as in the app.
            if i % TURNS_PER_CONVERSATION == 0 {
                conversation = None;
            }
            let options = ChatOptions {
                conversation: conversation.clone(),
                tools: hearth_core::tools::gate::ToolSettings::new(None),
                message: message(context, request),
                // A request with passages from the user's files: the probe for passages
                // would send it to the main model (no folders are watched here).
                tier: if context == "passages" && routing {
                    TierChoice::Strong
                } else {
                    TierChoice::Auto
                },
                ..ChatOptions::default()
            };
            let outcome = hearth
                .chat(&slots, options, &CancellationToken::new(), |_| {})
                .await
                .expect("turn");
            conversation = outcome.conversation;
        }
        let report = hearth
            .usage(None, hearth_core::UsageGroup::Model)
            .expect("usage");
        for row in &report.rows {
            println!(
                "  {} {}: {} calls, {} in, {} out, ${:.4}",
                if routing { "routed" } else { "always-main" },
                row.key,
                row.calls,
                row.input_tokens,
                row.output_tokens,
                row.cost_usd
            );
        }
        let r = report.routing;
        (report.total.cost_usd, r.fast, r.strong, r.escalated)
    })
}

fn savings() {
    let set = labelled();
    let (mut right, mut strong_sent_fast) = (0usize, 0usize);
    for (label, context, request) in &set {
        let d = route::route(
            Request {
                message: &message(context, request),
                passages: usize::from(context == "passages"),
                attachments: 0,
            },
            true,
        );
        right += usize::from(d.tier == *label);
        strong_sent_fast += usize::from(*label == Tier::Strong && d.tier == Tier::Fast);
    }
    println!(
        "router on the labelled set: accuracy {:.3} ({right}/{}), strong sent fast {strong_sent_fast}",
        right as f64 / set.len() as f64,
        set.len()
    );
    let labels: Arc<Vec<(String, Tier)>> = Arc::new(
        set.iter()
            .map(|(l, c, r)| (message(c, r).chars().take(60).collect(), *l))
            .collect(),
    );
    let (fast_set, strong_set): (Vec<_>, Vec<_>) =
        set.iter().cloned().partition(|(l, _, _)| *l == Tier::Fast);
    // Two mixes, interleaved so conversations hold both kinds: the labelled set four times
    // (balanced: 34 quick, 32 careful), and an everyday mix of 7 quick requests in 10 (an
    // assumption about how people use an assistant, stated rather than measured).
    let balanced: Vec<_> = (0..4).flat_map(|_| set.iter().cloned()).collect();
    let everyday: Vec<_> = (0..240)
        .map(|i| {
            if i % 10 < 7 {
                fast_set[(i * 7) % fast_set.len()].clone()
            } else {
                strong_set[(i * 3) % strong_set.len()].clone()
            }
        })
        .collect();
    for (name, mix) in [
        ("labelled set x4", balanced),
        ("everyday mix (70 % quick)", everyday),
    ] {
        let (routed, fast, strong, escalated) = run_mix(true, &mix, labels.clone());
        let (always, _, _, _) = run_mix(false, &mix, labels.clone());
        println!(
            "routing savings, {name}, {} requests: ${routed:.4} with routing and cascade vs ${always:.4} always on the main model: {:.1} % saved ({fast} fast, {strong} main of which {escalated} escalated)",
            mix.len(),
            (1.0 - routed / always) * 100.0
        );
    }
}

fn overhead(c: &mut Criterion) {
    let set = labelled();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt.block_on(LlmServer::start(Vec::new()));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = OpenOptions::new(DataDir::new(dir.path().join("data")));
    opts.new_key_backend = KeyBackend::File;
    let store = hearth_core::store::Store::open(&opts).expect("store");
    let strong = model(&server, "gpt-4o");
    // A realistic request: system, 40 history messages, the message; 20 tools.
    let request = |text: &str| {
        ChatRequest {
        model: "gpt-4o".into(),
        messages: std::iter::once(Message::system("You are Hearth. ".repeat(40)))
            .chain((0..40).map(|i| {
                if i % 2 == 0 {
                    Message::user(format!("Question {i} about the trip to Porto and the budget. ").repeat(4))
                } else {
                    Message::assistant(format!("Answer {i}: the train leaves at 9:40; the hotel is booked. ").repeat(8))
                }
            }))
            .chain(std::iter::once(Message::user(text)))
            .collect(),
        tools: (0..20)
            .map(|i| ToolSpec {
                name: format!("tool_{i}"),
                description: "Reads or changes something on the user's computer, within the folders they chose.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            })
            .collect(),
        max_output_tokens: Some(4096),
        ..ChatRequest::default()
    }
    };
    // 1,000 saved answers (a conversation for them to belong to).
    let conversation = hearth_core::conversations::Conversations::new(store.clone())
        .create("bench")
        .expect("conversation");
    for i in 0..1000 {
        let key = hearth_core::chat::cache::key(&strong, &request(&format!("saved question {i}")));
        hearth_core::chat::cache::save(
            &store,
            &key,
            hearth_core::chat::cache::Entry {
                conversation: &conversation,
                model: &strong,
                answer: "A saved answer.",
                carried_memory: false,
                carried_passages: false,
            },
            hearth_core::CacheSettings {
                enabled: true,
                ttl_hours: 24,
                ..Default::default()
            },
        )
        .expect("save");
    }
    let requests: Vec<(String, ChatRequest)> = set
        .iter()
        .map(|(_, c, r)| (message(c, r), request(&message(c, r))))
        .collect();
    let mut i = 0usize;
    c.bench_function("route + response-cache key + lookup (1,000 saved)", |b| {
        b.iter(|| {
            let (text, req) = &requests[i % requests.len()];
            i += 1;
            let d = route::decide(
                TierChoice::Auto,
                Request {
                    message: text,
                    passages: 0,
                    attachments: 0,
                },
                true,
                true,
            );
            let key = hearth_core::chat::cache::key(&strong, req);
            let hit = hearth_core::chat::cache::lookup(&store, &key).expect("lookup");
            (d, hit)
        })
    });
}

fn embed_model_dir() -> PathBuf {
    std::env::var_os("HEARTH_EMBED_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/hearth-models/minilm"))
        })
        .expect("set HEARTH_EMBED_MODEL_DIR or HOME")
}

fn semantic(c: &mut Criterion) {
    use hearth_core::chat::semantic;
    use hearth_core::embed::{Embedder, LocalEmbedder, ModelSource};
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/routing/semantic-pairs.tsv");
    let text = std::fs::read_to_string(&path).expect("read the pairs");
    let pairs: Vec<(bool, String, String)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.split('\t');
            let same = f.next()? == "same";
            Some((same, f.next()?.to_owned(), f.next()?.to_owned()))
        })
        .collect();
    let embedder = LocalEmbedder::new(ModelSource::dir(embed_model_dir()));
    if let Err(e) = embedder.load() {
        panic!("{e}\nInstall the model with scripts/fetch-model.sh");
    }
    let vector = |q: &str| {
        embedder
            .embed_query(&semantic::normalized(q))
            .expect("embed")
    };
    let scored: Vec<(bool, f32, bool)> = pairs
        .iter()
        .map(|(same, a, b)| {
            let sim: f32 = vector(a).iter().zip(vector(b)).map(|(x, y)| x * y).sum();
            (
                *same,
                sim,
                semantic::anchors(a) == semantic::anchors(b) && semantic::same_names(a, b),
            )
        })
        .collect();
    let (same_n, diff_n) = (
        scored.iter().filter(|s| s.0).count(),
        scored.iter().filter(|s| !s.0).count(),
    );
    println!(
        "semantic cache, {} pairs ({same_n} same meaning, {diff_n} not), {}:",
        scored.len(),
        embedder.model_id()
    );
    for threshold in [0.95_f32, 0.90, 0.85] {
        let hit = |s: &&(bool, f32, bool)| s.1 >= threshold && s.2;
        let right = scored.iter().filter(|s| s.0).filter(hit).count();
        let wrong = scored.iter().filter(|s| !s.0).filter(hit).count();
        let wrong_without_anchors = scored.iter().filter(|s| !s.0 && s.1 >= threshold).count();
        println!(
            "  similarity ≥ {threshold:.2}: answered from the cache {right}/{same_n} of the same questions; wrong answers {wrong}/{diff_n} (without the anchor rule: {wrong_without_anchors}/{diff_n})"
        );
    }
    for (same, sim, anchors) in &scored {
        let label = if *same { "same" } else { "diff" };
        println!(
            "    {label} {sim:.3} anchors {}",
            if *anchors { "equal" } else { "differ" }
        );
    }

    // Overhead: embedding the question, the scope and the lookup among 1,000 saved ones.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt.block_on(LlmServer::start(Vec::new()));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = OpenOptions::new(DataDir::new(dir.path().join("data")));
    opts.new_key_backend = KeyBackend::File;
    let store = hearth_core::store::Store::open(&opts).expect("store");
    let strong = model(&server, "gpt-4o");
    let request = |text: &str| ChatRequest {
        model: "gpt-4o".into(),
        messages: vec![
            Message::system("You are Hearth. ".repeat(40)),
            Message::user(text),
        ],
        max_output_tokens: Some(4096),
        ..ChatRequest::default()
    };
    let conversation = hearth_core::conversations::Conversations::new(store.clone())
        .create("bench")
        .expect("conversation");
    let saved_vector = vector("How many kilometres is 5 miles?");
    for i in 0..1000 {
        let question = format!("How many kilometres is {i} miles?");
        semantic::save(
            &store,
            semantic::Entry {
                scope: &semantic::scope(&strong, &request(&question)),
                conversation: &conversation,
                question: &question,
                embedding_model: embedder.model_id(),
                vector: &saved_vector,
                model: &strong,
                answer: "A saved answer.",
            },
            24,
        )
        .expect("save");
    }
    let questions: Vec<String> = pairs.iter().map(|p| p.2.clone()).collect();
    let mut i = 0usize;
    c.bench_function(
        "semantic cache: embed the question + scope + lookup (1,000 saved)",
        |b| {
            b.iter(|| {
                let q = &questions[i % questions.len()];
                i += 1;
                let v = vector(q);
                let scope = semantic::scope(&strong, &request(q));
                semantic::lookup(&store, &scope, embedder.model_id(), &v, q, 0.95).expect("lookup")
            })
        },
    );
    let v = vector("How many kilometres is 7 miles?");
    let asked = "How many kilometres is 7 miles?";
    let scope = semantic::scope(&strong, &request("How many kilometres is 7 miles?"));
    c.bench_function(
        "semantic cache: lookup only (1,000 saved, same scope)",
        |b| {
            b.iter(|| {
                semantic::lookup(&store, &scope, embedder.model_id(), &v, asked, 0.95)
                    .expect("lookup")
            })
        },
    );
}

fn all(c: &mut Criterion) {
    savings();
    overhead(c);
    semantic(c);
}

criterion_group!(benches, all);
criterion_main!(benches);
