//! The views; each reads the scenario from context and draws what planner-core
//! computes for it.

mod accuracy;
mod bandwidth_chart;
mod bill;
pub mod chart_canvas;
pub mod error_band;
mod exports;
mod files;
mod finetune;
mod hub_fetch;
mod hub_import;
mod markup;
mod measured;
mod memory;
pub mod mesh;
mod model_import;
mod pipeline;
mod serving;
mod serving_latency;
mod step_breakdown;
mod teach;
mod teach_draw;
mod topology;
mod visibility;
mod worker_handle;
mod worker_job;

pub use accuracy::AccuracyView;
pub use bill::BillSection;
pub use exports::ExportsView;
pub use finetune::FineTuneView;
pub use measured::{CalibrationBadge, MeasuredView};
pub use memory::MemoryView;
pub use mesh::MeshView;
pub use model_import::ModelImport;
pub use pipeline::PipelineView;
pub use serving::ServingView;
pub use step_breakdown::StepBreakdownView;
pub use teach::LearnView;
pub use topology::TopologyView;
