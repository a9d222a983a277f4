//! Overlap as a scenario choice (input/overlap.rs): the framework defaults, the link fields
//! and what each switch does to a step, against the closed forms in time/cost.rs.

use planner_core::edges::link;
use planner_core::input::framework::Framework;
use planner_core::input::kernels::Kernels;
use planner_core::input::layout::{Layout, Recompute, ZeroStage};
use planner_core::input::overlap::{OverlapChoice, Switch};
use planner_core::parallel::topology::GroupKind;
use planner_core::resolve::presets::{default_scenario, mesh_scenario};
use planner_core::time::cost::{CostOptions, StepCost, StepModel};

fn step(sc: &planner_core::input::scenario::Scenario) -> StepCost {
    let model = sc.model_spec().expect("model");
    StepModel::new(&model, sc, CostOptions::default()).evaluate(&sc.layout)
}

/// One pipeline stage, micro-batch 1, sequence parallel when tp > 1.
fn one_stage(base: &Layout, dp: u32, tp: u32, zero: ZeroStage, recompute: Recompute) -> Layout {
    Layout {
        dp,
        tp,
        pp: 1,
        cp: 1,
        ep: 1,
        micro_batch: 1,
        zero,
        recompute,
        sequence_parallel: tp > 1,
        ..base.clone()
    }
}

fn raw(c: &StepCost, group: GroupKind) -> f64 {
    c.comms
        .iter()
        .filter(|i| i.group == group)
        .map(|i| i.seconds_per_step)
        .sum()
}

#[test]
fn defaults_follow_the_framework() {
    let d = OverlapChoice::default();
    // The article's timing overlaps gradients and parameter gathers; Megatron-LM's
    // arguments.py leaves all three switches off; FSDP2 overlaps its collectives.
    let a = d.applied(Framework::Article);
    assert!(!a.tp_comm && a.grad_reduce && a.param_gather);
    let m = d.applied(Framework::MegatronCore);
    assert!(!m.tp_comm && !m.grad_reduce && !m.param_gather);
    let t = d.applied(Framework::Torchtitan);
    assert!(!t.tp_comm && t.grad_reduce && t.param_gather);
    let set = OverlapChoice {
        tp_comm: Switch::On,
        grad_reduce: Switch::Off,
        param_gather: Switch::Default,
        ep_comm: Switch::On,
    };
    let s = set.applied(Framework::MegatronCore);
    assert!(s.tp_comm && !s.grad_reduce && !s.param_gather);
}

#[test]
fn switches_travel_in_links_and_are_checked() {
    let mut s = default_scenario();
    s.overheads.overlap.tp_comm = Switch::On;
    s.overheads.overlap.grad_reduce = Switch::Off;
    s.overheads.kernels = Kernels::Compiled;
    let q = link::encode(&s);
    assert!(q.contains("ov_tp=on") && q.contains("ov_grad=off"), "{q}");
    assert!(q.contains("kernels=compile"), "{q}");
    let back = link::decode(&q).expect("decodes");
    assert_eq!(back.overheads.overlap, s.overheads.overlap);
    assert_eq!(back.overheads.kernels, Kernels::Compiled);
    let q0 = link::encode(&default_scenario());
    assert!(!q0.contains("ov_") && !q0.contains("kernels="), "{q0}");
    for bad in ["ov_tp=maybe", "ov_grad=1", "ov_param=yes", "kernels=jit"] {
        let errs = link::decode(bad).expect_err("refused");
        let field = bad.split('=').next().unwrap_or_default();
        assert!(errs.iter().any(|e| e.field == field), "{bad}: {errs:?}");
    }
}

#[test]
fn gradient_reduce_switched_off_is_exposed_whole() {
    // Llama 3.1 8B, 2 nodes × 8 H100, DDP over 16, one micro-batch each: the bucketed
    // all-reduce hides behind backward (all but its last bucket) when on; off, it is paid
    // whole after backward, so the step grows by raw − exposed(on).
    let mut sc = mesh_scenario("llama-3.1-8b", 2, 4096, 16);
    sc.layout = one_stage(&sc.layout, 16, 1, ZeroStage::Ddp, Recompute::None);
    let on = step(&sc);
    sc.overheads.overlap.grad_reduce = Switch::Off;
    let off = step(&sc);
    let dp = GroupKind::DpCp.index();
    let all_reduce = raw(&off, GroupKind::DpCp);
    assert!(all_reduce > 0.0);
    assert!((off.seconds.exposed_comm[dp] / all_reduce - 1.0).abs() < 1e-12);
    assert!(on.seconds.exposed_comm[dp] < all_reduce);
    let grown = off.seconds.total - on.seconds.total;
    let want = all_reduce - on.seconds.exposed_comm[dp];
    assert!(
        (grown - want).abs() < 1e-9 * off.seconds.total,
        "{grown} vs {want}"
    );
}

#[test]
fn tp_comm_overlap_leaves_one_chunk_per_micro_batch() {
    // Llama 3.1 70B, TP 8 on one node, 8 micro-batches: TP traffic per micro-batch is far
    // below its GEMM time, so with the switch on each micro-batch exposes the first of its
    // tp = 8 chunks, c/8, plus the hidden 7c/8 times σ/(1 + σ), σ = 0.189 the compute
    // slowdown beside communication (Lee et al. 2025): exposed = raw · (1/8 + σ/(1+σ) · 7/8).
    let mut sc = mesh_scenario("llama-3.1-70b", 1, 4096, 8);
    sc.layout = one_stage(&sc.layout, 1, 8, ZeroStage::Zero1, Recompute::Full);
    let off = step(&sc);
    sc.overheads.overlap.tp_comm = Switch::On;
    let on = step(&sc);
    let tp = GroupKind::Tp.index();
    let traffic = raw(&on, GroupKind::Tp);
    assert_eq!(off.seconds.exposed_comm[tp], traffic);
    let share = 0.189 / 1.189;
    let want = traffic * (1.0 / 8.0 + share * 7.0 / 8.0);
    assert!(
        (on.seconds.exposed_comm[tp] / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        on.seconds.exposed_comm[tp]
    );
    assert!(on.seconds.total < off.seconds.total);
    // Without the slowdown only the first chunk shows: exactly raw/8.
    let model = sc.model_spec().expect("model");
    let opts = CostOptions {
        overlap_slowdown: 0.0,
        ..CostOptions::default()
    };
    let bare = StepModel::new(&model, &sc, opts).evaluate(&sc.layout);
    assert!((bare.seconds.exposed_comm[tp] / (traffic / 8.0) - 1.0).abs() < 1e-9);
}

#[test]
fn the_overlap_slowdown_is_the_published_mean_and_prices_the_lost_compute() {
    // Lee et al. 2025 (arXiv 2507.03114): compute beside communication runs 18.9% slower
    // on average. A second of hidden communication leaves 1/1.189 s of compute done, so the
    // step pays 0.189/1.189 ≈ 0.159 s for it; the 40.0% maximum costs 0.4/1.4 ≈ 0.286 s.
    assert_eq!(CostOptions::default().overlap_slowdown, 0.189);
    let f = planner_core::time::cost::overlap_interference_s;
    assert!((f(1.0, 0.189) - 0.189 / 1.189).abs() < 1e-15);
    assert!((f(2.0, 0.4) - 2.0 * 0.4 / 1.4).abs() < 1e-15);
    assert_eq!(f(1.0, 0.0), 0.0);
    assert_eq!(f(1.0, -0.5), 0.0);
    assert_eq!(f(1.0, f64::NAN), 0.0);
    assert_eq!(f(3.0, f64::INFINITY), 3.0);
    assert_eq!(f(-1.0, 0.189), 0.0);
}

#[test]
fn ep_overlap_is_off_by_default_and_travels_in_links() {
    for f in [
        Framework::Article,
        Framework::MegatronCore,
        Framework::Torchtitan,
        Framework::DeepSpeed,
    ] {
        // Megatron-Core model_parallel_config.py: overlap_moe_expert_parallel_comm = False.
        assert!(!OverlapChoice::default().applied(f).ep_comm, "{f:?}");
    }
    let mut s = default_scenario();
    s.overheads.overlap.ep_comm = Switch::On;
    let q = link::encode(&s);
    assert!(q.contains("ov_ep=on"), "{q}");
    let back = link::decode(&q).expect("decodes");
    assert_eq!(back.overheads.overlap.ep_comm, Switch::On);
    let errs = link::decode("ov_ep=maybe").expect_err("refused");
    assert!(errs.iter().any(|e| e.field == "ov_ep"), "{errs:?}");
    let json = serde_json::to_string(&s).expect("serializes");
    assert!(json.contains("\"ep_comm\":\"on\""), "{json}");
}

/// Mixtral 8x7B, EP 8 on one node (NVLink), no pipeline, 8 micro-batches: each
/// micro-batch's all-to-alls are far below its compute, so under the combined 1F1B
/// schedule only the first forward's and the last backward's run alone — one
/// micro-batch's worth, raw/m — and the hidden rest costs σ/(1 + σ) of its time, σ = 0.189
/// (Lee et al. 2025): exposed = raw · (1/m + σ/(1+σ) · (1 − 1/m)).
#[test]
fn ep_overlap_leaves_the_lone_first_forward_and_last_backward() {
    let mut sc = mesh_scenario("mixtral-8x7b", 1, 4096, 64);
    sc.layout = Layout {
        ep: 8,
        expert_tp: 1,
        ..one_stage(&sc.layout, 8, 1, ZeroStage::Zero1, Recompute::Selective)
    };
    let off = step(&sc);
    sc.overheads.overlap.ep_comm = Switch::On;
    let on = step(&sc);
    let ep = GroupKind::Ep.index();
    let traffic = raw(&on, GroupKind::Ep);
    assert!(traffic > 0.0);
    assert_eq!(off.seconds.exposed_comm[ep], traffic);
    let m = 64.0 / 8.0;
    let want = traffic * (1.0 / m + 0.189 / 1.189 * (1.0 - 1.0 / m));
    assert!(
        (on.seconds.exposed_comm[ep] / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        on.seconds.exposed_comm[ep]
    );
    assert!(on.seconds.total < off.seconds.total);
    // Full recompute: Megatron refuses the overlap (transformer_config.py), priced exposed.
    sc.layout.recompute = Recompute::Full;
    let full_on = step(&sc);
    sc.overheads.overlap.ep_comm = Switch::Off;
    let full_off = step(&sc);
    assert_eq!(
        full_on.seconds.exposed_comm[ep],
        full_off.seconds.exposed_comm[ep]
    );
}
