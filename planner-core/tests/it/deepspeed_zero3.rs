//! DeepSpeed's ZeRO-3 parameter movement (time/deepspeed_zero3.rs): the reuse rule after a
//! recomputed forward, the 2021 gather path's rate, and what they add to a step's items.

use planner_core::input::framework::Framework;
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::layout::{Layout, Recompute, ZeroStage};
use planner_core::input::precision::Precision;
use planner_core::input::scenario::{Overheads, Training};
use planner_core::parallel::topology::{Placement, RankOrder};
use planner_core::resolve::presets::model_preset;
use planner_core::time::collectives::CommModel;
use planner_core::time::comms::{step_comms, CommInputs, Purpose, StepComms};
use planner_core::time::deepspeed_zero3::{
    backward_regather_share, gather_path_2021_bytes_per_s, MAX_REUSE_DISTANCE_PARAMS,
};

#[test]
fn the_reuse_rule_keeps_the_modules_whose_later_modules_are_small() {
    // GPT-3 175B (h = 12288), Megatron's modules in forward order: QKV 3h², output h²,
    // FC1 4h², FC2 4h². FC2 is used again at once (distance 0); FC1 after FC2 twice
    // (2 · 4h² = 1.21e9 ≥ 1e9): released, like everything before it. 8h² of 12h² regathered.
    let h2 = 12288.0_f64 * 12288.0;
    let gpt3 = [3.0 * h2, h2, 4.0 * h2, 4.0 * h2];
    let share = backward_regather_share(&gpt3, MAX_REUSE_DISTANCE_PARAMS);
    assert!((share - 8.0 / 12.0).abs() < 1e-12, "{share}");
    // Llama 3.1 8B-sized modules (h = 4096, FFN 14336, GQA): every later run of modules is
    // under 1e9, so backward gathers nothing again.
    let small = [
        4096.0 * 6144.0,
        4096.0 * 4096.0,
        2.0 * 4096.0 * 14336.0,
        4096.0 * 14336.0,
    ];
    assert_eq!(
        backward_regather_share(&small, MAX_REUSE_DISTANCE_PARAMS),
        0.0
    );
    // A module is kept only when its distance is under the threshold: at 0 even the last
    // module (distance 0) is released.
    assert_eq!(backward_regather_share(&gpt3, 0.0), 1.0);
    assert_eq!(backward_regather_share(&[], 1e9), 0.0);
}

#[test]
fn the_2021_gather_path_runs_at_deepspeeds_measured_rate() {
    // #1174: 5.116e9 gathered parameters (64 · 78.6e6 + (32003 + 512) · 2560), fp16, 7/8 of
    // them received per GPU = 8.954e9 bytes over 480 − 60/64 ms.
    let params = 64.0 * (4.0 * 2560.0 * 2560.0 + 2.0 * 2560.0 * 10240.0) + 32515.0 * 2560.0;
    let want = params * 2.0 * 7.0 / 8.0 / (0.480 - 0.060 / 64.0);
    let got = gather_path_2021_bytes_per_s();
    assert!((got - want).abs() / want < 1e-12, "{got} vs {want}");
    assert!((got / 1e9 - 18.69).abs() < 0.01, "{got}");
}

fn items(framework: Framework, recompute: Recompute, dp: u32) -> StepComms {
    let model = model_preset("gpt3-175b").expect("preset");
    let cluster = Cluster::of(gpu_preset("a100-80gb").expect("gpu"), dp / 8);
    let overheads = Overheads {
        framework,
        ..Overheads::default()
    };
    let inp = CommInputs::new(
        &model,
        &Precision::default(),
        &Training {
            seq_len: 2048,
            global_batch: dp,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        &overheads,
    );
    let layout = Layout {
        dp,
        zero: ZeroStage::Zero3,
        recompute,
        ..Layout::default()
    };
    let placement = Placement::of(&layout, cluster.gpus_per_node, RankOrder::default());
    step_comms(&inp, &layout, &placement, &CommModel::assumed(&cluster))
}

#[test]
fn deepspeed_gathers_again_for_the_recomputed_forward_and_fsdp_does_not() {
    let bytes = |c: &StepComms, p: Purpose| c.bus_bytes(&[p]);
    let fsdp = items(Framework::Torchtitan, Recompute::Full, 64);
    assert!(fsdp.get(Purpose::ParamAllGatherRecompute).is_none());
    let ds = items(Framework::DeepSpeed, Recompute::Full, 64);
    let forward = bytes(&ds, Purpose::ParamAllGatherForward);
    assert!(forward > 0.0);
    assert_eq!(bytes(&ds, Purpose::ParamAllGatherRecompute), forward);
    // GPT-3's layers release all but FC2 after the recomputed forward (8 of 12 h², the
    // biases aside).
    let back = bytes(&ds, Purpose::ParamAllGatherBackward) / forward;
    assert!((back - 8.0 / 12.0).abs() < 1e-4, "{back}");
    // Without recompute DeepSpeed gathers before forward and backward, as FSDP does.
    let plain = items(Framework::DeepSpeed, Recompute::Selective, 64);
    assert!(plain.get(Purpose::ParamAllGatherRecompute).is_none());
    assert_eq!(bytes(&plain, Purpose::ParamAllGatherBackward), forward);
}

#[test]
fn deepspeed_2021_moves_zero3_traffic_no_faster_than_its_gather_path() {
    let rate = gather_path_2021_bytes_per_s();
    let new = items(Framework::DeepSpeed, Recompute::Full, 1536);
    let old = items(Framework::DeepSpeed2021, Recompute::Full, 1536);
    for p in [
        Purpose::ParamAllGatherForward,
        Purpose::ParamAllGatherRecompute,
        Purpose::ParamAllGatherBackward,
        Purpose::GradReduceScatter,
    ] {
        let (n, o) = (new.get(p).expect("item"), old.get(p).expect("item"));
        // Each call's bytes through a rank at the path's rate, or the link's time if longer.
        let path_s = o.bus_bytes_per_step / rate;
        assert!((o.seconds_per_step - path_s.max(n.seconds_per_step)).abs() < 1e-9 * path_s);
        // At 1,536 A100s over 8 HDR NICs per node the path, not the link, is the bound.
        assert!(o.seconds_per_step > 2.0 * n.seconds_per_step, "{p:?}");
    }
}

/// The mesh search builds DeepSpeed's ZeRO-3 items once per ZeRO stage and recompute policy
/// (search/mesh.rs): every candidate's step time is the one `evaluate` gives its layout,
/// full recompute (with its extra gather) and selective alike.
#[test]
fn the_search_prices_deepspeed_candidates_as_evaluate_does() {
    use planner_core::input::scenario::ModelChoice;
    use planner_core::resolve::presets::article_mesh_scenario;
    use planner_core::search::mesh::search;
    use planner_core::time::cost::{CostOptions, StepModel};
    for framework in [Framework::DeepSpeed, Framework::DeepSpeed2021] {
        let mut sc = article_mesh_scenario();
        sc.model = ModelChoice::Preset("llama-3.1-8b".into());
        sc.cluster = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 2);
        sc.training.seq_len = 4096;
        sc.training.global_batch = 64;
        sc.overheads.framework = framework;
        let model = sc.model_spec().expect("model");
        let sm = StepModel::new(&model, &sc, CostOptions::default());
        let space = crate::mesh::every_knob_space();
        let r = search(&model, &sc, &space, &sm);
        let zero3_full = r
            .feasible
            .iter()
            .filter(|f| f.knobs.zero == ZeroStage::Zero3 && f.knobs.recompute == Recompute::Full)
            .count();
        assert!(
            zero3_full > 0,
            "{framework:?}: no ZeRO-3 full-recompute candidate"
        );
        for f in &r.feasible {
            let want = sm.evaluate(&f.layout()).seconds.total;
            assert!(
                (f.step_s - want).abs() <= 1e-9 * want,
                "{framework:?} {:?}: search {} vs evaluate {want}",
                f.layout(),
                f.step_s
            );
        }
    }
}

/// ZeRO-3 across nodes carries the search's pricing caveat, except under DeepSpeed of 2021,
/// whose gather path is priced from DeepSpeed's own measurement (and matches the published
/// ZeRO-3 runs of that release to within −19% to +9%).
#[test]
fn only_an_unmeasured_gather_path_carries_the_caveat() {
    use planner_core::search::mesh::PricingCaveat;
    let layout = Layout {
        dp: 64,
        zero: ZeroStage::Zero3,
        ..Layout::default()
    };
    let placement = Placement::of(&layout, 8, RankOrder::default());
    for framework in Framework::ALL {
        let caveat = PricingCaveat::of(&layout, &placement, framework);
        if framework == Framework::DeepSpeed2021 {
            assert_eq!(caveat, None);
        } else {
            assert_eq!(
                caveat,
                Some(PricingCaveat::Zero3InterNodeGathers),
                "{framework:?}"
            );
        }
    }
    let in_node = Layout { dp: 8, ..layout };
    let placement = Placement::of(&in_node, 8, RankOrder::default());
    assert_eq!(
        PricingCaveat::of(&in_node, &placement, Framework::Torchtitan),
        None
    );
}
