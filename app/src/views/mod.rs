//! The three views; each reads the scenario from context and draws what
//! planner-core computes for it.

pub mod chart_canvas;
mod memory;
pub mod mesh;
mod pipeline;
mod serving;
mod step_breakdown;
mod topology;
mod visibility;

pub use memory::MemoryView;
pub use mesh::MeshView;
pub use pipeline::PipelineView;
pub use serving::ServingView;
pub use step_breakdown::StepBreakdownView;
pub use topology::TopologyView;
