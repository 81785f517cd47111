//! `hearth eval memory --locomo` on the real LoCoMo data when it is on this machine
//! (`HEARTH_LOCOMO`, or `../shared/data/locomo/locomo10.zip` beside the repository); the data
//! is never copied into the repository, so elsewhere the test says it skipped.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn dataset() -> Option<PathBuf> {
    let p = std::env::var_os("HEARTH_LOCOMO")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/data/locomo/locomo10.zip")
        });
    p.exists().then_some(p)
}

#[test]
fn locomo_recall_is_measured_for_every_mode_and_category() {
    let Some(path) = dataset() else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stdout().lock(),
            "\nSKIPPED locomo_recall…: LoCoMo is not on this machine (set HEARTH_LOCOMO=…/locomo10.zip)"
        );
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["eval", "memory", "--locomo"])
        .arg(&path)
        .arg("--json")
        .env("HEARTH_HOME", tmp.path().join("h"))
        .env("TMPDIR", tmp.path())
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = rows.as_array().expect("rows");
    let get = |set: &str, mode: &str| {
        rows.iter()
            .find(|r| r["set"] == set && r["mode"] == mode && r["category"].is_null())
            .cloned()
    };
    let bm25 = get("all", "bm25").expect("bm25 over all ten");
    // 1,536 questions of categories 1–4 keep evidence after normalization.
    assert!(
        bm25["questions"].as_u64().is_some_and(|n| n > 1_400),
        "{bm25}"
    );
    for r in rows {
        for k in ["recall_at_5", "recall_at_10", "mrr_at_10"] {
            let v = r[k].as_f64().expect("number");
            assert!((0.0..=1.0).contains(&v), "{r}");
        }
        assert!(
            r["recall_at_5"].as_f64() <= r["recall_at_10"].as_f64(),
            "{r}"
        );
    }
    // Keyword search finds the evidence for a good share of questions (a broken index
    // or id mapping would give ~0).
    assert!(
        bm25["recall_at_10"].as_f64().is_some_and(|r| r > 0.4),
        "{bm25}"
    );
    if std::env::var_os("HEARTH_EMBED_MODEL_DIR").is_some() {
        let vector = get("all", "vector").expect("vector");
        let hybrid = get("all", "hybrid").expect("hybrid");
        assert!(
            vector["recall_at_10"].as_f64().is_some_and(|r| r > 0.3),
            "{vector}"
        );
        // Fusion helps, and beats the baselines measured outside the project on all ten
        // conversations (BM25 0.588, MiniLM dense 0.497, RRF of both 0.589).
        let r10 = |row: &Value| row["recall_at_10"].as_f64().unwrap_or(0.0);
        assert!(r10(&hybrid) > r10(&bm25), "{hybrid} vs {bm25}");
        assert!(r10(&hybrid) >= 0.59, "{hybrid}");
        // Hybrid is at least as good as either side on the reported split and on all ten
        // (SPEC §9; the tuning split's margin, 0.005, is one question), and the reported
        // conversations meet issue 10's target (0.727 measured; 0.625 before the context
        // and named-person rules).
        for set in ["reported", "all"] {
            let (b, v, h) = (
                get(set, "bm25").expect("bm25"),
                get(set, "vector").expect("vector"),
                get(set, "hybrid").expect("hybrid"),
            );
            assert!(
                r10(&h) >= r10(&b).max(r10(&v)),
                "{set}: hybrid {h} below bm25 {b} or vector {v}"
            );
        }
        let reported = get("reported", "hybrid").expect("reported");
        assert!(r10(&reported) >= 0.70, "{reported}");
        for cat in 1..=4 {
            assert!(
                rows.iter()
                    .any(|r| r["mode"] == "hybrid" && r["category"] == cat)
            );
        }
    }
}

/// `hearth eval memory --profile DIR` with `env` on top of a private home.
fn profile_eval(
    dir: &std::path::Path,
    extra: &[&str],
    keywords_only: bool,
) -> (i32, Value, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hearth"));
    cmd.args(["eval", "memory", "--profile"])
        .arg(dir)
        .args(extra)
        .arg("--json")
        .env("HEARTH_HOME", tmp.path().join("h"))
        .env("TMPDIR", tmp.path());
    if keywords_only {
        // No model anywhere: search is keyword-only, so every rank below is computed by hand.
        cmd.env_remove("HEARTH_EMBED_MODEL_DIR")
            .env("HF_HOME", tmp.path().join("no-models"))
            .env_remove("HF_HUB_CACHE");
    }
    let out = cmd.output().expect("run");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_tiny_profile_gives_the_metrics_computed_by_hand() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("memories.tsv"),
        "# key\tkind\ttext\n\
         dog\tfact\tUser has a border collie named Pixel.\n\
         car\tfact\tUser drives a blue Fiat Panda.\n\
         tea\tpreference\tUser drinks green tea every morning.\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("queries.tsv"),
        "dog\tTell me about Pixel.\n\
         car\tIs my Panda due for a service?\n\
         tea\tHow often should I brush my dog?\n",
    )
    .expect("write");
    let (code, report, stderr) = profile_eval(dir.path(), &["--distractors", "0"], true);
    assert_eq!(code, 0, "{stderr}");
    // Pixel and Panda are found by their words, first; the third request shares no word
    // with tea, so search does not list it (rank none: adds 0 to MRR) — but a block from
    // three memories carries all three, so every request's memory is in its block.
    assert_eq!(report["n"], 3, "{report}");
    assert_eq!(report["block_hit_rate"], 1.0, "{report}");
    let third = |k: &str| report[k].as_f64().expect("number");
    for k in ["r1", "r5", "mrr"] {
        assert!((third(k) - 2.0 / 3.0).abs() < 1e-9, "{k}: {report}");
    }
    assert_eq!(report["misses"], serde_json::json!([]), "{report}");
    assert_eq!(report["memories"], 3);
    assert_eq!(report["distractors"], 0);
    assert_eq!(report["search_model"], Value::Null);
    assert!(stderr.contains("measuring keywords only"), "{stderr}");
}

/// `--vectors FILE`: a model computed elsewhere is measured through the same ranking; the
/// vectors decide what search lists first, the texts without one are listed for the user.
#[test]
fn vectors_from_a_file_are_measured_and_the_texts_without_one_are_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("memories.tsv"),
        "dog\tfact\tUser has a border collie named Pixel.\n\
         tea\tpreference\tUser drinks green tea every morning.\n",
    )
    .expect("write");
    // No word in common with either memory: only the vectors can rank them.
    std::fs::write(
        dir.path().join("queries.tsv"),
        "dog\tHow often should I brush my dog?\n",
    )
    .expect("write");
    let file = dir.path().join("v.jsonl");
    let line = |t: &str, v: [f64; 3]| format!("{}\n", serde_json::json!({"t": t, "v": v}));
    let dog = line("User has a border collie named Pixel.", [1.0, 0.0, 0.0]);
    let tea = line("User drinks green tea every morning.", [0.0, 0.0, 2.0]);
    // The query is embedded as memories say it.
    let query = "How often should User brush User's dog?";
    let run = |contents: &str| {
        std::fs::write(&file, contents).expect("write");
        let args = [
            "--distractors",
            "0",
            "--vectors",
            file.to_str().expect("path"),
        ];
        profile_eval(dir.path(), &args, true)
    };

    let (code, report, _) = run(&dog);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["error"]["code"], "invalid_input", "{report}");
    let message = report["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("2 texts have no vector in "),
        "{message}"
    );
    let missing = std::fs::read_to_string(dir.path().join("v.jsonl.missing")).expect("listed");
    assert_eq!(
        missing,
        // Sorted, one per line.
        format!("{query}\nUser drinks green tea every morning.\n")
    );

    // A query vector pointing at tea: tea is listed first, the dog not at all.
    let (code, report, stderr) = run(&format!("{dog}{tea}{}", line(query, [0.0, 0.1, 1.0])));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["search_model"], "vectors from v.jsonl", "{report}");
    assert_eq!(report["r1"], 0.0, "{report}");
    assert_eq!(report["requests"][0]["first"], "tea", "{report}");
    // Pointing at the dog: first.
    let (code, report, stderr) = run(&format!("{dog}{tea}{}", line(query, [0.9, 0.1, 0.0])));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["r1"], 1.0, "{report}");

    // A malformed line and vectors of two lengths are refused, naming the line.
    for (contents, says) in [
        (
            format!("{dog}{{\"t\": \"x\"}}\n"),
            "v.jsonl line 2: expected {\"t\": text",
        ),
        (
            format!("{dog}{}", serde_json::json!({"t": "y", "v": [1.0, 2.0]})),
            "v.jsonl line 2: 2 numbers where the lines before have 3",
        ),
        (
            line("z", [0.0, 0.0, 0.0]),
            "v.jsonl line 1: a vector must be finite and not all zero",
        ),
    ] {
        let (code, report, _) = run(&contents);
        assert_eq!(code, 1, "{report}");
        let message = report["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(says), "{message}");
    }
    // It replaces the local model: both at once is a usage error.
    let (code, _, stderr) = profile_eval(
        dir.path(),
        &[
            "--model",
            "all-MiniLM-L6-v2",
            "--vectors",
            file.to_str().expect("path"),
        ],
        true,
    );
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_malformed_profile_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("memories.tsv"),
        "dog\tfact\tUser has a border collie named Pixel.\ncar\tUser drives a Panda.\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("queries.tsv"), "dog\tMy dog?\n").expect("write");
    let (code, report, _) = profile_eval(dir.path(), &[], true);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["error"]["code"], "invalid_input", "{report}");
    let message = report["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.ends_with("memories.tsv line 2: expected key<TAB>kind<TAB>text, found 2 field(s)"),
        "{message}"
    );
}

#[test]
fn the_model_to_measure_with_is_named_and_one_not_here_measures_keywords_saying_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("memories.tsv"),
        "dog\tfact\tUser has a border collie named Pixel.\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("queries.tsv"),
        "dog\tTell me about Pixel.\n",
    )
    .expect("write");
    // An empty Hugging Face cache: bge-small is not there.
    let (code, report, stderr) = profile_eval(
        dir.path(),
        &["--distractors", "0", "--model", "bge-small-en-v1.5"],
        true,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["search_model"], Value::Null, "{report}");
    assert!(
        stderr.contains("bge-small-en-v1.5 is not on this computer")
            && stderr.contains("keywords only"),
        "{stderr}"
    );
    let (code, report, _) = profile_eval(dir.path(), &["--model", "gpt-4"], true);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["error"]["code"], "invalid_input", "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("unknown local model \"gpt-4\""),
        "{report}"
    );
}

/// The profile sets of `tests/data/profile` and `tests/data/profile-extended` were written
/// before any tuning; their hashes keep them from being edited to fit the ranker (a new
/// version goes in a new folder).
#[test]
fn the_profile_sets_are_frozen() {
    use sha2::Digest;
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../hearth-core/tests/data");
    for (set, file, hash) in [
        (
            "profile",
            "memories.tsv",
            "9b66383a2818896906cbfe91b621c8c8536e85cf6fe11fd87874d34546792be2",
        ),
        (
            "profile",
            "queries.tsv",
            "d9b25c25949cf7968e68253e86188a81921d983627b18b735dcb21f0065b992b",
        ),
        (
            "profile-extended",
            "memories.tsv",
            "698f51e64967faa252692da67745ddc2606dd08d557fd91b7fa348ea695db1ee",
        ),
        (
            "profile-extended",
            "queries.tsv",
            "14a183708e6a634b95cbc2a6b8eaab79837fc2e5c110dad7e9b2c044035e303a",
        ),
    ] {
        let bytes = std::fs::read(data.join(set).join(file)).expect("read");
        let got: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, hash, "{set}/{file} changed");
    }
}

#[test]
fn a_request_that_needs_two_memories_is_a_hit_only_when_both_are_in_the_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("memories.tsv"),
        "dog\tfact\tUser has a border collie named Pixel.\n\
         tea\tpreference\tUser drinks green tea every morning.\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("queries.tsv"),
        "# both share words with the first request; the second shares none with tea\n\
         dog+tea\tDoes Pixel like green tea?\n\
         tea+dog\tTell me about Pixel.\n\
         dog\tPixel?\n",
    )
    .expect("write");
    // 400 memories about other people: keyword search finds tea only by its words, so the
    // second request's block lacks it.
    let (code, report, stderr) = profile_eval(dir.path(), &["--distractors", "400"], true);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["n"], 3, "{report}");
    assert_eq!(report["multi_n"], 2, "{report}");
    assert_eq!(report["multi_block_hit_rate"], 0.5, "{report}");
    assert_eq!(report["misses"], serde_json::json!(["tea+dog"]), "{report}");
    // The rank of a request needing two is the best of theirs: Pixel's, first.
    let ranks: Vec<&Value> = report["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|r| &r["rank"])
        .collect();
    assert_eq!(
        ranks,
        [&Value::from(1), &Value::from(1), &Value::from(1)],
        "{report}"
    );

    std::fs::write(dir.path().join("queries.tsv"), "dog+cat\tPixel?\n").expect("write");
    let (code, report, _) = profile_eval(dir.path(), &[], true);
    assert_eq!(code, 1, "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap_or("")
            .ends_with("queries.tsv line 1: no memory has the key \"cat\" in memories.tsv"),
        "{report}"
    );
}

/// Both profile sets with the real model, at 400 memories about other people: the block
/// and the search keep what was measured for issue 35 (docs/decisions/0025-memory-at-scale.md),
/// less one request each — tie order can differ between CPU kernels. At 10,000 others the
/// figures are in the decision (minutes of work in a debug build, not a test's).
#[test]
fn with_the_model_both_profile_sets_keep_their_measured_floors() {
    if std::env::var_os("HEARTH_EMBED_MODEL_DIR").is_none() {
        println!("\nSKIPPED with_the_model…: no local embedding model (HEARTH_EMBED_MODEL_DIR)");
        return;
    }
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../hearth-core/tests/data");
    // (set, requests, measured: in the block, searched first, in search's first five;
    // requests needing two memories and how many had both in the block)
    type Measured = (&'static str, u64, [u64; 3], Option<(u64, u64)>);
    let sets: [Measured; 2] = [
        ("profile", 79, FROZEN_MEASURED, None),
        (
            "profile-extended",
            60,
            EXTENDED_MEASURED,
            Some(EXTENDED_MULTI_MEASURED),
        ),
    ];
    let runs: Vec<_> = sets
        .iter()
        .map(|(set, ..)| {
            let dir = data.join(set);
            std::thread::spawn(move || profile_eval(&dir, &["--distractors", "400"], false))
        })
        .collect();
    for ((set, n, [block, r1, r5], multi), run) in sets.into_iter().zip(runs) {
        let (code, report, stderr) = run.join().expect("eval thread");
        assert_eq!(code, 0, "{set}: {stderr}");
        assert_eq!(report["n"], n, "{set}: {report}");
        assert_eq!(
            report["search_model"], "all-MiniLM-L6-v2",
            "{set}: {report}"
        );
        let count = |k: &str| (report[k].as_f64().unwrap_or(0.0) * n as f64).round() as u64;
        for (k, measured) in [("block_hit_rate", block), ("r1", r1), ("r5", r5)] {
            assert!(
                count(k) + 1 >= measured,
                "{set}: {k} fell to {} of {n} requests (measured {measured}); misses {}",
                count(k),
                report["misses"]
            );
        }
        if let Some((multi_n, both)) = multi {
            assert_eq!(report["multi_n"], multi_n, "{set}: {report}");
            let got = (report["multi_block_hit_rate"].as_f64().unwrap_or(0.0) * multi_n as f64)
                .round() as u64;
            assert!(
                got + 1 >= both,
                "{set}: both memories in {got} of {multi_n} blocks"
            );
        }
    }
}

/// Measured at 400 others on 2026-12-07 (commit of this test): frozen set.
const FROZEN_MEASURED: [u64; 3] = [76, 34, 52];
/// The extended set.
const EXTENDED_MEASURED: [u64; 3] = [59, 30, 50];
/// The extended set's 12 requests that need two memories: both in the block for 11.
const EXTENDED_MULTI_MEASURED: (u64, u64) = (12, 11);
