//! Mesh search: the article's 512-GPU example, rule agreement, accounting, and a
//! property test that nothing invalid is ever returned.

use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use planner_core::input::model::ModelSpec;
use planner_core::input::precision::Precision;
use planner_core::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};
use planner_core::input::stage_split::SplitProposal;
use planner_core::resolve::presets::article_mesh_scenario;
use planner_core::resolve::presets::model_preset;
use planner_core::resolve::validate::layout_rule_violations;
use planner_core::search::mesh::{
    layout_of, search, search_with, Knobs, RejectReason, SearchResult, SearchSpace,
};
use planner_core::time::cost::{CostOptions, StepModel};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn scenario(nodes: u32, seq_len: u32, global_batch: u32) -> Scenario {
    Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset("llama-3.1-70b".into()),
        precision: Precision::default(),
        cluster: Cluster::of(gpu_preset("h100-sxm").expect("gpu"), nodes),
        training: Training {
            seq_len,
            global_batch,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        layout: Layout::default(),
        activations: ActivationOptions::default(),
        overheads: Overheads::default(),
        serving: Serving::default(),
        calibration: None,
        bill: Default::default(),
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

fn run(
    nodes: u32,
    seq: u32,
    batch: u32,
    max_results: usize,
) -> (ModelSpec, Scenario, SearchResult) {
    let model = model_preset("llama-3.1-70b").expect("70b");
    let sc = scenario(nodes, seq, batch);
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    // Every knob setting its own row, so the bookkeeping is checked candidate by candidate.
    let space = SearchSpace {
        max_results,
        one_row_per_mesh: false,
        ..SearchSpace::default()
    };
    let r = search_with(&model, &sc, &space, &sm, simple_peak(&model, &sc));
    (model, sc, r)
}

/// The default space with every knob setting its own row and nothing cut from the list:
/// what a test that looks up a particular candidate searches.
pub(crate) fn every_knob_space() -> SearchSpace {
    SearchSpace {
        max_results: usize::MAX,
        one_row_per_mesh: false,
        ..SearchSpace::default()
    }
}

#[test]
fn article_example_both_meshes_are_feasible_and_ranked() {
    // Dense Llama 3.1 70B, 32K context, 64 nodes × 8 H100 (presets::article_mesh_scenario):
    // global batch 64 sequences = 2M tokens, so DP 4 × micro-batch 1 gives 16 micro-batches,
    // the article's m = 16 case. Real memory model.
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    // Every knob setting its own row: the article's exact knobs are looked up below.
    let r = search(&model, &sc, &every_knob_space(), &sm);
    assert_eq!(r.world, 512);
    let best = |tp, pp, cp, dp| {
        r.feasible
            .iter()
            .position(|f| (f.dims.tp, f.dims.pp, f.dims.cp, f.dims.dp) == (tp, pp, cp, dp))
    };
    let a = best(8, 4, 4, 4).expect("TP 8 × PP 4 × CP 4 × DP 4 feasible");
    let b = best(8, 8, 2, 4).expect("TP 8 × PP 8 × CP 2 × DP 4 feasible");
    let (fa, fb) = (r.feasible[a], r.feasible[b]);
    // Ranked by predicted step time: PP 8 pays a larger bubble than PP 4 at the same
    // micro-batch count, so the article's first candidate ranks ahead.
    assert!(a < b, "{fa:?} vs {fb:?}");
    assert!(fa.step_s < fb.step_s);
    assert!(fa.step_s > 1.0 && fa.step_s < 20.0, "{}", fa.step_s);
    assert!(fa.mfu > 0.2 && fa.mfu < 0.7, "{}", fa.mfu);
    assert!(fa.headroom_bytes > 0.0 && fb.headroom_bytes > 0.0);
    // The article's exact layout (ZeRO-1, selective recompute, 1F1B) is feasible too.
    let exact = r.feasible.iter().find(|f| f.layout() == sc.layout);
    let exact = exact.expect("article layout feasible");
    assert!((exact.step_s - sm.evaluate(&sc.layout).seconds.total).abs() < 1e-9);
    assert!(r.feasible.iter().all(|f| f.dims.tp <= 8));
    assert!(r
        .rejections
        .iter()
        .any(|c| c.reason == RejectReason::TpExceedsNode.key()));
    assert_eq!(r.hints.len(), 1);
    assert!(r.hints[0].best_rank.is_some());
}

#[test]
fn search_and_validator_agree_on_every_rule() {
    // Odd shapes so many rules fire: 70B, seq 24K, batch 96 on 6 nodes.
    let mut sc = article_mesh_scenario();
    sc.cluster.nodes = 6;
    sc.training.seq_len = 24_576;
    sc.training.global_batch = 96;
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    let space = SearchSpace {
        max_results: usize::MAX,
        ..SearchSpace::default()
    };
    let r = search(&model, &sc, &space, &sm);
    let keys = |l: &Layout| -> BTreeSet<String> {
        let mut s = sc.clone();
        s.layout = l.clone();
        layout_rule_violations(&model, &s)
            .into_iter()
            .map(|v| v.rule)
            .collect()
    };
    for f in &r.feasible {
        assert!(keys(&f.layout()).is_empty(), "{:?}", f.layout());
    }
    let mut checked = 0;
    for b in r
        .rejected
        .iter()
        .filter(|b| !b.reasons.has(RejectReason::MemoryOverCapacity))
    {
        let knobs = Knobs {
            zero: b.zero.unwrap_or(ZeroStage::Zero1),
            recompute: b.recompute.unwrap_or(Recompute::Full),
            schedule: b.schedule.unwrap_or(Schedule::OneFOneB),
            virtual_stages: b.virtual_stages.unwrap_or(1),
            micro_batch: b.micro_batch.unwrap_or(1),
            // A block over every split stands for the split the search would try first.
            split: b.split.unwrap_or_else(|| {
                let v = b.virtual_stages.unwrap_or(1);
                let (p, n) = SplitProposal::proposals(model.layers, b.dims.pp, v);
                p[..n].first().copied().unwrap_or_default()
            }),
        };
        let want: BTreeSet<String> = b.reasons.iter().map(|x| x.key().to_string()).collect();
        assert_eq!(keys(&layout_of(b.dims, knobs)), want, "{b:?}");
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn every_candidate_is_either_ranked_or_rejected() {
    let (_, _, r) = run(8, 4096, 256, usize::MAX);
    let rejected: u64 = r.rejected.iter().map(|b| b.candidates).sum();
    assert_eq!(r.feasible_count, r.feasible.len() as u64);
    assert_eq!(r.candidates, r.feasible_count + rejected);
    // Ranked by step time within each class: candidates without a pricing caveat first.
    for w in r.feasible.windows(2) {
        let (a, b) = (w[0].caveat.is_some(), w[1].caveat.is_some());
        assert!(
            a <= b,
            "a caveated candidate ranked before an uncaveated one"
        );
        if a == b {
            assert!(w[0].step_s <= w[1].step_s);
        }
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
    #![proptest_config(ProptestConfig::with_cases(20))]
    /// With the real memory model and the validator as the judge.
    #[test]
    fn search_never_returns_an_invalid_layout(
        model_id in prop::sample::select(vec!["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"]),
        nodes in 1u32..=12,
        seq_pow in 11u32..=15,
        batch in prop::sample::select(vec![8u32, 24, 64, 96, 256]),
    ) {
        let mut sc = article_mesh_scenario();
        sc.model = ModelChoice::Preset(model_id.to_string());
        sc.cluster.nodes = nodes;
        sc.training.seq_len = 1 << seq_pow;
        sc.training.global_batch = batch;
        let model = sc.model_spec().expect("model");
        let sm = StepModel::new(&model, &sc, CostOptions::default());
        // Every rejected block listed (the default lists 100,000: Mixtral on 64 GPUs at 32K
        // rejects more), so the candidates add up.
        let space = SearchSpace {
            max_results: usize::MAX,
            max_rejected: usize::MAX,
            ..SearchSpace::default()
        };
        let r = search(&model, &sc, &space, &sm);
        let usable = sc.cluster.gpu.memory_bytes * sc.overheads.usable_fraction;
        let params = model.param_breakdown();
        let rejected: u64 = r.rejected.iter().map(|b| b.candidates).sum();
        prop_assert_eq!(r.candidates, r.feasible_count + rejected);
        for f in &r.feasible {
            let mut s = sc.clone();
            s.layout = f.layout();
            // Nothing fit without offload: the ranking is priced with the offload it found.
            s.training.offload = r.offload;
            let v = layout_rule_violations(&model, &s);
            prop_assert!(v.is_empty(), "{:?}: {:?}", s.layout, v);
            let peak = planner_core::memory::stage_peak::peak_memory_bytes(
                &model, &params, &s.precision, &s.layout, &s.training, &s.activations, &s.overheads,
            );
            prop_assert!(peak <= usable);
            prop_assert!(f.step_s.is_finite() && f.step_s > 0.0);
        }
        for b in &r.rejected {
            prop_assert!(!b.reasons.is_empty());
            if b.reasons.has(RejectReason::MemoryOverCapacity) {
                prop_assert!(b.peak_memory_bytes > usable);
            }
        }
    }
}

#[test]
fn hints_follow_the_cluster_size_and_links() {
    let mut sc = article_mesh_scenario();
    sc.model = ModelChoice::Preset("llama-3.1-8b".into());
    sc.training.seq_len = 4096;
    sc.training.global_batch = 64;
    for (nodes, key) in [
        (1, "one_node_ddp"),
        (4, "few_nodes_tp_in_node"),
        (64, "large_tp_pp_cp_dp"),
    ] {
        sc.cluster.nodes = nodes;
        let model = sc.model_spec().expect("model");
        let sm = StepModel::new(&model, &sc, CostOptions::default());
        let r = search(&model, &sc, &SearchSpace::default(), &sm);
        assert_eq!(r.hints[0].key, key);
        assert!(r.hints.iter().all(|h| h.key != "pcie_tp_at_most_2"));
        if let Some(rank) = r.hints[0].best_rank {
            assert!(rank < r.feasible_count as usize);
        }
    }
    // A PCIe box: 32 GB/s between GPUs.
    sc.cluster.nodes = 1;
    sc.cluster.intra_node.bytes_per_s = 32e9;
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    let r = search(&model, &sc, &SearchSpace::default(), &sm);
    assert!(r.hints.iter().any(|h| h.key == "pcie_tp_at_most_2"));
    // The measured-or-assumed list covers the GEMM curve and every link.
    assert!(r.inputs.iter().all(|i| !i.measured));
    assert_eq!(r.inputs.len(), 2 + 7 * 2);
}

/// The sliced search gives exactly the one-shot result, whatever the slice size:
/// same ranking, same rejected blocks (also when `max_rejected` caps them mid-slice),
/// same counts and hints.
#[test]
fn sliced_search_equals_one_shot() {
    use planner_core::search::mesh::{mesh_blocks, SlicedSearch};
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    for space in [
        SearchSpace::default(),
        SearchSpace {
            max_results: 7,
            max_rejected: 13,
            ..SearchSpace::default()
        },
    ] {
        let one = search(&model, &sc, &space, &sm);
        for per_step in [1, 7, 1000] {
            let mut s = SlicedSearch::new(model.clone(), sc.clone(), space.clone(), sm.clone());
            let mut steps = 0;
            while !s.step(per_step) {
                steps += 1;
                assert!(s.progress().0 < s.progress().1);
            }
            assert_eq!(s.progress().0, mesh_blocks(512).len());
            assert!(steps + 1 >= mesh_blocks(512).len() / per_step);
            assert_eq!(s.finish(), one, "per_step {per_step}");
        }
    }
    // 512 = 2^9: (TP, PP, CP, DP) exponents summing to 9: C(12, 3) = 220.
    assert_eq!(mesh_blocks(512).len(), 220);
}

/// The default list holds each mesh once, at the candidate that ranks it highest: it is the
/// full knob-level ranking with every later candidate of an already listed mesh left out,
/// in the same order, and the capped list is its head.
#[test]
fn each_mesh_is_listed_once_at_its_best_knobs() {
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    let all = search(&model, &sc, &every_knob_space(), &sm);
    let mut seen = std::collections::HashSet::new();
    let firsts: Vec<_> = all
        .feasible
        .iter()
        .filter(|f| seen.insert(f.dims))
        .copied()
        .collect();
    // Several knob settings per mesh, or the test would not tell the lists apart.
    assert!(
        all.feasible.len() > 2 * firsts.len(),
        "{} vs {}",
        all.feasible.len(),
        firsts.len()
    );
    let per_mesh = search(
        &model,
        &sc,
        &SearchSpace {
            max_results: usize::MAX,
            ..SearchSpace::default()
        },
        &sm,
    );
    assert_eq!(per_mesh.feasible, firsts);
    assert_eq!(per_mesh.feasible_meshes, firsts.len() as u64);
    assert_eq!(all.feasible_meshes, firsts.len() as u64);
    // Counts cover every candidate either way.
    assert_eq!(per_mesh.feasible_count, all.feasible_count);
    assert_eq!(per_mesh.candidates, all.candidates);
    let capped = search(&model, &sc, &SearchSpace::default(), &sm);
    let n = SearchSpace::default().max_results.min(firsts.len());
    assert_eq!(capped.feasible, firsts[..n]);
}

/// Tokens per second per GPU: the article's 70B mesh moves 64 × 32,768 tokens per step
/// over 512 GPUs.
#[test]
fn tokens_per_gpu_follow_step_time() {
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    let r = search(&model, &sc, &SearchSpace::default(), &sm);
    let f = r.feasible[0];
    let want = 64.0 * 32_768.0 / 512.0 / f.step_s;
    assert!((f.tokens_per_s_per_gpu(&sc.training) - want).abs() < 1e-9 * want);
}

/// Every reason reads as words and round-trips through its key.
#[test]
fn reasons_have_messages_and_keys() {
    for r in RejectReason::ALL {
        assert_eq!(RejectReason::from_key(r.key()), Some(r));
        assert!(!r.message().is_empty() && !r.message().contains('_'));
    }
    assert_eq!(RejectReason::from_key("nope"), None);
    assert_eq!(
        RejectReason::TpExceedsNode.message(),
        "TP larger than a node or not dividing it"
    );
}

/// A ZeRO-3 layout whose DP group spans nodes carries the caveat and ranks after every
/// layout without one, however fast the model prices it; inside one node it carries none.
#[test]
fn zero3_across_nodes_is_ranked_after_layouts_without_a_caveat() {
    use planner_core::parallel::topology::{GroupKind, Placement, RankOrder};
    use planner_core::search::mesh::PricingCaveat;
    // Llama 3.1 70B on 8 nodes × 8 GPUs: ZeRO-3 fits at many DP degrees.
    let (_, _, r) = run(8, 4096, 256, usize::MAX);
    let mut caveated = 0;
    for f in &r.feasible {
        let layout = f.layout();
        let across = Placement::of(&layout, 8, RankOrder::default())
            .group(GroupKind::DpCp)
            .crosses_nodes();
        let want = (f.knobs.zero == ZeroStage::Zero3 && across)
            .then_some(PricingCaveat::Zero3InterNodeGathers);
        assert_eq!(f.caveat, want, "{:?}", f.dims);
        caveated += usize::from(want.is_some());
    }
    assert!(caveated > 0, "the case has ZeRO-3 candidates across nodes");
    let first = r
        .feasible
        .iter()
        .position(|f| f.caveat.is_some())
        .unwrap_or(r.feasible.len());
    assert!(r.feasible[first..].iter().all(|f| f.caveat.is_some()));
}
