//! Preset parameter counts against the published figures, and the default scenarios.

use planner_core::input::hardware::gpu_preset;
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::ModelChoice;
use planner_core::resolve::presets::{
    article_70b_scenario, article_mesh_scenario, default_scenario, model_preset, model_presets,
    ScenarioError, DEFAULT_GPU_ID,
};

fn spec(id: &str) -> ModelSpec {
    model_preset(id).unwrap_or_else(|| panic!("preset {id} missing"))
}

fn assert_within(what: &str, got: f64, published: f64, tolerance: f64) {
    let err = (got - published).abs() / published;
    assert!(
        err <= tolerance,
        "{what}: computed {got:.4e}, published {published:.4e}, off by {:.3}%",
        err * 100.0
    );
}

#[test]
fn totals_within_half_a_percent_of_published() {
    // Published totals: model cards (Llama 3.1 8.03B / 70.6B / 405B; Mixtral 46.7B and 141B;
    // DeepSeek-V3 671B main model; Qwen2.5-72B 72.7B) and Brown et al. 2020 (175B).
    let published = [
        ("llama-3.1-8b", 8.03e9),
        ("llama-3.1-70b", 70.6e9),
        ("llama-3.1-405b", 405e9),
        ("mixtral-8x7b", 46.7e9),
        ("mixtral-8x22b", 141e9),
        ("deepseek-v3", 671e9),
        ("qwen2.5-72b", 72.7e9),
        ("gpt3-175b", 175e9),
        // Model cards: Mistral 7B v0.1 7.24B (safetensors index), Gemma 2 9B 9.24B.
        ("mistral-7b-v0.1", 7.24e9),
        ("gemma-2-9b", 9.24e9),
        // OpenAI's gpt-oss model card, Table 1: 116.83B and 20.91B.
        ("gpt-oss-120b", 116.83e9),
        ("gpt-oss-20b", 20.91e9),
    ];
    assert_eq!(published.len(), model_presets().len());
    for (id, total) in published {
        assert_within(id, spec(id).params(), total, 0.005);
    }
}

#[test]
fn exact_counts_that_are_easy_to_get_wrong() {
    // Llama 3.1 8B: 8,030,261,248 parameters in the safetensors index.
    assert_eq!(
        spec("llama-3.1-8b").param_breakdown().total(),
        8_030_261_248
    );
    // Llama 3.1 70B: 70,553,706,496.
    assert_eq!(
        spec("llama-3.1-70b").param_breakdown().total(),
        70_553_706_496
    );
    // Mixtral 8x7B: 46,702,792,704 (router weights included, no biases).
    assert_eq!(
        spec("mixtral-8x7b").param_breakdown().total(),
        46_702_792_704
    );
}

#[test]
fn moe_active_counts() {
    // Mixtral paper (Jiang et al. 2024 §2): 47B total / 13B active; model card 46.7B / 12.9B.
    assert_within(
        "mixtral-8x7b active",
        spec("mixtral-8x7b").active_params(),
        12.9e9,
        0.005,
    );
    // Mistral announcement: 141B total, 39B active.
    assert_within(
        "mixtral-8x22b active",
        spec("mixtral-8x22b").active_params(),
        39e9,
        0.005,
    );
    // DeepSeek-V3 report: "37B activated". Counting as Mixtral's published figures do
    // (embedding and output in full, routers included) the shapes give 37.55B; without
    // the input-embedding lookup 36.63B. The published figure is rounded to two
    // digits and no single convention lands within 0.5% of both 37B and Mixtral's
    // 12.9B, so pin the computed value and allow 1.5% against the rounded one.
    let v3 = spec("deepseek-v3");
    assert_eq!(v3.param_breakdown().active(), 37_552_282_624);
    assert_within("deepseek-v3 active", v3.active_params(), 37e9, 0.015);
}

#[test]
fn dense_models_have_no_moe_split() {
    for id in ["llama-3.1-70b", "qwen2.5-72b", "gpt3-175b"] {
        let s = spec(id);
        assert_eq!(s.params(), s.active_params(), "{id}");
    }
}

#[test]
fn ids_are_unique_and_resolve() {
    let presets = model_presets();
    for (i, p) in presets.iter().enumerate() {
        assert!(presets[i + 1..].iter().all(|q| q.id != p.id), "{}", p.id);
        assert_eq!(model_preset(p.id).as_ref(), Some(&p.spec));
    }
    assert!(gpu_preset(DEFAULT_GPU_ID).is_some());
}

#[test]
fn default_scenarios_resolve_and_are_consistent() {
    for s in [
        default_scenario(),
        article_70b_scenario(),
        article_mesh_scenario(),
    ] {
        let model = s.model_spec().expect("model resolves");
        assert_eq!(s.layout.world_size(), s.cluster.world_size());
        assert_eq!(s.validate(), Ok(()));
        assert!(
            planner_core::resolve::validate::layout_rule_violations(&model, &s).is_empty(),
            "{:?}",
            planner_core::resolve::validate::layout_rule_violations(&model, &s)
        );
        assert_eq!(s.cluster.gpu, gpu_preset(DEFAULT_GPU_ID).unwrap());
    }
}

#[test]
fn article_70b_is_nominal_70e9_over_64_gpus() {
    let s = article_70b_scenario();
    let m = s.model_spec().unwrap();
    assert_eq!(m.params(), 70e9);
    assert_eq!(s.layout.dp, 64);
    assert_eq!(s.cluster.world_size(), 64);
    // DDP: 16 bytes × 70e9 = 1,120 GB on every GPU.
    let ddp_bytes = s.precision.model_state_bytes() * m.params();
    assert_eq!(ddp_bytes, 1120e9);
}

#[test]
fn article_mesh_is_512_gpus_with_16_micro_batches() {
    let s = article_mesh_scenario();
    let l = &s.layout;
    assert_eq!((l.tp, l.pp, l.cp, l.dp), (8, 4, 4, 4));
    assert_eq!(s.cluster.world_size(), 512);
    assert_eq!(s.training.seq_len, 32_768);
    assert_eq!(s.training.global_batch / (l.dp * l.micro_batch), 16);
}

#[test]
fn unknown_preset_is_named() {
    let mut s = default_scenario();
    s.model = ModelChoice::Preset("llama-9".into());
    let err = s.model_spec().unwrap_err();
    assert_eq!(err, ScenarioError::UnknownModelPreset("llama-9".into()));
    assert!(err.to_string().contains("llama-9"));
}
