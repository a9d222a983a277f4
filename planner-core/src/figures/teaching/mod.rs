//! Data for the article's teaching figures, one module per figure, driven by the current scenario:
//! the four collectives on a few ranks, the six strategy sketches, a DDP step
//! with bucketed all-reduce, an FSDP layer's lanes, the Megatron MLP split,
//! context parallelism's causal grid and ring, and MoE token routing.
//!
//! The app draws these and computes nothing itself, so every shape, time and
//! byte count here comes from the same models as the main views
//! ([`crate::time::comms`], [`crate::time::collectives`], [`crate::time::cost`]).

use serde::{Deserialize, Serialize};

use crate::input::model::{FfnKind, ModelSpec};
use crate::input::scenario::Scenario;
use crate::parallel::topology::{Domain, GroupKind, GroupPlacement};
use crate::resolve::validate::FieldError;
use crate::time::collectives::{Collective, CommModel, LinkDomain};
use crate::time::comms::{CommInputs, CommItem, Purpose};
use crate::time::cost::{CostOptions, StepModel};

/// Most ranks a collective grid draws.
pub const MAX_DEMO_RANKS: u32 = 16;
/// Most context-parallel ranks the causal grid draws (`2·cp` chunks a side).
pub const MAX_DRAWN_CP: u32 = 32;
/// Most tokens the routing figure draws.
pub const MAX_ROUTED_TOKENS: u32 = 256;
/// Most experts the routing figure draws.
pub const MAX_DRAWN_EXPERTS: u32 = 1024;
/// Most experts per token the routing figure draws.
pub const MAX_DRAWN_TOP_K: u32 = 32;
/// Most gradient buckets the DDP timeline simulates; more are merged.
const MAX_SIMULATED_BUCKETS: f64 = 100_000.0;
/// Blocks of layers the DDP timeline draws (the article draws layers 4 to 1).
pub const DDP_DRAWN_BLOCKS: u32 = 4;

fn field_error(field: &str, message: String) -> FieldError {
    FieldError {
        field: field.to_string(),
        message,
    }
}

mod collectives;
mod cp_attention;
mod ddp_overlap;
mod ep_routing;
mod fsdp_lanes;
mod mlp_split;
mod strategy_sketches;

pub use collectives::*;
pub use cp_attention::*;
pub use ddp_overlap::*;
pub use ep_routing::*;
pub use fsdp_lanes::*;
pub use mlp_split::*;
pub use strategy_sketches::*;

// ---------------------------------------------------------------------------
// Per-layer quantities shared by the DDP and FSDP figures
// ---------------------------------------------------------------------------

/// One rank's per-layer share of the model and its per-layer compute times.
struct LayerShare {
    step: StepModel,
    layers_per_stage: f64,
    /// Dense parameters of one layer on this rank (`dense/(tp·pp)` spread over the stage's layers).
    params_per_layer: f64,
    forward_per_layer_s: f64,
    backward_per_layer_s: f64,
    /// The gradient group (`dp × cp`) as placed.
    group: GroupPlacement,
}

fn layer_share(scenario: &Scenario, model: &ModelSpec, options: &CostOptions) -> LayerShare {
    let layout = &scenario.layout;
    let step = StepModel::for_scenario(model, scenario, options.clone());
    let placement = step.placement(layout);
    let s = step.seconds(layout, &placement);
    let inp: &CommInputs = &step.comm_inputs;
    let pp = f64::from(layout.pp.max(1));
    let tp = f64::from(layout.tp.max(1));
    let layers_per_stage = (f64::from(inp.layers) / pp).ceil().max(1.0);
    let m = s.micro_batches.max(1.0);
    // cost.rs: compute = m·(t_f + t_b + t_rc) with t_b = 2·t_f.
    let t_f = (s.compute - s.recompute).max(0.0) / (3.0 * m);
    LayerShare {
        params_per_layer: inp.dense_params / (tp * pp) / layers_per_stage,
        forward_per_layer_s: t_f / layers_per_stage,
        backward_per_layer_s: 2.0 * t_f / layers_per_stage,
        layers_per_stage,
        group: *placement.group(GroupKind::DpCp),
        step,
    }
}

/// The group to draw: the layout's own when it has 2+ ranks, else 4 (the article's figure).
fn demo_group(g: &GroupPlacement) -> (u64, bool) {
    if g.size >= 2 {
        (g.size, false)
    } else {
        (4, true)
    }
}

fn on_one_link(size: u64, domain: LinkDomain) -> GroupPlacement {
    match domain {
        LinkDomain::IntraNode => GroupPlacement {
            kind: GroupKind::DpCp,
            size,
            per_node: size,
            nodes: 1,
            domain: Domain::IntraNode,
        },
        LinkDomain::InterNode => GroupPlacement {
            kind: GroupKind::DpCp,
            size,
            per_node: 1,
            nodes: size,
            domain: Domain::InterNode,
        },
    }
}

// ---------------------------------------------------------------------------
// Every teaching figure in one call
// ---------------------------------------------------------------------------

/// Tokens the routing figure draws by default (the article's sixteen).
pub const DEFAULT_ROUTED_TOKENS: u32 = 16;
/// Seed of the routing figure: with the article's 4 experts, 16 tokens and
/// capacity 5 it overloads one expert (2 tokens dropped), as the article's figure shows.
pub const DEFAULT_ROUTING_SEED: u64 = 7;
/// Capacity factor of the routing figure (the article's capacity of 5 for 16 tokens on 4 experts).
pub const DEFAULT_CAPACITY_FACTOR: f64 = 1.25;

/// Every teaching figure for one scenario; a figure that cannot be drawn for
/// these inputs carries the reason instead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeachingFigures {
    /// All-reduce, reduce-scatter, all-gather, all-to-all on four ranks, with the layout's uses.
    pub collectives: Vec<CollectiveDemo>,
    /// The six strategy sketches.
    pub sketches: [StrategySketch; 6],
    /// DDP step on a fast and a slow link.
    pub ddp: DdpOverlapDemo,
    /// One FSDP layer's lanes.
    pub fsdp: FsdpLanes,
    /// The Megatron MLP split at the layout's TP (2 when the layout has none, as the article draws).
    pub mlp: Result<MlpSplit, FieldError>,
    /// Causal grid and ring at the layout's CP (2 when the layout has none).
    pub cp: Result<CpAttention, FieldError>,
    /// Token routing at the layout's EP (4 ranks when the layout has none).
    pub ep: Result<EpRouting, FieldError>,
}

/// Every teaching figure for `scenario`, driven by its layout and model.
pub fn teaching_figures(
    scenario: &Scenario,
    model: &ModelSpec,
    options: &CostOptions,
) -> TeachingFigures {
    let layout = &scenario.layout;
    let act = scenario.precision.activation_bytes;
    let tp = if layout.tp >= 2 { layout.tp } else { 2 };
    let tokens = u64::from(layout.micro_batch.max(1)) * u64::from(scenario.training.seq_len)
        / u64::from(layout.cp.max(1));
    let experts = model.moe.as_ref().map_or(4, |m| m.routed_experts.max(1));
    let ep = if layout.ep >= 2 {
        layout.ep
    } else {
        experts.min(4)
    };
    let routed_tokens = DEFAULT_ROUTED_TOKENS.div_ceil(ep.max(1)) * ep.max(1);
    TeachingFigures {
        collectives: collective_figure(scenario, model, options),
        sketches: strategy_sketches(),
        ddp: ddp_overlap_demo(scenario, model, options),
        fsdp: fsdp_lanes(scenario, model, options),
        mlp: megatron_mlp_split(model, tp, tokens, act),
        cp: cp_attention_for(scenario, model),
        ep: ep_routing(
            model,
            ep,
            DEFAULT_CAPACITY_FACTOR,
            routed_tokens,
            DEFAULT_ROUTING_SEED,
            act,
        ),
    }
}
