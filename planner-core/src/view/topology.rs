//! The topology view: the nodes × GPUs figure with each group's placement and traffic.

use crate::figures::topology_map;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::time::cost::CostOptions;

/// The figure and its per-group traffic, named here so the section is one import.
pub use crate::figures::topology_map::{GroupTraffic, TopologyMap};

/// The topology figure of scenario `s` on `model`, priced with the page's options (the defaults).
pub fn topology(s: &Scenario, model: &ModelSpec) -> TopologyMap {
    topology_map::topology_map(s, model, &CostOptions::default())
}
