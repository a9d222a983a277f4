//! The three views; each reads the scenario from context and draws what
//! planner-core computes for it.

pub mod chart_canvas;
mod memory;
mod pipeline;
mod serving;
mod mesh;
mod step_breakdown;
mod topology;

pub use memory::MemoryView;
pub use pipeline::PipelineView;
pub use serving::ServingView;
pub use mesh::MeshView;
pub use step_breakdown::StepBreakdownView;
pub use topology::TopologyView;
