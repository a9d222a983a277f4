//! One decoder layer's forward + backward time on one micro-batch, as the step model prices it.
//!
//! Korthikanti et al. 2022 (Table 4) time one transformer layer's forward and backward in a
//! running model. The step model prices whole steps, so a layer's time here is its marginal
//! cost: the step of `L` layers less the step of `L − 1`, everything else equal. What does not
//! belong to a layer cancels (the embedding, the LM head, the cross-entropy), and only the
//! terms a layer's own forward and backward pay are kept: its compute (GEMMs, attention core,
//! memory-bound ops, recompute) and its model-parallel communication (TP, CP, EP, expert-TP).
//! Data-parallel reduction, the optimizer and the pipeline are per step and left out; FP8's
//! once-per-step weight cast is a layer's own forward work and is spread over the micro-batches.

use crate::input::layout::Layout;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::parallel::topology::GroupKind;
use crate::time::cost::{CostOptions, StepModel, StepSeconds};

/// A decoder layer's time on one micro-batch on one GPU, seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerSeconds {
    /// Forward + backward (+ recompute) compute, memory-bound ops included.
    pub compute_seconds: f64,
    /// Of which recomputation.
    pub recompute_seconds: f64,
    /// Model-parallel communication left exposed (TP, CP, EP, expert-TP groups).
    pub exposed_comm_seconds: f64,
    /// `compute_seconds + exposed_comm_seconds`.
    pub fwd_bwd_seconds: f64,
}

/// Why a layer's time cannot be priced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerTimeError {
    /// The marginal layer needs two layers to take one away.
    TooFewLayers(u32),
    /// With stages, one more layer lands on one stage and moves its pace and bubble.
    Pipelined(u32),
}

impl std::fmt::Display for LayerTimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayerTimeError::TooFewLayers(l) => write!(
                f,
                "{l} decoder layer(s): a layer's marginal time needs at least 2"
            ),
            LayerTimeError::Pipelined(pp) => write!(
                f,
                "pp = {pp}: a layer's time is priced without pipeline stages (pp = 1)"
            ),
        }
    }
}

/// The groups whose collectives run inside a layer's forward and backward.
const LAYER_GROUPS: [GroupKind; 4] = [
    GroupKind::Tp,
    GroupKind::Cp,
    GroupKind::Ep,
    GroupKind::ExpertTp,
];

/// A step's layer-borne seconds: compute (recompute apart) and the model-parallel groups'
/// exposed communication.
fn layer_borne(s: &StepSeconds) -> (f64, f64, f64) {
    let comm: f64 = LAYER_GROUPS.iter().map(|g| s.exposed_comm[g.index()]).sum();
    (s.compute, s.recompute, comm)
}

/// One decoder layer's forward + backward on one micro-batch of `layout`, on one GPU.
pub fn decoder_layer_seconds(
    model: &ModelSpec,
    scenario: &Scenario,
    layout: &Layout,
    options: CostOptions,
) -> Result<LayerSeconds, LayerTimeError> {
    if layout.pp > 1 {
        return Err(LayerTimeError::Pipelined(layout.pp));
    }
    if model.layers < 2 {
        return Err(LayerTimeError::TooFewLayers(model.layers));
    }
    let mut fewer = model.clone();
    fewer.layers -= 1;
    // The last layer goes: a MoE layer in a MoE model (its dense layers come first), and a
    // model of dense layers only keeps one fewer of them.
    if let Some(moe) = fewer.moe.as_mut() {
        moe.dense_layers = moe.dense_layers.min(fewer.layers);
    }
    let step = |m: &ModelSpec| {
        let sm = StepModel::for_scenario(m, scenario, options.clone());
        sm.seconds(layout, &sm.placement(layout))
    };
    let (all, less) = (step(model), step(&fewer));
    let micro_batches = all.micro_batches.max(1.0);
    let (c1, r1, e1) = layer_borne(&all);
    let (c0, r0, e0) = layer_borne(&less);
    let compute_seconds = (c1 - c0) / micro_batches;
    let exposed_comm_seconds = (e1 - e0) / micro_batches;
    Ok(LayerSeconds {
        compute_seconds,
        recompute_seconds: (r1 - r0) / micro_batches,
        exposed_comm_seconds,
        fwd_bwd_seconds: compute_seconds + exposed_comm_seconds,
    })
}
