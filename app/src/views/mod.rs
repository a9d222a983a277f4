//! The views; each reads the scenario from context and draws what planner-core
//! computes for it.

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
mod bandwidth_chart;
mod exports;
mod files;
mod measured;
mod model_import;

pub use exports::ExportsView;
pub use measured::{CalibrationBadge, MeasuredView};
pub use model_import::ModelImport;
