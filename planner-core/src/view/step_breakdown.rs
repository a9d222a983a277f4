//! The step-breakdown view: compute, exposed communication per group and the bubble
//! as stacked segments, and the step's communication volume per collective and link.

use crate::figures::breakdown;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::time::cost::CostOptions;

/// The breakdown and its segment kinds, named here so the section is one import.
pub use crate::figures::breakdown::{SegmentKind, StepBreakdown};

/// The step breakdown of scenario `s` on `model`, priced with the page's options (the defaults).
pub fn step_breakdown(s: &Scenario, model: &ModelSpec) -> StepBreakdown {
    breakdown::step_breakdown(s, model, &CostOptions::default())
}
