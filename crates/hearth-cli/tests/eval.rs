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
        for cat in 1..=4 {
            assert!(
                rows.iter()
                    .any(|r| r["mode"] == "hybrid" && r["category"] == cat)
            );
        }
    }
}
