//! The whole-scenario evaluation the app and `meshplan eval` show.

use planner_core::evaluate::{evaluate, micro_batches};
use planner_core::input::hardware::GB;
use planner_core::input::layout::ZeroStage;
use planner_core::resolve::presets::{
    article_70b_scenario, article_mesh_scenario, default_scenario,
};

#[test]
fn article_chart_numbers_come_out_of_evaluate() {
    let eval = evaluate(&article_70b_scenario()).expect("article scenario is valid");
    let totals: Vec<(ZeroStage, f64)> = eval
        .model_state
        .iter()
        .map(|bar| (bar.zero, bar.total_bytes / GB))
        .collect();
    let expect = [
        (ZeroStage::Ddp, 1120.0),
        (ZeroStage::Zero1, 293.125),
        (ZeroStage::Zero2, 155.3125),
        (ZeroStage::Zero3, 17.5),
    ];
    for ((zero, got), (want_zero, want)) in totals.iter().zip(expect) {
        assert_eq!(*zero, want_zero);
        assert!(
            (got - want).abs() < 1e-9,
            "{zero:?}: {got} GB, want {want} GB"
        );
    }
    // DDP: 140 GB weights + 140 GB gradients + 840 GB optimizer state, all replicated.
    let ddp = &eval.model_state[0];
    let replicated: Vec<f64> = ddp.replicated.iter().map(|t| t.value / GB).collect();
    assert_eq!(replicated.len(), 3);
    for (got, want) in replicated.iter().zip([140.0, 140.0, 840.0]) {
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }
    assert!(ddp.sharded.iter().all(|t| t.value == 0.0));
    assert_eq!(eval.params.total, 70e9);
}

#[test]
fn article_mesh_is_512_gpus_and_sixteen_micro_batches() {
    let s = article_mesh_scenario();
    let l = &s.layout;
    assert_eq!((l.tp, l.pp, l.cp, l.dp), (8, 4, 4, 4));
    assert_eq!(l.world_size(), 512);
    assert_eq!(s.cluster.world_size(), 512);
    let eval = evaluate(&s).expect("valid");
    assert_eq!(micro_batches(&s), 16);
    // 1F1B with p = 4, m = 16: the article's 3/19 idle share.
    let pipeline = planner_core::view::pipeline::pipeline(&s);
    assert!((pipeline.bubble.idle_fraction - 3.0 / 19.0).abs() < 1e-15);
    assert!(pipeline.grid.is_ok());
    assert_eq!(eval.training.stages.len(), 3);
    assert!(eval
        .rules
        .iter()
        .all(|r| r.severity != planner_core::resolve::validate::Severity::Error));
}

#[test]
fn serving_view_reports_the_article_kv_figure() {
    let eval = evaluate(&default_scenario()).expect("valid");
    let serving = eval.serving.expect("serving inputs valid");
    assert_eq!(serving.plan.kv_bytes_per_token.value, 327_680.0);
    assert!(!serving.table.is_empty());
}

#[test]
fn invalid_scenario_names_the_parameter() {
    let mut s = default_scenario();
    s.training.seq_len = 0;
    let err = evaluate(&s).expect_err("seq 0 is invalid");
    assert!(err.errors.iter().any(|e| e.field == "seq"), "{err}");
}

#[test]
fn evaluation_serialises_to_json() {
    let eval = evaluate(&article_mesh_scenario()).expect("valid");
    let json = serde_json::to_string(&eval).expect("serialisable");
    let back: planner_core::evaluate::Evaluation =
        serde_json::from_str(&json).expect("parses back");
    assert_eq!(back.params, eval.params);
}

#[test]
fn enabled_calibration_changes_the_step_time_and_is_reported_as_measured() {
    use planner_core::input::calibration::{CalibrationSummary, FittedLink, CALIBRATION_VERSION};
    use planner_core::input::scenario::Measured;
    use planner_core::time::collectives::{Collective, LinkDomain};

    let base = article_mesh_scenario();
    let plain = evaluate(&base).expect("valid").step;
    // A network ten times slower than the preset for every collective the layout uses.
    let links = Collective::ALL
        .iter()
        .map(|&op| FittedLink {
            op,
            domain: LinkDomain::InterNode,
            latency_s: 50e-6,
            busbw_bytes_per_s: 5e9,
            points: 8,
            max_relative_error: 0.02,
        })
        .collect();
    let summary = CalibrationSummary {
        version: CALIBRATION_VERSION,
        links,
        gemm: None,
    };
    let mut calibrated = base.clone();
    calibrated.calibration = Some(Measured {
        summary: summary.clone(),
        enabled: true,
    });
    let slow = evaluate(&calibrated).expect("valid").step;
    assert!(
        slow.seconds.total > plain.seconds.total,
        "{} vs {}",
        slow.seconds.total,
        plain.seconds.total
    );
    assert!(slow.inputs.iter().any(|i| i.measured), "{:?}", slow.inputs);

    // Switched off: the summary is kept, the presets are used.
    calibrated.calibration = Some(Measured {
        summary,
        enabled: false,
    });
    let off = evaluate(&calibrated).expect("valid").step;
    assert_eq!(off.seconds.total, plain.seconds.total);
}
