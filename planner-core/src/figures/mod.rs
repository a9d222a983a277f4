//! What the page draws, as data: the step breakdown and the teaching figures.
//!
//! Invariant: Imports the layers below and the façade; never edges (text formats).

pub mod breakdown;
pub mod memory_summary;
pub mod teaching;
pub mod teaching_sums;
pub mod topology_map;
