//! The parallel layout: rank grid and group placement on nodes, MoE parallel folding, pipeline schedules.
//!
//! Invariant: Imports `base`, `input`, `resolve`; never memory or time (a placement has no cost).

pub mod fold;
pub mod pipeline;
pub mod topology;
