//! Serving memory as the engines size it (vLLM's profiled pool, SGLang's static
//! fraction) and sliding-window attention (per-layer KV, attention FLOPs): closed forms
//! worked by hand, and vLLM's own memory-profiling log line.

use planner_core::edges::hf_config::import_hf_config;
use planner_core::edges::link::{decode, encode};
use planner_core::input::attention_window::{
    attended_keys_sum, prefill_pairs_per_layer, windowed_layers_in,
};
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::model::{AttentionWindow, ModelSpec};
use planner_core::input::scenario::{ModelChoice, ServeDtype, Serving};
use planner_core::memory::engine_kv_pool::{
    activation_peak_bytes, requested_bytes, sglang_default_mem_fraction, vllm_blocks,
    EngineProfile, ServingEngine, GIB,
};
use planner_core::memory::serving::serving_plan;
use planner_core::memory::window_kv::kv_bytes_per_sequence_per_gpu_value;
use planner_core::resolve::presets::{default_scenario, model_preset};
use planner_core::serving::latency::{serving_time, ServingLoad};
use planner_core::time::cost::flops_per_token;

fn preset(id: &str) -> ModelSpec {
    model_preset(id).unwrap_or_else(|| panic!("preset {id}"))
}

/// The plan's profiled activation peak, bytes.
fn activation_term(plan: &planner_core::memory::serving::ServingPlan) -> f64 {
    plan.pool_terms
        .iter()
        .find(|t| t.key == "serving.activation_peak")
        .map_or(f64::NAN, |t| t.value)
}

fn h100(nodes: u32) -> Cluster {
    Cluster::of(gpu_preset("h100-sxm").expect("preset"), nodes)
}

/// vllm-project/vllm PR #10511 ("[core] overhaul memory profiling and fix backward
/// compatibility"), youkaichao's comment of 2024-12-14,
/// https://github.com/vllm-project/vllm/pull/10511 — `vllm serve meta-llama/Meta-Llama-3-8B`
/// on one H100, TP 1, default gpu_memory_utilization, max_model_len 8192 (the model's):
///
/// ```text
/// total_gpu_memory     79.22GiB
/// gpu_memory_utilization       0.90
/// the current vLLM instance can use    71.29GiB
/// model weights take   14.96GiB
/// non_torch_memory     1.79GiB
/// PyTorch activation peak memory       1.26GiB
/// available_kv_cache_memory    53.29GiB
/// ```
///
/// Inputs taken from the log as the run's facts: the device total torch reports (79.22 GiB),
/// the utilization and the measured non-torch memory (nothing in the model predicts NCCL and
/// driver allocations). Predicted: the weights (from the shapes) and the activation peak of
/// the profiling forward (vLLM v0.6 without chunked prefill profiles
/// `max_num_batched_tokens = max(max_model_len, 2048) = 8192` tokens, `vllm/config.py`
/// SchedulerConfig, with `max_num_seqs` 256), and so the pool.
#[test]
fn vllm_pool_against_its_memory_profiling_log() {
    let mut cluster = h100(1);
    cluster.gpu.memory_bytes = 79.22 * GIB;
    let serving = Serving {
        tp: 1,
        pp: 1,
        context_len: 8192,
        target_concurrency: 1,
        engine: ServingEngine::Vllm,
        engine_profile: Some(EngineProfile {
            max_num_batched_tokens: 8192,
            max_num_seqs: 256,
            non_torch_bytes: 1.79 * GIB,
            cuda_graph_bytes: 0.0,
        }),
        ..Serving::default()
    };
    // Llama 3 8B and Llama 3.1 8B share every shape (8,030,261,248 parameters).
    let model = preset("llama-3.1-8b");
    let plan = serving_plan(&model, &serving, &cluster).expect("plan");

    // 0.9 × 79.22 GiB = 71.298 GiB ("71.29GiB": the log truncates the total's digits).
    assert!((plan.usable_per_gpu.value / GIB - 71.298).abs() < 1e-9);
    // Weights: 8,030,261,248 × 2 B = 16,060,522,496 B = 14.957 GiB (log: 14.96).
    assert_eq!(plan.weights_per_gpu.value, 16_060_522_496.0);
    assert!((plan.weights_per_gpu.value / GIB - 14.96).abs() < 0.005);

    // Activation peak by hand: the MLP of one layer holds the residual and the normed
    // input (2 × 4096) and the gate/up output and SiLU product (3 × 14336) per token:
    // 8192 × 51,200 × 2 B = 838,860,800 B = 0.78125 GiB; the sampler's 256 × 128,256 × 4 B × 2
    // = 262,668,288 B is smaller. The log measured 1.26 GiB: the estimate leaves out the
    // allocator's block rounding and attention-backend temporaries.
    assert_eq!(activation_term(&plan), 838_860_800.0);

    // Pool: 71.298 − 14.957 − 0.781 − 1.79 = 53.769 GiB against the log's 53.29 GiB, +0.90%.
    // Tolerance 2%: the pool is what is left after ~18 GiB of subtractions, and the one
    // predicted runtime term (the activation peak, 2.4% of the pool as measured) is a lower
    // bound of the profiled peak; a model error beyond that would show here.
    let pool_gib = plan.kv_budget_per_gpu.value / GIB;
    assert!((pool_gib - 53.769).abs() < 0.001, "{pool_gib}");
    let error = pool_gib / 53.29 - 1.0;
    assert!(
        error.abs() < 0.02,
        "pool {pool_gib:.3} GiB vs 53.29 GiB: {error:+.4}"
    );

    // vLLM's next lines: blocks of 16 tokens × 131,072 B (32 layers × 8 KV heads × 128 × 2 × 2 B)
    // = 2 MiB each: ⌊53.769 GiB / 2 MiB⌋ = 27,529 blocks, 440,464 tokens, 53.77x at 8192.
    let per_token = plan.kv_bytes_per_token_per_gpu.value;
    assert_eq!(per_token, 131_072.0);
    let b = vllm_blocks(plan.kv_budget_per_gpu.value, per_token, 16, 8192);
    assert_eq!(b.blocks, 27_529);
    assert_eq!(b.tokens, 440_464);
    assert!((b.max_concurrency - 53.767_578_125).abs() < 1e-9);
    // From the log's own pool vLLM would hold ⌊53.29 GiB / 2 MiB⌋ = 27,284 blocks: 0.9% fewer.
    assert_eq!(vllm_blocks(53.29 * GIB, per_token, 16, 8192).blocks, 27_284);

    // The same comment's `-tp 2` run: "model weights take 7.48GiB". Norms (2 × 4096 per layer
    // and the final 4096: 266,240) are replicated, the rest split in two:
    // (8,030,261,248 − 266,240)/2 + 266,240 = 4,015,263,744 parameters × 2 B = 7.4795 GiB.
    let tp2 = serving_plan(
        &model,
        &Serving {
            tp: 2,
            ..serving.clone()
        },
        &cluster,
    )
    .expect("plan");
    assert_eq!(tp2.weights_per_gpu.value, 2.0 * 4_015_263_744.0);
    assert!((tp2.weights_per_gpu.value / GIB - 7.48).abs() < 0.005);
    // Its activation peak stayed at 1.26 GiB while the estimate halves the MLP's share
    // (8192 × (8192 + 21,504) × 2 B = 486,539,264 B): the profiled peak is not all TP-split
    // tensors, and the estimate is a lower bound there (the log's pool line is cut off).
    assert_eq!(activation_term(&tp2), 486_539_264.0);
}

#[test]
fn default_vllm_pool_is_the_configured_workspace() {
    // No profile: usable − weights − workspace, as before (Llama 3.1 70B, TP 8, H100).
    let serving = Serving::default();
    let plan = serving_plan(&preset("llama-3.1-70b"), &serving, &h100(1)).expect("plan");
    let usable = 0.9 * 81_559.0 * 1_048_576.0;
    assert_eq!(plan.usable_per_gpu.value, usable);
    assert_eq!(
        plan.kv_budget_per_gpu.value,
        usable - plan.weights_per_gpu.value - 2e9
    );
    assert_eq!(
        plan.kv_budget_per_gpu.formula,
        "usable − weights − workspace"
    );
    assert_eq!(plan.pool_terms.len(), 1);
    assert_eq!(plan.pool_terms[0].value, 2e9);
}

#[test]
fn vllm_profile_terms_by_hand() {
    // Llama 3.1 70B at TP 8, 8192 batched tokens: the layer holds 2 × 8192 + 3 × 28,672 / 8
    // = 27,136 values per token → 8192 × 27,136 × 2 B = 444,596,224 B; the sampler at vLLM's
    // default 1024 sequences holds 1024 × 128,256 × 4 B × 2 = 1,050,673,152 B, the larger.
    let model = preset("llama-3.1-70b");
    let p = EngineProfile::default();
    assert_eq!((p.max_num_batched_tokens, p.max_num_seqs), (8192, 1024));
    assert_eq!(activation_peak_bytes(&model, &p, 8), 1_050_673_152.0);
    let few = EngineProfile {
        max_num_seqs: 256,
        ..p.clone()
    };
    assert_eq!(activation_peak_bytes(&model, &few, 8), 444_596_224.0);
    // Mixtral 8x7B, TP 1, 4096 tokens, top-2 experts of 14,336: 2h + 2 × 3 × 14,336 + 2h
    // = 8192 + 86,016 + 8192 = 102,400 values per token → 4096 × 102,400 × 2 B = 838,860,800 B.
    let mixtral = preset("mixtral-8x7b");
    let small = EngineProfile {
        max_num_batched_tokens: 4096,
        max_num_seqs: 1,
        ..p.clone()
    };
    assert_eq!(activation_peak_bytes(&mixtral, &small, 1), 838_860_800.0);

    // The plan subtracts peak + non-torch + graphs from the request.
    let serving = Serving {
        engine_profile: Some(EngineProfile {
            cuda_graph_bytes: 0.5e9,
            ..p
        }),
        ..Serving::default()
    };
    let plan = serving_plan(&model, &serving, &h100(1)).expect("plan");
    let keys: Vec<&str> = plan.pool_terms.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "serving.activation_peak",
            "serving.non_torch",
            "serving.cuda_graphs"
        ]
    );
    let runtime = 1_050_673_152.0 + 1.79 * GIB + 0.5e9;
    let expected = plan.usable_per_gpu.value - plan.weights_per_gpu.value - runtime;
    assert!((plan.kv_budget_per_gpu.value - expected).abs() < 1e-3);
}

#[test]
fn sglang_static_fraction() {
    // server_args.py: tp ≥ 16 → 0.79, ≥ 8 → 0.81, ≥ 4 → 0.85, ≥ 2 → 0.87, else 0.88.
    let table: Vec<f64> = [1, 2, 3, 4, 7, 8, 15, 16, 64]
        .iter()
        .map(|&tp| sglang_default_mem_fraction(tp))
        .collect();
    assert_eq!(
        table,
        [0.88, 0.87, 0.87, 0.85, 0.85, 0.81, 0.81, 0.79, 0.79]
    );
    let memory = 81_559.0 * 1_048_576.0;
    let sglang = Serving {
        engine: ServingEngine::Sglang,
        ..Serving::default()
    };
    // TP 8: 0.81 × 85,520,809,984 B = 69,271,856,087.04 B; no workspace subtracted.
    assert_eq!(memory, 85_520_809_984.0);
    assert_eq!(requested_bytes(&sglang, memory, 8), 0.81 * memory);
    let plan = serving_plan(&preset("llama-3.1-70b"), &sglang, &h100(1)).expect("plan");
    assert_eq!(
        plan.kv_budget_per_gpu.value,
        0.81 * memory - plan.weights_per_gpu.value
    );
    assert!(plan.pool_terms.is_empty());
    // An explicit fraction, and memory in use before SGLang measures, from the profile.
    let set = Serving {
        mem_fraction_static: Some(0.9),
        engine_profile: Some(EngineProfile {
            non_torch_bytes: 1e9,
            ..EngineProfile::default()
        }),
        ..sglang
    };
    assert_eq!(requested_bytes(&set, memory, 8), 0.9 * (memory - 1e9));
}

#[test]
fn fp8_kv_doubles_the_tokens_a_pool_holds() {
    let model = preset("llama-3.1-8b");
    let bf16 = Serving {
        tp: 1,
        context_len: 8192,
        ..Serving::default()
    };
    let fp8 = Serving {
        kv_dtype: ServeDtype::Fp8,
        ..bf16.clone()
    };
    let a = serving_plan(&model, &bf16, &h100(1)).expect("plan");
    let b = serving_plan(&model, &fp8, &h100(1)).expect("plan");
    // 131,072 B → 65,536 B per token; the pool does not change.
    assert_eq!(b.kv_bytes_per_token_per_gpu.value, 65_536.0);
    assert_eq!(a.kv_budget_per_gpu.value, b.kv_budget_per_gpu.value);
    let blocks = |p: &planner_core::memory::serving::ServingPlan| {
        vllm_blocks(
            p.kv_budget_per_gpu.value,
            p.kv_bytes_per_token_per_gpu.value,
            16,
            8192,
        )
        .blocks
    };
    assert!(blocks(&b) == 2 * blocks(&a) || blocks(&b) == 2 * blocks(&a) + 1);
}

#[test]
fn windowed_layers_hold_only_the_window() {
    // Mistral 7B v0.1: every layer windowed at 4096; 2 × 8 × 128 × 2 B = 4096 B per token
    // per layer. At 32,768 tokens: 32 × 4096 B × 4096 = 536,870,912 B, not 32 × 4096 × 32,768.
    let mistral = preset("mistral-7b-v0.1");
    let at = |m: &ModelSpec, first, layers, ctx| {
        kv_bytes_per_sequence_per_gpu_value(m, ServeDtype::Bf16, 1, first, layers, ctx)
    };
    assert_eq!(at(&mistral, 0, 32, 32_768), 536_870_912.0);
    // Under the window every token is kept: 32 × 4096 × 2048 = 268,435,456 B.
    assert_eq!(at(&mistral, 0, 32, 2048), 268_435_456.0);

    // Gemma 2 9B: 42 layers, even ones local (4096), odd ones global; 2 × 8 × 256 × 2 B =
    // 8192 B per token per layer. At 8192 tokens: 8192 × (21 × 8192 + 21 × 4096) = 2,113,929,216 B.
    let gemma = preset("gemma-2-9b");
    assert_eq!(windowed_layers_in(&gemma, 0, 42), 21);
    assert_eq!(at(&gemma, 0, 42, 8192), 2_113_929_216.0);
    // The second of two stages (layers 21..42): full are 21, 23, …, 41 (11), windowed 10.
    assert_eq!(windowed_layers_in(&gemma, 21, 21), 10);
    assert_eq!(
        at(&gemma, 21, 21, 8192),
        8192.0 * (11.0 * 8192.0 + 10.0 * 4096.0)
    );

    // The serving plan uses it: Gemma 2 at 8192 tokens, TP 1.
    let serving = Serving {
        tp: 1,
        context_len: 8192,
        ..Serving::default()
    };
    let plan = serving_plan(&gemma, &serving, &h100(1)).expect("plan");
    assert_eq!(plan.kv_bytes_per_sequence_per_gpu.value, 2_113_929_216.0);
    assert_eq!(plan.kv_bytes_per_sequence.value, 2_113_929_216.0);
    let n = (plan.kv_budget_per_gpu.value / 2_113_929_216.0).floor() as u64;
    assert_eq!(plan.stages[0].max_sequences, n);
    // Without the window the same model holds fewer: 2,818,572,288 B per sequence.
    let full = ModelSpec {
        attention_window: None,
        ..gemma.clone()
    };
    let plan_full = serving_plan(&full, &serving, &h100(1)).expect("plan");
    assert_eq!(
        plan_full.kv_bytes_per_sequence_per_gpu.value,
        2_818_572_288.0
    );
    assert!(plan_full.stages[0].max_sequences < n);
}

#[test]
fn windowed_attention_flops() {
    // Causal, s = 8192, w = 4096: a windowed query attends w − w²/(2s) = 4096 − 1024 = 3072
    // keys on average (exactly Σ min(i + 1, w) / s = 3072.06), against s/2 = 4096: 3/4.
    let mistral = preset("mistral-7b-v0.1");
    let full = ModelSpec {
        attention_window: None,
        ..mistral.clone()
    };
    assert_eq!(attended_keys_sum(&mistral, 8192, true), 32.0 * 3072.0);
    let ratio = flops_per_token(&mistral, 8192, true).attention_forward
        / flops_per_token(&full, 8192, true).attention_forward;
    assert_eq!(ratio, 0.75);
    // Non-causal: min(w, s) = 4096 keys of 8192.
    assert_eq!(attended_keys_sum(&mistral, 8192, false), 32.0 * 4096.0);
    // Under the window nothing changes.
    assert_eq!(
        flops_per_token(&mistral, 2048, true).attention_forward,
        flops_per_token(&full, 2048, true).attention_forward
    );
    // Gemma 2 (half the layers windowed), s = 16,384, causal: 21 × 8192 + 21 × (4096 − 512).
    let gemma = preset("gemma-2-9b");
    assert_eq!(
        attended_keys_sum(&gemma, 16_384, true),
        21.0 * 8192.0 + 21.0 * 3584.0
    );

    // Prefill pairs of 8192 new tokens: (4096²)/2 + 4096 × 4096 = 25,165,824 against
    // 8192²/2 = 33,554,432; with 4096 cached: 4096 × 4096 = 16,777,216 against 25,165,824.
    assert_eq!(prefill_pairs_per_layer(&mistral, 8192.0, 0.0), 25_165_824.0);
    assert_eq!(
        prefill_pairs_per_layer(&mistral, 8192.0, 4096.0),
        16_777_216.0
    );
    assert_eq!(prefill_pairs_per_layer(&full, 8192.0, 0.0), 33_554_432.0);

    // The serving model's prefill attention FLOPs follow.
    let load = ServingLoad {
        prompt_tokens: 8192,
        output_tokens: 16,
        concurrency: 1,
        ..ServingLoad::default()
    };
    let scenario = |m: &ModelSpec| {
        let mut s = default_scenario();
        s.model = ModelChoice::Custom(m.clone());
        s.serving.tp = 1;
        s.serving.context_len = 8192 + 16;
        s
    };
    let windowed = serving_time(&scenario(&mistral), &load).expect("time");
    let plain = serving_time(&scenario(&full), &load).expect("time");
    let r = windowed.prefill.attention_flops.value / plain.prefill.attention_flops.value;
    assert!((r - 0.75).abs() < 1e-12, "{r}");
    assert!(windowed.prefill.compute_time.value < plain.prefill.compute_time.value);
}

/// google/gemma-2-9b config.json (the fields the importer reads, values as published).
const GEMMA2_CONFIG: &str = r#"{
  "architectures": ["Gemma2ForCausalLM"],
  "attention_bias": false,
  "head_dim": 256,
  "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 3584,
  "intermediate_size": 14336,
  "num_attention_heads": 16,
  "num_hidden_layers": 42,
  "num_key_value_heads": 8,
  "sliding_window": 4096,
  "vocab_size": 256000
}"#;

#[test]
fn hf_import_reads_windows() {
    let gemma = import_hf_config(GEMMA2_CONFIG).expect("gemma 2 imports");
    assert_eq!(
        gemma.attention_window,
        Some(AttentionWindow {
            window_tokens: 4096,
            full_every: 2
        })
    );
    assert!(gemma.tied_embeddings);
    let preset = preset("gemma-2-9b");
    assert_eq!(gemma.param_breakdown(), preset.param_breakdown());

    // layer_types (GPT-OSS style: sliding, full, sliding, …) on a Mistral config.
    let with_types = |types: &str| {
        format!(
            r#"{{"architectures": ["MistralForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
            "num_hidden_layers": 4, "intermediate_size": 1024, "vocab_size": 1000,
            "sliding_window": 128, "layer_types": {types}}}"#
        )
    };
    let alt = import_hf_config(&with_types(
        r#"["sliding_attention", "full_attention", "sliding_attention", "full_attention"]"#,
    ))
    .expect("alternating");
    assert_eq!(
        alt.attention_window,
        Some(AttentionWindow {
            window_tokens: 128,
            full_every: 2
        })
    );
    let none = import_hf_config(&with_types(
        r#"["full_attention", "full_attention", "full_attention", "full_attention"]"#,
    ))
    .expect("all full");
    assert_eq!(none.attention_window, None);
    let irregular = import_hf_config(&with_types(
        r#"["sliding_attention", "full_attention", "full_attention", "sliding_attention"]"#,
    ))
    .expect_err("irregular");
    assert!(
        irregular.to_string().contains("`layer_types`"),
        "{irregular}"
    );
    let short = import_hf_config(&with_types(r#"["sliding_attention"]"#)).expect_err("length");
    assert!(short.to_string().contains("`layer_types`"), "{short}");

    // Mistral v0.1: every layer windowed; a window of 0 is refused by name.
    let mistral = r#"{"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
        "intermediate_size": 14336, "vocab_size": 32000, "sliding_window": 4096}"#;
    let m = import_hf_config(mistral).expect("mistral");
    assert_eq!(m.attention_window, preset_window("mistral-7b-v0.1"));
    let zero =
        import_hf_config(&mistral.replace("\"sliding_window\": 4096", "\"sliding_window\": 0"))
            .expect_err("zero window");
    assert!(zero.to_string().contains("`sliding_window`"), "{zero}");
    // Qwen2 windows only with use_sliding_window, and then not periodically.
    let qwen = r#"{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
        "num_hidden_layers": 4, "intermediate_size": 1024, "vocab_size": 1000,
        "sliding_window": 4096, "use_sliding_window": false}"#;
    assert_eq!(import_hf_config(qwen).expect("qwen").attention_window, None);
    let on = import_hf_config(&qwen.replace("false", "true")).expect_err("max_window_layers");
    assert!(on.to_string().contains("`max_window_layers`"), "{on}");
}

fn preset_window(id: &str) -> Option<AttentionWindow> {
    preset(id).attention_window
}

#[test]
fn links_carry_engine_and_window_and_refuse_bad_values() {
    let mut s = default_scenario();
    s.serving.engine = ServingEngine::Sglang;
    s.serving.mem_fraction_static = Some(0.85);
    s.serving.engine_profile = Some(EngineProfile {
        max_num_batched_tokens: 4096,
        max_num_seqs: 128,
        non_torch_bytes: 1.5e9,
        cuda_graph_bytes: 0.25e9,
    });
    let q = encode(&s);
    assert!(q.contains("serve_engine=sglang"), "{q}");
    assert!(q.contains("serve_memfrac=0.85"), "{q}");
    assert!(
        q.contains("serve_profile=4096%2C128%2C1500000000%2C250000000"),
        "{q}"
    );
    assert_eq!(decode(&q), Ok(s.clone()));
    // The default scenario writes none of them.
    let plain = encode(&default_scenario());
    assert!(
        !plain.contains("serve_engine") && !plain.contains("serve_profile"),
        "{plain}"
    );

    let mut custom = default_scenario();
    custom.model = ModelChoice::Custom(preset("gemma-2-9b"));
    let q = encode(&custom);
    assert!(
        q.contains("window=4096") && q.contains("full_every=2"),
        "{q}"
    );
    assert_eq!(decode(&q), Ok(custom));

    for (query, field) in [
        ("v=1&model=llama-3.1-8b&serve_engine=trt", "serve_engine"),
        ("v=1&model=llama-3.1-8b&serve_memfrac=1.5", "serve_memfrac"),
        ("v=1&model=llama-3.1-8b&serve_memfrac=nan", "serve_memfrac"),
        ("v=1&model=llama-3.1-8b&serve_profile=1,2,3", "serve_profile"),
        ("v=1&model=llama-3.1-8b&serve_profile=0,256,0,0", "serve_profile"),
        ("v=1&model=llama-3.1-8b&serve_profile=8192,256,-1,0", "serve_profile"),
        ("v=1&model=llama-3.1-8b&serve_profile=8192,256,1e300,0", "serve_profile"),
        (
            "v=1&model=custom&layers=4&hidden=512&heads=8&ffn=1024&vocab=1000&window=0",
            "window",
        ),
        (
            "v=1&model=custom&layers=4&hidden=512&heads=8&ffn=1024&vocab=1000&window=64&full_every=5",
            "full_every",
        ),
    ] {
        let errors = decode(query).expect_err(query);
        assert!(
            errors.iter().any(|e| e.field == field),
            "{query}: {errors:?}"
        );
    }
}

#[test]
fn exports_carry_the_engine_settings() {
    use planner_core::edges::export::{export, ExportFormat};
    let mut s = default_scenario();
    let model = preset("llama-3.1-70b");
    s.model = ModelChoice::Preset("llama-3.1-70b".into());
    // Default (vLLM accounting): both commands keep the one utilization figure.
    let sg = export(ExportFormat::Sglang, &s, &model);
    assert!(sg.text.contains("--mem-fraction-static 0.9"), "{}", sg.text);
    // SGLang accounting at TP 8: SGLang's own default, 0.81.
    s.serving.engine = ServingEngine::Sglang;
    let sg = export(ExportFormat::Sglang, &s, &model);
    assert!(
        sg.text.contains("--mem-fraction-static 0.81"),
        "{}",
        sg.text
    );
    s.serving.mem_fraction_static = Some(0.85);
    let sg = export(ExportFormat::Sglang, &s, &model);
    assert!(
        sg.text.contains("--mem-fraction-static 0.85"),
        "{}",
        sg.text
    );
    // vLLM with a profile: the batched-token budget it was sized for, and FP8 KV.
    s.serving.engine = ServingEngine::Vllm;
    s.serving.kv_dtype = ServeDtype::Fp8;
    s.serving.engine_profile = Some(EngineProfile::default());
    let v = export(ExportFormat::Vllm, &s, &model);
    assert!(
        v.text.contains("--gpu-memory-utilization 0.9"),
        "{}",
        v.text
    );
    assert!(v.text.contains("--kv-cache-dtype fp8"), "{}", v.text);
    assert!(
        v.text.contains("--max-num-batched-tokens 8192"),
        "{}",
        v.text
    );
    // Target concurrency 16 against the profile's 1024 sequences: said in a note.
    assert!(
        v.notes.iter().any(|n| n.contains("1024 sequences")),
        "{:?}",
        v.notes
    );
}
