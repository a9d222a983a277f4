//! `meshplan search` and `meshplan calibrate`: outputs and exit codes.

mod common;
use common::{meshplan, ok, repo_root, scratch_path, stderr};

use planner_core::input::calibration::CalibrationSummary;
use planner_core::search::mesh::SearchResult;

#[test]
fn search_prints_ranked_json() {
    let out = meshplan(&["search", "examples/article-70b-mesh.json", "--top", "5"]);
    let r: SearchResult = serde_json::from_str(&ok(&out)).expect("json");
    assert_eq!(r.world, 512);
    assert_eq!(r.feasible.len(), 5);
    assert!(r.feasible.windows(2).all(|w| w[0].step_s <= w[1].step_s));
    assert!(r.rejected.len() <= 50);
    assert!(r.candidates > r.feasible_count);
}

#[test]
fn search_table_names_reasons_and_hints() {
    let out = meshplan(&[
        "search",
        "examples/article-70b-mesh.json",
        "--table",
        "--top",
        "3",
    ]);
    let text = ok(&out);
    assert!(text.contains("512 GPUs"), "{text}");
    assert!(text.contains("layers_divisible_by_pp"));
    assert!(text.contains("memory_within_capacity"));
    assert!(text.contains("TP 8 × PP 4 × CP 4 × DP 4"));
}

#[test]
fn calibrate_then_search_with_it() {
    let out = meshplan(&[
        "calibrate",
        "planner-core/tests/fixtures/report/synthetic-2gpu.json",
    ]);
    let text = ok(&out);
    let cal: CalibrationSummary = serde_json::from_str(&text).expect("summary");
    assert!(!cal.links.is_empty());
    let dir = scratch_path("cal");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("cal.json");
    std::fs::write(&path, text).expect("write");
    let p = path.to_string_lossy().into_owned();
    let out = meshplan(&[
        "search",
        "examples/article-70b-mesh.json",
        "--calibration",
        &p,
        "--top",
        "2",
    ]);
    let r: SearchResult = serde_json::from_str(&ok(&out)).expect("json");
    assert_eq!(r.feasible.len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fastest step time (s) of `search --top 1` over a scenario file, with extra args.
fn best_step_s(scenario: &std::path::Path, extra: &[&str]) -> f64 {
    let p = scenario.to_string_lossy().into_owned();
    let mut args = vec!["search", p.as_str(), "--top", "1"];
    args.extend_from_slice(extra);
    let r: SearchResult = serde_json::from_str(&ok(&meshplan(&args))).expect("json");
    r.feasible[0].step_s
}

#[test]
fn search_uses_the_scenarios_own_calibration_when_switched_on() {
    let text = ok(&meshplan(&[
        "calibrate",
        "planner-core/tests/fixtures/report/synthetic-2gpu.json",
    ]));
    let summary: serde_json::Value = serde_json::from_str(&text).expect("summary");
    let dir = scratch_path("own-cal");
    std::fs::create_dir_all(&dir).expect("dir");
    let cal_path = dir.join("cal.json");
    std::fs::write(&cal_path, &text).expect("write");
    let base: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("examples/article-70b-mesh.json"))
            .expect("example"),
    )
    .expect("json");
    let with_cal = |enabled: bool| {
        let mut s = base.clone();
        s["calibration"] = serde_json::json!({ "summary": summary, "enabled": enabled });
        let path = dir.join(format!("scenario-{enabled}.json"));
        std::fs::write(&path, s.to_string()).expect("write");
        path
    };
    let plain = best_step_s(&with_cal(false), &[]);
    let own = best_step_s(&with_cal(true), &[]);
    let file = best_step_s(
        &with_cal(false),
        &["--calibration", &cal_path.to_string_lossy()],
    );
    println!(
        "best step: presets {plain} s, scenario's calibration {own} s, --calibration {file} s"
    );
    assert_eq!(
        own, file,
        "switched on in the scenario = the same fit passed as a file"
    );
    assert_ne!(own, plain, "the calibration changes the ranking's times");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn calibrate_compact_prints_the_link_form() {
    let out = meshplan(&[
        "calibrate",
        "planner-core/tests/fixtures/report/synthetic-2gpu.json",
        "--compact",
    ]);
    let text = ok(&out);
    let cal = CalibrationSummary::from_compact(text.trim()).expect("compact");
    assert!(cal.links.iter().any(|l| l.op.id() == "all_reduce"));
    assert!(cal.gemm.is_some());
}

#[test]
fn bad_inputs_exit_2_with_a_message() {
    let out = meshplan(&[
        "search",
        "examples/article-70b-mesh.json",
        "--rank-order",
        "tp-dp",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("rank order"));
    let out = meshplan(&["calibrate", "Cargo.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("Cargo.toml"));
    let out = meshplan(&["calibrate", "no/such/file.json"]);
    assert_eq!(out.status.code(), Some(2));
    let out = meshplan(&[
        "calibrate",
        "planner-core/tests/fixtures/report/synthetic-2gpu.json",
        "--gpu",
        "tpu-v9",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("tpu-v9"));
}

#[test]
fn calibrate_refuses_impossible_rank_flags() {
    let nccl = "tests/e2e/fixtures/synthetic-nccl-all-reduce-8gpu.txt";
    for (flags, named) in [
        (&["--ranks-per-node", "0"][..], "--ranks-per-node"),
        (
            &["--ranks", "8", "--ranks-per-node", "9"][..],
            "--ranks-per-node",
        ),
        (&["--ranks-per-node", "9"][..], "--ranks-per-node"),
        (
            &["--ranks", "100000000", "--ranks-per-node", "3"][..],
            "--ranks",
        ),
        (&["--ranks", "0"][..], "--ranks"),
    ] {
        let mut args = vec!["calibrate", nccl];
        args.extend_from_slice(flags);
        let out = meshplan(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(&format!("{named}:")), "{flags:?}: {err}");
    }
    let out = meshplan(&["calibrate", nccl, "--ranks-per-node", "8", "--table"]);
    assert!(ok(&out).contains("intra"), "one node of 8 stays intra-node");
}
