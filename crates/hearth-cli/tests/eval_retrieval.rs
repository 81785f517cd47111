//! `hearth eval retrieval --locomo`: retrieval over watched folders measured on LoCoMo's
//! labels, through the real pipeline (session files written, watched, extracted by the
//! worker, chunked, indexed, embedded). A tiny conversation checks the metrics against
//! values computed by hand; the real data set, when it is on this machine (`HEARTH_LOCOMO`,
//! or `../shared/data/locomo/locomo10.zip` beside the repository), checks that hybrid
//! search is at least as good as either side on the reported split.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn dataset() -> Option<PathBuf> {
    let p = std::env::var_os("HEARTH_LOCOMO")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/data/locomo/locomo10.zip")
        });
    p.exists().then_some(p)
}

/// Runs `hearth eval retrieval --locomo PATH --json` in a private home and temp folder.
fn eval(path: &Path, keywords_only: bool) -> (Value, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hearth"));
    cmd.args(["eval", "retrieval", "--locomo"])
        .arg(path)
        .arg("--json")
        .env("HEARTH_HOME", tmp.path().join("h"))
        .env("TMPDIR", tmp.path());
    if keywords_only {
        cmd.env_remove("HEARTH_EMBED_MODEL_DIR")
            .env("HF_HOME", tmp.path().join("no-models"))
            .env_remove("HF_HUB_CACHE");
    }
    let out = cmd.output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    // Nothing is left behind in the temporary folder.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("tmp")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .filter(|n| n != "h")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    (serde_json::from_slice(&out.stdout).expect("json"), stderr)
}

fn turn(speaker: &str, dia: &str, text: &str) -> Value {
    json!({"speaker": speaker, "dia_id": dia, "text": text})
}

/// Three short sessions (one chunk each) and questions whose keyword results are known.
fn tiny_conversation(dir: &Path) {
    let conv = json!({
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            turn("Ann", "D1:1", "I adopted a greyhound named Pepper last week."),
            turn("Bob", "D1:2", "Congratulations on the new dog!"),
        ],
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": [
            turn("Ann", "D2:1", "My sister flew to Lisbon for a conference."),
            turn("Bob", "D2:2", "Lisbon is lovely in spring."),
        ],
        "session_3_date_time": "7:30 pm on 1 July, 2023",
        "session_3": [
            turn("Ann", "D3:1", "I started learning the cello."),
            turn("Bob", "D3:2", "The cello has a warm sound."),
        ],
        "qa": [
            // Found first: every metric 1.
            {"question": "What is the greyhound called?", "evidence": ["D1:1"], "category": 1},
            // Both evidence sessions found, in some order: every metric 1.
            {"question": "Who flew to Lisbon and who is learning the cello?",
             "evidence": ["D2:1", "D3:1"], "category": 2},
            // One of two evidence turns, first: R = 0.5, MRR 1, nDCG 1/(1 + 1/log2 3).
            {"question": "Lisbon?", "evidence": ["D2:2", "D3:2"], "category": 4},
            // Only a chunk without the evidence: 0 everywhere.
            {"question": "cello", "evidence": ["D1:2"], "category": 4},
            // Not counted: category 5, and no evidence.
            {"question": "greyhound", "evidence": ["D1:1"], "category": 5},
            {"question": "Lisbon", "evidence": [], "category": 1},
        ]
    });
    std::fs::write(dir.join("99.json"), conv.to_string()).expect("write");
}

#[test]
fn a_tiny_conversation_gives_the_metrics_computed_by_hand() {
    let data = tempfile::tempdir().expect("tempdir");
    tiny_conversation(data.path());
    let (report, stderr) = eval(data.path(), true);
    assert!(stderr.contains("measuring keywords only"), "{stderr}");
    assert_eq!(report["model"], Value::Null);
    assert_eq!(report["files"], 3, "{report}");
    assert_eq!(report["chunks"], 3, "one chunk a session: {report}");
    assert_eq!(report["n_queries"], json!({"reported": 4, "all": 4}));
    assert!(report.get("tuning").is_none(), "{report}");
    let bm25 = &report["reported"]["bm25"];
    let ndcg = (1.0 + 1.0 + 1.0 / (1.0 + 1.0 / 3f64.log2()) + 0.0) / 4.0;
    let close = |k: &str, want: f64| {
        let got = bm25[k].as_f64().expect(k);
        assert!(
            (got - want).abs() < 1e-9,
            "{k}: {got} (want {want}): {bm25}"
        );
    };
    close("ndcg@10", ndcg);
    close("recall@5", 0.625);
    close("recall@10", 0.625);
    close("recall@20", 0.625);
    close("mrr@10", 0.75);
    assert!(report["reported"].get("vector").is_none(), "{report}");
    // Per category: 1 and 2 are perfect; 4 averages its two questions.
    let cat = |c: &str, k: &str| report["categories"][c]["reported"]["bm25"][k].as_f64();
    assert_eq!(cat("1", "mrr@10"), Some(1.0));
    assert_eq!(cat("2", "recall@5"), Some(1.0));
    assert_eq!(cat("4", "recall@5"), Some(0.25));
    assert_eq!(cat("4", "mrr@10"), Some(0.5));
    assert!(report["categories"].get("3").is_none(), "{report}");
    assert_eq!(report["categories"]["4"]["n_queries"]["reported"], 2);
}

#[test]
fn with_the_model_every_mode_is_measured_and_text_mode_prints_the_table() {
    if std::env::var_os("HEARTH_EMBED_MODEL_DIR").is_none() {
        println!("\nSKIPPED with_the_model…: no local embedding model (HEARTH_EMBED_MODEL_DIR)");
        return;
    }
    let data = tempfile::tempdir().expect("tempdir");
    tiny_conversation(data.path());
    let (report, _) = eval(data.path(), false);
    assert_eq!(report["model"], "all-MiniLM-L6-v2");
    for mode in ["bm25", "vector", "hybrid"] {
        let m = &report["reported"][mode];
        for k in ["ndcg@10", "recall@5", "recall@10", "recall@20", "mrr@10"] {
            let v = m[k].as_f64().unwrap_or(-1.0);
            assert!((0.0..=1.0).contains(&v), "{mode} {k}: {m}");
        }
        // Three chunks, every one returned by the vector side: all evidence is in the top 5.
        if mode != "bm25" {
            assert_eq!(m["recall@5"], 1.0, "{mode}: {m}");
        }
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["eval", "retrieval", "--locomo"])
        .arg(data.path())
        .env("HEARTH_HOME", tmp.path().join("h"))
        .env("TMPDIR", tmp.path())
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("split     mode    category  queries  nDCG@10  R@5    R@10   R@20   MRR@10"),
        "{text}"
    );
    assert!(text.contains("reported  hybrid  all"), "{text}");
}

#[test]
fn missing_or_malformed_data_is_a_clear_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["eval", "retrieval", "--locomo"])
            .arg(path)
            .arg("--json")
            .env("HEARTH_HOME", tmp.path().join("h"))
            .env("TMPDIR", tmp.path())
            .output()
            .expect("run")
    };
    let out = run(&tmp.path().join("absent.zip"));
    assert_eq!(out.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&out.stdout).expect("json error");
    assert_eq!(err["error"]["code"], "io", "{err}");
    let bad = tmp.path().join("bad.zip");
    std::fs::write(&bad, b"not a zip").expect("write");
    let out = run(&bad);
    let err: Value = serde_json::from_slice(&out.stdout).expect("json error");
    assert_eq!(err["error"]["code"], "invalid_input", "{err}");
}

#[test]
fn on_locomo_hybrid_is_at_least_as_good_as_either_side_on_the_reported_split() {
    let Some(path) = dataset() else {
        println!(
            "\nSKIPPED on_locomo_hybrid…: LoCoMo is not on this machine (set HEARTH_LOCOMO=…/locomo10.zip)"
        );
        return;
    };
    if std::env::var_os("HEARTH_EMBED_MODEL_DIR").is_none() {
        println!("\nSKIPPED on_locomo_hybrid…: no local embedding model (HEARTH_EMBED_MODEL_DIR)");
        return;
    }
    let (report, _) = eval(&path, false);
    // 1,536 questions of categories 1–4 keep evidence; 272 sessions.
    assert_eq!(report["n_queries"]["all"], 1536, "{}", report["n_queries"]);
    assert_eq!(report["files"], 272);
    let reported = &report["reported"];
    for metric in ["ndcg@10", "recall@10"] {
        let m = |mode: &str| reported[mode][metric].as_f64().unwrap_or(0.0);
        assert!(
            m("hybrid") >= m("bm25").max(m("vector")),
            "{metric}: hybrid {} < max(bm25 {}, vector {})",
            m("hybrid"),
            m("bm25"),
            m("vector")
        );
    }
    // A broken index or line mapping would give ~0 (10 of ~130 chunks at random: ~0.08).
    assert!(
        reported["bm25"]["recall@10"].as_f64() > Some(0.5),
        "{reported}"
    );
    assert!(
        reported["vector"]["recall@10"].as_f64() > Some(0.4),
        "{reported}"
    );
}
