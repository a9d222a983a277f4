//! Serving time model: decode roofline, prefill FLOPs, continuous batching, queueing.

use planner_core::input::collective::Collective;
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::scenario::{ModelChoice, Scenario, ServeDtype};
use planner_core::memory::kv_cache;
use planner_core::memory::serving::serving_plan;
use planner_core::parallel::topology::{GroupKind, GroupPlacement};
use planner_core::resolve::presets::{article_mesh_scenario, model_preset};
use planner_core::serving::closed_loop::{schweitzer_residence_s, solve};
use planner_core::serving::custom_all_reduce;
use planner_core::serving::kernel_gaps;
use planner_core::serving::latency::{
    expected_distinct_experts, serving_time, Bound, ServingLoad, ServingTime,
};
use planner_core::serving::window_decode::mean_min_window;
use planner_core::serving::window_prefill::{stage_prefill_run, sum_min_window_over_run};
use planner_core::time::collectives::CommModel;
use planner_core::time::cost::{flops_per_token, CostOptions, StepModel};
use proptest::prelude::*;

/// `model` on `nodes` H100 nodes, one replica of TP `tp` × PP `pp`.
fn scenario(model: &str, nodes: u32, tp: u32, pp: u32) -> Scenario {
    let mut s = article_mesh_scenario();
    s.model = ModelChoice::Preset(model.to_string());
    s.cluster = Cluster::of(gpu_preset("h100-sxm").expect("preset"), nodes);
    s.serving.tp = tp;
    s.serving.pp = pp;
    s
}

fn load(prompt: u32, output: u32, concurrency: u32) -> ServingLoad {
    ServingLoad {
        prompt_tokens: prompt,
        output_tokens: output,
        concurrency,
        ..ServingLoad::default()
    }
}

/// Bytes one token moves through one Llama 3.1 8B layer's memory-bound kernels at TP 1 with
/// BF16 activations and a BF16 cache (serving/layer_traffic.rs): two fused add + RMSNorm
/// 2 × 4 × 4096 × 2, RoPE on q and k 2 × (4096 + 1024) × 2, the cache write 2 × 1024 × (2 + 2),
/// SiLU-and-mul 3 × 14336 × 2: 65,536 + 20,480 + 8,192 + 86,016 = 180,224 B.
const LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER: f64 = 180_224.0;

fn all_finite(t: &ServingTime) -> bool {
    t.terms().iter().all(|x| x.value.is_finite())
}

#[test]
fn memory_bound_decode_step_is_bytes_over_bandwidth() {
    // Llama 3.1 8B, BF16 weights and KV, one H100, batch 1.
    let s = scenario("llama-3.1-8b", 1, 1, 1);
    let l = load(1024, 256, 1);
    let t = serving_time(&s, &l).expect("valid");
    let model = model_preset("llama-3.1-8b").expect("preset");
    let plan = serving_plan(&model, &s.serving, &s.cluster).expect("plan");
    // The step streams every weight but the input embedding table, whose lookup reads one row
    // of h BF16 values for the one token (untied Llama 3.1: the output projection is its own).
    let table = 2.0 * model.param_breakdown().embedding as f64 * model.param_scale();
    let row = 2.0 * f64::from(model.hidden) * model.param_scale();
    let weights = plan.weights_per_gpu.value - table + row;
    let kv_per_token =
        kv_cache::kv_bytes_per_token_per_gpu_value(&model, ServeDtype::Bf16, 1, model.layers);
    // Mean cached tokens over the output: P + (O − 1)/2.
    let kv = kv_per_token * (1024.0 + 255.0 / 2.0);
    // Streamed at the achievable 90% of the 3.35 TB/s datasheet bandwidth
    // (CostOptions::hbm_achievable_fraction, the training model's streaming figure).
    // The one token's activations through the 32 layers' memory-bound kernels.
    let traffic = 32.0 * LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER;
    let expected = (weights + kv + traffic) / (0.9 * 3.35e12);
    assert_eq!(t.decode.bound, Bound::Memory);
    assert!((t.decode.weight_bytes.value - weights).abs() <= 1e-9 * weights);
    assert!((t.decode.kv_bytes.value - kv).abs() <= 1e-6 * kv);
    assert!((t.decode.memory_time.value - expected).abs() <= 1e-12 * expected);
    // One GPU: no communication, so the step is the memory time plus the 32 layers' kernel
    // launches: 32 × 10 kernels × 1.3 µs = 416 µs (serving/kernel_gaps.rs).
    assert_eq!(t.decode.comm_time.value, 0.0);
    assert!(close(
        t.decode.kernel_gaps.value,
        32.0 * 10.0 * 1.3e-6,
        1e-12
    ));
    assert!(close(
        t.decode.time.value,
        t.decode.memory_time.value + 416e-6,
        1e-12
    ));
    // ~16 GB of weights at 3.35 TB/s: about 5 ms.
    assert!(expected > 4e-3 && expected < 6e-3, "{expected}");
}

#[test]
fn an_mi300x_streams_at_its_measured_copy_bandwidth() {
    // Llama 3.1 8B on one MI300X, batch 1: memory-bound, so the step is bytes over the
    // BabelStream Copy bandwidth Azure measured on ND MI300X v5 (4.11 TB/s), not 0.9 × 5.3.
    let mut s = scenario("llama-3.1-8b", 1, 1, 1);
    s.cluster = Cluster::of(gpu_preset("mi300x").expect("preset"), 1);
    let l = load(1024, 256, 1);
    let t = serving_time(&s, &l).expect("valid");
    let model = model_preset("llama-3.1-8b").expect("preset");
    let plan = serving_plan(&model, &s.serving, &s.cluster).expect("plan");
    let kv_per_token =
        kv_cache::kv_bytes_per_token_per_gpu_value(&model, ServeDtype::Bf16, 1, model.layers);
    // Less the embedding table, plus the one row a token looks up.
    let table = 2.0 * model.param_breakdown().embedding as f64 * model.param_scale();
    let row = 2.0 * f64::from(model.hidden) * model.param_scale();
    let bytes = plan.weights_per_gpu.value - table
        + row
        + kv_per_token * (1024.0 + 255.0 / 2.0)
        + 32.0 * LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER;
    let expected = bytes / 4.11e12;
    assert_eq!(t.decode.bound, Bound::Memory);
    assert!((t.decode.memory_time.value - expected).abs() <= 1e-9 * expected);
    // An H100 keeps the 0.9 default.
    let h100 = StepModel::new(
        &model,
        &scenario("llama-3.1-8b", 1, 1, 1),
        CostOptions::default(),
    );
    assert!((h100.hbm_streaming_bytes_per_s() - 0.9 * 3.35e12).abs() < 1.0);
}

#[test]
fn an_mi300x_gemm_reaches_its_measured_share_of_peak() {
    // ml-engineering's MAMF table: MI300X BF16 51.4% of peak against the H100 SXM's 80.3%,
    // so the default curve's 0.75 becomes 0.75 × 0.514 / 0.803 on an MI300X; its FP8 GEMMs
    // reach Azure's hipBLASLt 1159.23 of 2615 TFLOPS relative to that BF16 share.
    let model = model_preset("llama-3.1-8b").expect("preset");
    let mut s = scenario("llama-3.1-8b", 1, 1, 1);
    s.cluster = Cluster::of(gpu_preset("mi300x").expect("preset"), 1);
    let step = StepModel::new(&model, &s, CostOptions::default());
    let max = step.options.gemm.max_fraction;
    assert!((max - 0.75 * 0.514 / 0.803).abs() < 1e-12, "{max}");
    let fp8 = planner_core::input::hardware::gpu_traits("mi300x")
        .compute
        .fp8_gemm_relative_to_bf16;
    assert!((max * fp8 - 0.75 * (1159.23 / 2615.0) / 0.803).abs() < 1e-12);
    let h100 = StepModel::new(
        &model,
        &scenario("llama-3.1-8b", 1, 1, 1),
        CostOptions::default(),
    );
    assert_eq!(h100.options.gemm.max_fraction, 0.75);
}

#[test]
fn prefill_flops_equal_the_closed_form() {
    let model = model_preset("llama-3.1-8b").expect("preset");
    let s = scenario("llama-3.1-8b", 1, 1, 1);
    for (prompt, chunk, hit) in [(4096u32, 512u32, 0.0), (3000, 1024, 0.5), (7, 2048, 0.0)] {
        let l = ServingLoad {
            prompt_tokens: prompt,
            prefill_chunk_tokens: chunk,
            prefix_hit_rate: hit,
            ..load(prompt, 16, 1)
        };
        let t = serving_time(&s, &l).expect("valid");
        let p = f64::from(prompt);
        let cached = (p * hit).floor();
        let new = p - cached;
        assert_eq!(t.prefill.new_tokens as f64, new);
        assert_eq!(t.prefill.chunks, (new as u64).div_ceil(u64::from(chunk)));
        // 2·N_active per token, N without the input embedding lookup.
        let b = model.param_breakdown();
        let n_matmul = (b.active() - b.embedding) as f64;
        let gemm = 2.0 * n_matmul * new;
        assert!((t.prefill.gemm_flops.value - gemm).abs() <= 1e-9 * gemm);
        // Causal attention, MHA-equivalent form 2·2·s²·h·L/2 with h = a·d_head (Llama: 32 × 128).
        let h = f64::from(model.heads) * f64::from(model.head_dim);
        let attn = 2.0 * 2.0 * (p * p - cached * cached) * h * f64::from(model.layers) / 2.0;
        assert!(
            (t.prefill.attention_flops.value - attn).abs() <= 1e-9 * attn,
            "{} vs {attn}",
            t.prefill.attention_flops.value
        );
        // The same as cost.rs's per-token count.
        let f = flops_per_token(&model, 1, false);
        assert!((f.dense_forward * new - gemm).abs() <= 1e-9 * gemm);
        assert!(t.prefill.time.value >= t.prefill.compute_time.value);
    }
}

#[test]
fn prefix_hits_remove_prompt_tokens_from_prefill() {
    let s = scenario("llama-3.1-70b", 1, 8, 1);
    let cold = serving_time(&s, &load(8192, 128, 8)).expect("valid");
    let warm = serving_time(
        &s,
        &ServingLoad {
            prefix_hit_rate: 0.75,
            ..load(8192, 128, 8)
        },
    )
    .expect("valid");
    assert_eq!(warm.prefill.new_tokens, 2048);
    assert!(warm.prefill.time.value < cold.prefill.time.value);
    assert!(warm.ttft.value < cold.ttft.value);
    // A full hit still recomputes the last token (vLLM).
    let full = serving_time(
        &s,
        &ServingLoad {
            prefix_hit_rate: 1.0,
            ..load(8192, 128, 8)
        },
    )
    .expect("valid");
    assert_eq!(full.prefill.new_tokens, 1);
}

#[test]
fn tpot_rises_monotonically_with_concurrency() {
    for (model, nodes, tp, pp) in [
        ("llama-3.1-70b", 1, 8, 1),
        ("llama-3.1-70b", 2, 8, 2),
        ("mixtral-8x7b", 1, 2, 1),
        ("llama-3.1-8b", 1, 1, 1),
    ] {
        let s = scenario(model, nodes, tp, pp);
        let mut last = 0.0;
        let mut last_thr = 0.0;
        for c in 1..=96u32 {
            let t = serving_time(&s, &load(1024, 256, c)).expect("valid");
            assert!(
                t.tpot.value >= last,
                "{model} c={c}: {} < {last}",
                t.tpot.value
            );
            assert!(all_finite(&t));
            last = t.tpot.value;
            if c == 1 || c == 96 {
                assert!(t.throughput_per_replica.value > last_thr);
                last_thr = t.throughput_per_replica.value;
            }
        }
    }
}

#[test]
fn int4_weights_speed_up_a_memory_bound_step_by_the_byte_ratio() {
    let bf16 = scenario("llama-3.1-8b", 1, 1, 1);
    let mut int4 = bf16.clone();
    int4.serving.weight_dtype = ServeDtype::Int4;
    let l = load(1024, 256, 1);
    let a = serving_time(&bf16, &l).expect("valid");
    let b = serving_time(&int4, &l).expect("valid");
    assert_eq!(a.decode.bound, Bound::Memory);
    assert_eq!(b.decode.bound, Bound::Memory);
    // The linear layers stream a quarter of the bytes; the embedding row and the output
    // projection stay in BF16 (ModelOpt's lm_head exclusion, vLLM's linear-only quantization).
    let model = model_preset("llama-3.1-8b").expect("preset");
    let pb = model.param_breakdown();
    let (table, output) = (
        2.0 * pb.embedding as f64 * model.param_scale(),
        2.0 * pb.output as f64 * model.param_scale(),
    );
    let row = 2.0 * f64::from(model.hidden) * model.param_scale();
    let linear_bf16 = a.decode.weight_bytes.value - row - output;
    let want = linear_bf16 / 4.0 + row + output;
    assert!(
        (b.decode.weight_bytes.value - want).abs() <= 1e-9 * want,
        "{} vs {want}",
        b.decode.weight_bytes.value
    );
    assert!(table > 0.0);
    let ratio = (a.decode.weight_bytes.value + a.decode.kv_bytes.value)
        / (b.decode.weight_bytes.value + b.decode.kv_bytes.value);
    // The kernel launches and the activation traffic (BF16 activations, BF16 cache written)
    // cost the same at any weight dtype: the byte ratio holds for the rest.
    let launches = a.decode.kernel_gaps.value;
    assert_eq!(launches, b.decode.kernel_gaps.value);
    assert_eq!(a.decode.traffic_time.value, b.decode.traffic_time.value);
    let fixed = launches + a.decode.traffic_time.value;
    let speedup = (a.decode.time.value - fixed) / (b.decode.time.value - fixed);
    assert!(
        (speedup - ratio).abs() < 1e-12 * ratio,
        "{speedup} vs {ratio}"
    );
    // Both weights and KV in INT4: the 2 / 0.5 byte ratio on all but the BF16 output
    // projection and embedding row.
    int4.serving.kv_dtype = ServeDtype::Int4;
    let c = serving_time(&int4, &l).expect("valid");
    let speedup = (a.decode.time.value - fixed)
        / (c.decode.time.value - launches - c.decode.traffic_time.value);
    let by_bytes = (a.decode.weight_bytes.value + a.decode.kv_bytes.value)
        / (c.decode.weight_bytes.value + c.decode.kv_bytes.value);
    assert!((speedup - by_bytes).abs() < 1e-12, "{speedup}");
    assert!(by_bytes > 3.0 && by_bytes < 4.0, "{by_bytes}");
}

#[test]
fn ttft_grows_with_utilisation_and_is_refused_at_saturation() {
    let s = scenario("llama-3.1-70b", 1, 8, 1);
    let base = serving_time(&s, &load(4096, 256, 16)).expect("valid");
    // The prefill server's service: the prompt's chunk steps shared with the 15 other decodes.
    let service = base.prefill_under_load.value;
    let mut last = 0.0;
    for rho in [0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999_999] {
        let l = ServingLoad {
            arrival_rate_per_s: Some(rho / service),
            graph_padded_batch: None,
            ..load(4096, 256, 16)
        };
        let t = serving_time(&s, &l).expect("ρ < 1 is served");
        assert!((t.utilisation.value - rho).abs() < 1e-9);
        assert!(t.ttft.value > last, "ρ {rho}");
        assert!(t.ttft_p99.value >= t.ttft_p90.value);
        assert!(t.ttft_p90.value >= service);
        assert!(all_finite(&t));
        last = t.ttft.value;
    }
    // Near saturation the wait is huge but finite.
    assert!(last > 1e4 * service);
    for rho in [1.0, 1.5, 1e6] {
        let l = ServingLoad {
            arrival_rate_per_s: Some(rho / service),
            graph_padded_batch: None,
            ..load(4096, 256, 16)
        };
        let e = serving_time(&s, &l).expect_err("ρ ≥ 1 is refused");
        assert_eq!(e.field, "load.arrival_rate_per_s");
        assert!(e.reason.contains("ρ"), "{}", e.reason);
    }
    // Closed-loop TTFT grows with concurrency (utilisation grows with it).
    let mut last = 0.0;
    for c in [1u32, 4, 16, 64] {
        let t = serving_time(&s, &load(4096, 256, c)).expect("valid");
        assert!(t.utilisation.value > last);
        last = t.utilisation.value;
    }
}

#[test]
fn distinct_experts_match_a_brute_force() {
    // Every top-k subset equally likely for each token, tokens independent.
    for (e, k) in [(4u32, 1u32), (4, 2), (6, 2), (5, 3), (8, 2)] {
        let subsets: Vec<u32> = (0u32..(1 << e)).filter(|m| m.count_ones() == k).collect();
        for b in 1..=3u32 {
            let n = subsets.len();
            let combos = n.pow(b);
            let mut total = 0u64;
            for idx in 0..combos {
                let mut i = idx;
                let mut union = 0u32;
                for _ in 0..b {
                    union |= subsets[i % n];
                    i /= n;
                }
                total += u64::from(union.count_ones());
            }
            let brute = total as f64 / combos as f64;
            let formula = expected_distinct_experts(e, k, f64::from(b));
            assert!(
                (brute - formula).abs() < 1e-12,
                "E={e} k={k} b={b}: {brute} vs {formula}"
            );
        }
    }
    // Mixtral at batch 1 reads 2 of 8 experts; a large batch reads nearly all.
    let s = scenario("mixtral-8x7b", 1, 2, 1);
    let one = serving_time(&s, &load(512, 64, 1)).expect("valid");
    let many = serving_time(&s, &load(512, 64, 256)).expect("valid");
    let d = one.decode.distinct_experts.as_ref().expect("moe");
    assert!((d.value - 2.0).abs() < 1e-12);
    assert!(one.decode.weight_bytes.value < 0.5 * many.decode.weight_bytes.value);
}

#[test]
fn bad_load_names_the_field() {
    let s = scenario("llama-3.1-8b", 1, 1, 1);
    let cases: [(ServingLoad, &str); 8] = [
        (load(0, 10, 1), "load.prompt_tokens"),
        (load(10, 0, 1), "load.output_tokens"),
        (load(10, 10, 0), "load.concurrency"),
        (load(40_000, 10, 1), "load.prompt_tokens"),
        (
            ServingLoad {
                prefix_hit_rate: f64::NAN,
                ..load(10, 10, 1)
            },
            "load.prefix_hit_rate",
        ),
        (
            ServingLoad {
                prefill_chunk_tokens: 0,
                ..load(10, 10, 1)
            },
            "load.prefill_chunk_tokens",
        ),
        (
            ServingLoad {
                arrival_rate_per_s: Some(f64::INFINITY),
                graph_padded_batch: None,
                ..load(10, 10, 1)
            },
            "load.arrival_rate_per_s",
        ),
        (
            // A padded graph smaller than the running batch cannot hold it.
            ServingLoad {
                graph_padded_batch: Some(4),
                ..load(10, 10, 8)
            },
            "load.graph_padded_batch",
        ),
    ];
    for (l, field) in cases {
        let e = serving_time(&s, &l).expect_err("refused");
        assert_eq!(e.field, field);
    }
}

#[test]
fn tensor_parallel_decode_pays_latency_bound_all_reduces() {
    // Off the measured NVLink 4 fabric (A100), NCCL as its tuner prices a 16 KiB all-reduce
    // on 8 ranks of one node (time/nccl_algo.rs picks LL there: ~15 µs, not the 2(n − 1) = 14
    // ring steps × 3.4 µs of Simple the α–β ring charged): 80 layers × 2 all-reduces of it.
    let mut a100 = scenario("llama-3.1-70b", 1, 8, 1);
    a100.cluster = Cluster::of(gpu_preset("a100-80gb").expect("preset"), 1);
    let t = serving_time(&a100, &load(1024, 256, 1)).expect("valid");
    let tp_group = GroupPlacement::from_count(GroupKind::Tp, 8, 8);
    let one_nccl =
        CommModel::assumed(&a100.cluster).time_s(Collective::AllReduce, 16384.0, &tp_group);
    assert!((t.decode.comm_time.value / (80.0 * 2.0 * one_nccl) - 1.0).abs() < 1e-9);
    assert!(one_nccl > 5e-6 && one_nccl < 14.0 * 3.4e-6, "{one_nccl}");
    // On H100 the engines' custom all-reduce: one token × 8192 × 2 bytes = 16 KiB, between
    // the measured 4 KiB (9.3 µs) and 32 KiB (11.8 µs) at TP 8 (sglang PR #2904's vLLM table).
    let s = scenario("llama-3.1-70b", 1, 8, 1);
    let t = serving_time(&s, &load(1024, 256, 1)).expect("valid");
    let one = 9.3e-6 + (11.8e-6 - 9.3e-6) * (16384.0 - 4096.0) / (32768.0 - 4096.0);
    assert_eq!(custom_all_reduce::latency_s(8, 16384.0), Some(one));
    assert!((t.decode.comm_time.value / (80.0 * 2.0 * one) - 1.0).abs() < 1e-9);
    // Beyond the largest measured message (1 MiB), or at an unmeasured TP, NCCL's price again.
    assert_eq!(custom_all_reduce::latency_s(8, 2.0 * 1_048_576.0), None);
    assert_eq!(custom_all_reduce::latency_s(3, 16384.0), None);
    // EP for MoE swaps the FFN all-reduce for two all-to-alls.
    let m = scenario("mixtral-8x7b", 1, 8, 1);
    let tp = serving_time(&m, &load(1024, 256, 8)).expect("valid");
    let ep = serving_time(
        &m,
        &ServingLoad {
            expert_parallel: true,
            ..load(1024, 256, 8)
        },
    )
    .expect("valid");
    assert!(ep.decode.comm_time.value != tp.decode.comm_time.value);
    assert!(all_finite(&ep));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn every_output_is_finite_for_valid_inputs(
        model in prop::sample::select(vec!["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen2.5-72b"]),
        tp in prop::sample::select(vec![1u32, 2, 4, 8]),
        pp in 1u32..=4,
        prompt in 1u32..=16_000,
        output in 1u32..=16_000,
        concurrency in 1u32..=4096,
        hit in 0.0f64..=1.0,
        chunk in 1u32..=16_384,
        ep in any::<bool>(),
        weight in prop::sample::select(ServeDtype::ALL.to_vec()),
        kv in prop::sample::select(ServeDtype::ALL.to_vec()),
        rate in prop::option::of(1e-3f64..10.0),
    ) {
        let mut s = scenario(model, 4, tp, pp);
        s.serving.weight_dtype = weight;
        s.serving.kv_dtype = kv;
        let l = ServingLoad {
            prompt_tokens: prompt,
            output_tokens: output,
            concurrency,
            prefix_hit_rate: hit,
            prefill_chunk_tokens: chunk,
            expert_parallel: ep,
            arrival_rate_per_s: rate,
            graph_padded_batch: None,
            decode_attention: None,
            prefill_first: false,
        };
        match serving_time(&s, &l) {
            Ok(t) => {
                for x in t.terms() {
                    prop_assert!(x.value.is_finite() && x.value >= 0.0, "{}: {}", x.key, x.value);
                }
                prop_assert!(t.tpot.value > 0.0);
                prop_assert!(t.ttft.value >= t.prefill.time.value);
            }
            Err(e) => prop_assert!(!e.field.is_empty() && !e.reason.is_empty()),
        }
    }
}

/// A closed loop of c clients (`arrival_rate_per_s: None`) is solved by approximate MVA
/// (Schweitzer 1979): one client never queues; with many clients it reaches the throughput
/// bound of a closed network, X → 1/S (Lazowska et al. 1984, §5.2), the wait tends to what
/// Little's law leaves, c/X − (S + (O − 1)·TPOT), and the tail to the other clients' prefills.
#[test]
fn a_closed_loop_waits_more_as_prefill_saturates() {
    let s = scenario("llama-3.1-70b", 1, 8, 1);
    // One client: no wait, TTFT = its own prefill, throughput = O / (S + (O − 1)·TPOT).
    let one = serving_time(&s, &load(4096, 256, 1)).expect("valid");
    let (sv, tpot) = (one.prefill.time.value, one.tpot.value);
    assert_eq!(one.queue_wait.value, 0.0);
    assert_eq!(one.ttft.value, sv);
    assert_eq!(one.ttft_p99.value, sv);
    let x = 1.0 / (sv + 255.0 * tpot);
    assert!((one.arrival_rate.value - x).abs() <= 1e-12 * x);
    let per_replica = one.throughput_per_replica.value;
    assert!((per_replica - 256.0 * x).abs() <= 1e-9 * per_replica);
    assert!(one.utilisation.value < 1.0);

    // Short outputs and long prompts with many clients: the prefill server is the bottleneck,
    // X → 1/S, ρ → 1. With Z = (O − 1)·TPOT = TPOT: R = (b + √(b² + 4·S·Z))/2, b = 64·S − Z,
    // wait R − S; Little's law's saturated wait c·S − (S + Z) is within 2% of it.
    let l = load(16384, 2, 64);
    let t = serving_time(&s, &l).expect("a closed loop is never refused for load");
    let (sv, tpot) = (t.prefill_under_load.value, t.tpot.value);
    assert!(64.0 / (sv + tpot) > 1.0 / sv, "the case saturates prefill");
    assert!(t.utilisation.value > 0.99, "{}", t.utilisation.value);
    let b = 64.0 * sv - tpot;
    let want = (b + (b * b + 4.0 * sv * tpot).sqrt()) / 2.0 - sv;
    assert!(
        (t.queue_wait.value - want).abs() <= 1e-9 * want,
        "{} vs {want}",
        t.queue_wait.value
    );
    let saturated = 64.0 * sv - (sv + tpot);
    assert!((t.queue_wait.value - saturated).abs() <= 2e-2 * saturated);
    // The p90 wait is capped by the other 63 clients' prefills, 63·S.
    assert!((t.ttft_p90.value - 64.0 * sv).abs() <= 1e-9 * sv);
    assert!(all_finite(&t));
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

// Decode reads of sliding-window layers (serving/window_decode.rs) and the closed-loop prefill
// queue (serving/closed_loop.rs), each against a closed form worked by hand.

#[test]
fn mean_of_a_clipped_range_is_the_hand_sum() {
    // w = 4 over y = 2..6: min = 2, 3, 4, 4, 4, sum 17, mean 3.4.
    assert!(close(mean_min_window(4.0, 2.0, 5.0), 3.4, 1e-12));
    // The window above the range: the plain mean (2 + 6)/2 = 4.
    assert!(close(mean_min_window(100.0, 2.0, 5.0), 4.0, 1e-12));
    // The window below the range: every step reads w.
    assert_eq!(mean_min_window(2.0, 5.0, 10.0), 2.0);
}

#[test]
fn windowed_layers_read_only_the_window_per_decode_step() {
    // Mistral 7B v0.1 windows every layer at 4096 tokens. KV per token: 32 layers × 8 KV
    // heads × 128 × (K, V) × 2 B = 131072 B. An 8192-token prompt is past the window for all
    // 256 steps, so each step reads 4096 tokens per sequence: 4 × 131072 × 4096 = 2.1475e9 B
    // (full attention would read 4 × 131072 × (8192 + 127.5) = 4.362e9 B).
    assert!(close(
        kv_read("mistral-7b-v0.1", 8192),
        4.0 * 131072.0 * 4096.0,
        1e-12
    ));
    // Gemma 2 9B alternates windowed and full layers (21 of 42 windowed, w = 4096). KV per
    // token: 42 × 8 × 256 × 2 × 2 B = 344064 B. Mean tokens read per layer:
    // (21 × (8192 + 255/2) + 21 × 4096) / 42 = 6207.75; at batch 4: 4 × 344064 × 6207.75 B.
    let per_batch = 4.0 * 344064.0;
    assert!(close(
        kv_read("gemma-2-9b", 8192),
        per_batch * 6207.75,
        1e-12
    ));
    // A short prompt inside the window reads like full attention: P + (O − 1)/2 = 1151.5.
    assert!(close(
        kv_read("gemma-2-9b", 1024),
        per_batch * 1151.5,
        1e-12
    ));
}

/// Decode KV bytes per step of `model` on one H100 at batch 4, `prompt` + 256 output tokens.
fn kv_read(model: &str, prompt: u32) -> f64 {
    let mut s = scenario(model, 1, 1, 1);
    s.serving.context_len = prompt + 256;
    serving_time(&s, &load(prompt, 256, 4))
        .expect("valid")
        .decode
        .kv_bytes
        .value
}

#[test]
fn closed_loop_residence_is_the_schweitzer_root() {
    // N = 3, D = 1 s, Z = 2 s: R² + (2 − 3)·R − 2 = 0, (R − 2)(R + 1) = 0, R = 2 s:
    // X = 3 / (2 + 2) = 0.75/s, wait R − D = 1 s, ρ = 0.75.
    assert!(close(schweitzer_residence_s(3.0, 1.0, 2.0), 2.0, 1e-12));
    let q = solve(3.0, 1.0, 2.0, 1.0);
    assert!(close(q.rate_per_s, 0.75, 1e-12));
    assert!(close(q.wait_s, 1.0, 1e-12));
    assert!(close(q.rho, 0.75, 1e-12));
    // Light load (N·D ≪ Z): R ≈ D·(1 + (N − 1)·D/Z); N = 2, D = 1 ms, Z = 10 s:
    // the wait is about 1e-3 × 1e-3 / 10 = 1e-7 s, kept to its digits.
    let q = solve(2.0, 1e-3, 10.0, 1.0);
    assert!(close(q.wait_s, 1e-7, 1e-3), "{}", q.wait_s);
}

#[test]
fn gemm_and_attention_kernels_add_their_own_rooflines() {
    // Llama 3.1 8B, BF16, one H100, batch 256, prompt 1024, output 256. The weight GEMMs are
    // compute-bound (2·N·256 FLOPs against 16 GB of weights), attention is memory-bound (the
    // batch's KV, 256 × 131072 B × 1151.5 = 38.6 GB, against 256 × 1152.5 keys of FLOPs), so
    // the step is GEMM FLOPs / rate + KV / HBM: more than max(memory, compute), which would
    // let one kernel hide the other.
    let s = scenario("llama-3.1-8b", 1, 1, 1);
    let t = serving_time(&s, &load(1024, 256, 256)).expect("valid");
    let model = model_preset("llama-3.1-8b").expect("preset");
    let step = StepModel::for_scenario(&model, &s, CostOptions::default());
    let bw = 0.9 * 3.35e12;
    let (weights_s, kv_s) = (
        t.decode.weight_bytes.value / bw,
        t.decode.kv_bytes.value / bw,
    );
    assert!(close(
        t.decode.kv_bytes.value,
        256.0 * 131072.0 * 1151.5,
        1e-12
    ));
    // Attention FLOPs: 2·L·a·(d_qk + d_v) per (query, key) pair × 256 × 1152.5 pairs, at the
    // attention efficiency of the training model.
    let attn_flops = flops_per_token(&model, 1, false).attention_forward * 256.0 * 1152.5;
    let attn_s = attn_flops / (step.peak_flops_per_s * step.options.attention_efficiency);
    let gemm_s = t.decode.compute_time.value - attn_s;
    assert!(gemm_s > weights_s && kv_s > attn_s, "the case as described");
    // The 256 tokens' activations through the 32 layers' memory-bound kernels, at the copy share.
    let traffic_s = 256.0 * 32.0 * LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER / bw;
    assert!(close(t.decode.traffic_time.value, traffic_s, 1e-12));
    let want = gemm_s + kv_s + traffic_s + t.decode.kernel_gaps.value;
    assert!(
        close(t.decode.time.value, want, 1e-9),
        "{} vs {want}",
        t.decode.time.value
    );
    assert!(t.decode.time.value > t.decode.memory_time.value.max(t.decode.compute_time.value));
}

// Chunked prefill on sliding-window layers (serving/window_prefill.rs), against sums worked by hand.

#[test]
fn a_run_of_chunks_reads_the_clipped_prefixes() {
    // w = 10, chunks of 4 from 3 cached tokens, 4 chunks: starts 3, 7, 11, 15 read
    // min(s, 10) = 3, 7, 10, 10 cached tokens, 30 in all.
    assert!(close(
        sum_min_window_over_run(10.0, 3.0, 4.0, 4.0),
        30.0,
        1e-12
    ));
    // The window above every start: the plain sum 3 + 7 + 11 + 15 = 36.
    assert!(close(
        sum_min_window_over_run(100.0, 3.0, 4.0, 4.0),
        36.0,
        1e-12
    ));
    // The window below every start: each chunk reads w.
    assert!(close(
        sum_min_window_over_run(2.0, 3.0, 4.0, 4.0),
        8.0,
        1e-12
    ));
}

#[test]
fn windowed_prefill_chunks_attend_to_and_read_only_the_window() {
    // Mistral 7B v0.1 windows all 32 layers at w = 4096. An 8192-token prompt in four chunks
    // of 2048 from nothing cached: query i sees min(i + 1, 4096) keys, so the pairs are
    // 4096²/2 + 4096 × (8192 − 4096) = 8,388,608 + 16,777,216 = 25,165,824 (full attention:
    // 8192²/2 = 33,554,432); the chunks read 0, 2048, 4096 and 4096 cached tokens (full
    // attention: 0 + 2048 + 4096 + 6144 = 12,288), 10,240 per layer.
    let mistral = model_preset("mistral-7b-v0.1").expect("preset");
    let run = stage_prefill_run(&mistral, 0, 32, 0.0, 2048.0, 4.0);
    assert!(close(run.attn_pairs, 25_165_824.0, 1e-12));
    assert!(close(run.kv_tokens, 10_240.0, 1e-12));
    assert_eq!(run.windowed_layers, 32);
    // Gemma 2 9B windows the even layers (w = 4096). Stage 0 of two, layers 0..21: 11
    // windowed, 10 full; the layer mean is (10 × full + 11 × windowed) / 21.
    let gemma = model_preset("gemma-2-9b").expect("preset");
    let run = stage_prefill_run(&gemma, 0, 21, 0.0, 2048.0, 4.0);
    assert_eq!(run.windowed_layers, 11);
    let want_pairs = (10.0 * 33_554_432.0 + 11.0 * 25_165_824.0) / 21.0;
    let want_kv = (10.0 * 12_288.0 + 11.0 * 10_240.0) / 21.0;
    assert!(close(run.attn_pairs, want_pairs, 1e-12));
    assert!(close(run.kv_tokens, want_kv, 1e-12));
    // A model without a window: the full sums.
    let llama = model_preset("llama-3.1-8b").expect("preset");
    let run = stage_prefill_run(&llama, 0, 32, 0.0, 2048.0, 4.0);
    assert!(close(run.attn_pairs, 33_554_432.0, 1e-12));
    assert!(close(run.kv_tokens, 12_288.0, 1e-12));
}

#[test]
fn windowed_prefill_compute_is_the_windowed_pairs_at_the_attention_rate() {
    // Mistral 7B, one H100, prompt 8192 in chunks of 2048: the prefill compute is the GEMMs,
    // 2·N·8192 at eff_gemm(min(2048, h)), plus the attention FLOPs of the 25,165,824 windowed
    // pairs at the attention efficiency.
    let mut s = scenario("mistral-7b-v0.1", 1, 1, 1);
    s.serving.context_len = 8192 + 16;
    let l = ServingLoad {
        prefill_chunk_tokens: 2048,
        ..load(8192, 16, 1)
    };
    let t = serving_time(&s, &l).expect("valid");
    let model = model_preset("mistral-7b-v0.1").expect("preset");
    let step = StepModel::for_scenario(&model, &s, CostOptions::default());
    let f1 = flops_per_token(&model, 1, false);
    let gemm_s = f1.dense_forward * 8192.0
        / (step.peak_flops_per_s * step.options.gemm.at(2048.0_f64.min(4096.0)));
    let attn_s = f1.attention_forward * 25_165_824.0
        / (step.peak_flops_per_s * step.options.attention_efficiency);
    assert_eq!(t.prefill.chunks, 4);
    assert!(
        close(t.prefill.compute_time.value, gemm_s + attn_s, 1e-9),
        "{} vs {}",
        t.prefill.compute_time.value,
        gemm_s + attn_s
    );
    assert!(close(
        t.prefill.attention_flops.value,
        f1.attention_forward * 25_165_824.0,
        1e-12
    ));
}

#[test]
fn attention_runs_at_the_peak_of_the_kv_dtype() {
    // Llama 3.1 8B, FP8 linear layers (W8A8) on one H100, one 4096-token prompt. With a BF16 KV
    // cache attention runs at the BF16 peak; with an FP8 cache at the FP8 peak. The GEMMs are
    // the same in both, so the prefill compute differs by attention FLOPs × (1/BF16 − 1/FP8).
    use planner_core::input::precision::{Precision, PrecisionRecipe};
    let mut bf16_kv = scenario("llama-3.1-8b", 1, 1, 1);
    bf16_kv.precision = Precision::from_recipe(PrecisionRecipe::Fp8Bf16Master);
    bf16_kv.serving.weight_dtype = ServeDtype::Fp8;
    bf16_kv.serving.kv_dtype = ServeDtype::Bf16;
    let mut fp8_kv = bf16_kv.clone();
    fp8_kv.serving.kv_dtype = ServeDtype::Fp8;
    let l = ServingLoad {
        prefill_chunk_tokens: 4096,
        ..load(4096, 16, 1)
    };
    let a = serving_time(&bf16_kv, &l).expect("valid");
    let b = serving_time(&fp8_kv, &l).expect("valid");
    let model = model_preset("llama-3.1-8b").expect("preset");
    let step = StepModel::for_scenario(&model, &bf16_kv, CostOptions::default());
    assert!(
        step.peak_flops_per_s > 1.9 * step.bf16_flops_per_s,
        "FP8 GEMMs"
    );
    let eff = step.options.attention_efficiency;
    let attn = a.prefill.attention_flops.value;
    let want = attn / (step.bf16_flops_per_s * eff) - attn / (step.peak_flops_per_s * eff);
    let got = a.prefill.compute_time.value - b.prefill.compute_time.value;
    assert!(close(got, want, 1e-9), "{got} vs {want}");
}

#[test]
fn each_layer_kernel_adds_its_measured_launch_on_hopper_only() {
    // Llama 3.1 70B at TP 4 on H100: 80 layers × 10 kernels (vLLM's LlamaDecoderLayer) ×
    // 1.3 µs (Hazy Research, CUDA graphs on H100) = 1.04 ms per decode step, whatever the batch.
    let s = scenario("llama-3.1-70b", 1, 4, 1);
    for c in [1, 64] {
        let t = serving_time(&s, &load(1024, 256, c)).expect("valid");
        assert!(close(
            t.decode.kernel_gaps.value,
            80.0 * 10.0 * 1.3e-6,
            1e-12
        ));
        // Memory-bound at batch 1: the step is the bytes, the all-reduces and the launches.
        if c == 1 {
            let want =
                t.decode.memory_time.value + t.decode.comm_time.value + t.decode.kernel_gaps.value;
            assert!(
                close(t.decode.time.value, want, 1e-9),
                "{}",
                t.decode.time.value
            );
        }
    }
    // Two stages of 40 layers: each stage pays its own 40 layers' launches.
    let t = serving_time(&scenario("llama-3.1-70b", 1, 4, 2), &load(1024, 256, 8)).expect("pp");
    assert!(close(
        t.decode.kernel_gaps.value,
        40.0 * 10.0 * 1.3e-6,
        1e-12
    ));
    // No per-kernel figure was measured on an A100 or an MI300X: the plain roofline there.
    for gpu in ["a100-80gb", "mi300x"] {
        let mut s = scenario("llama-3.1-8b", 1, 1, 1);
        s.cluster = Cluster::of(gpu_preset(gpu).expect("preset"), 1);
        let t = serving_time(&s, &load(1024, 256, 1)).expect("valid");
        assert_eq!(t.decode.kernel_gaps.value, 0.0, "{gpu}");
    }
    assert_eq!(
        kernel_gaps::layers_launch_s(32.0, 0.0, 1.3e-6),
        32.0 * 10.0 * 1.3e-6
    );
    // Mixtral 8x7B: 32 fused-MoE layers run 16 kernels each (the dense MLP's 3 become 9).
    assert_eq!(kernel_gaps::layers_kernels(32.0, 32.0), 512.0);
    let t = serving_time(&scenario("mixtral-8x7b", 1, 2, 1), &load(1024, 256, 8)).expect("moe");
    assert!(close(t.decode.kernel_gaps.value, 512.0 * 1.3e-6, 1e-12));
}

#[test]
fn vllms_h100_gemm_benchmark_streams_bf16_at_the_copy_share_and_fp8_below_it() {
    use planner_core::serving::weight_stream::{self, BF16_TFLOPS, FP8_TFLOPS};
    // vLLM PR #49363 on H100, N = 12288, K = 5376, BF16 at M = 1: 2·12288·5376 FLOPs at
    // 2.870333 TFLOP/s = 46.03 µs; less the 1.3 µs launch, 132.16 MB in 44.73 µs is
    // 2.955 TB/s, 88.2% of 3.35 TB/s.
    let one = weight_stream::measured_share(1.0, BF16_TFLOPS[0], 2.0);
    assert!((one - 0.882).abs() < 0.001, "{one}");
    // Over M = 1, 16, 64 BF16 streams at the 0.9 copy share the roofline already uses (within
    // 1.5 points): the measured figure confirms it rather than replacing it.
    let bf16 = weight_stream::mean_share(&BF16_TFLOPS, 2.0);
    assert!((bf16 - 0.9).abs() < 0.015, "{bf16}");
    // The per-tensor FP8 GEMM streams at about 81%.
    let fp8 = weight_stream::mean_share(&FP8_TFLOPS, 1.0);
    assert!((fp8 - 0.812).abs() < 0.002, "{fp8}");
    let h100 = gpu_preset("h100-sxm").expect("preset");
    let h200 = gpu_preset("h200").expect("preset");
    assert_eq!(
        weight_stream::measured_weight_stream_fraction(&h100, ServeDtype::Fp8),
        Some(fp8)
    );
    assert_eq!(
        weight_stream::measured_weight_stream_fraction(&h100, ServeDtype::Bf16),
        None
    );
    assert_eq!(
        weight_stream::measured_weight_stream_fraction(&h200, ServeDtype::Fp8),
        None
    );
}

#[test]
fn fp8_weights_on_h100_stream_at_the_measured_gemm_share() {
    // Llama 3.1 8B, FP8 weights, BF16 KV, one H100, batch 1: memory-bound; the weights at the
    // FP8 GEMM share of 3.35 TB/s, the KV at 0.9 of it, plus 32 × 10 kernel launches.
    let mut s = scenario("llama-3.1-8b", 1, 1, 1);
    s.serving.weight_dtype = ServeDtype::Fp8;
    let t = serving_time(&s, &load(1024, 256, 1)).expect("valid");
    let share = planner_core::serving::weight_stream::mean_share(
        &planner_core::serving::weight_stream::FP8_TFLOPS,
        1.0,
    );
    let traffic = 32.0 * LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER;
    let want_memory = t.decode.weight_bytes.value / (share * 3.35e12)
        + (t.decode.kv_bytes.value + traffic) / (0.9 * 3.35e12);
    assert_eq!(t.decode.bound, Bound::Memory);
    assert!(close(t.decode.memory_time.value, want_memory, 1e-12));
    assert!(close(
        t.decode.time.value,
        want_memory + 32.0 * 10.0 * 1.3e-6,
        1e-12
    ));
}

#[test]
fn xqa_reads_an_fp8_kv_cache_at_its_measured_share_in_decode_only() {
    use planner_core::serving::decode_attention::{
        measured_kv_stream_fraction, DecodeAttentionKernel, H200_HBM_BYTES_PER_S,
        XQA_BF16_KV_H200_BYTES_PER_S, XQA_FP8_KV_H200_BYTES_PER_S,
    };
    // TensorRT-LLM tech blog 16's decode baseline on H200 (batch 64, 64 q / 4 kv heads, 16k):
    // FP8 4.03 TB/s of 4.8, 83.96%; BF16 4.31 TB/s, the 4.3 TB/s copy within a quarter point.
    let xqa = Some(DecodeAttentionKernel::TrtllmXqa);
    let fp8 = XQA_FP8_KV_H200_BYTES_PER_S / H200_HBM_BYTES_PER_S;
    assert!((fp8 - 0.8396).abs() < 1e-4, "{fp8}");
    assert!((XQA_BF16_KV_H200_BYTES_PER_S / 4.3e12 - 1.0).abs() < 0.003);
    // The kernel's own bytes: 64 × 16,384 tokens × 4 heads × (K + V) × 128 × 1 B in 266 µs.
    let bytes = 64.0 * 16384.0 * 4.0 * 2.0 * 128.0;
    assert!((bytes / 266e-6 / XQA_FP8_KV_H200_BYTES_PER_S - 1.0).abs() < 0.005);
    let h100 = gpu_preset("h100-sxm").expect("preset");
    let h200 = gpu_preset("h200").expect("preset");
    let a100 = gpu_preset("a100-80gb").expect("preset");
    // The share's denominator is the H200 preset's own datasheet figure, not a second copy.
    assert_eq!(H200_HBM_BYTES_PER_S, h200.hbm_bytes_per_s);
    assert_eq!(
        measured_kv_stream_fraction(&h200, ServeDtype::Fp8, xqa),
        Some(fp8)
    );
    assert_eq!(
        measured_kv_stream_fraction(&h100, ServeDtype::Fp8, xqa),
        Some(fp8)
    );
    assert_eq!(
        measured_kv_stream_fraction(&h200, ServeDtype::Bf16, xqa),
        None
    );
    assert_eq!(
        measured_kv_stream_fraction(&a100, ServeDtype::Fp8, xqa),
        None
    );
    assert_eq!(
        measured_kv_stream_fraction(&h200, ServeDtype::Fp8, None),
        None
    );

    // Llama 3.1 8B, BF16 weights, FP8 KV, one H100, batch 64: the step's KV read at 83.96% of
    // 3.35 TB/s under XQA, at 90% without; the weights at 90% either way.
    let mut s = scenario("llama-3.1-8b", 1, 1, 1);
    s.serving.kv_dtype = ServeDtype::Fp8;
    let plain = load(1024, 256, 64);
    let with = ServingLoad {
        decode_attention: xqa,
        prefill_first: false,
        ..plain.clone()
    };
    let (a, b) = (
        serving_time(&s, &plain).expect("valid"),
        serving_time(&s, &with).expect("valid"),
    );
    let (w, kv) = (b.decode.weight_bytes.value, b.decode.kv_bytes.value);
    // The 64 tokens' activation traffic, the cache written in FP8 (1 B where BF16 writes 2).
    let traffic = 64.0 * 32.0 * (LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER - 2048.0);
    assert!(close(
        a.decode.memory_time.value,
        (w + kv + traffic) / (0.9 * 3.35e12),
        1e-12
    ));
    assert!(close(
        b.decode.memory_time.value,
        (w + traffic) / (0.9 * 3.35e12) + kv / (fp8 * 3.35e12),
        1e-12
    ));
    // Prefill (context attention) keeps the copy share: the same prefill either way.
    assert_eq!(a.prefill.time.value, b.prefill.time.value);
}

#[test]
fn a_layers_memory_bound_kernels_move_their_tensors_once() {
    use planner_core::serving::layer_traffic::layer_bytes_per_token;
    let m8 = model_preset("llama-3.1-8b").expect("preset");
    // The closed form of LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER, BF16 cache.
    assert_eq!(
        layer_bytes_per_token(&m8, 1, false, 2.0, 2.0),
        LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER
    );
    // TP 2 splits the heads, the cache and the FFN, not the hidden width of the norms:
    // 65,536 + 2 × (2048 + 512) × 2 + 1024 × (2 + 1) + 3 × 7168 × 2, FP8 cache.
    assert_eq!(
        layer_bytes_per_token(&m8, 2, false, 2.0, 1.0),
        65_536.0 + 10_240.0 + 3_072.0 + 43_008.0
    );
    // Mixtral 8x7B MoE layer, TP 1: SiLU-and-mul over the top-2 experts' 2 × 14336 rows, then
    // moe_sum reads the 2 outputs and writes the token: (2 + 1) × 4096 × 2.
    let mx = model_preset("mixtral-8x7b").expect("preset");
    let dense = layer_bytes_per_token(&mx, 1, false, 2.0, 2.0);
    let moe = layer_bytes_per_token(&mx, 1, true, 2.0, 2.0);
    let mlp_dense = 3.0 * 14336.0 * 2.0;
    let mlp_moe = 3.0 * 2.0 * 14336.0 * 2.0 + 3.0 * 4096.0 * 2.0;
    assert_eq!(moe - dense, mlp_moe - mlp_dense);
    // Per step it scales with the tokens: a batch of 256 decode tokens moves 256 × as much
    // as one (Llama 3.1 8B, one H100).
    let s = scenario("llama-3.1-8b", 1, 1, 1);
    let one = serving_time(&s, &load(1024, 256, 1)).expect("valid");
    let many = serving_time(&s, &load(1024, 256, 256)).expect("valid");
    assert!(close(
        many.decode.traffic_time.value,
        256.0 * one.decode.traffic_time.value,
        1e-12
    ));
    // The prompt's traffic: 1024 tokens through 32 layers at the copy share.
    assert!(close(
        one.prefill.traffic_time.value,
        1024.0 * 32.0 * LLAMA_8B_TRAFFIC_BYTES_PER_TOKEN_PER_LAYER / (0.9 * 3.35e12),
        1e-12
    ));
}

/// A load whose KV exceeds the pool is served as engines serve it (serving/admission.rs): the
/// running batch is what the pool holds under the admission policy, the other clients wait for
/// a slot (Little's law: (c − b)/λ), and the replica's figures are those of the running batch.
#[test]
fn a_load_beyond_the_pool_runs_what_fits_and_queues_the_rest() {
    use planner_core::input::engine_scheduler::KvAdmission;
    let mut s = scenario("llama-3.1-70b", 1, 8, 1);
    s.serving.max_running_seqs = Some(100_000);
    s.serving.kv_admission = Some(KvAdmission::WholeRequest);
    let l = load(2048, 2048, 5000);
    let t = serving_time(&s, &l).expect("a load beyond the pool is served");
    assert!(!t.fits_kv);
    // GUARANTEED_NO_EVICT reserves prompt + output: b = ⌊pool / 4096⌋.
    let b = (t.kv_capacity_tokens.value / 4096.0).floor();
    assert_eq!(t.running_batch.value, b);
    assert!(b < 5000.0 && b > 10.0, "{b}");
    // The running batch alone gives the same rate; the other 5000 − b wait (c − b)/λ.
    let alone = serving_time(&s, &load(2048, 2048, b as u32)).expect("fits");
    assert!(
        (alone.arrival_rate.value - t.arrival_rate.value).abs() <= 1e-9 * alone.arrival_rate.value
    );
    assert_eq!(alone.tpot.value, t.tpot.value);
    let wait = (5000.0 - b) / t.arrival_rate.value;
    assert!((t.admission_wait.value - wait).abs() <= 1e-9 * wait);
    assert!((t.ttft.value - (alone.ttft.value + wait)).abs() <= 1e-9 * t.ttft.value);
    // Admitting on the prompt holds more at once: ⌊pool / (2048 + 2049/2)⌋.
    s.serving.kv_admission = Some(KvAdmission::PromptThenPreempt);
    let p = serving_time(&s, &l).expect("served");
    let bp = (t.kv_capacity_tokens.value / (2048.0 + 2049.0 / 2.0)).floor();
    assert_eq!(p.running_batch.value, bp);
    assert!(p.running_batch.value > t.running_batch.value);
    // An engine cap binds first when it is lower.
    s.serving.max_running_seqs = Some(64);
    let capped = serving_time(&s, &l).expect("served");
    assert_eq!(capped.running_batch.value, 64.0);
}

/// A prompt's chunk shares its steps with the running decodes (vLLM V1's token budget): the
/// chunk gets what they leave, and their KV read and attention add to each chunk step.
#[test]
fn a_chunk_shares_its_step_with_the_running_decodes() {
    let s = scenario("llama-3.1-8b", 1, 1, 1);
    let one = serving_time(&s, &load(8192, 256, 1)).expect("valid");
    assert_eq!(one.prefill_under_load.value, one.prefill.time.value);
    // 256 running: 255 decode beside a chunk; the 2048 budget leaves 1793 tokens per chunk,
    // so 8192 prompt tokens take ⌈8192/1793⌉ = 5 chunks instead of 4.
    let busy = serving_time(&s, &load(8192, 256, 256)).expect("valid");
    assert_eq!(one.prefill.chunks, 4);
    assert_eq!(busy.prefill.chunks, 5);
    assert!(busy.prefill_under_load.value > busy.prefill.time.value);
    // A static batch runs its prompts in steps of their own.
    let first = ServingLoad {
        prefill_first: true,
        ..load(8192, 256, 256)
    };
    let f = serving_time(&s, &first).expect("valid");
    assert_eq!(f.prefill.chunks, 4);
    assert_eq!(f.prefill_under_load.value, f.prefill.time.value);
}

/// Speculative decoding (input/speculation.rs, serving/speculation.rs): TPOT is the verify
/// step of k + 1 queries plus k draft forwards over the tokens a step keeps,
/// (1 − α^(k+1))/(1 − α); at a batch of one it pays, at large batches it stops paying.
#[test]
fn speculation_divides_the_step_by_the_tokens_kept() {
    use planner_core::input::speculation::{SpecMethod, Speculation};
    let mut s = scenario("llama-3.1-70b", 1, 8, 1);
    let plain = serving_time(&s, &load(1024, 256, 1)).expect("valid");
    s.serving.speculation = Some(Speculation {
        method: SpecMethod::Eagle,
        draft_tokens: 3,
        acceptance: 0.8,
        draft_params: None,
    });
    let t = serving_time(&s, &load(1024, 256, 1)).expect("valid");
    let term = |key: &str| {
        t.speculation
            .iter()
            .find(|x| x.key == key)
            .unwrap_or_else(|| panic!("{key}"))
            .value
    };
    // 1 + 0.8 + 0.64 + 0.512 = 2.952 tokens per verify step.
    assert!((term("serve.spec.tokens_per_step") - 2.952).abs() < 1e-12);
    let (verify, draft) = (term("serve.spec.verify"), term("serve.spec.draft"));
    // The verify step reads the same weights and KV as the plain one and runs 4× the queries.
    assert!(verify >= plain.decode.time.value && verify < 2.0 * plain.decode.time.value);
    let want = (verify + draft) / 2.952 + t.interference.value;
    assert!(
        (t.tpot.value - want).abs() <= 1e-12 * want,
        "{} vs {want}",
        t.tpot.value
    );
    assert!(
        t.tpot.value < plain.tpot.value / 2.0,
        "EAGLE pays at batch 1"
    );
    // Beyond the break-even batch the plain step is faster.
    let b = term("serve.spec.break_even_batch") as u32;
    assert!(b > 1, "{b}");
    let at = |spec: bool| {
        let mut x = s.clone();
        if !spec {
            x.serving.speculation = None;
        }
        x.serving.max_running_seqs = Some(1_000_000);
        let mut l = load(128, 128, b);
        l.prefill_chunk_tokens = 1_000_000;
        serving_time(&x, &l).expect("valid")
    };
    let (with, without) = (at(true), at(false));
    assert!(
        with.tpot.value - with.interference.value
            >= without.tpot.value - without.interference.value,
        "at b = {b}"
    );
    // MTP needs the model's own MTP modules.
    s.serving.speculation = Some(Speculation {
        method: SpecMethod::Mtp,
        draft_tokens: 1,
        acceptance: 0.85,
        draft_params: None,
    });
    let e = serving_time(&s, &load(1024, 256, 1)).expect_err("Llama has no MTP");
    assert_eq!(e.field, "serving.speculation");
}
