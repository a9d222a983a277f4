//! The measured view's three step times of one scenario: with datasheet numbers,
//! with the scenario's calibration, and the one in use now (the calibrated one
//! while "use measured numbers" is on), and how far the calibration moves it.
//! The same arithmetic as `evaluate::evaluate(s).step`, without recomputing
//! memory and serving on every input.

use crate::input::scenario::Scenario;
use crate::time::cost::{evaluate_scenario, CostOptions};

/// Step time of a scenario three ways, seconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StepTimes {
    /// With the preset links and the assumed GEMM curve; `None` when it cannot be computed.
    pub assumed_s: Option<f64>,
    /// With the scenario's calibration (switched on or not); `None` without one.
    pub measured_s: Option<f64>,
    /// As `Evaluation.step` has it, or why it cannot be computed (every invalid field, `field: message`).
    pub current: Result<f64, String>,
}

impl StepTimes {
    /// (measured − assumed) ÷ assumed: how much the calibration changes the step; `None`
    /// without both times or when the assumed one is not positive.
    pub fn measured_vs_assumed(&self) -> Option<f64> {
        match (self.measured_s, self.assumed_s) {
            (Some(m), Some(a)) if a > 0.0 => Some((m - a) / a),
            _ => None,
        }
    }
}

/// The three step times of `s`.
pub fn step_times(s: &Scenario) -> StepTimes {
    let run = |cal: Option<&crate::input::calibration::CalibrationSummary>| {
        evaluate_scenario(s, CostOptions::default(), cal)
            .map(|c| c.seconds.total)
            .map_err(|e| e.to_string())
    };
    let assumed = run(None);
    let measured = s.calibration.as_ref().map(|m| run(Some(&m.summary)));
    let enabled = s.calibration.as_ref().is_some_and(|m| m.enabled);
    let current = match (&measured, enabled) {
        (Some(m), true) => m.clone(),
        _ => assumed.clone(),
    };
    let current = match s.validate() {
        Ok(()) => current,
        Err(errors) => Err(errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect::<Vec<_>>()
            .join("; ")),
    };
    StepTimes {
        assumed_s: assumed.ok(),
        measured_s: measured.and_then(Result::ok),
        current,
    }
}
