//! KV cache and serving memory: the article's numbers, TP replication, MLA, the decision.

use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::{ServeDtype, Serving};
use planner_core::memory::kv_cache::{
    kv_bytes_per_sequence, kv_bytes_per_token, kv_bytes_per_token_per_gpu, kv_heads_per_gpu,
};
use planner_core::memory::serving::{
    concurrency_table, recommend, serving_plan, stage_layers, Decision, TABLE_PP, TABLE_TP,
};
use planner_core::resolve::presets::model_preset;
use proptest::prelude::*;

fn preset(id: &str) -> ModelSpec {
    model_preset(id).expect("preset exists")
}

fn llama_8b() -> ModelSpec {
    preset("llama-3.1-8b")
}

fn llama_70b() -> ModelSpec {
    preset("llama-3.1-70b")
}

fn llama_405b() -> ModelSpec {
    preset("llama-3.1-405b")
}

fn deepseek_v3() -> ModelSpec {
    preset("deepseek-v3")
}

fn h100(nodes: u32) -> Cluster {
    Cluster::of(gpu_preset("h100-sxm").expect("preset exists"), nodes)
}

#[test]
fn article_kv_numbers_exactly() {
    let t = kv_bytes_per_token(&llama_70b(), ServeDtype::Bf16);
    assert_eq!(t.value, 327_680.0);
    assert!(t.worked.contains("327,680 B"), "{}", t.worked);
    let seq = kv_bytes_per_sequence(&t, 32_768);
    assert_eq!(seq.value, 10_737_418_240.0);
    assert!(seq.worked.ends_with("10.74 GB"), "{}", seq.worked);
    assert_eq!(seq.key, "kv.per_sequence");
}

#[test]
fn gqa_heads_replicate_beyond_kv_head_count() {
    let m = llama_70b();
    assert_eq!(kv_heads_per_gpu(&m, 1), 8);
    assert_eq!(kv_heads_per_gpu(&m, 4), 2);
    assert_eq!(kv_heads_per_gpu(&m, 8), 1);
    assert_eq!(kv_heads_per_gpu(&m, 16), 1);
    let at = |tp| kv_bytes_per_token_per_gpu(&m, ServeDtype::Bf16, tp, 80).value;
    assert_eq!(at(8), 327_680.0 / 8.0);
    assert_eq!(at(16), at(8));
    assert_eq!(at(2), 327_680.0 / 2.0);
}

#[test]
fn pp_splits_layers_and_kv() {
    assert_eq!(stage_layers(80, 1), vec![80]);
    assert_eq!(stage_layers(80, 3), vec![27, 27, 26]);
    assert_eq!(stage_layers(126, 4), vec![31, 32, 32, 31]);
    assert_eq!(stage_layers(61, 4).iter().sum::<u32>(), 61);
    let m = llama_70b();
    let half = kv_bytes_per_token_per_gpu(&m, ServeDtype::Bf16, 1, 40).value;
    assert_eq!(half, 327_680.0 / 2.0);
}

#[test]
fn deepseek_v3_mla_bytes() {
    let m = deepseek_v3();
    // 61 × (512 + 64) × 2 B.
    assert_eq!(kv_bytes_per_token(&m, ServeDtype::Bf16).value, 70_272.0);
    // The latent is replicated across TP ranks.
    let tp8 = kv_bytes_per_token_per_gpu(&m, ServeDtype::Bf16, 8, 61);
    assert_eq!(tp8.value, 70_272.0);
    assert_eq!(kv_bytes_per_token(&m, ServeDtype::Fp8).value, 35_136.0);
}

#[test]
fn weights_per_gpu_follow_dtype_and_tp() {
    let m = llama_70b();
    let serving = Serving {
        tp: 8,
        pp: 1,
        ..Serving::default()
    };
    let plan = serving_plan(&m, &serving, &h100(1)).unwrap();
    let psi = m.params();
    // Norms are replicated, so weights per GPU are a little above 2Ψ/8.
    let w = plan.weights_per_gpu.value;
    assert!(w > 2.0 * psi / 8.0 && w < 2.0 * psi / 8.0 * 1.001, "{w}");
    let int4 = serving_plan(
        &m,
        &Serving {
            weight_dtype: ServeDtype::Int4,
            ..serving.clone()
        },
        &h100(1),
    )
    .unwrap();
    // INT4 linear layers, the embedding and output projection kept in BF16 (ModelOpt's lm_head
    // exclusion, vLLM's linear-only quantization): 2 × V·h / 8 bytes each.
    let b = m.param_breakdown();
    let vocab_bf16 = 2.0 * (b.embedding + b.output) as f64 * m.param_scale() / 8.0;
    let want = (w - vocab_bf16) / 4.0 + vocab_bf16;
    assert!(
        (int4.weights_per_gpu.value - want).abs() < 1.0,
        "{}",
        int4.weights_per_gpu.value
    );
    // PP puts the embedding on the first and the output on the last stage.
    let pp2 = serving_plan(
        &m,
        &Serving {
            tp: 1,
            pp: 2,
            ..serving
        },
        &h100(1),
    )
    .unwrap();
    let (s0, s1) = (&pp2.stages[0], &pp2.stages[1]);
    assert_eq!(s0.layers + s1.layers, 80);
    // Final norm (8192 params) is on the last stage only.
    assert!((s1.weights.value - s0.weights.value - 2.0 * 8192.0).abs() < 1.0);
}

#[test]
fn recommendation_llama_8b_is_replicas() {
    // 8 192-token sequences, 16 of them: one H100 holds 8B weights (16 GB) and the cache.
    let serving = Serving {
        tp: 1,
        context_len: 8192,
        target_concurrency: 16,
        ..Serving::default()
    };
    let r = recommend(&llama_8b(), &serving, &h100(1)).unwrap();
    assert_eq!(r.decision, Decision::Replicas, "{}", r.reason);
    assert_eq!((r.tp, r.pp, r.replicas), (1, 1, 8));
    // At 32 768 tokens one H100 holds only 12 sequences: 4.29 GB each in 53.9 GB.
    let long = Serving {
        context_len: 32_768,
        ..serving
    };
    let r = recommend(&llama_8b(), &long, &h100(1)).unwrap();
    assert_eq!(r.decision, Decision::TensorParallel, "{}", r.reason);
    assert_eq!(r.tp, 2);
}

#[test]
fn recommendation_llama_70b_bf16_is_tp() {
    // Usable: 0.9 × 81,559 MiB (what nvidia-smi reports for an H100) = 76.97 GB.
    // Weights 141 GB. TP 2: 70.6 GB + 2 GB workspace leaves 4.4 GB, under one 32k
    // sequence's 5.37 GB. TP 4: 39.7 GB KV pool / 2.68 GB per 32k sequence = 14 sequences.
    // TP 8: 57.3 GB / 1.34 GB = 42 sequences.
    let m = llama_70b();
    let base = Serving::default();
    let cluster = h100(1);
    let r = recommend(
        &m,
        &Serving {
            target_concurrency: 8,
            ..base.clone()
        },
        &cluster,
    )
    .unwrap();
    assert_eq!(
        (r.decision, r.tp, r.pp),
        (Decision::TensorParallel, 4, 1),
        "{}",
        r.reason
    );
    assert_eq!(r.max_concurrent_sequences, 14);
    assert_eq!(r.replicas, 2);
    let r = recommend(
        &m,
        &Serving {
            target_concurrency: 16,
            ..base
        },
        &cluster,
    )
    .unwrap();
    assert_eq!(
        (r.decision, r.tp, r.pp),
        (Decision::TensorParallel, 8, 1),
        "{}",
        r.reason
    );
    assert_eq!(r.max_concurrent_sequences, 42);
    assert!(
        r.reason.contains("TP 8 inside a node holds 42"),
        "{}",
        r.reason
    );
}

#[test]
fn recommendation_405b_bf16_needs_pp_across_two_nodes() {
    let m = llama_405b();
    let serving = Serving::default();
    let r = recommend(&m, &serving, &h100(2)).unwrap();
    assert_eq!(r.decision, Decision::PipelineAcrossNodes, "{}", r.reason);
    assert_eq!((r.tp, r.pp, r.replicas), (8, 2, 1));
    // One node alone is not enough, and the answer says how many are needed.
    let r = recommend(&m, &serving, &h100(1)).unwrap();
    assert_eq!(r.decision, Decision::DoesNotFit);
    assert_eq!((r.tp, r.pp), (8, 2));
    assert!(r.reason.contains("needs 2 nodes"), "{}", r.reason);
}

#[test]
fn table_covers_tp_by_pp_and_flags_bad_shapes() {
    let m = llama_70b();
    let cells = concurrency_table(&m, &Serving::default(), &h100(1)).unwrap();
    assert_eq!(cells.len(), TABLE_TP.len() * TABLE_PP.len());
    let cell = |tp, pp| cells.iter().find(|c| c.tp == tp && c.pp == pp).unwrap();
    // 57.3 GB / 1.34 GB per 32k sequence (see above).
    assert_eq!(cell(8, 1).max_concurrent_sequences, 42);
    assert_eq!(cell(1, 1).max_concurrent_sequences, 0);
    assert!(!cell(8, 2).valid, "16 GPUs on an 8-GPU cluster");
    assert!(cell(4, 2).valid);
}

#[test]
fn invalid_inputs_name_the_field() {
    let m = llama_70b();
    let bad = Serving {
        memory_utilization: 1.5,
        ..Serving::default()
    };
    assert_eq!(
        serving_plan(&m, &bad, &h100(1)).unwrap_err().field,
        "serving.memory_utilization"
    );
    let bad = Serving {
        pp: 0,
        ..Serving::default()
    };
    assert_eq!(
        serving_plan(&m, &bad, &h100(1)).unwrap_err().field,
        "serving.pp"
    );
    let bad = Serving {
        pp: 81,
        ..Serving::default()
    };
    assert_eq!(
        serving_plan(&m, &bad, &h100(1)).unwrap_err().field,
        "serving.pp"
    );
}

proptest! {
    #[test]
    fn concurrency_monotone_in_memory_utilization(
        a in 0.05f64..1.0, b in 0.05f64..1.0, tp_i in 0usize..4, pp_i in 0usize..3,
        ctx in 1u32..200_000,
    ) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let m = llama_70b();
        let s = |u| Serving {
            memory_utilization: u,
            tp: TABLE_TP[tp_i],
            pp: TABLE_PP[pp_i],
            context_len: ctx,
            ..Serving::default()
        };
        let c = h100(4);
        let n_lo = serving_plan(&m, &s(lo), &c).unwrap().max_concurrent_sequences.value;
        let n_hi = serving_plan(&m, &s(hi), &c).unwrap().max_concurrent_sequences.value;
        prop_assert!(n_lo <= n_hi);
    }

    #[test]
    fn per_gpu_kv_never_below_one_head(tp in 1u32..64) {
        let m = llama_70b();
        let t = kv_bytes_per_token_per_gpu(&m, ServeDtype::Bf16, tp, 80).value;
        prop_assert!(t >= 327_680.0 / 8.0);
        prop_assert!(t <= 327_680.0);
    }

    #[test]
    fn kv_grows_linearly_with_tokens(
        a in 0u32..1_000_000, b in 0u32..1_000_000, preset in 0usize..4, dtype in 0usize..4,
    ) {
        let id = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"][preset];
        let m = model_preset(id).unwrap();
        let per_token = kv_bytes_per_token(&m, ServeDtype::ALL[dtype]);
        let kv = |n| kv_bytes_per_sequence(&per_token, n).value;
        // Linear: kv(a + b) = kv(a) + kv(b), kv(0) = 0, and kv(n) = n × per-token bytes.
        prop_assert_eq!(kv(0), 0.0);
        prop_assert_eq!(kv(a + b), kv(a) + kv(b));
        prop_assert_eq!(kv(a), f64::from(a) * per_token.value);
    }
}
