//! DeepSeek-V3's multi-token-prediction module (`ModelSpec::mtp_layers`): its parameters
//! against the closed form from the published config.json shapes, its FLOPs, its place on the
//! last pipeline stage, and the link / scenario-file field checked at the edge.

use planner_core::edges::link;
use planner_core::input::layout::Layout;
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::memory::model_state::{rank_params, stage_spans};
use planner_core::resolve::presets::{default_scenario, model_preset};
use planner_core::time::cost::flops_per_token;

fn dsv3(mtp: u32) -> ModelSpec {
    ModelSpec {
        mtp_layers: mtp,
        ..model_preset("deepseek-v3").expect("preset")
    }
}

/// deepseek-ai/DeepSeek-V3 config.json: hidden 7168, 128 heads, q_lora_rank 1536,
/// kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128,
/// moe_intermediate_size 2048, n_routed_experts 256, n_shared_experts 1,
/// num_nextn_predict_layers 1. The MTP module (DeepSeek-V3 report §2.2): one MoE decoder
/// layer, the projection M ∈ R^{h × 2h}, and the norms enorm, hnorm and shared_head.norm;
/// the embedding and the output head are the main model's.
#[test]
fn the_mtp_module_of_deepseek_v3_has_the_closed_form_parameter_count() {
    let h: u64 = 7168;
    let heads: u64 = 128;
    let q_head: u64 = 128 + 64;
    let q = h * 1536 + 1536 + 1536 * heads * q_head;
    let kv = h * (512 + 64) + 512 + 512 * heads * (128 + 128);
    let out = heads * 128 * h;
    let attention = q + kv + out;
    let layer_norms = 2 * h;
    let experts = (256 + 1) * 3 * h * 2048;
    let router = h * 256;
    let layer = attention + layer_norms + experts + router;
    let projection = 2 * h * h;
    let norms = 3 * h;
    let closed_form = layer + projection + norms;
    assert_eq!(closed_form, 11_610_067_968);

    let with = dsv3(1).param_breakdown();
    let without = dsv3(0).param_breakdown();
    assert_eq!(with.mtp_total(), closed_form);
    assert_eq!(with.total() - without.total(), closed_form);
    assert_eq!(without.mtp_total(), 0);
    // Active per token: the top-8 of 256 routed experts, as in a main-model MoE layer.
    let inactive = (256 - 8) * 3 * h * 2048;
    assert_eq!(with.mtp_active(), closed_form - inactive);
}

/// One more decoder layer, one more LM head: Megatron's num_floating_point_operations
/// (megatron/training/training.py) counts `num_layers + mtp_num_layers` layers, the MTP
/// projection `2h·h` and logits `× (mtp_num_layers + 1)`.
#[test]
fn mtp_flops_are_one_more_layer_and_one_more_head() {
    let (a, b) = (dsv3(0), dsv3(1));
    let seq = 4096;
    let f0 = flops_per_token(&a, seq, false);
    let f1 = flops_per_token(&b, seq, false);
    let pb = b.param_breakdown();
    let head = f64::from(b.vocab) * f64::from(b.hidden);
    let extra = 2.0 * (pb.mtp_active() as f64 + head);
    assert!((f1.dense_forward - f0.dense_forward - extra).abs() < 1.0);
    assert!((f1.output_forward - 2.0 * f0.output_forward).abs() < 1.0);
    // Attention: 62 layers' cores instead of 61 (every DeepSeek-V3 layer attends in full).
    let ratio = f1.attention_forward / f0.attention_forward;
    assert!((ratio - 62.0 / 61.0).abs() < 1e-12);
    assert!((f1.mtp_attention_forward - f0.attention_forward / 61.0).abs() < 1.0);
    assert!((f1.mtp_forward - 2.0 * pb.mtp_active() as f64).abs() < 1.0);
}

/// Megatron places the MTP module on the last pipeline stage (layout letter `m`): that stage
/// holds its parameters, no other stage changes.
#[test]
fn the_last_stage_holds_the_mtp_module() {
    let (a, b) = (dsv3(0), dsv3(1));
    let (pa, pb) = (a.param_breakdown(), b.param_breakdown());
    let layout = Layout {
        dp: 1,
        tp: 1,
        pp: 4,
        cp: 1,
        ep: 1,
        expert_tp: 1,
        virtual_stages: 1,
        ..default_scenario().layout
    };
    let (spans_a, n) = stage_spans(&pa, 4);
    let (spans_b, _) = stage_spans(&pb, 4);
    assert_eq!(n, 3);
    for i in 0..n {
        let last = i + 1 == n;
        assert_eq!(spans_b[i].mtp_layers, u32::from(last));
        let ra = rank_params(&a, &pa, &layout, &spans_a[i]).total();
        let rb = rank_params(&b, &pb, &layout, &spans_b[i]).total();
        let want = if last { pb.mtp_total() as f64 } else { 0.0 };
        assert!(
            (rb - ra - want).abs() < 1.0,
            "stage {i}: {rb} − {ra} ≠ {want}"
        );
    }
}

fn custom(mtp: u32) -> Scenario {
    let mut s = default_scenario();
    s.model = ModelChoice::Custom(dsv3(mtp));
    s
}

#[test]
fn the_link_carries_mtp_and_refuses_more_modules_than_layers() {
    let s = custom(1);
    let q = link::encode(&s);
    assert!(q.contains("mtp=1"), "{q}");
    let back = link::decode(&q).expect("decodes");
    assert_eq!(back, s);
    // No MTP: the link leaves the key out.
    assert!(!link::encode(&custom(0)).contains("mtp="));
    let bad = q.replace("mtp=1", "mtp=62");
    let errors = link::decode(&bad).expect_err("62 MTP modules on 61 layers");
    assert!(errors.iter().any(|e| e.field == "mtp"), "{errors:?}");
    let junk = q.replace("mtp=1", "mtp=x");
    let errors = link::decode(&junk).expect_err("not a number");
    assert!(errors.iter().any(|e| e.field == "mtp"), "{errors:?}");
}

#[test]
fn a_scenario_file_carries_mtp_and_is_checked() {
    let s = custom(1);
    let json = serde_json::to_string(&s).expect("serializes");
    assert!(json.contains("\"mtp_layers\":1"));
    assert_eq!(Scenario::from_json(&json).expect("valid"), s);
    let bad = json.replace("\"mtp_layers\":1", "\"mtp_layers\":99");
    let errors = Scenario::from_json(&bad).expect_err("99 modules on 61 layers");
    assert!(errors.iter().any(|e| e.field.contains("mtp")), "{errors:?}");
    // Files without the field read as no MTP.
    let plain = serde_json::to_string(&custom(0)).expect("serializes");
    assert!(!plain.contains("mtp_layers"));
}

/// The Megatron-LM export trains the module: `--mtp-num-layers` (arguments.py), and an
/// explicit layout puts it on the last chunk before the loss, as Megatron-Bridge's
/// DeepSeek-V3 H100 layout "Et|(tt|)*30mL" does.
#[test]
fn the_megatron_export_carries_the_mtp_module() {
    use planner_core::edges::export::{export, ExportFormat};
    use planner_core::input::layout::{Schedule, StageSplit};
    let mut s = custom(1);
    s.layout = Layout {
        pp: 8,
        tp: 2,
        dp: 4,
        ep: 8,
        expert_tp: 1,
        virtual_stages: 4,
        schedule: Schedule::Interleaved,
        stage_split: StageSplit::Chunks({
            let mut list = vec![1];
            list.extend([2; 30]);
            list.push(0);
            list
        }),
        ..s.layout
    };
    let model = s.model_spec().expect("model");
    let e = export(ExportFormat::Megatron, &s, &model);
    assert!(e.text.contains("--mtp-num-layers 1"), "{}", e.text);
    assert!(e.text.contains("|mL"), "{}", e.text);
    let plain = export(ExportFormat::Megatron, &custom(0), &dsv3(0));
    assert!(!plain.text.contains("--mtp-num-layers"));
}

/// DeepSeek-V3 on 2,048 H100 with TP 2 × PP 16 × EP 64 and Megatron's first 3 / last 2
/// split: the middle stages hold 4 MoE layers, the last 2 MoE layers, the LM head and (with
/// MTP) the MTP module. Counted in decoder-layer equivalents the MTP module makes the last stage
/// the heaviest, but a middle stage with twice its MoE layers (twice the all-to-alls) is the
/// slower one and keeps the pace (StepModel::pacing): the module adds work, so the step cannot
/// get shorter (it did, 28.43 → 27.18 s, when the pace followed the layer count alone).
#[test]
fn the_mtp_module_never_shortens_the_step() {
    use planner_core::input::hardware::{gpu_preset, Cluster};
    use planner_core::input::layout::{Recompute, StageSplit};
    use planner_core::time::cost::{CostOptions, StepModel};
    let step = |mtp: u32| {
        let mut s = custom(mtp);
        s.cluster = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 256);
        s.training.seq_len = 4096;
        s.training.global_batch = 8192;
        s.layout = Layout {
            dp: 64,
            tp: 2,
            pp: 16,
            ep: 64,
            sequence_parallel: true,
            recompute: Recompute::Full,
            stage_split: StageSplit::FirstLast {
                first: Some(3),
                last: Some(2),
            },
            ..Layout::default()
        };
        let model = s.model_spec().expect("model");
        let sm = StepModel::for_scenario(&model, &s, CostOptions::default());
        let placement = sm.placement(&s.layout);
        let (pace, seconds) = sm.pacing(&s.layout, &placement);
        assert_eq!(sm.seconds(&s.layout, &placement).total, seconds.total);
        assert_eq!(sm.evaluate(&s.layout).seconds.total, seconds.total);
        (pace, seconds.total, sm.comm_inputs.pace(&s.layout))
    };
    let (pace0, t0, _) = step(0);
    let (pace1, t1, by_count) = step(1);
    assert_eq!(
        by_count.rank, 15,
        "the layer count alone picks the last stage"
    );
    assert_eq!((pace0.moe_layers, pace1.moe_layers), (4.0, 4.0));
    assert!(pace1.rank > 0 && pace1.rank < 15, "{pace1:?}");
    assert!(t1 >= t0, "with MTP {t1} s, without {t0} s");
}

/// The mesh search prices a candidate whose MoE-heaviest stage is not its most-counted one as
/// `evaluate` does (the slower of the two stages), on DeepSeek-V3 with its MTP module.
#[test]
fn the_search_paces_moe_splits_as_evaluate_does() {
    use planner_core::input::hardware::{gpu_preset, Cluster};
    use planner_core::search::mesh::search;
    use planner_core::time::cost::{CostOptions, StepModel};
    let mut s = custom(1);
    s.cluster = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 32);
    s.training.seq_len = 4096;
    s.training.global_batch = 1024;
    let model = s.model_spec().expect("model");
    let sm = StepModel::for_scenario(&model, &s, CostOptions::default());
    let space = crate::mesh::every_knob_space();
    let r = search(&model, &s, &space, &sm);
    let rivalled: Vec<_> = r
        .feasible
        .iter()
        .filter(|f| sm.comm_inputs.pace_rival(&f.layout()).is_some())
        .take(200)
        .collect();
    assert!(!rivalled.is_empty(), "no candidate with a rival stage");
    for f in rivalled {
        let want = sm.evaluate(&f.layout()).seconds.total;
        assert!(
            (f.step_s - want).abs() <= 1e-9 * want,
            "{:?}: search {} vs evaluate {want}",
            f.layout(),
            f.step_s
        );
    }
}
