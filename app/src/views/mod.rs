//! The three views; each reads the scenario from context and draws what
//! planner-core computes for it.

pub mod chart_canvas;
mod memory;
mod pipeline;
mod serving;
mod teach;
mod teach_draw;

pub use memory::MemoryView;
pub use pipeline::PipelineView;
pub use serving::ServingView;
pub use teach::LearnView;
