//! The learn section: one teaching figure per parallelism, drawn from the scenario.

use crate::figures::teaching::{teaching_figures, TeachingFigures};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::time::cost::CostOptions;

/// Why a collective runs (gradients, weights, activations): the learn section labels traffic by it.
pub use crate::time::comms::Purpose;

/// The teaching figures of scenario `s` on `model`, priced with the page's options (the defaults).
pub fn teaching(s: &Scenario, model: &ModelSpec) -> TeachingFigures {
    teaching_figures(s, model, &CostOptions::default())
}
