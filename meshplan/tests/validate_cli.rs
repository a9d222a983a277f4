//! `meshplan validate`: outputs and exit codes. The full search runs in release
//! (`cargo run --release -p meshplan -- validate`); these tests search one small row only.

mod common;
use common::{meshplan, ok, scratch_path, stderr};

use std::path::PathBuf;

fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = scratch_path(&format!("validate-{name}")).with_extension("json");
    std::fs::write(&path, text).expect("write temp file");
    path
}

const DATASET: &str = include_str!("../../validation/public-runs.json");

#[test]
fn the_summary_of_the_built_in_dataset_prints() {
    let text = ok(&meshplan(&["validate", "--no-search"]));
    assert!(text.contains("187 published rows"), "{text}");
    assert!(text.contains("tokens/s + iteration time"), "{text}");
    assert!(text.contains("Narayanan21 T1"), "{text}");
    assert!(text.contains("torchtitan T2"), "{text}");
    // Every row is compared: the per-layer rows too (time/layer_time.rs).
    let per_layer = text
        .lines()
        .find(|l| l.starts_with("per_layer_fwd_bwd_ms"))
        .expect("per-layer quantity row");
    let cols: Vec<&str> = per_layer.split_whitespace().collect();
    assert_eq!(&cols[1..4], ["5", "0", "5"], "{per_layer}");
}

#[test]
fn json_holds_every_row() {
    let text = ok(&meshplan(&[
        "validate",
        "validation/public-runs.json",
        "--json",
        "--no-search",
    ]));
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 187);
    assert!(rows
        .iter()
        .all(|r| r["comparison"].is_object() != r["not_representable"].is_string()));
    assert!(v["by_source"].as_array().is_some_and(|s| s.len() == 23));
}

#[test]
fn a_small_dataset_is_searched_and_tabled() {
    let mut rows: serde_json::Value = serde_json::from_str(DATASET).expect("json");
    let one: Vec<serde_json::Value> = rows
        .as_array_mut()
        .expect("array")
        .drain(..)
        .filter(|r| r["id"] == "korthikanti22-t5-22b-full")
        .collect();
    let path = temp_file("one", &serde_json::Value::Array(one).to_string());
    let text = ok(&meshplan(&[
        "validate",
        path.to_str().expect("utf-8 path"),
        "--table",
    ]));
    let _ = std::fs::remove_file(&path);
    assert!(text.contains("korthikanti22-t5-22b-full"), "{text}");
    assert!(text.contains("iteration_time_s"), "{text}");
    assert!(
        text.contains("Mesh search (1 rows, 1 distinct searches)"),
        "{text}"
    );
    assert!(text.contains(" #"), "a rank is printed: {text}");
}

#[test]
fn bad_input_exits_2_naming_the_field() {
    let mut rows: serde_json::Value = serde_json::from_str(DATASET).expect("json");
    rows[3]["gpus"] = serde_json::json!("many");
    let path = temp_file("bad", &rows.to_string());
    let out = meshplan(&["validate", path.to_str().expect("utf-8 path")]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("[3].gpus"), "{err}");

    let out = meshplan(&["validate", "no/such/dataset.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_serving_dataset_is_scored_with_its_summaries() {
    let text = ok(&meshplan(&["validate", "--serving"]));
    assert!(
        text.contains("55 published rows, 65 measurements"),
        "{text}"
    );
    for group in [
        "ttft_ms",
        "tpot_ms",
        "output_tokens_per_s",
        "TRT-LLM 0.9 throughput",
        "NIM 1.8.0 benchmarks",
    ] {
        assert!(text.contains(group), "{group}: {text}");
    }
    assert!(text.contains("Missed by more than 25%"), "{text}");
    let table = ok(&meshplan(&["validate", "--serving", "--table"]));
    assert!(
        table.contains("trt09-a100-llama2-7b-tp1-bs256-128-128"),
        "{table}"
    );
    assert!(table.contains("kv_dtype not stated: bf16"), "{table}");
    let json = ok(&meshplan(&["validate", "--serving", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(55));
}

#[test]
fn a_bad_serving_dataset_exits_2_naming_the_field() {
    let path = temp_file("serving-bad", r#"[{"id": "x"}]"#);
    let out = meshplan(&["validate", "--serving", path.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("invalid dataset"), "{err}");
}

/// The README's fenced `text` block that starts with `marker`.
fn readme_block(marker: &str) -> &'static str {
    let readme = include_str!("../../README.md");
    let start = readme
        .find(&format!("```text\n{marker}"))
        .unwrap_or_else(|| panic!("README has a block starting {marker:?}"))
        + "```text\n".len();
    let end = start + readme[start..].find("\n```").expect("block ends");
    &readme[start..end]
}

#[test]
fn the_readme_carries_the_serving_summary_as_the_command_prints_it() {
    let printed = ok(&meshplan(&["validate", "--serving"]));
    let summary = printed
        .split("\nMissed by more than 25%")
        .next()
        .unwrap_or("")
        .trim_end();
    assert_eq!(
        readme_block("meshplan validate --serving:"),
        summary,
        "update README.md's serving summary from `meshplan validate --serving --table`"
    );
}

#[test]
fn the_readme_carries_the_training_summary_as_the_command_prints_it() {
    let printed = ok(&meshplan(&["validate", "--table"]));
    let summary = printed
        .find("meshplan validate:")
        .map_or("", |i| printed[i..].trim_end());
    assert_eq!(
        readme_block("meshplan validate:"),
        summary,
        "update README.md's accuracy table from `meshplan validate --table`"
    );
}
