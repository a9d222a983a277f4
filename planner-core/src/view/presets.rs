//! The scenarios and models the page offers as starting points, re-exported from
//! [`crate::resolve::presets`]: presets are resolved data (published configs, defaults),
//! which the page's controls list and its buttons load.

/// The models the model control lists, and the scenarios the page's buttons load.
pub use crate::resolve::presets::{
    article_70b_scenario, article_mesh_scenario, default_scenario, finetune_scenario,
    model_presets, ModelPreset,
};
