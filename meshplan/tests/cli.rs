//! The `meshplan` binary: outputs and exit codes.

mod common;
use common::{meshplan, scratch_path, stderr};

use planner_core::input::scenario::Scenario;
use planner_core::resolve::presets::article_mesh_scenario;

const MESH_LINK: &str = "v=1&model=llama-3.1-70b&gpus=512&seq=32768&gbs=64&pp=4&cp=4&dp=4";

#[test]
fn link_prints_the_query() {
    let out = meshplan(&["link", "examples/article-70b-mesh.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), MESH_LINK);
}

#[test]
fn decode_link_prints_the_scenario() {
    let url = format!("https://example.org/meshplan/?{MESH_LINK}");
    let out = meshplan(&["decode-link", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s: Scenario = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s, article_mesh_scenario());
}

#[test]
fn bad_link_exits_2_naming_the_field() {
    let out = meshplan(&["decode-link", "v=1&tp=eight"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("tp: 'eight' is not a valid number"), "{err}");
}

#[test]
fn lenient_decode_warns_and_succeeds() {
    let out = meshplan(&["decode-link", "--lenient", "v=1&tp=eight&seq=8192"]);
    assert!(out.status.success());
    let s: Scenario = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s.training.seq_len, 8192);
    assert!(stderr(&out).contains("warning: tp:"));
}

#[test]
fn bad_files_exit_2() {
    let out = meshplan(&["link", "does/not/exist.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("does/not/exist.json"));

    let out = meshplan(&["link", "planner-core/tests/fixtures/hf/llama-3.1-8b.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown field `architectures`"));
}

#[test]
fn eval_prints_the_article_model_state_as_json_and_table() {
    let dir = scratch_path("eval");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("article.json");
    let scenario = planner_core::resolve::presets::article_70b_scenario();
    std::fs::write(&path, serde_json::to_string(&scenario).expect("json")).expect("write");

    let out = meshplan(&["eval", path.to_str().expect("utf-8 path")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let totals: Vec<f64> = json["model_state"]
        .as_array()
        .expect("bars")
        .iter()
        .map(|b| b["total_bytes"].as_f64().expect("number"))
        .collect();
    assert_eq!(totals, vec![1120e9, 293.125e9, 155.3125e9, 17.5e9]);

    let link = planner_core::edges::link::encode(&scenario);
    let out = meshplan(&["eval", "--table", "--link", &link]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1120.00 GB"), "{text}");
    assert!(text.contains("17.50 GB"), "{text}");
}

#[test]
fn eval_of_a_bad_link_names_the_parameter() {
    let out = meshplan(&["eval", "--link", "v=1&tp=banana"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("tp"));
}

#[test]
fn eval_of_a_bad_file_names_the_json_path_a_link_the_key() {
    let dir = scratch_path("eval-bad-file");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("bad.json");
    let mut v = serde_json::to_value(article_mesh_scenario()).expect("json");
    v["cluster"]["gpu"]["memory_bytes"] = 1.0.into();
    v["serving"]["context_len"] = 0.into();
    std::fs::write(&path, v.to_string()).expect("write");
    let out = meshplan(&["eval", path.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("  cluster.gpu.memory_bytes: "), "{err}");
    assert!(err.contains("  serving.context_len: "), "{err}");
    assert!(
        !err.contains("gpu_mem") && !err.contains("serve_ctx"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    let out = meshplan(&["eval", "--link", "v=1&serve_ctx=0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("serve_ctx"), "{}", stderr(&out));
}

#[test]
fn eval_table_shows_the_fine_tuning_mode_and_its_terms() {
    let link = "v=1&model=llama-3.1-8b&gpus=8&dp=8&tp=1&pp=1&zero=1&ft=qlora";
    let out = meshplan(&["eval", "--link", link, "--table"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    // Default adapters: r = 16, α = 32 on q, k, v, o: 32 × 425 984 = 13 631 488 parameters.
    assert!(
        text.contains("Fine-tuning: QLoRA (NF4 base) r = 16, α = 32 on q,k,v,o"),
        "{text}"
    );
    assert!(text.contains("32 layers × 425984 = 13.6315e6"), "{text}");
    assert!(text.contains("step time vs full fine-tuning"), "{text}");
    // The NF4 base of Llama 3.1 8B: 7 804 174 336 B (planner-core/tests/finetune.rs).
    assert!(text.contains("= 7.8042 GB"), "{text}");
    assert!(
        text.contains("LoRA adapter optimizer state (paged)"),
        "{text}"
    );
    let bad = meshplan(&["eval", "--link", "v=1&ft=qlora&lora_mod=none", "--table"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("lora_mod"));
}

/// The fine-tuning preset on a 24 GB card: fits; 10M packed tokens at 16 × 2,048 tokens a
/// step is ⌈305.2⌉ = 306 steps.
#[test]
fn fit_prints_limits_and_the_epoch() {
    let out = meshplan(&[
        "fit",
        "examples/finetune-qlora-8b.json",
        "--dataset-tokens",
        "10000000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(fits)"), "{text}");
    assert!(
        text.contains("Largest micro-batch at 2048 tokens: "),
        "{text}"
    );
    assert!(text.contains("epoch: 306 steps"), "{text}");
}

/// The same scenario from its link at 4,096 tokens without recompute does not fit, and the
/// fixes are listed; a bad dataset size exits 2 naming its flag.
#[test]
fn fit_lists_fixes_and_names_bad_flags() {
    let link = meshplan(&["link", "examples/finetune-qlora-8b.json"]);
    let query = String::from_utf8_lossy(&link.stdout)
        .trim()
        .replace("seq=2048", "seq=4096")
        .replace("recompute=full", "recompute=none");
    let out = meshplan(&["fit", &query]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(does not fit)"), "{text}");
    assert!(
        text.contains("1. gradient checkpointing (full recompute): "),
        "{text}"
    );
    let bad = meshplan(&[
        "fit",
        "examples/finetune-qlora-8b.json",
        "--examples",
        "10",
        "--mean-len",
        "0",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--mean-len: "), "{}", stderr(&bad));
}
