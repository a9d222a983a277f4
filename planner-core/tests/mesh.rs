//! Mesh search: the article's 512-GPU example, rule agreement, accounting, and a
//! property test that nothing invalid is ever returned.

use planner_core::cost::{CostOptions, StepModel};
use planner_core::hardware::{gpu_preset, Cluster};
use planner_core::layout::{Layout, Recompute, Schedule, ZeroStage};
use planner_core::mesh::{search_with, RejectReason, SearchResult, SearchSpace};
use planner_core::model::ModelSpec;
use planner_core::precision::Precision;
use planner_core::presets::model_preset;
use planner_core::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};
use proptest::prelude::*;

fn scenario(nodes: u32, seq_len: u32, global_batch: u32) -> Scenario {
    Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset("llama-3.1-70b".into()),
        precision: Precision::default(),
        cluster: Cluster::of(gpu_preset("h100-sxm").expect("gpu"), nodes),
        training: Training {
            seq_len,
            global_batch,
        },
        layout: Layout::default(),
        activations: ActivationOptions::default(),
        overheads: Overheads::default(),
        serving: Serving::default(),
    }
}

/// Model state plus Korthikanti's TP+SP activations: a simple stand-in memory model
/// monotone in every knob, so the search's bookkeeping can be tested on its own.
fn simple_peak(model: &ModelSpec, sc: &Scenario) -> impl Fn(&Layout) -> f64 {
    let psi = model.params();
    let h = f64::from(model.hidden);
    let layers = f64::from(model.layers);
    let seq = f64::from(sc.training.seq_len);
    let batch = f64::from(sc.training.global_batch);
    move |l: &Layout| {
        let n = f64::from(l.dp * l.cp);
        let per_param = match l.zero {
            ZeroStage::Ddp => 16.0,
            ZeroStage::Zero1 => 4.0 + 12.0 / n,
            ZeroStage::Zero2 => 2.0 + 14.0 / n,
            ZeroStage::Zero3 => 16.0 / n,
        };
        let state = per_param * psi / f64::from(l.tp * l.pp);
        let sbh = seq / f64::from(l.cp) * f64::from(l.micro_batch) * h;
        let per_layer = match l.recompute {
            Recompute::None => 34.0 * sbh / f64::from(l.tp),
            Recompute::Selective => 34.0 * sbh / f64::from(l.tp),
            Recompute::Full => 2.0 * sbh,
        };
        let m = batch / f64::from(l.dp * l.micro_batch);
        state + per_layer * layers / f64::from(l.pp) * f64::from(l.pp).min(m)
    }
}

/// The rules, restated from the issue, for checking the search independently.
fn violates(model: &ModelSpec, sc: &Scenario, l: &Layout) -> bool {
    let kv = model.kv_heads;
    model.heads % l.tp != 0
        || (kv % l.tp != 0 && l.tp % kv != 0)
        || l.tp > sc.cluster.gpus_per_node
        || model.layers % (l.pp * l.virtual_stages) != 0
        || (l.cp > 1 && sc.training.seq_len % (2 * l.cp) != 0)
        || (l.dp * l.cp) % l.ep != 0
        || sc.training.global_batch % (l.dp * l.micro_batch) != 0
        || l.world_size() != sc.cluster.world_size()
        || (l.schedule == Schedule::Interleaved && l.virtual_stages < 2)
        || (l.tp > 1) != l.sequence_parallel
}

fn run(nodes: u32, seq: u32, batch: u32, max_results: usize) -> (ModelSpec, Scenario, SearchResult) {
    let model = model_preset("llama-3.1-70b").expect("70b");
    let sc = scenario(nodes, seq, batch);
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    let space = SearchSpace {
        max_results,
        ..SearchSpace::default()
    };
    let r = search_with(&model, &sc, &space, &sm, simple_peak(&model, &sc));
    (model, sc, r)
}

#[test]
fn article_example_both_meshes_are_feasible_and_ranked() {
    // Dense 70B, 32K context, 64 nodes × 8 H100. Global batch 128 sequences = 4M tokens
    // (Llama 3 trained 405B with 4M–16M-token batches; 4M is a realistic 70B choice).
    let (_, _, r) = run(64, 32_768, 128, usize::MAX);
    assert_eq!(r.world, 512);
    let find = |tp, pp, cp, dp| {
        r.feasible
            .iter()
            .position(|f| (f.dims.tp, f.dims.pp, f.dims.cp, f.dims.dp) == (tp, pp, cp, dp))
    };
    let a = find(8, 4, 4, 4).expect("TP 8 × PP 4 × CP 4 × DP 4 feasible");
    let b = find(8, 8, 2, 4).expect("TP 8 × PP 8 × CP 2 × DP 4 feasible");
    let (fa, fb) = (r.feasible[a], r.feasible[b]);
    assert!(fa.step_s > 0.0 && fb.step_s > 0.0);
    // Ranked: positions follow step time.
    assert_eq!(a < b, fa.step_s <= fb.step_s);
    // Both keep TP on NVLink: no candidate with TP > 8 survives.
    assert!(r.feasible.iter().all(|f| f.dims.tp <= 8));
    assert!(r
        .rejections
        .iter()
        .any(|c| c.reason == RejectReason::TpExceedsNode.key()));
}

#[test]
fn every_candidate_is_either_ranked_or_rejected() {
    let (_, _, r) = run(8, 4096, 256, usize::MAX);
    let rejected: u64 = r.rejected.iter().map(|b| b.candidates).sum();
    assert_eq!(r.feasible_count, r.feasible.len() as u64);
    assert_eq!(r.candidates, r.feasible_count + rejected);
    for w in r.feasible.windows(2) {
        assert!(w[0].step_s <= w[1].step_s);
    }
    for b in &r.rejected {
        assert!(!b.reasons.is_empty());
    }
}

#[test]
fn results_are_capped_but_counts_stay_complete() {
    let (_, _, all) = run(8, 4096, 256, usize::MAX);
    let (_, _, top) = run(8, 4096, 256, 5);
    assert_eq!(top.feasible.len(), 5);
    assert_eq!(top.feasible_count, all.feasible_count);
    assert_eq!(top.feasible[..], all.feasible[..5]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn search_never_returns_an_invalid_layout(
        nodes in 1u32..=16,
        seq_pow in 10u32..=15,
        batch in prop::sample::select(vec![8u32, 24, 64, 96, 128, 512]),
    ) {
        let seq = 1 << seq_pow;
        let (model, sc, r) = run(nodes, seq, batch, usize::MAX);
        let usable = sc.cluster.gpu.memory_bytes * sc.overheads.usable_fraction;
        let peak = simple_peak(&model, &sc);
        for f in &r.feasible {
            let l = f.layout();
            prop_assert!(!violates(&model, &sc, &l), "{:?}", l);
            prop_assert!(peak(&l) <= usable);
            prop_assert!((f.headroom_bytes - (usable - f.peak_memory_bytes)).abs() < 1.0);
        }
        // Every rejected block names a rule its layouts break.
        for b in r.rejected.iter().take(200) {
            if b.reasons.has(RejectReason::MemoryOverCapacity) {
                prop_assert!(b.peak_memory_bytes > usable);
            }
        }
    }
}
