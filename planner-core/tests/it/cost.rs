//! Step time, FLOPs per token and MFU against closed forms and published figures.

use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use planner_core::input::precision::{Precision, PrecisionRecipe};
use planner_core::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};
use planner_core::resolve::presets::model_preset;
use planner_core::time::cost::{flops_per_token, scaling, CostOptions, ScalingKind, StepModel};

pub(crate) fn scenario(
    model: &str,
    nodes: u32,
    seq_len: u32,
    global_batch: u32,
    layout: Layout,
) -> Scenario {
    Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset(model.to_string()),
        precision: Precision::default(),
        cluster: Cluster::of(gpu_preset("h100-sxm").expect("gpu"), nodes),
        training: Training {
            seq_len,
            global_batch,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        layout,
        activations: ActivationOptions::default(),
        overheads: Overheads::default(),
        serving: Serving::default(),
        calibration: None,
        bill: Default::default(),
    }
}

#[test]
fn gpt3_flops_per_token_match_narayanan() {
    // Narayanan et al. 2021 eq. 3: F = 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) per iteration,
    // i.e. per token 72·l·h²·(1 + s/(6h)) + 6·V·h. Our count from shapes adds biases,
    // norms and positions (≈0.1%).
    let m = model_preset("gpt3-175b").expect("gpt3");
    let (l, h, s, v) = (96.0, 12288.0, 2048.0, 50257.0);
    let want = 72.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
    let got = flops_per_token(&m, 2048, false).model();
    assert!((got / want - 1.0).abs() < 2e-3, "{got:e} vs {want:e}");
}

#[test]
fn attention_term_is_12_l_h_s_for_multi_head_attention() {
    let m = model_preset("gpt3-175b").expect("gpt3");
    let f = flops_per_token(&m, 2048, false);
    assert_eq!(3.0 * f.attention_forward, 12.0 * 96.0 * 12288.0 * 2048.0);
    let causal = flops_per_token(&m, 2048, true);
    assert_eq!(causal.attention_forward * 2.0, f.attention_forward);
    // Full recompute repeats one forward: HFU/MFU = 4/3.
    assert!((f.hardware(Recompute::Full) / f.model() - 4.0 / 3.0).abs() < 1e-12);
}

/// A causal FlashAttention-2 call over 4,096 tokens runs at 319 of the 335 TFLOP/s it reaches
/// at 16K (Shah et al. 2024, FlashAttention-3, Figure 5, head dim 128, H100 SXM5).
const FA_4K: f64 = 319.0 / 335.0;

#[test]
fn single_gpu_step_is_compute_over_rate() {
    // One GPU, no parallelism: step = tokens·6N…/(peak·eff) + optimizer.
    let m = model_preset("llama-3.1-70b").expect("m");
    let sc = scenario("llama-3.1-70b", 1, 4096, 1, Layout::default());
    let sm = StepModel::new(&m, &sc, CostOptions::default());
    let c = sm.evaluate(&sc.layout);
    let eff = sm.gemm_efficiency(&sc.layout);
    // Matmuls at peak × GEMM efficiency, attention at peak × 0.5 × the flash kernels' share at
    // 4K tokens (FlashAttention-3 Fig. 5: 319 of 335 TFLOP/s), memory-bound ops at 0.9 of
    // the HBM datasheet. Megatron's fused op list (time/elementwise.rs), per token per layer:
    // forward 20h + 4q + 4kv + 6f, backward 32h + 4q + 4kv + 10f (h = q = 8192, kv = 1024,
    // f = 28672); the cross-entropy 38 + 14 B per logit (V = 128256).
    let (h, q, kv, f, v) = (8192.0, 8192.0, 1024.0, 28672.0, 128_256.0);
    let elementwise =
        (80.0 * (52.0 * h + 8.0 * q + 8.0 * kv + 16.0 * f) + 52.0 * v) / (3.35e12 * 0.9);
    let want = 4096.0
        * (3.0 * sm.flops.dense_forward / (989e12 * eff)
            + 3.0 * sm.flops.attention_forward / (989e12 * 0.5 * FA_4K)
            + elementwise);
    assert!((c.seconds.compute / want - 1.0).abs() < 1e-12);
    assert_eq!(c.seconds.exposed_comm_total(), 0.0);
    assert_eq!(c.seconds.bubble, 0.0);
    assert!((c.seconds.total - want - c.seconds.optimizer).abs() < 1e-9);
    assert!(c.mfu < eff && c.mfu > 0.5 * eff);
}

#[test]
fn the_500_w_h100_runs_tensor_work_at_its_power_limit_share_and_hbm_work_as_is() {
    // One 96 GB HBM2e H100 at torchtitan's 500 W: GEMMs and attention at the vendor's tensor
    // rating for 500 W, linear between the H100 NVL (835.5 dense BF16 TFLOP/s at 400 W) and
    // the SXM (989.5 at 700 W) = 886.83 of 989.5; memory-bound ops at 0.9 of its 2.4 TB/s.
    let m = model_preset("llama-3.1-70b").expect("m");
    let mut sc = scenario("llama-3.1-70b", 1, 4096, 1, Layout::default());
    sc.cluster = Cluster::of(gpu_preset("h100-96gb").expect("gpu"), 1);
    let sm = StepModel::new(&m, &sc, CostOptions::default());
    let share = (835.5 + (500.0 - 400.0) / (700.0 - 400.0) * (989.5 - 835.5)) / 989.5;
    assert!((sm.tensor_fraction_at_power_limit - share).abs() < 1e-12);
    let c = sm.evaluate(&sc.layout);
    let eff = sm.gemm_efficiency(&sc.layout);
    let (h, q, kv, f, v) = (8192.0, 8192.0, 1024.0, 28672.0, 128_256.0);
    let elementwise =
        (80.0 * (52.0 * h + 8.0 * q + 8.0 * kv + 16.0 * f) + 52.0 * v) / (2.4e12 * 0.9);
    let want = 4096.0
        * (3.0 * sm.flops.dense_forward / (989e12 * share * eff)
            + 3.0 * sm.flops.attention_forward / (989e12 * share * 0.5 * FA_4K)
            + elementwise);
    assert!(
        (c.seconds.compute / want - 1.0).abs() < 1e-12,
        "{} vs {want}",
        c.seconds.compute
    );
    // A measured GEMM curve holds the device's own clocks: the GEMMs take it as measured,
    // attention (not calibrated) keeps the share.
    let mut measured = sm.clone();
    measured.gemm_measured = true;
    let cal = measured.evaluate(&sc.layout);
    let want_cal = 4096.0
        * (3.0 * sm.flops.dense_forward / (989e12 * eff)
            + 3.0 * sm.flops.attention_forward / (989e12 * share * 0.5 * FA_4K)
            + elementwise);
    assert!((cal.seconds.compute / want_cal - 1.0).abs() < 1e-12);
    // MFU keeps the datasheet peak in its denominator.
    let mfu = sm.tokens_per_step() * sm.flops.model() / (989e12 * c.seconds.total);
    assert!((c.mfu / mfu - 1.0).abs() < 1e-12);
    // The SXM at its 700 W datasheet rating: no share.
    let sxm = scenario("llama-3.1-70b", 1, 4096, 1, Layout::default());
    assert_eq!(
        StepModel::new(&m, &sxm, CostOptions::default()).tensor_fraction_at_power_limit,
        1.0
    );
}

#[test]
fn fp8_runs_the_linear_gemms_at_fp8_and_attention_and_lm_head_at_bf16() {
    // One H100, Llama 3.1 8B, FP8 recipe: linear-layer GEMMs at FP8 (its achievable share), the LM head
    // and attention at the BF16 peak, plus the FP8 casts (3 B per GEMM-input element, and 1 B
    // more for the transposed FP8 copy Hopper's TN-only FP8 GEMMs need).
    let m = model_preset("llama-3.1-8b").expect("m");
    let mut sc = scenario("llama-3.1-8b", 1, 4096, 1, Layout::default());
    sc.precision = Precision::from_recipe(PrecisionRecipe::Fp8Bf16Master);
    let sm = StepModel::new(&m, &sc, CostOptions::default());
    let c = sm.evaluate(&sc.layout);
    let eff = sm.gemm_efficiency(&sc.layout);
    let (l, h, a, kv, d, f, v) = (32.0, 4096.0, 32.0, 8.0, 128.0, 14336.0, 128_256.0);
    // ml-engineering's MAMF table, H100 SXM: FP8 GEMMs reach 70.9% of their peak where BF16
    // GEMMs reach 80.3%, so the FP8 GEMMs run at the curve × 0.709/0.803 of 1979 TFLOP/s.
    let (fp8, bf16, hbm) = (1979e12 * 0.709 / 0.803, 989e12, 3.35e12);
    let head = 2.0 * v * h;
    // Σ K (forward X) and Σ N (backward dY) over QKV, output projection, fc1 (gate+up), fc2.
    let fwd_elements = l * (h + a * d + h + f);
    let bwd_elements = l * ((a + 2.0 * kv) * d + h + 2.0 * f + h);
    let weights = l * (h * (a + 2.0 * kv) * d + a * d * h + 3.0 * h * f);
    // Memory-bound work streams at 0.9 of the datasheet HBM bandwidth.
    let bw = hbm * 0.9;
    let casts = 4096.0 * (fwd_elements + bwd_elements) * 4.0 / bw + weights * 4.0 / bw;
    // Megatron's fused op list per token per layer (q = a·d, kv heads × d) and the loss.
    let (q, kvd) = (a * d, kv * d);
    let elementwise = (l * (52.0 * h + 8.0 * q + 8.0 * kvd + 16.0 * f) + 52.0 * v) / bw;
    let want = 4096.0
        * (3.0 * (sm.flops.dense_forward - head) / (fp8 * eff)
            + 3.0 * head / (bf16 * eff)
            + 3.0 * sm.flops.attention_forward / (bf16 * 0.5 * FA_4K)
            + elementwise)
        + casts;
    assert!(
        (c.seconds.compute / want - 1.0).abs() < 1e-12,
        "{} vs {want}",
        c.seconds.compute
    );
    assert!((c.seconds.fp8_casts / casts - 1.0).abs() < 1e-12);
    let term = c
        .terms
        .iter()
        .find(|t| t.key == "time.fp8_casts")
        .expect("cast term");
    assert_eq!(term.value, c.seconds.fp8_casts);
    // MFU stays over the FP8 datasheet peak; the BF16 recipe has no cast term.
    let bf16_sc = scenario("llama-3.1-8b", 1, 4096, 1, Layout::default());
    let b = StepModel::new(&m, &bf16_sc, CostOptions::default()).evaluate(&bf16_sc.layout);
    assert_eq!(b.seconds.fp8_casts, 0.0);
    assert!(!b.terms.iter().any(|t| t.key == "time.fp8_casts"));
    assert!(c.seconds.compute < b.seconds.compute);
    // Blackwell runs FP8 GEMMs in any layout (TE cublaslt_gemm.cu): no transposed copy, 3 B.
    let mut b200 = sc.clone();
    b200.cluster.gpu = planner_core::input::hardware::gpu_preset("b200").expect("b200");
    let bw = StepModel::new(&m, &b200, CostOptions::default());
    assert_eq!(bw.fp8_cast_bytes_per_element, 3.0);
    assert_eq!(sm.fp8_cast_bytes_per_element, 4.0);
}

#[test]
fn bubble_follows_the_schedule() {
    let m = model_preset("llama-3.1-70b").expect("m");
    let base = Layout {
        tp: 8,
        pp: 4,
        dp: 2,
        zero: ZeroStage::Zero1,
        sequence_parallel: true,
        ..Layout::default()
    };
    let sc = scenario("llama-3.1-70b", 8, 4096, 32, base.clone());
    let sm = StepModel::new(&m, &sc, CostOptions::default());
    let one = sm.seconds(&base, &sm.placement(&base));
    // m = 32/2 = 16; 1F1B overhead (p−1)/m = 3/16 of the pipeline's ideal time.
    assert_eq!(one.micro_batches, 16.0);
    let ideal = one.bubble * 16.0 / 3.0;
    assert!(ideal > one.compute && ideal < one.total);
    let inter = Layout {
        schedule: Schedule::Interleaved,
        virtual_stages: 4,
        ..base
    };
    let four = sm.seconds(&inter, &sm.placement(&inter));
    assert!((four.bubble * 4.0 / one.bubble - 1.0).abs() < 0.05);
}

#[test]
fn strong_scaling_loses_efficiency_and_weak_keeps_most() {
    let m = model_preset("llama-3.1-70b").expect("m");
    let layout = Layout {
        tp: 8,
        dp: 1,
        zero: ZeroStage::Zero1,
        recompute: Recompute::Selective,
        sequence_parallel: true,
        ..Layout::default()
    };
    let sc = scenario("llama-3.1-70b", 64, 4096, 256, layout);
    let opts = CostOptions::default();
    let strong = scaling(&m, &sc, &opts, ScalingKind::Strong, &[1, 4, 16, 64]);
    let weak = scaling(&m, &sc, &opts, ScalingKind::Weak, &[1, 4, 16, 64]);
    assert_eq!(strong[0].efficiency, 1.0);
    assert_eq!(weak[3].global_batch, 256 * 64);
    for w in strong.windows(2) {
        assert!(w[1].efficiency <= w[0].efficiency + 1e-12);
        assert!(w[1].step_s < w[0].step_s);
    }
    assert!(weak[3].efficiency > strong[3].efficiency);
    for p in &weak {
        assert!(p.efficiency > 0.8 && p.efficiency <= 1.0 + 1e-12, "{p:?}");
    }
}

#[test]
fn scaling_curves_name_their_baseline() {
    use planner_core::time::cost::scaling_curve;
    let m = model_preset("llama-3.1-8b").expect("m");
    let layout = Layout {
        tp: 2,
        sequence_parallel: true,
        ..Layout::default()
    };
    let sc = scenario("llama-3.1-8b", 16, 4096, 64, layout);
    let opts = CostOptions::default();
    let strong = scaling_curve(&m, &sc, &opts, ScalingKind::Strong, &[2, 8, 32]);
    assert!(strong
        .baseline
        .starts_with("strong scaling: global batch fixed at 64"));
    assert!(
        strong.baseline.contains("dp 2 on 4 GPUs"),
        "{}",
        strong.baseline
    );
    let weak = scaling_curve(&m, &sc, &opts, ScalingKind::Weak, &[2, 8, 32]);
    assert!(
        weak.baseline
            .contains("32 sequences per data-parallel rank"),
        "{}",
        weak.baseline
    );
    assert_eq!(weak.points[2].global_batch, 64 * 16);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The step is exactly the sum of its parts, every part is non-negative,
        /// and HFU ≥ MFU.
        #[test]
        fn step_is_the_sum_of_its_parts(
            tp in prop::sample::select(vec![1u32, 2, 4, 8]),
            pp in prop::sample::select(vec![1u32, 2, 4]),
            cp in prop::sample::select(vec![1u32, 2]),
            dp in prop::sample::select(vec![1u32, 2, 4]),
            zero in 0u8..=3,
            rc in 0usize..3,
            sched in 0usize..4,
            mb in prop::sample::select(vec![1u32, 2]),
        ) {
            let schedule = Schedule::ALL[sched];
            let layout = Layout {
                tp, pp, cp, dp,
                zero: ZeroStage::from_number(zero).expect("zero"),
                recompute: Recompute::ALL[rc],
                schedule,
                virtual_stages: if schedule == Schedule::Interleaved { 2 } else { 1 },
                micro_batch: mb,
                sequence_parallel: tp > 1,
                ..Layout::default()
            };
            let m = model_preset("llama-3.1-70b").expect("m");
            let sc = scenario("llama-3.1-70b", 32, 8192, 64, layout.clone());
            let sm = StepModel::new(&m, &sc, CostOptions::default());
            let c = sm.evaluate(&layout);
            let s = c.seconds;
            let parts = s.compute + s.exposed_comm_total() + s.bubble + s.optimizer;
            prop_assert!((s.total / parts - 1.0).abs() < 1e-9, "{s:?}");
            prop_assert!(s.compute > 0.0 && s.bubble >= 0.0 && s.optimizer >= 0.0);
            prop_assert!(s.exposed_comm.iter().all(|e| *e >= 0.0));
            prop_assert!(c.hfu >= c.mfu && c.mfu > 0.0 && c.hfu < 1.0);
            if pp == 1 {
                prop_assert_eq!(s.bubble, 0.0);
            }
        }
    }
}

#[test]
fn scenario_entry_points_resolve_the_model() {
    use planner_core::resolve::presets::article_mesh_scenario;
    use planner_core::search::mesh::{search_scenario, SearchSpace};
    use planner_core::time::cost::evaluate_scenario;
    let sc = article_mesh_scenario();
    let c = evaluate_scenario(&sc, CostOptions::default(), None).expect("eval");
    assert!(c.seconds.total > 0.0);
    assert!(c.terms.iter().any(|t| t.key == "time.comm.tp"));
    let r = search_scenario(&sc, &SearchSpace::default(), CostOptions::default(), None)
        .expect("search");
    assert!(r.feasible_count > 0);
    let mut bad = sc;
    bad.model = ModelChoice::Preset("no-such-model".into());
    assert!(evaluate_scenario(&bad, CostOptions::default(), None).is_err());
}

#[test]
fn tp_across_nodes_costs_more_than_tp_on_nvlink() {
    use planner_core::parallel::topology::RankOrder;
    let m = model_preset("llama-3.1-70b").expect("m");
    let layout = Layout {
        tp: 8,
        dp: 8,
        zero: ZeroStage::Zero1,
        sequence_parallel: true,
        ..Layout::default()
    };
    let sc = scenario("llama-3.1-70b", 8, 4096, 64, layout.clone());
    let nvlink = StepModel::new(&m, &sc, CostOptions::default()).evaluate(&layout);
    let across = StepModel::new(
        &m,
        &sc,
        CostOptions {
            rank_order: RankOrder::parse("dp-cp-tp-pp").expect("order"),
            ..CostOptions::default()
        },
    )
    .evaluate(&layout);
    let tp = |c: &planner_core::time::cost::StepCost| c.seconds.exposed_comm[0];
    // TP's reduce-scatters and all-gathers as NCCL's tuner prices them (time/nccl_algo.rs),
    // each link capped at its measured bus bandwidth (input/link_efficiency.rs): NVLink 4 at
    // 450 · 20.6/25 = 370.8 GB/s against one 400 Gb/s NIC per rank at 47 GB/s, 7.9× at those
    // caps; the tuner's per-call latency weighs more on the fast link (a 64 MB reduce-scatter:
    // 188 µs on NVLink against 175 µs α–β, 1.30 ms on the NIC either way), about 6.9× here.
    assert!(
        tp(&across) > 6.0 * tp(&nvlink),
        "{} vs {}",
        tp(&across),
        tp(&nvlink)
    );
    assert!(across.seconds.total > nvlink.seconds.total);
}

#[test]
fn a_unit_exposes_what_its_transfer_exceeds_one_units_compute() {
    use planner_core::time::cost::unit_exposed_s;
    // Compute-bound: only the first unit's gather shows.
    assert!((unit_exposed_s(1.0, 4.0, 10.0) - 0.1).abs() < 1e-12);
    // Link-bound: the step is U·c_u + t_u, so exposed = U·c_u + t_u − U·t_u.
    let (c, t, u) = (4.0, 1.0, 10.0);
    let want = c + t / u - t;
    assert!((unit_exposed_s(c, t, u) - want).abs() < 1e-12);
    // Per unit, not per step: a transfer equal to the compute still exposes one unit.
    assert!((unit_exposed_s(2.0, 2.0, 8.0) - 0.25).abs() < 1e-12);
}

#[test]
fn zero3_backward_gather_and_reduce_scatter_share_the_link() {
    // On a slow network each of the backward all-gather and reduce-scatter alone would fit
    // behind the backward, both together do not: the exposed time is their sum's excess.
    let m = model_preset("llama-3.1-70b").expect("m");
    let layout = Layout {
        dp: 64,
        zero: ZeroStage::Zero3,
        micro_batch: 1,
        ..Layout::default()
    };
    let mut sc = scenario("llama-3.1-70b", 8, 4096, 64, layout);
    sc.cluster.inter_node.bytes_per_s = 14.0e9;
    let sm = StepModel::new(&m, &sc, CostOptions::default());
    let c = sm.evaluate(&sc.layout);
    let s = c.seconds;
    let t_f = (s.compute - s.recompute) / 3.0;
    let secs = |p: planner_core::time::comms::Purpose| {
        c.comms
            .iter()
            .find(|i| i.purpose == p)
            .map(|i| i.seconds_per_step)
            .expect("item")
    };
    let ag = secs(planner_core::time::comms::Purpose::ParamAllGatherBackward);
    let rs = secs(planner_core::time::comms::Purpose::GradReduceScatter);
    assert!(
        ag < 2.0 * t_f && rs < 2.0 * t_f && ag + rs > 2.0 * t_f,
        "{ag} {rs} {t_f}"
    );
    let term = c
        .terms
        .iter()
        .find(|t| t.key == "time.comm.zero3_units")
        .expect("zero3 term");
    assert!(
        term.value > ag + rs - 2.0 * t_f,
        "{} {}",
        term.value,
        ag + rs - 2.0 * t_f
    );
    assert!(s.exposed_comm_total() >= term.value);
}
