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
        // Issue 43 §4's presets, each checked closer in its own test below: model cards and
        // checkpoints (Llama 3.2 1.24B / 3.21B, Qwen3 safetensors totals, DeepSeek-R1 671B,
        // Gemma 3 1B's 1.0B checkpoint and 4B-27B text decoders, Table 1's embedding +
        // non-embedding); Llama 4 Scout's text decoder and Kimi K2 are pinned in their tests.
        ("llama-3.2-1b", 1.2358e9),
        ("llama-3.2-3b", 3.21e9),
        ("llama-4-scout", 107.77e9),
        ("qwen3-0.6b", 0.596e9),
        ("qwen3-1.7b", 1.7206e9),
        ("qwen3-4b", 4.0225e9),
        ("qwen3-8b", 8.19e9),
        ("qwen3-14b", 14.77e9),
        ("qwen3-32b", 32.76e9),
        ("qwen3-30b-a3b", 30.5e9),
        ("qwen3-235b-a22b", 235e9),
        ("deepseek-r1", 671e9),
        ("gemma-3-1b", 1.0e9),
        ("gemma-3-4b", 3.88e9),
        ("gemma-3-12b", 11.77e9),
        ("gemma-3-27b", 27.0e9),
        ("kimi-k2", 1.0264e12),
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

/// Issue 43 §4: `id`'s count against a checkpoint's published count (the Hub's safetensors
/// parameter total, what the model page's "Model size" rounds), within 0.1%, and exactly once the
/// `unmodelled` tensors the preset leaves out (q/k norms, Gemma's extra norms) are added.
fn checkpoint_count(id: &str, published: u64, unmodelled: u64) {
    let total = spec(id).param_breakdown().total();
    assert_eq!(total + unmodelled, published, "{id}");
    assert_within(id, total as f64, published as f64, 0.001);
}

#[test]
fn llama_3_2_1b_count() {
    // meta-llama/Llama-3.2-1B safetensors: 1,235,814,400 (page "1.24B params"; the card's
    // "1.23B" is below its own checkpoint). By hand: embedding 128256·2048 = 262,668,288 (tied);
    // a layer: q, o 2·2048·2048 + k, v 2·2048·512 + FFN 3·2048·8192 + norms 2·2048 = 60,821,504;
    // 16 layers 973,144,064 + final norm 2048 + embedding = 1,235,814,400.
    checkpoint_count("llama-3.2-1b", 1_235_814_400, 0);
}

#[test]
fn llama_3_2_3b_count() {
    // meta-llama/Llama-3.2-3B safetensors 3,212,749,824; model card "3B (3.21B)".
    checkpoint_count("llama-3.2-3b", 3_212_749_824, 0);
    assert_within(
        "llama-3.2-3b card",
        spec("llama-3.2-3b").params(),
        3.21e9,
        0.001,
    );
}

#[test]
fn llama_4_scout_count() {
    // The text decoder by hand: embedding and head 2·202048·5120 = 2,068,971,520; a layer:
    // attention 2·5120·5120 + 2·5120·1024 = 62,914,560, 17 experts 17·3·5120·8192 =
    // 2,139,095,040, router 5120·16 = 81,920, norms 10,240: 2,202,101,760; ×48 +
    // final norm 5120 = 107,769,861,120. Meta's card ("17B active, 109B total") counts the vision
    // encoder too, which the preset leaves out: 1.1% under the card, 17.17B active as stated.
    let s = spec("llama-4-scout");
    assert_eq!(s.param_breakdown().total(), 107_769_861_120);
    assert_within("llama-4-scout total", s.params(), 109e9, 0.012);
    assert_within("llama-4-scout active", s.active_params(), 17e9, 0.011);
}

#[test]
fn qwen3_0_6b_count() {
    // Qwen/Qwen3-0.6B safetensors 596,049,920 (card "0.6B", non-embedding "0.44B"); the preset
    // leaves out q_norm and k_norm: 28 layers × 2 × 128 = 7,168.
    checkpoint_count("qwen3-0.6b", 596_049_920, 28 * 256);
}

#[test]
fn qwen3_1_7b_count() {
    // Qwen/Qwen3-1.7B safetensors 1,720,574,976 (card "1.7B"); q/k norms 28 × 256.
    checkpoint_count("qwen3-1.7b", 1_720_574_976, 28 * 256);
}

#[test]
fn qwen3_4b_count() {
    // Qwen/Qwen3-4B safetensors 4,022,468,096 (card "4.0B"); q/k norms 36 × 256.
    checkpoint_count("qwen3-4b", 4_022_468_096, 36 * 256);
}

#[test]
fn qwen3_8b_count() {
    // Qwen/Qwen3-8B safetensors 8,190,735,360 (card "8.2B", non-embedding "6.95B"); q/k norms
    // 36 × 256. Non-embedding by hand: 8,190,726,144 − 2 · 151936 · 4096 = 6,946,066,432.
    checkpoint_count("qwen3-8b", 8_190_735_360, 36 * 256);
    let b = spec("qwen3-8b").param_breakdown();
    assert_eq!(b.total() - b.embedding - b.output, 6_946_066_432);
}

#[test]
fn qwen3_14b_count() {
    // Qwen/Qwen3-14B safetensors 14,768,307,200 (card "14.8B"); q/k norms 40 × 256.
    checkpoint_count("qwen3-14b", 14_768_307_200, 40 * 256);
}

#[test]
fn qwen3_32b_count() {
    // Qwen/Qwen3-32B safetensors 32,762,123,264 (card "32.8B"); q/k norms 64 × 256.
    checkpoint_count("qwen3-32b", 32_762_123_264, 64 * 256);
}

#[test]
fn qwen3_30b_a3b_count() {
    // Qwen/Qwen3-30B-A3B safetensors 30,532,122,624 (card "30.5B, 3.3B activated"); q/k norms
    // 48 × 256. Active by hand: total − 48 layers × 120 idle experts × 3·2048·768 = 3,353,020,416.
    checkpoint_count("qwen3-30b-a3b", 30_532_122_624, 48 * 256);
    assert_eq!(
        spec("qwen3-30b-a3b").param_breakdown().active(),
        3_353_020_416
    );
}

#[test]
fn qwen3_235b_a22b_count() {
    // Qwen/Qwen3-235B-A22B safetensors 235,093,634,560 (card "235B, 22B activated"); q/k norms
    // 94 × 256.
    checkpoint_count("qwen3-235b-a22b", 235_093_634_560, 94 * 256);
    assert_within(
        "qwen3-235b-a22b active",
        spec("qwen3-235b-a22b").active_params(),
        22e9,
        0.01,
    );
}

#[test]
fn deepseek_r1_count() {
    // deepseek-ai/DeepSeek-R1 card: "671B total, 37B activated", V3's shapes (MTP module aside).
    let r1 = spec("deepseek-r1");
    assert_within("deepseek-r1", r1.params(), 671e9, 0.001);
    let v3 = spec("deepseek-v3");
    assert_eq!(r1.param_breakdown(), v3.param_breakdown());
    assert_eq!(r1.name, "DeepSeek-R1");
}

#[test]
fn gemma_3_1b_count() {
    // google/gemma-3-1b-pt safetensors 999,885,952; the preset leaves out q/k norms (2·256) and
    // the post-attention / post-FFN norms (2·1152): 26 × 2,816 = 73,216. Gemma 3 report Table 1:
    // 302M embedding, 698M non-embedding.
    checkpoint_count("gemma-3-1b", 999_885_952, 26 * 2816);
    let b = spec("gemma-3-1b").param_breakdown();
    assert_within(
        "gemma-3-1b non-embedding",
        (b.total() - b.embedding) as f64,
        698e6,
        0.001,
    );
}

/// A Gemma 3 preset's non-embedding count against the Gemma 3 technical report's Table 1 (the
/// text decoder; its 417M vision encoder is not modelled).
fn gemma3_non_embedding(id: &str, table_1: f64, by_hand: u64) {
    let b = spec(id).param_breakdown();
    assert_eq!(b.total() - b.embedding, by_hand, "{id}");
    assert_within(id, by_hand as f64, table_1, 0.001);
}

#[test]
fn gemma_3_4b_count() {
    // A layer: q, o 2·2560·2048 + k, v 2·2560·1024 + FFN 3·2560·10240 + norms 2·2560 =
    // 94,376,960; × 34 + final norm 2560 = 3,208,819,200 (Table 1: 3,209M).
    gemma3_non_embedding("gemma-3-4b", 3_209e6, 3_208_819_200);
}

#[test]
fn gemma_3_12b_count() {
    // A layer: 2·3840·4096 + 2·3840·2048 + 3·3840·15360 + 2·3840 = 224,140,800; × 48 + 3840
    // = 10,758,762,240 (Table 1: 10,759M).
    gemma3_non_embedding("gemma-3-12b", 10_759e6, 10_758_762_240);
}

#[test]
fn gemma_3_27b_count() {
    // A layer: 2·5376·4096 + 2·5376·2048 + 3·5376·21504 + 2·5376 = 412,887,552; × 62 + 5376
    // = 25,599,033,600 (Table 1: 25,600M).
    gemma3_non_embedding("gemma-3-27b", 25_600e6, 25_599_033_600);
}

#[test]
fn kimi_k2_count() {
    // moonshotai/Kimi-K2-Instruct card: "1T total, 32B activated" (rounded to 1 and 2 digits,
    // so 0.1% cannot be checked against it). By hand: 60 MoE layers of 385 experts ·
    // 3·7168·2048 = 44,040,192 each; the count is pinned and lies within the card's rounding.
    let k2 = spec("kimi-k2");
    assert_eq!(k2.param_breakdown().total(), 1_026_408_209_408);
    assert_within("kimi-k2 total", k2.params(), 1e12, 0.05);
    assert_within("kimi-k2 active", k2.active_params(), 32e9, 0.05);
}
