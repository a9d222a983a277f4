//! Scenario validation and layout rules.

use planner_core::input::layout::Schedule;
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets::{article_mesh_scenario, default_scenario, model_preset};
use planner_core::resolve::validate::{layout_rule_violations, RuleViolation, Severity};
use proptest::prelude::*;

type Edit = Box<dyn Fn(&mut Scenario)>;

pub(crate) fn invalid_fields(s: &Scenario) -> Vec<String> {
    s.validate()
        .err()
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.field)
        .collect()
}

fn rules(model: &ModelSpec, s: &Scenario) -> Vec<String> {
    layout_rule_violations(model, s)
        .into_iter()
        .map(|v| v.rule)
        .collect()
}

#[test]
fn ranges_name_their_field() {
    let cases: Vec<(&str, Edit)> = vec![
        ("v", Box::new(|s| s.version = 2)),
        ("seq", Box::new(|s| s.training.seq_len = 0)),
        ("seq", Box::new(|s| s.training.seq_len = 10_485_761)),
        ("gbs", Box::new(|s| s.training.global_batch = 0)),
        ("tp", Box::new(|s| s.layout.tp = 0)),
        ("ep", Box::new(|s| s.layout.ep = 65)),
        ("mbs", Box::new(|s| s.layout.micro_batch = 0)),
        ("gpus", Box::new(|s| s.cluster.nodes = 200_000)),
        ("usable", Box::new(|s| s.overheads.usable_fraction = 0.0)),
        ("usable", Box::new(|s| s.overheads.usable_fraction = 1.5)),
        (
            "serve_util",
            Box::new(|s| s.serving.memory_utilization = f64::NAN),
        ),
        (
            "weight_bytes",
            Box::new(|s| s.precision.weight_bytes = -1.0),
        ),
        (
            "optim_bytes",
            Box::new(|s| s.precision.optimizer_bytes = f64::INFINITY),
        ),
        ("gpu_mem", Box::new(|s| s.cluster.gpu.memory_bytes = 0.0)),
        (
            "model",
            Box::new(|s| s.model = ModelChoice::Preset("nope".into())),
        ),
    ];
    for (field, edit) in cases {
        let mut s = default_scenario();
        edit(&mut s);
        assert_eq!(invalid_fields(&s), [field], "{field}");
    }
}

#[test]
fn layout_larger_than_cluster_is_an_error() {
    let mut s = default_scenario();
    s.layout.dp = 16;
    assert_eq!(invalid_fields(&s), ["dp"]);
    let m = s.model_spec().unwrap();
    assert_eq!(rules(&m, &s), ["world_exceeds_cluster"]);
    // The page shows validation errors and rules together: this rule restates the "dp"
    // error above, and only this one does.
    let v = layout_rule_violations(&m, &s);
    assert!(v.iter().all(RuleViolation::restates_validation));
    let mut t = default_scenario();
    t.layout.tp = 3;
    let m = t.model_spec().unwrap();
    let v = layout_rule_violations(&m, &t);
    assert!(!v.is_empty() && !v.iter().any(RuleViolation::restates_validation));
}

#[test]
fn absurd_custom_models_are_rejected_before_counting() {
    let mut m = model_preset("deepseek-v3").unwrap();
    m.layers = 10_000;
    m.hidden = 4_000_000;
    let mut s = default_scenario();
    s.model = ModelChoice::Custom(m);
    assert_eq!(invalid_fields(&s), ["layers"]);
}

#[test]
fn query_heads_not_a_multiple_of_kv_heads_is_refused_from_a_link() {
    // Issue 43 §5: 32 query heads over 7 KV heads is no grouped-query attention.
    let link =
        "v=1&model=custom&name=x&layers=4&hidden=4096&heads=32&kv_heads=7&ffn=14336&vocab=32000";
    let errors = planner_core::edges::link::decode(link).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].field, "kv_heads");
    assert!(
        errors[0].message.contains("heads (32)") && errors[0].message.contains("kv_heads (7)"),
        "{}",
        errors[0].message
    );
    // 32 over 8 (Llama 3.1 8B's groups of 4) and over 1 (MQA) decode.
    for kv in [8, 1, 32] {
        let ok = link.replace("kv_heads=7", &format!("kv_heads={kv}"));
        assert!(planner_core::edges::link::decode(&ok).is_ok(), "{ok}");
    }
}

#[test]
fn the_article_mesh_breaks_no_rule() {
    let s = article_mesh_scenario();
    assert!(layout_rule_violations(&s.model_spec().unwrap(), &s).is_empty());
}

#[test]
fn divisibility_rules() {
    let llama = model_preset("llama-3.1-70b").unwrap();
    let mut s = default_scenario();
    s.layout.tp = 3;
    s.layout.dp = 1;
    // 64 heads, 8 KV heads, FFN 28672 over tp 3; 512 sequences over dp 1 are fine.
    assert_eq!(
        rules(&llama, &s),
        [
            "heads_divisible_by_tp",
            "kv_heads_divisible_by_tp",
            "ffn_divisible_by_tp",
            "world_below_cluster",
            // 3 does not divide a node of 8: ranks 6–8 straddle two nodes.
            "tp_within_node"
        ]
    );

    // tp = 16 > 8 KV heads replicates them: allowed, but tp spans two nodes.
    let mut s = default_scenario();
    s.layout.tp = 16;
    s.layout.dp = 4;
    assert_eq!(rules(&llama, &s), ["tp_within_node"]);
    let v = layout_rule_violations(&llama, &s);
    assert_eq!(v[0].severity, Severity::Warning);
    assert!(!v[0].is_error());

    let mut s = default_scenario();
    s.layout.pp = 3;
    s.layout.dp = 2;
    assert_eq!(
        rules(&llama, &s),
        ["layers_divisible_by_pp", "world_below_cluster"]
    );

    let mut s = article_mesh_scenario();
    s.training.seq_len = 32_772; // divisible by 4, not by 2·cp = 8
    assert_eq!(rules(&llama, &s), ["seq_divisible_by_2cp"]);

    let mut s = article_mesh_scenario();
    s.training.global_batch = 66;
    assert_eq!(rules(&llama, &s), ["batch_divisible_by_dp_mbs"]);

    let mut s = article_mesh_scenario();
    s.layout.ep = 2;
    assert_eq!(rules(&llama, &s), ["ep_requires_moe"]);

    let mut s = article_mesh_scenario();
    s.layout.schedule = Schedule::Interleaved;
    assert_eq!(rules(&llama, &s), ["interleaved_needs_virtual_stages"]);
    s.layout.virtual_stages = 4; // 80 layers = 4 stages × 4 chunks × 5; 16 micro-batches % 4 = 0
    assert!(rules(&llama, &s).is_empty());
    s.layout.virtual_stages = 3;
    assert_eq!(rules(&llama, &s), ["layers_divisible_by_pp"]);
    s.layout.schedule = Schedule::OneFOneB;
    assert_eq!(
        rules(&llama, &s),
        ["layers_divisible_by_pp", "virtual_stages_need_interleaved"]
    );
}

#[test]
fn expert_rules() {
    let mixtral = model_preset("mixtral-8x7b").unwrap();
    let mut s = article_mesh_scenario();
    s.model = ModelChoice::Preset("mixtral-8x7b".into());
    s.layout.pp = 4; // 32 layers
    s.layout.ep = 8; // 8 experts over ep 8; dp × cp = 16
    assert!(rules(&mixtral, &s).is_empty(), "{:?}", rules(&mixtral, &s));
    s.layout.ep = 16;
    assert_eq!(rules(&mixtral, &s), ["experts_divisible_by_ep"]);
    s.layout.cp = 1;
    s.layout.dp = 16;
    s.layout.ep = 3;
    assert_eq!(
        rules(&mixtral, &s),
        ["experts_divisible_by_ep", "etp_ep_divides_tp_cp_dp"]
    );
}

#[test]
fn moe_folding_rule_names_expert_tp_and_the_stage() {
    // Mixtral 8×7B on 32 GPUs: TP 2, PP 4, DP 4, EP 8, expert-TP 1. EP 8 exceeds
    // dp × cp = 4 (today's old rule rejected it) but divides tp·cp·dp = 8: valid.
    let qwen = model_preset("mixtral-8x7b").unwrap();
    let mut s = article_mesh_scenario();
    s.model = ModelChoice::Preset("mixtral-8x7b".into());
    s.cluster.nodes = 4;
    s.cluster.gpus_per_node = 8;
    s.training.seq_len = 4096;
    s.training.global_batch = 256;
    s.layout.tp = 2;
    s.layout.pp = 4;
    s.layout.cp = 1;
    s.layout.dp = 4;
    s.layout.ep = 8;
    s.layout.expert_tp = 1;
    s.layout.virtual_stages = 1;
    s.layout.micro_batch = 1;
    s.layout.schedule = Schedule::OneFOneB;
    let errors = |s: &Scenario| -> Vec<(String, String, String)> {
        layout_rule_violations(&qwen, s)
            .into_iter()
            .filter(|r| r.is_error())
            .map(|r| (r.field, r.rule, r.message))
            .collect()
    };
    assert!(errors(&s).is_empty(), "{:?}", errors(&s));
    // Expert-TP 2 × EP 8 = 16 does not divide 2 × 1 × 4 = 8.
    s.layout.expert_tp = 2;
    assert_eq!(
        errors(&s),
        [(
            "ep".to_string(),
            "etp_ep_divides_tp_cp_dp".to_string(),
            "expert_tp × ep = 2 × 8 = 16 does not divide tp × cp × dp = 2 × 1 × 4 = 8".to_string()
        )]
    );
    // Expert FFN 14336 does not split over expert-TP 5 (14336 = 5 × 2867 + 1).
    s.layout.ep = 1;
    s.layout.expert_tp = 5;
    let e = errors(&s);
    assert!(
        e.iter()
            .any(|(f, r, _)| f == "etp" && r == "expert_ffn_divisible_by_etp"),
        "{e:?}"
    );
    // Dense models take no expert-TP.
    let llama = model_preset("llama-3.1-70b").unwrap();
    s.model = ModelChoice::Preset("llama-3.1-70b".into());
    s.layout.expert_tp = 2;
    assert!(layout_rule_violations(&llama, &s)
        .iter()
        .any(|r| r.field == "etp" && r.rule == "etp_requires_moe"));
}

proptest! {
    #[test]
    fn rules_never_panic(tp in 0u32..100, pp in 0u32..100, cp in 0u32..100, dp in 0u32..100,
                         ep in 0u32..100, vs in 0u32..10, mbs in 0u32..10, seq in 0u32..100_000, gbs in 0u32..10_000) {
        let mut s = default_scenario();
        let l = &mut s.layout;
        (l.tp, l.pp, l.cp, l.dp, l.ep, l.virtual_stages, l.micro_batch) = (tp, pp, cp, dp, ep, vs, mbs);
        s.training.seq_len = seq;
        s.training.global_batch = gbs;
        for id in ["llama-3.1-70b", "mixtral-8x22b", "deepseek-v3"] {
            let _ = layout_rule_violations(&model_preset(id).unwrap(), &s);
        }
        let _ = s.validate();
    }
}
