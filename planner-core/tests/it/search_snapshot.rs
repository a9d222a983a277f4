//! The mesh search's whole answer, pinned: for a few scenarios (dense and MoE, even and
//! uneven stages, BF16 and FP8, full training and LoRA, the three memory frameworks) the
//! ranked list, every rejected block with its reasons and peak, the counts by reason and the
//! hints must equal what the search gave when the golden file was written. Speed work on the
//! search (caches, pruning, bounded ranking) must leave these files unchanged; a change to the
//! model that is meant to move the ranking rewrites them with
//! `UPDATE_GOLDEN=1 cargo test -p planner-core --test search_snapshot` (say why in the commit).
//!
//! Each file keeps a readable head (counts, hints, the first 10 ranked candidates) so a
//! failure shows what moved, and the FNV-1a 64 digest of the whole result serialized as JSON
//! (floats round-trip exactly, so the digest pins every bit of every number).

use std::path::PathBuf;

use planner_core::input::finetune::FineTuneMode;
use planner_core::input::framework::Framework;
use planner_core::input::precision::ComputeDtype;
use planner_core::input::scenario::Scenario;
use planner_core::resolve::presets::mesh_scenario as scenario;
use planner_core::search::mesh::{search, SearchResult, SearchSpace, SlicedSearch};
use planner_core::time::cost::{CostOptions, StepModel};
use serde_json::{json, Value};

/// FNV-1a, 64 bits (offset basis and prime from the FNV reference, isthe.com/chongo/tech/comp/fnv).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn snapshot(r: &SearchResult) -> Value {
    let whole = serde_json::to_string(r).expect("serialize");
    let head: Vec<Value> = r
        .feasible
        .iter()
        .take(10)
        .map(|f| {
            json!({
                "dims": f.dims,
                "knobs": f.knobs,
                "step_s": f.step_s,
                "peak_memory_bytes": f.peak_memory_bytes,
                "caveat": f.caveat,
            })
        })
        .collect();
    json!({
        "candidates": r.candidates,
        "feasible_count": r.feasible_count,
        "ranked": r.feasible.len(),
        "rejected_blocks": r.rejected.len(),
        "rejections": r.rejections,
        "hints": r.hints,
        "stopped": r.stopped,
        "top": head,
        "json_bytes": whole.len(),
        "digest_fnv1a64": format!("{:016x}", fnv1a64(whole.as_bytes())),
    })
}

fn check(case: &str, sc: &Scenario, space: &SearchSpace) {
    let model = sc.model_spec().expect("preset");
    let sm = StepModel::new(&model, sc, CostOptions::default());
    let r = search(&model, sc, space, &sm);
    // The page's sliced search visits the same blocks and ranks once: the same answer.
    let mut sliced = SlicedSearch::new(model.clone(), sc.clone(), space.clone(), sm.clone());
    while !sliced.step(3) {}
    assert_eq!(sliced.finish(), r, "{case}: sliced search differs");
    let got = serde_json::to_string_pretty(&snapshot(&r)).expect("json") + "\n";
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/search")
        .join(format!("{case}.json"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("create golden dir");
        std::fs::write(&path, &got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    let (g, w): (Value, Value) = (
        serde_json::from_str(&got).expect("got"),
        serde_json::from_str(&want).expect("want"),
    );
    for key in [
        "candidates",
        "feasible_count",
        "ranked",
        "rejected_blocks",
        "rejections",
        "hints",
        "stopped",
        "top",
        "json_bytes",
        "digest_fnv1a64",
    ] {
        assert_eq!(g[key], w[key], "{case}: {key} differs from its golden file");
    }
}

fn uncapped() -> SearchSpace {
    SearchSpace {
        max_results: usize::MAX,
        max_rejected: usize::MAX,
        ..SearchSpace::default()
    }
}

/// The article's 512-GPU example (70B, 32K context, 64 sequences).
#[test]
fn article_512_gpus() {
    let sc = scenario("llama-3.1-70b", 64, 32_768, 64);
    check("article-70b-512", &sc, &uncapped());
}

/// The benchmark's scenario: 405B on 16,384 H100, 8K context, 2,048 sequences (uneven
/// stages: 126 layers), with the default caps and uncapped (as `meshplan validate` ranks).
#[test]
fn llama_405b_16384_gpus() {
    let sc = scenario("llama-3.1-405b", 2048, 8192, 2048);
    check("llama-405b-16384", &sc, &SearchSpace::default());
    check("llama-405b-16384-uncapped", &sc, &uncapped());
}

/// MoE with expert-TP choices and Megatron-Core's memory semantics.
#[test]
fn mixtral_128_gpus_megatron() {
    let mut sc = scenario("mixtral-8x7b", 16, 4096, 512);
    sc.overheads.framework = Framework::MegatronCore;
    check("mixtral-8x7b-128-megatron", &sc, &uncapped());
}

/// DeepSeek-V3 (MLA, dense first layers, 61 layers: uneven stages) in FP8.
#[test]
fn deepseek_v3_256_gpus_fp8() {
    let mut sc = scenario("deepseek-v3", 32, 4096, 1024);
    sc.precision.compute = ComputeDtype::Fp8;
    check("deepseek-v3-256-fp8", &sc, &SearchSpace::default());
}

/// torchtitan's per-op selective checkpointing and a LoRA fine-tune on one node.
#[test]
fn llama_8b_one_node_torchtitan_lora() {
    let mut sc = scenario("llama-3.1-8b", 1, 8192, 64);
    sc.overheads.framework = Framework::Torchtitan;
    check("llama-8b-8-torchtitan", &sc, &uncapped());
    sc.training.finetune.mode = FineTuneMode::Lora;
    check("llama-8b-8-lora", &sc, &uncapped());
}
