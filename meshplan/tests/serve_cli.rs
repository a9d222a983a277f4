//! `meshplan serve`: serving time of the article example, and refused input.

mod common;
use common::{meshplan, stderr};

const EXAMPLE: &str = "examples/article-70b-mesh.json";

#[test]
fn serve_prints_ttft_tpot_and_throughput() {
    let mut tpots = Vec::new();
    for c in ["1", "16", "64"] {
        let out = meshplan(&["serve", EXAMPLE, "--concurrency", c]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let tpot = v["tpot"]["value"].as_f64().expect("tpot");
        let ttft = v["ttft"]["value"].as_f64().expect("ttft");
        let thr = v["throughput_per_gpu"]["value"]
            .as_f64()
            .expect("throughput");
        assert!(tpot > 0.0 && tpot.is_finite());
        assert!(ttft > 0.0 && ttft.is_finite());
        assert!(thr > 0.0 && thr.is_finite());
        assert_eq!(v["tp"], 8);
        tpots.push(tpot);
    }
    assert!(tpots.windows(2).all(|w| w[0] <= w[1]), "{tpots:?}");

    let out = meshplan(&["serve", EXAMPLE, "--concurrency", "16", "--table"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "TTFT",
        "TPOT",
        "per GPU",
        "-bound",
        "Breakdown:",
        "Decode memory time",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn serve_refuses_bad_input_naming_the_field() {
    for (args, field) in [
        (vec!["--prefix-hit", "1.5"], "load.prefix_hit_rate"),
        (vec!["--concurrency", "0"], "load.concurrency"),
        (vec!["--prompt", "40000"], "load.prompt_tokens"),
        (vec!["--arrival-rate", "1e6"], "load.arrival_rate_per_s"),
    ] {
        let mut all = vec!["serve", EXAMPLE];
        all.extend(args.iter().copied());
        let out = meshplan(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(field), "{args:?}: {err}");
    }
    let out = meshplan(&["serve", EXAMPLE, "--prompt", "abc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--prompt"));
}
