//! The measured-numbers view: the step time with datasheet numbers, with the
//! scenario's calibration and the one in use, and the calibration's fitted links
//! beside the preset's assumption.

use serde::Serialize;

use crate::input::calibration::CalibrationSummary;
use crate::input::collective::{Collective, LinkDomain};
use crate::input::gemm_efficiency::GemmEfficiency;
use crate::input::hardware::Cluster;
use crate::input::scenario::Scenario;

/// The datasheet, calibrated and current step times: the view's three figures.
pub use crate::time::calibrated_step::StepTimes;

/// The links as priced (NCCL's tuner on the preset's node, or a fit): the worker's
/// measured-numbers import draws the fitted and the assumed bus bandwidth with it.
pub use crate::time::collectives::CommModel;

/// Everything the measured-numbers view shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeasuredView {
    /// The step time three ways.
    pub times: StepTimes,
    /// (measured − assumed) ÷ assumed, when both are known.
    pub measured_vs_assumed: Option<f64>,
    /// The calibration's fit beside the assumption; `None` without a calibration.
    pub fit: Option<FitTable>,
}

/// The fitted numbers a share link carries, beside the preset's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FitTable {
    /// One row per fitted collective and link.
    pub links: Vec<FitRow>,
    /// The assumed GEMM efficiency curve (what a GEMM fit replaces).
    pub assumed_gemm: GemmEfficiency,
}

/// One fitted link beside the preset's assumption for the same collective and link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FitRow {
    /// The collective.
    pub op: Collective,
    /// The link it ran on.
    pub domain: LinkDomain,
    /// Fitted bus bandwidth, bytes per second.
    pub fit_busbw_bytes_per_s: f64,
    /// The preset's bus bandwidth, bytes per second.
    pub assumed_busbw_bytes_per_s: f64,
    /// Fitted latency per step (α), seconds.
    pub fit_latency_s: f64,
    /// The preset's latency per step, seconds.
    pub assumed_latency_s: f64,
    /// Measurements the fit used.
    pub points: u32,
    /// Largest relative error of the fit over its points.
    pub max_relative_error: f64,
}

/// The measured-numbers view of scenario `s`.
pub fn measured(s: &Scenario) -> MeasuredView {
    let times = step_times(s);
    MeasuredView {
        measured_vs_assumed: times.measured_vs_assumed(),
        times,
        fit: s
            .calibration
            .as_ref()
            .map(|m| fit_table(&m.summary, &s.cluster)),
    }
}

/// The step time of `s` three ways (datasheet, calibrated, in use).
pub fn step_times(s: &Scenario) -> StepTimes {
    crate::time::calibrated_step::step_times(s)
}

/// The calibration `summary`'s fitted links beside `cluster`'s assumed ones.
pub fn fit_table(summary: &CalibrationSummary, cluster: &Cluster) -> FitTable {
    let assumed = CommModel::assumed(cluster);
    let links = summary
        .links
        .iter()
        .map(|l| {
            let preset = assumed.link(l.op, l.domain);
            FitRow {
                op: l.op,
                domain: l.domain,
                fit_busbw_bytes_per_s: l.busbw_bytes_per_s,
                assumed_busbw_bytes_per_s: preset.busbw_bytes_per_s,
                fit_latency_s: l.latency_s,
                assumed_latency_s: preset.latency_s,
                points: l.points,
                max_relative_error: l.max_relative_error,
            }
        })
        .collect();
    FitTable {
        links,
        assumed_gemm: GemmEfficiency::default(),
    }
}
