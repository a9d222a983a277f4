//! Issue 43 §2: number formats carried through serving memory and time, training recipes,
//! links and exports (the formats' own byte arithmetic is tested in input/number_format.rs).

use planner_core::edges::export::{export, ExportFormat};
use planner_core::edges::link;
use planner_core::input::hardware::{gpu_preset, Cluster, GIB};
use planner_core::input::precision::{Precision, PrecisionRecipe};
use planner_core::input::scenario::{ModelChoice, Scenario, ServeDtype};
use planner_core::memory::serving::serving_plan;
use planner_core::resolve::presets::{default_scenario, model_preset};
use planner_core::serving::latency::{serving_time, ServingLoad};
use planner_core::time::cost::{CostOptions, StepModel};

/// `model` served on one `gpu` at TP 1, weights in `weights`.
fn served(model: &str, gpu: &str, weights: ServeDtype) -> Scenario {
    let mut s = default_scenario();
    s.model = ModelChoice::Preset(model.to_string());
    s.cluster = Cluster::of(gpu_preset(gpu).expect("preset"), 1);
    s.serving.tp = 1;
    s.serving.pp = 1;
    s.serving.weight_dtype = weights;
    s
}

fn weight_bytes(s: &Scenario) -> f64 {
    let model = s.model_spec().expect("preset");
    let plan = serving_plan(&model, &s.serving, &s.cluster).expect("plan");
    plan.stages[0].weights.value
}

#[test]
fn gpt_oss_as_shipped_is_mxfp4_experts_and_bf16_elsewhere() {
    for (id, card_gib) in [("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)] {
        let s = served(id, "b200", ServeDtype::Mxfp4Moe);
        let b = s.model_spec().expect("preset").param_breakdown();
        let routed = b.routed_experts_total() as f64;
        // (Ψ − routed) × 2 B + routed × 4.25 bits / 8.
        let by_hand = (b.total() as f64 - routed) * 2.0 + routed * 0.53125;
        let got = weight_bytes(&s);
        assert!((got - by_hand).abs() < 1.0, "{id}: {got} vs {by_hand}");
        // OpenAI's gpt-oss model card, Table 1, checkpoint size: 60.8 GiB and 12.8 GiB.
        let off = (got / GIB - card_gib).abs() / card_gib;
        assert!(off < 0.005, "{id}: {:.2} GiB", got / GIB);
    }
    // 120b by hand: 114,701,598,720 routed of 116,829,149,760, so
    // 2,127,551,040 × 2 + 114,701,598,720 × 0.53125 = 65,190,326,400 B = 60.71 GiB.
    let got = weight_bytes(&served("gpt-oss-120b", "b200", ServeDtype::Mxfp4Moe));
    assert!((got - 65_190_326_400.0).abs() < 1.0, "{got}");
}

#[test]
fn nvfp4_weights_count_their_scales_and_keep_the_vocab_in_bf16() {
    let s = served("llama-3.1-8b", "b200", ServeDtype::Nvfp4);
    // Llama 3.1 8B: 8,030,261,248 parameters, 2 × 128256 × 4096 = 1,050,673,152 in the
    // embedding and LM head (BF16); the rest at 4.5 bits: 6,979,588,096 × 0.5625 + 1,050,673,152 × 2.
    let by_hand = 6_979_588_096.0 * 0.5625 + 1_050_673_152.0 * 2.0;
    assert!(
        (weight_bytes(&s) - by_hand).abs() < 1.0,
        "{}",
        weight_bytes(&s)
    );
    // The plain int4 id stays 0.5 B (scales not counted); int4-g128 counts AWQ's.
    let int4 = weight_bytes(&served("llama-3.1-8b", "h100-sxm", ServeDtype::Int4));
    let awq = weight_bytes(&served("llama-3.1-8b", "h100-sxm", ServeDtype::Int4G128));
    let scales = 6_979_588_096.0 * (20.0 / 128.0 / 8.0);
    assert!((awq - int4 - scales).abs() < 1.0, "{awq} {int4}");
}

#[test]
fn fp4_prefill_runs_at_the_fp4_rate_only_on_fp4_tensor_cores() {
    let load = ServingLoad {
        prompt_tokens: 4096,
        output_tokens: 16,
        concurrency: 1,
        ..ServingLoad::default()
    };
    let compute = |gpu: &str, w: ServeDtype| {
        let t = serving_time(&served("llama-3.1-8b", gpu, w), &load).expect("time");
        (
            t.prefill.compute_time.value,
            t.prefill.attention_flops.value,
        )
    };
    // B200: FP4 GEMMs at 9 PFLOPS against BF16's 2.25: the GEMM part 4× faster, attention
    // (BF16 KV) unchanged, so prefill compute falls, but by less than 4×.
    let (bf16, _) = compute("b200", ServeDtype::Bf16);
    let (fp4, _) = compute("b200", ServeDtype::Nvfp4);
    assert!(fp4 < bf16 && fp4 > bf16 / 4.0, "{fp4} vs {bf16}");
    // H100: no FP4 tensor cores, W4A16 at the BF16 rate: the same compute time as BF16.
    let (bf16, _) = compute("h100-sxm", ServeDtype::Bf16);
    let (fp4, _) = compute("h100-sxm", ServeDtype::Nvfp4);
    assert_eq!(fp4, bf16);
    // MI355X takes MXFP4 (10.07 PFLOPS) but not NVFP4.
    let (mx, _) = compute("mi355x", ServeDtype::Mxfp4);
    let (nv, _) = compute("mi355x", ServeDtype::Nvfp4);
    assert!(mx < nv, "{mx} vs {nv}");
}

#[test]
fn training_recipes_count_both_usages_and_price_fp4_where_it_runs() {
    let bytes = |r| Precision::from_recipe(r).model_state_bytes();
    // MXFP8: BF16 2 + two MXFP8 copies 2 × 1.03125 + grads 2 + moments 8 = 14.0625.
    assert_eq!(bytes(PrecisionRecipe::Mxfp8Bf16Master), 14.0625);
    // Block FP8: 2 + 2 × (1 + 4/16384) + 2 + 8.
    assert_eq!(
        bytes(PrecisionRecipe::Fp8BlockBf16Master),
        14.0 + 8.0 / 16_384.0
    );
    // NVFP4 (16 × 16 weight blocks): 2 + 2 × (0.5 + 1/256) + 2 + 8 = 13.0078125.
    assert_eq!(bytes(PrecisionRecipe::Nvfp4Bf16Master), 13.0078125);
    let peak = |gpu: &str| {
        let mut s = default_scenario();
        s.cluster = Cluster::of(gpu_preset(gpu).expect("preset"), 8);
        s.precision = Precision::from_recipe(PrecisionRecipe::Nvfp4Bf16Master);
        let model = s.model_spec().expect("preset");
        StepModel::new(&model, &s, CostOptions::default()).peak_flops_per_s
    };
    assert_eq!(peak("gb300-nvl72"), 15.0e15);
    assert_eq!(peak("h100-sxm"), 989e12);
    assert_eq!(peak("mi355x"), 2516.6e12);
}

#[test]
fn formats_travel_in_links_and_a_kv_cache_must_be_a_cache_format() {
    let mut s = served("gpt-oss-120b", "b300", ServeDtype::Mxfp4Moe);
    // One 8-GPU node: the default layout's DP 8 × TP 8 would need eight.
    s.layout.dp = 1;
    s.serving.kv_dtype = ServeDtype::Nvfp4;
    s.precision = Precision::from_recipe(PrecisionRecipe::Mxfp8Bf16Master);
    let q = link::encode(&s);
    assert!(q.contains("serve_w=mxfp4-moe"), "{q}");
    assert_eq!(link::decode(&q), Ok(s.clone()));
    s.serving.kv_dtype = ServeDtype::Mxfp4Moe;
    let errors = s.validate().expect_err("weight format as a cache");
    assert_eq!(errors[0].field, "serve_kv");
}

#[test]
fn exports_name_the_format_or_say_the_tool_cannot_run_it() {
    let model = model_preset("llama-3.1-8b").expect("preset");
    let s = served("llama-3.1-8b", "b200", ServeDtype::Nvfp4);
    let v = export(ExportFormat::Vllm, &s, &model);
    assert!(v.text.contains("--quantization modelopt_fp4"), "{}", v.text);
    let h = served("llama-3.1-8b", "h100-sxm", ServeDtype::Nvfp4);
    let v = export(ExportFormat::Sglang, &h, &model);
    assert!(v
        .notes
        .iter()
        .any(|n| n.contains("no tensor cores for NVFP4")));
    let mut t = default_scenario();
    t.precision = Precision::from_recipe(PrecisionRecipe::Mxfp8Bf16Master);
    let m = export(ExportFormat::Megatron, &t, &model);
    assert!(m.text.contains("--fp8-recipe mxfp8"), "{}", m.text);
    // The default scenario is on H100: Transformer Engine's MXFP8 needs Blackwell.
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("needs MX-format tensor cores")));
    t.precision = Precision::from_recipe(PrecisionRecipe::Fp8BlockBf16Master);
    let m = export(ExportFormat::Megatron, &t, &model);
    assert!(m.text.contains("--fp8-recipe blockwise"));
}
