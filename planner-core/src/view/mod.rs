//! What each section of the page shows, as plain data: one module per section, each a
//! builder from the scenario (and the options the page holds) to a serializable struct.
//!
//! The page (`app/`, `app-worker/`) reaches planner-core only through [`crate::input`],
//! this layer, [`crate::figures`], [`crate::edges`] and [`crate::base::explain`]
//! (`tests/it/layers.rs` checks it), and `meshplan eval` prints [`page_views`], so the
//! page and the command show the same data. Types of lower layers the page names are
//! re-exported here, each with the reason the page needs it.

pub mod bill;
pub mod fit;
pub mod gpu_sheet;
pub mod issues;
pub mod measured;
pub mod memory;
pub mod mesh;
pub mod pipeline;
pub mod presets;
pub mod serving;
pub mod step_breakdown;
pub mod teach;
pub mod topology;

use serde::Serialize;

use crate::input::scenario::Scenario;

/// Which parallel group a collective runs in: the page labels groups and traffic by it.
pub use crate::parallel::topology::GroupKind;

/// Which links a group spans: the page labels volumes and groups by it.
pub use crate::parallel::topology::Domain;

/// Every section's data for one scenario, as `meshplan eval` prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PageViews {
    /// Messages for the controls: range errors and layout rules, keyed by link parameter.
    pub issues: Vec<issues::Issue>,
    /// Model-state bars and training memory per ZeRO stage, or why the model cannot resolve.
    pub memory: Result<memory::MemoryView, String>,
    /// The schedule grid, the bubble and its curve.
    pub pipeline: pipeline::PipelineView,
    /// KV cache, concurrency table and recommendation, or why they cannot be computed.
    pub serving: Result<serving::ServingView, String>,
    /// The step as stacked segments and its communication volumes; `None` without a model.
    pub step_breakdown: Option<step_breakdown::StepBreakdown>,
    /// Step times with datasheet and measured numbers, and the calibration's fit.
    pub measured: measured::MeasuredView,
}

/// Every section's data for `scenario`, each built by its section's builder.
pub fn page_views(scenario: &Scenario) -> PageViews {
    let model = scenario.model_spec().map_err(|e| e.to_string());
    let memory = model
        .as_ref()
        .map(|m| memory::memory(scenario, m))
        .map_err(Clone::clone);
    let serving = model
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|m| serving::serving(m, &scenario.serving, &scenario.cluster));
    let step_breakdown = model
        .as_ref()
        .ok()
        .map(|m| step_breakdown::step_breakdown(scenario, m));
    PageViews {
        issues: issues::issues(scenario, &model),
        memory,
        pipeline: pipeline::pipeline(scenario),
        serving,
        step_breakdown,
        measured: measured::measured(scenario),
    }
}
