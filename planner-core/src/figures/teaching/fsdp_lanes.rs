//! FSDP: one layer's lanes (gather, compute, reduce-scatter) and the memory held.

use super::*;

// ---------------------------------------------------------------------------
// FSDP: one layer's lanes
// ---------------------------------------------------------------------------

/// Lanes of the FSDP figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsdpLane {
    /// All-gather of the layer's weights before forward.
    AllGatherForward,
    /// Forward compute.
    Forward,
    /// All-gather again before backward (weights were resharded after forward).
    AllGatherBackward,
    /// Backward compute.
    Backward,
    /// Reduce-scatter of the layer's gradients to their owners.
    ReduceScatter,
}

/// One bar of a lane.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaneBar {
    /// Which lane.
    pub lane: FsdpLane,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
    /// Bytes moved by the collective (message size, nccl-tests convention); 0 for compute.
    pub message_bytes: f64,
}

/// Memory held for the layer over an interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldMemory {
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
    /// The rank's shards of weights, gradients and optimizer state, held all step.
    pub shard_bytes: f64,
    /// Full weights gathered for compute.
    pub gathered_weight_bytes: f64,
    /// Full gradients before the reduce-scatter.
    pub full_grad_bytes: f64,
}

/// One layer on one of N FSDP ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FsdpLanes {
    /// Ranks the layer is sharded over (`dp × cp`, or 4 when the layout has none).
    pub ranks: u64,
    /// The rank count is the article's 4, not the layout's.
    pub ranks_assumed: bool,
    /// Link the shard group crosses.
    pub domain: Domain,
    /// Parameters of the layer on this rank's TP slice.
    pub layer_params: f64,
    /// Bars, in time order.
    pub bars: Vec<LaneBar>,
    /// Memory held, piecewise constant, in time order.
    pub memory: Vec<HeldMemory>,
    /// Assumptions, one line.
    pub assumption: String,
}

/// One layer through a ZeRO-3/FSDP step on one rank: all-gather, forward,
/// all-gather, backward, reduce-scatter, and the memory held meanwhile.
pub fn fsdp_lanes(scenario: &Scenario, model: &ModelSpec, options: &CostOptions) -> FsdpLanes {
    let share = layer_share(scenario, model, options);
    let (ranks, ranks_assumed) = demo_group(&share.group);
    let g = if ranks_assumed {
        on_one_link(ranks, LinkDomain::IntraNode)
    } else {
        share.group
    };
    let comm = &share.step.comm;
    let prec = &scenario.precision;
    let p = share.params_per_layer;
    let w = p * prec.weight_bytes;
    let grad = p * prec.grad_bytes;
    // Rajbhandari et al. 2020 §5: each rank keeps 1/N of weights, gradients and optimizer state.
    let shard = p * prec.model_state_bytes() / ranks as f64;
    let ag = comm.time_s(Collective::AllGather, w, &g);
    let rs = comm.time_s(Collective::ReduceScatter, grad, &g);
    let f = share.forward_per_layer_s;
    let b = share.backward_per_layer_s;
    let t = [
        0.0,
        ag,
        ag + f,
        2.0 * ag + f,
        2.0 * ag + f + b,
        2.0 * ag + f + b + rs,
    ];
    let bar = |lane, i: usize, bytes| LaneBar {
        lane,
        start_s: t[i],
        end_s: t[i + 1],
        message_bytes: bytes,
    };
    let mem = |i: usize, j: usize, gathered, full_grad| HeldMemory {
        start_s: t[i],
        end_s: t[j],
        shard_bytes: shard,
        gathered_weight_bytes: gathered,
        full_grad_bytes: full_grad,
    };
    FsdpLanes {
        ranks,
        ranks_assumed,
        domain: g.domain,
        layer_params: p,
        bars: vec![
            bar(FsdpLane::AllGatherForward, 0, w),
            bar(FsdpLane::Forward, 1, 0.0),
            bar(FsdpLane::AllGatherBackward, 2, w),
            bar(FsdpLane::Backward, 3, 0.0),
            bar(FsdpLane::ReduceScatter, 4, grad),
        ],
        memory: vec![
            mem(0, 2, w, 0.0),
            mem(2, 3, w, 0.0),
            mem(3, 4, w, grad),
            mem(4, 5, 0.0, grad),
        ],
        assumption: format!(
            "One layer = dense parameters/(tp·pp) over {} layers; no prefetch overlap drawn; weights resharded after forward (FSDP2 reshard_after_forward); {} B/param of state sharded {ranks} ways",
            share.layers_per_stage,
            prec.model_state_bytes()
        ),
    }
}
