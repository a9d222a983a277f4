//! `meshplan serve-search`: ranked deployments of the article example, reasons, refused input.

mod common;
use common::{meshplan, ok, stderr};

const EXAMPLE: &str = "examples/article-70b-mesh.json";

#[test]
fn serve_search_ranks_deployments_meeting_the_target() {
    let out = meshplan(&[
        "serve-search",
        EXAMPLE,
        "--ttft-ms",
        "2000",
        "--tpot-ms",
        "50",
        "--percentile",
        "p99",
        "--top",
        "5",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(&out)).expect("json");
    let ranked = v["ranked"].as_array().expect("ranked");
    assert_eq!(ranked.len(), 5);
    let mut last = f64::INFINITY;
    for d in ranked {
        let thr = d["throughput_per_gpu"].as_f64().expect("throughput");
        assert!(thr <= last);
        last = thr;
        assert!(d["ttft_s"].as_f64().expect("ttft") <= 2.0);
        assert!(d["tpot_s"].as_f64().expect("tpot") <= 0.05);
    }
    let candidates = v["candidates"].as_u64().expect("candidates");
    let feasible = v["feasible_count"].as_u64().expect("feasible");
    let rejected = v["rejected_count"].as_u64().expect("rejected");
    assert_eq!(candidates, feasible + rejected);
    let reasons: Vec<&str> = v["rejections"]
        .as_array()
        .expect("rejections")
        .iter()
        .filter_map(|r| r["reason"].as_str())
        .collect();
    // One H100 cannot hold 141 GB of BF16 weights; TP 16 spans two 8-GPU nodes.
    assert!(reasons.contains(&"fits_memory"), "{reasons:?}");
    assert!(reasons.contains(&"tp_within_node"), "{reasons:?}");

    let text = ok(&meshplan(&[
        "serve-search",
        EXAMPLE,
        "--tpot-ms",
        "1",
        "--no-disagg",
        "--table",
    ]));
    for want in [
        "0 meet the target",
        "tpot_within_target",
        "TPOT over target",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn serve_search_refuses_bad_input_naming_the_field() {
    for (args, field) in [
        (vec!["--percentile", "p95"], "target.percentile"),
        (vec!["--ttft-ms=-5"], "target.ttft_s"),
        (vec!["--tpot-ms", "NaN"], "target.tpot_s"),
        (vec!["--concurrency", "0"], "load.concurrency"),
        (vec!["--prompt", "40000"], "load.prompt_tokens"),
        (vec!["--max-concurrency", "0"], "space.max_concurrency"),
    ] {
        let mut all = vec!["serve-search", EXAMPLE];
        all.extend(args.iter().copied());
        let out = meshplan(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(field), "{args:?}: {err}");
    }
    let out = meshplan(&["serve-search", "no-such-file.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn serve_search_exports_the_best_deployment_for_each_engine() {
    for (engine, flag) in [("vllm", "--tensor-parallel-size"), ("sglang", "--tp-size")] {
        let text = ok(&meshplan(&[
            "serve-search",
            EXAMPLE,
            "--tpot-ms",
            "50",
            "--export",
            engine,
        ]));
        assert!(text.contains(flag), "{engine}: {text}");
        if let Ok(out) = std::process::Command::new("bash")
            .args(["-n", "-c", &text])
            .output()
        {
            assert!(out.status.success(), "{engine}: bash -n refused\n{text}");
        }
    }
    let out = meshplan(&["serve-search", EXAMPLE, "--export", "megatron"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("export"));
}
