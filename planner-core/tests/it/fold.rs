//! MoE parallel folding: expert-TP × EP × expert-DP over a stage's tp·cp·dp ranks
//! (Liu et al. 2025, arXiv 2504.14960; Megatron Core parallel_state.py), worked by hand.

use planner_core::edges::export::{export, ExportFormat};
use planner_core::edges::link::{decode, encode};
use planner_core::edges::validation::{parse_runs, validate_run, PUBLIC_RUNS_JSON};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::memory::model_state::{rank_params, stage_spans, ShardGroups};
use planner_core::parallel::fold::{expert_dp_ranks, ExpertGrid};
use planner_core::resolve::presets::default_scenario;

/// The scenario meshplan validate builds for a published row.
fn row_scenario(id: &str) -> Scenario {
    let runs = parse_runs(PUBLIC_RUNS_JSON).expect("dataset");
    let run = runs.iter().find(|r| r.id == id).expect("row");
    let (row, mapped) = validate_run(run);
    assert!(
        row.comparison.is_some(),
        "{id}: {:?}",
        row.not_representable
    );
    mapped.expect("mapped").scenario
}

#[test]
fn qwen3_235b_as_megatron_bridge_runs_it() {
    // Megatron-Bridge H100 recipe: TP 2, PP 8, VP 4, EP 32, expert-TP 1, 256 GPUs → DP 16.
    let s = row_scenario("mbridge2509-qwen3-235b-tokendrop-h100-tps");
    let l = &s.layout;
    assert_eq!(
        (l.tp, l.pp, l.cp, l.dp, l.ep, l.expert_tp),
        (2, 8, 1, 16, 32, 1)
    );
    let model = s.model_spec().expect("model");
    let pb = model.param_breakdown();
    // Per MoE layer: 128 experts × SwiGLU 3 × h 4096 × f_e 1536 = 128 × 18,874,368.
    assert_eq!(pb.routed_experts_per_layer, 2_415_919_104);
    let (spans, n) = stage_spans(&pb, l.pp);
    let scale = model
        .nominal_params
        .map_or(1.0, |psi| psi / pb.total() as f64);
    for span in &spans[..n] {
        let rank = rank_params(&model, &pb, l, span);
        // routed / (EP 32 × ETP 1) = 75,497,472 per layer: 4 whole experts per rank.
        let want = f64::from(span.moe_layers) * 75_497_472.0 * scale;
        assert!(
            (rank.expert - want).abs() <= 1e-9 * want,
            "{} vs {want}",
            rank.expert
        );
    }
    // EDP = tp·cp·dp / (etp·ep) = 2·1·16 / 32 = 1: every rank holds its own experts.
    assert_eq!(ShardGroups::of(l).expert, 1.0);
    assert_eq!(
        ExpertGrid::of(l),
        ExpertGrid {
            etp: 1,
            ep: 32,
            edp: 1
        }
    );
}

#[test]
fn expert_tp_equal_to_tp_keeps_the_old_expert_groups() {
    // Mixtral 8×7B, TP 2, PP 2, DP 8, EP 8 (the golden export's layout).
    let mut s = default_scenario();
    s.model = ModelChoice::Preset("mixtral-8x7b".to_string());
    s.cluster.nodes = 4;
    s.layout.dp = 8;
    s.layout.tp = 2;
    s.layout.pp = 2;
    s.layout.ep = 8;
    s.layout.sequence_parallel = true;
    let model = s.model_spec().expect("model");
    let pb = model.param_breakdown();
    let (spans, _) = stage_spans(&pb, 2);
    // Expert-TP 1: 8 experts / EP 8 = one whole expert per rank, as meshplan always
    // counted; the expert-DP group now takes in the TP ranks: 2·1·8 / 8 = 2.
    s.layout.expert_tp = 1;
    let whole = rank_params(&model, &pb, &s.layout, &spans[0]).expert;
    assert_eq!(expert_dp_ranks(&s.layout), 2.0);
    // Expert-TP = TP = 2 (Megatron's default): each expert split in two, and the expert-DP
    // group is dp·cp/ep = 8/8 = 1, the group meshplan used before folding.
    s.layout.expert_tp = 2;
    let split = rank_params(&model, &pb, &s.layout, &spans[0]).expert;
    assert_eq!(whole / split, 2.0);
    assert_eq!(expert_dp_ranks(&s.layout), 1.0);
    assert_eq!(ShardGroups::of(&s.layout).expert, 1.0);
}

#[test]
fn megatron_export_and_link_carry_expert_tp() {
    let mut s = row_scenario("mbridge2509-qwen3-235b-tokendrop-h100-tps");
    let model = s.model_spec().expect("model");
    let e = export(ExportFormat::Megatron, &s, &model);
    let has = |e: &planner_core::edges::export::Export, line: &str| {
        e.text.lines().any(|l| l.trim() == line)
    };
    assert!(has(&e, "--expert-model-parallel-size 32"), "{}", e.text);
    assert!(has(&e, "--expert-tensor-parallel-size 1"), "{}", e.text);

    // Link: absent means 1; a value round-trips; 0 is refused naming the field.
    let q = encode(&s);
    assert!(!q.contains("etp="), "{q}");
    assert_eq!(decode(&q).expect("decodes").layout.expert_tp, 1);
    s.layout.ep = 16;
    s.layout.expert_tp = 2;
    let q = encode(&s);
    assert!(q.contains("etp=2"), "{q}");
    let back = decode(&q).expect("decodes");
    assert_eq!(back.layout, s.layout);
    let e = export(ExportFormat::Megatron, &back, &model);
    assert!(has(&e, "--expert-tensor-parallel-size 2"), "{}", e.text);
    let bad = decode(&q.replace("etp=2", "etp=0")).expect_err("etp 0");
    assert!(bad.iter().any(|f| f.field == "etp"), "{bad:?}");
}
