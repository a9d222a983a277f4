//! Model state and training memory per GPU: the article's golden numbers,
//! the fast path agreeing with the explained one, and invariants.

use planner_core::input::hardware::{gpu_preset, Cluster, GB};
use planner_core::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use planner_core::input::model::{ModelSpec, MoeSpec};
use planner_core::input::precision::{Precision, PrecisionRecipe};
use planner_core::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};
use planner_core::memory::model_state::{rank_params, stage_spans, StagePosition};
use planner_core::memory::stage_peak::peak_memory_bytes;
use planner_core::memory::state_terms::model_state;
use planner_core::memory::training_memory::training_memory;
use planner_core::resolve::presets::model_preset;
use proptest::prelude::*;

fn article_70b() -> ModelSpec {
    let mut m = model_preset("llama-3.1-70b").expect("preset");
    m.nominal_params = Some(70e9);
    m
}

fn mixtral_like() -> ModelSpec {
    let mut m = model_preset("llama-3.1-70b").expect("preset");
    m.name = "moe".into();
    m.layers = 32;
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.ffn = 14336;
    m.vocab = 32000;
    m.moe = Some(MoeSpec {
        routed_experts: 8,
        experts_per_token: 2,
        shared_experts: 0,
        expert_ffn: 14336,
        dense_layers: 0,
    });
    m
}

fn scenario(layout: Layout) -> Scenario {
    Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset("llama-3.1-70b".into()),
        precision: Precision::default(),
        cluster: Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 8),
        training: Training {
            seq_len: 8192,
            global_batch: 256,
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

fn dp(n: u32) -> Layout {
    Layout {
        dp: n,
        ..Layout::default()
    }
}

#[test]
fn article_70b_on_64_gpus() {
    let bars = model_state(&article_70b(), &Precision::default(), &dp(64));
    let totals: Vec<f64> = bars.iter().map(|b| b.total_bytes).collect();
    // Exact: 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N with Ψ = 70e9, N = 64.
    assert_eq!(totals, vec![1120e9, 293.125e9, 155.3125e9, 17.5e9]);

    let ddp = &bars[0];
    assert_eq!(ddp.zero, ZeroStage::Ddp);
    let rep: Vec<(&str, f64)> = ddp
        .replicated
        .iter()
        .map(|t| (t.key.as_str(), t.value))
        .collect();
    assert_eq!(
        rep,
        vec![
            ("weights", 140e9),
            ("gradients", 140e9),
            ("optimizer", 840e9)
        ]
    );
    assert!(ddp.sharded.is_empty());

    let z1 = &bars[1];
    assert_eq!(z1.replicated.iter().map(|t| t.value).sum::<f64>(), 280e9);
    assert_eq!(z1.sharded.len(), 1);
    assert_eq!(z1.sharded[0].value, 13.125e9);
    assert_eq!(z1.sharded[0].formula, "12Ψ/N");
    assert_eq!(z1.sharded[0].worked, "12 × 70e9 / 64 = 13.125 GB");

    let z2 = &bars[2];
    assert_eq!(z2.replicated.len(), 1);
    assert_eq!(z2.replicated[0].value, 140e9);
    assert_eq!(z2.sharded.iter().map(|t| t.value).sum::<f64>(), 15.3125e9);

    let z3 = &bars[3];
    assert!(z3.replicated.is_empty());
    assert_eq!(z3.sharded[0].worked, "2 × 70e9 / 64 = 2.1875 GB");
    assert_eq!(z3.sharded.iter().map(|t| t.value).sum::<f64>(), 17.5e9);
}

#[test]
fn megatron_fp32_grads_count_18_bytes() {
    let p = Precision::from_recipe(PrecisionRecipe::MixedAdamFp32Grads);
    let bars = model_state(&article_70b(), &p, &dp(64));
    assert_eq!(bars[0].total_bytes, 18.0 * 70e9);
}

#[test]
fn tp_and_pp_split_the_model_per_rank() {
    let model = article_70b();
    let params = model.param_breakdown();
    // TP 8: everything but the norms divides by 8.
    let layout = Layout {
        tp: 8,
        ..Layout::default()
    };
    let (spans, _) = stage_spans(&params, 1);
    let r = rank_params(&model, &params, &layout, &spans[0]);
    let norms = (params.norms_per_layer * 80 + params.final_norm) as f64 * model.param_scale();
    assert!(((r.dense - (70e9 - norms) / 8.0 - norms) / r.dense).abs() < 1e-12);
    // PP 3: the three stages hold the whole model; embedding first, output last.
    let layout = Layout {
        pp: 3,
        ..Layout::default()
    };
    let (spans, n) = stage_spans(&params, 3);
    assert_eq!(n, 3);
    assert_eq!(
        spans.iter().map(|s| s.layers).collect::<Vec<_>>(),
        vec![27, 27, 26]
    );
    let sum: f64 = spans
        .iter()
        .map(|s| rank_params(&model, &params, &layout, s).total())
        .sum();
    assert!((sum - 70e9).abs() < 1e-3);
    let first = rank_params(&model, &params, &layout, &spans[0]).total();
    let middle = rank_params(&model, &params, &layout, &spans[1]).total();
    assert!(first > middle);
}

#[test]
fn routed_experts_split_over_ep_and_shard_over_expert_dp() {
    let model = mixtral_like();
    let params = model.param_breakdown();
    let (spans, _) = stage_spans(&params, 1);
    let one = rank_params(
        &model,
        &params,
        &Layout {
            dp: 8,
            ..Layout::default()
        },
        &spans[0],
    );
    let ep8 = rank_params(
        &model,
        &params,
        &Layout {
            dp: 8,
            ep: 8,
            expert_tp: 1,
            ..Layout::default()
        },
        &spans[0],
    );
    assert!((ep8.expert - one.expert / 8.0).abs() < 1.0);
    assert_eq!(ep8.dense, one.dense);
    // ZeRO-3 with dp = 8, ep = 8: experts shard over dp/ep = 1 rank, dense over 8.
    let bars = model_state(
        &model,
        &Precision::default(),
        &Layout {
            dp: 8,
            ep: 8,
            expert_tp: 1,
            ..Layout::default()
        },
    );
    let z3 = bars[3].total_bytes;
    let expected = 16.0 * (ep8.dense / 8.0 + ep8.expert);
    assert!((z3 - expected).abs() <= 1e-12 * expected);
    assert!(bars[3].sharded[0].formula.contains("Ψe/Ne"));
}

fn layouts_for_agreement() -> Vec<(ModelSpec, Layout)> {
    vec![
        (
            article_70b(),
            Layout {
                dp: 8,
                tp: 8,
                zero: ZeroStage::Zero1,
                sequence_parallel: true,
                ..Layout::default()
            },
        ),
        (
            article_70b(),
            Layout {
                dp: 2,
                tp: 8,
                pp: 4,
                virtual_stages: 5,
                schedule: Schedule::Interleaved,
                zero: ZeroStage::Zero1,
                recompute: Recompute::Selective,
                sequence_parallel: true,
                ..Layout::default()
            },
        ),
        (
            article_70b(),
            Layout {
                dp: 64,
                zero: ZeroStage::Zero3,
                recompute: Recompute::Full,
                ..Layout::default()
            },
        ),
        (
            model_preset("gpt3-175b").expect("preset"),
            Layout {
                dp: 1,
                tp: 8,
                pp: 8,
                schedule: Schedule::Gpipe,
                ..Layout::default()
            },
        ),
        (
            mixtral_like(),
            Layout {
                dp: 8,
                tp: 2,
                pp: 2,
                cp: 2,
                ep: 4,
                expert_tp: 1,
                zero: ZeroStage::Zero2,
                sequence_parallel: true,
                ..Layout::default()
            },
        ),
    ]
}

#[test]
fn fast_path_equals_explained_peak() {
    for (model, layout) in layouts_for_agreement() {
        let s = scenario(layout);
        let explained = training_memory(&s, &model);
        let fast = peak_memory_bytes(
            &model,
            &model.param_breakdown(),
            &s.precision,
            &s.layout,
            &s.training,
            &s.activations,
            &s.overheads,
        );
        assert_eq!(fast, explained.peak_bytes, "{:?}", s.layout);
        assert_eq!(
            explained.stages[explained.peak_stage].total_bytes,
            explained.peak_bytes
        );
        for stage in &explained.stages {
            let sum: f64 = stage.terms.iter().map(|t| t.value).sum();
            assert!(
                (sum - stage.total_bytes).abs() <= 1e-9 * stage.total_bytes,
                "{:?}",
                stage.position
            );
            for t in &stage.terms {
                assert!(
                    !t.formula.is_empty() && !t.worked.is_empty() && !t.assumption.is_empty(),
                    "{}",
                    t.key
                );
            }
        }
    }
}

#[test]
fn stages_terms_and_capacity() {
    let s = scenario(Layout {
        dp: 2,
        tp: 8,
        pp: 4,
        zero: ZeroStage::Zero1,
        sequence_parallel: true,
        recompute: Recompute::Selective,
        ..Layout::default()
    });
    let mem = training_memory(&s, &article_70b());
    let positions: Vec<StagePosition> = mem.stages.iter().map(|s| s.position).collect();
    assert_eq!(
        positions,
        vec![
            StagePosition::First,
            StagePosition::Middle,
            StagePosition::Last
        ]
    );
    // The chart's line is labelled "80 GB"; fits compare against what nvidia-smi reports,
    // 81,559 MiB = 85,520,809,984 B, of which 90% is usable.
    assert_eq!(mem.capacity_label_bytes, 80.0 * GB);
    assert_eq!(mem.capacity_bytes, 81_559.0 * 1024.0 * 1024.0);
    assert!((mem.usable_bytes - 0.9 * 85_520_809_984.0).abs() < 1e-3);
    assert_eq!(mem.fits, mem.peak_bytes <= mem.usable_bytes);
    let keys = |i: usize| {
        mem.stages[i]
            .terms
            .iter()
            .map(|t| t.key.clone())
            .collect::<Vec<_>>()
    };
    assert!(
        keys(2).contains(&"activations.outside_layers".to_string()),
        "logits on the last stage"
    );
    assert!(!keys(1).contains(&"activations.outside_layers".to_string()));
    assert!(keys(0).contains(&"activations.recompute_transient".to_string()));
    assert!(keys(0).contains(&"nccl_buffers".to_string()));
    assert!(!keys(0).contains(&"zero3.gathered".to_string()));
    // 1F1B: the first stage holds 4 micro-batches, the last one.
    let act = |i: usize| {
        mem.stages[i]
            .terms
            .iter()
            .find(|t| t.key == "activations.layers")
            .map(|t| t.value)
            .unwrap_or(0.0)
    };
    assert!((act(0) / act(2) - 4.0 * 20.0 / 20.0).abs() < 1e-9);

    let z3 = training_memory(
        &scenario(Layout {
            dp: 64,
            zero: ZeroStage::Zero3,
            ..Layout::default()
        }),
        &article_70b(),
    );
    let gathered = z3.stages[0]
        .terms
        .iter()
        .find(|t| t.key == "zero3.gathered")
        .expect("gathered term");
    assert!(gathered.value > 0.0);
    assert_eq!(z3.stages.len(), 1);
    assert_eq!(z3.stages[0].position, StagePosition::Only);
}

fn any_layout() -> impl Strategy<Value = Layout> {
    (
        1u32..65,
        prop_oneof![Just(1u32), Just(2), Just(4), Just(8)],
        1u32..9,
        prop_oneof![Just(1u32), Just(2), Just(4)],
        0usize..3,
    )
        .prop_map(|(dp, tp, pp, cp, r)| Layout {
            dp,
            tp,
            pp,
            cp,
            recompute: Recompute::ALL[r],
            sequence_parallel: tp > 1,
            ..Layout::default()
        })
}

fn any_model() -> impl Strategy<Value = ModelSpec> {
    prop_oneof![
        Just(article_70b()),
        Just(mixtral_like()),
        Just(model_preset("gpt3-175b").expect("preset"))
    ]
}

fn any_precision() -> impl Strategy<Value = Precision> {
    (0usize..5).prop_map(|i| Precision::from_recipe(PrecisionRecipe::ALL[i]))
}

proptest! {
    #[test]
    fn zero_stages_order(model in any_model(), layout in any_layout(), precision in any_precision(), ep_pow in 0u32..3) {
        let mut layout = layout;
        let ep = 1u32 << ep_pow;
        if (layout.dp * layout.cp) % ep == 0 { layout.ep = ep; }
        let bars = model_state(&model, &precision, &layout);
        for w in bars.windows(2) {
            prop_assert!(w[0].total_bytes >= w[1].total_bytes);
        }
    }

    #[test]
    fn zero3_never_rises_with_dp(model in any_model(), layout in any_layout(), precision in any_precision()) {
        let mut more = layout.clone();
        more.dp += 1;
        let a = model_state(&model, &precision, &layout)[3].total_bytes;
        let b = model_state(&model, &precision, &more)[3].total_bytes;
        prop_assert!(b <= a);
    }

    #[test]
    fn fast_path_agrees(model in any_model(), layout in any_layout(), zero in 0u8..4, sched in 0usize..4) {
        let mut layout = layout;
        layout.zero = ZeroStage::from_number(zero).unwrap_or(ZeroStage::Ddp);
        layout.schedule = Schedule::ALL[sched];
        layout.virtual_stages = if layout.schedule == Schedule::Interleaved { 2 } else { 1 };
        let s = scenario(layout);
        let explained = training_memory(&s, &model).peak_bytes;
        let fast = peak_memory_bytes(&model, &model.param_breakdown(), &s.precision, &s.layout, &s.training, &s.activations, &s.overheads);
        prop_assert_eq!(fast, explained);
    }
}

proptest! {
    #[test]
    fn any_user_layout_gives_a_number_without_panicking(
        dp in 0u32..100_000, tp in 0u32..1000, pp in 0u32..1000, cp in 0u32..64, ep in 0u32..64,
        etp in 0u32..64, v in 0u32..100_000, mb in 0u32..10_000, seq in 0u32..2_000_000, gb in 0u32..1_000_000,
        zero in 0u8..4, sched in 0usize..4, r in 0usize..3, sp in any::<bool>(), model in any_model()
    ) {
        let layout = Layout {
            dp, tp, pp, cp, ep, expert_tp: etp, virtual_stages: v, micro_batch: mb,
            schedule: Schedule::ALL[sched],
            zero: ZeroStage::from_number(zero).unwrap_or(ZeroStage::Ddp),
            recompute: Recompute::ALL[r],
            sequence_parallel: sp,
            stage_split: planner_core::input::layout::StageSplit::Even,
        };
        let mut s = scenario(layout);
        s.training = Training { seq_len: seq, global_batch: gb, finetune: Default::default(), offload: Default::default(), packing: false };
        let mem = training_memory(&s, &model);
        prop_assert!(mem.peak_bytes.is_finite() && mem.peak_bytes >= 0.0);
        let bars = model_state(&model, &s.precision, &s.layout);
        prop_assert!(bars.iter().all(|b| b.total_bytes.is_finite()));
    }
}
