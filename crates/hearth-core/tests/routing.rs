//! The router against its labelled set (`tests/data/routing/requests.tsv`, v1, written and
//! committed before any rule): at most 10 % of the strong-labelled requests go to the fast
//! model, at least 60 % of the fast-labelled ones do (issue 36).

use std::path::PathBuf;

use hearth_core::route::{Request, Tier, route};

fn labelled() -> Vec<(Tier, String, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/routing/requests.tsv");
    let text = std::fs::read_to_string(&path).expect("read the labelled set");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut f = l.splitn(3, '\t');
            let (label, context, request) = (
                f.next().expect("label"),
                f.next().expect("context"),
                f.next().expect("request"),
            );
            let label = Tier::parse(label).expect("fast or strong");
            (label, context.to_owned(), request.to_owned())
        })
        .collect()
}

#[test]
fn the_labelled_set_is_frozen() {
    use sha2::Digest;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/routing/requests.tsv");
    let got: String = sha2::Sha256::digest(std::fs::read(path).expect("read"))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        got, FROZEN,
        "requests.tsv changed: a new version goes in a new file"
    );
}

const FROZEN: &str = "8d49cac6ef24579e5b15e1c06fd656469ca2f6fb63c896f7f72c08f6f4d5e829";

#[test]
fn the_rules_meet_the_floors_on_the_labelled_set() {
    let set = labelled();
    assert!(set.len() >= 60, "{} requests", set.len());
    // "long" stands for pasted text over 1,500 words: the router sees the length.
    let pasted = "The tenant shall keep the premises in good repair. ".repeat(200);
    let (mut strong_n, mut strong_to_fast, mut fast_n, mut fast_to_fast) = (0, 0, 0, 0);
    let mut wrong = Vec::new();
    for (label, context, request) in &set {
        let message = if context == "long" {
            format!("{request}\n\n{pasted}")
        } else {
            request.clone()
        };
        let decision = route(
            Request {
                message: &message,
                passages: usize::from(context == "passages") * 3,
                attachments: 0,
            },
            true,
        );
        match label {
            Tier::Strong => {
                strong_n += 1;
                strong_to_fast += usize::from(decision.tier == Tier::Fast);
            }
            Tier::Fast => {
                fast_n += 1;
                fast_to_fast += usize::from(decision.tier == Tier::Fast);
            }
        }
        if decision.tier != *label {
            wrong.push(format!(
                "{} ({}): {request}",
                label.as_str(),
                decision.describe()
            ));
        }
    }
    let accuracy = 1.0 - wrong.len() as f64 / set.len() as f64;
    println!(
        "router on {} labelled requests: accuracy {accuracy:.3}; strong sent fast {strong_to_fast}/{strong_n}; fast sent fast {fast_to_fast}/{fast_n}\n  {}",
        set.len(),
        wrong.join("\n  ")
    );
    assert!(
        strong_to_fast as f64 <= 0.10 * strong_n as f64,
        "{strong_to_fast} of {strong_n} strong requests went fast:\n{}",
        wrong.join("\n")
    );
    assert!(
        fast_to_fast as f64 >= 0.60 * fast_n as f64,
        "only {fast_to_fast} of {fast_n} fast requests went fast:\n{}",
        wrong.join("\n")
    );
}
