//! The searches: training meshes and serving deployments, each candidate priced or given its rejection reason.
//!
//! Invariant: Imports the layers below; never figures or edges.

pub mod deployment;
pub mod fit;
pub mod memo;
pub mod mesh;
