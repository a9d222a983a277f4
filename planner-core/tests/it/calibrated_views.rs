//! With measured numbers switched on, every time the views show comes from the
//! same calibrated model as `evaluate`'s step cost; switched off, the presets.

use planner_core::evaluate::evaluate;
use planner_core::figures::breakdown::step_breakdown;
use planner_core::figures::teaching::teaching_figures;
use planner_core::input::calibration::{CalibrationSummary, FittedLink, CALIBRATION_VERSION};
use planner_core::input::scenario::{Measured, Scenario};
use planner_core::resolve::presets::article_mesh_scenario;
use planner_core::time::collectives::{Collective, LinkDomain};
use planner_core::time::cost::{scaling, CostOptions, ScalingKind};

/// A network and NVLink four times slower than the presets, for every collective.
fn slow_links() -> CalibrationSummary {
    let links = Collective::ALL
        .iter()
        .flat_map(|&op| {
            [
                (LinkDomain::InterNode, 12.5e9),
                (LinkDomain::IntraNode, 90e9),
            ]
            .map(|(domain, busbw_bytes_per_s)| FittedLink {
                op,
                domain,
                latency_s: 20e-6,
                busbw_bytes_per_s,
                points: 8,
                max_relative_error: 0.02,
            })
        })
        .collect();
    CalibrationSummary {
        version: CALIBRATION_VERSION,
        links,
        gemm: None,
    }
}

fn with_calibration(base: &Scenario, enabled: bool) -> Scenario {
    let mut s = base.clone();
    s.calibration = Some(Measured {
        summary: slow_links(),
        enabled,
    });
    s
}

fn relative_gap(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

#[test]
fn the_breakdown_adds_up_to_the_calibrated_step_time_when_switched_on() {
    let base = article_mesh_scenario();
    let model = base.model_spec().expect("preset");
    let options = CostOptions::default();
    let on = with_calibration(&base, true);
    let off = with_calibration(&base, false);

    let on_total = step_breakdown(&on, &model, &options).total_s;
    let off_total = step_breakdown(&off, &model, &options).total_s;
    let plain_total = step_breakdown(&base, &model, &options).total_s;

    let on_step = evaluate(&on).expect("valid").step.seconds.total;
    assert!(
        relative_gap(on_total, on_step) < 1e-12,
        "{on_total} vs {on_step}"
    );
    assert!(on_total > off_total * 1.01, "{on_total} vs {off_total}");
    assert_eq!(off_total, plain_total, "switched off: the presets");
}

#[test]
fn scaling_curves_use_the_calibration_when_switched_on() {
    let base = article_mesh_scenario();
    let model = base.model_spec().expect("preset");
    let options = CostOptions::default();
    let dps = [1, 2, 4];
    let on = scaling(
        &model,
        &with_calibration(&base, true),
        &options,
        ScalingKind::Strong,
        &dps,
    );
    let off = scaling(
        &model,
        &with_calibration(&base, false),
        &options,
        ScalingKind::Strong,
        &dps,
    );
    for (a, b) in on.iter().zip(&off) {
        assert!(
            a.step_s > b.step_s,
            "dp {}: {} vs {}",
            a.dp,
            a.step_s,
            b.step_s
        );
    }
}

#[test]
fn teaching_timelines_use_the_measured_links_when_switched_on() {
    let base = article_mesh_scenario();
    let model = base.model_spec().expect("preset");
    let options = CostOptions::default();
    let on = teaching_figures(&with_calibration(&base, true), &model, &options);
    let off = teaching_figures(&with_calibration(&base, false), &model, &options);

    // The layout's own DDP timeline: measured bus bandwidth, slower all-reduce.
    assert!(
        on.ddp.current.busbw_bytes_per_s < off.ddp.current.busbw_bytes_per_s,
        "{} vs {}",
        on.ddp.current.busbw_bytes_per_s,
        off.ddp.current.busbw_bytes_per_s
    );
    assert!(on.ddp.current.all_reduce_total_s > off.ddp.current.all_reduce_total_s);
    // The FSDP lanes: the collectives' bars last longer, the compute bars do not.
    let longest = |lanes: &planner_core::figures::teaching::FsdpLanes| {
        lanes
            .bars
            .iter()
            .map(|b| b.end_s - b.start_s)
            .fold(0.0_f64, f64::max)
    };
    assert!(longest(&on.fsdp) > longest(&off.fsdp));
}
