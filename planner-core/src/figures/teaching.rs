//! Data for the article's teaching figures, driven by the current scenario:
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
use crate::time::comms::{step_comms, CommInputs, CommItem, Purpose};
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

// ---------------------------------------------------------------------------
// The four collectives
// ---------------------------------------------------------------------------

/// One cell of a collective grid: chunk `chunk` of the tensor, holding the sum
/// of the contributions of `from` (one rank: a plain chunk; several: a partial
/// or full sum).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkCell {
    /// Which chunk of the tensor (0-based).
    pub chunk: u32,
    /// Ranks whose data is summed in this cell, ascending.
    pub from: Vec<u32>,
}

/// What the current layout uses a collective for, with its real sizes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveUse {
    /// What for.
    pub purpose: Purpose,
    /// Which group.
    pub group: GroupKind,
    /// Group size.
    pub ranks: u64,
    /// Link crossed.
    pub domain: Domain,
    /// Size of one call, nccl-tests convention, bytes.
    pub message_bytes: f64,
    /// Bytes each rank sends per call: `message × busbw factor(n)` (2(n−1)/n for all-reduce).
    pub bytes_sent_per_rank_per_call: f64,
    /// Calls per step.
    pub calls_per_step: f64,
    /// Bytes each rank sends per step.
    pub bytes_sent_per_rank_per_step: f64,
}

/// Before/after grids of one collective on `ranks` ranks, and its uses in the layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveDemo {
    /// The operation.
    pub op: Collective,
    /// Ranks drawn.
    pub ranks: u32,
    /// `before[rank][slot]`: what each rank holds before (`None`: empty slot).
    pub before: Vec<Vec<Option<ChunkCell>>>,
    /// `after[rank][slot]`: what each rank holds after.
    pub after: Vec<Vec<Option<ChunkCell>>>,
    /// Fraction of one rank's full tensor each rank sends (nccl-tests busbw factor).
    pub busbw_factor: f64,
    /// The layout's calls of this operation.
    pub uses: Vec<CollectiveUse>,
}

/// The four collectives the article draws.
pub const DEMO_COLLECTIVES: [Collective; 4] = [
    Collective::AllReduce,
    Collective::ReduceScatter,
    Collective::AllGather,
    Collective::AllToAll,
];

/// Before/after grids of `op` on `ranks` ranks (each rank's tensor in `ranks`
/// chunks), with the layout's uses of `op` taken from `comms`.
///
/// All-to-all: before, rank `r` slot `c` holds its piece for rank `c`; after,
/// rank `r` slot `c` holds rank `c`'s piece for `r` (chunk `r` from `c`).
pub fn collective_demo(
    op: Collective,
    ranks: u32,
    comms: &[CommItem],
) -> Result<CollectiveDemo, FieldError> {
    if !(2..=MAX_DEMO_RANKS).contains(&ranks) {
        return Err(field_error(
            "ranks",
            format!("must be 2 to {MAX_DEMO_RANKS}, got {ranks}"),
        ));
    }
    let n = ranks;
    let all: Vec<u32> = (0..n).collect();
    let cell = |chunk: u32, from: Vec<u32>| Some(ChunkCell { chunk, from });
    let grid = |f: &dyn Fn(u32, u32) -> Option<ChunkCell>| -> Vec<Vec<Option<ChunkCell>>> {
        (0..n).map(|r| (0..n).map(|c| f(r, c)).collect()).collect()
    };
    let (before, after) = match op {
        Collective::AllReduce => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|_, c| cell(c, all.clone())),
        ),
        Collective::ReduceScatter => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|r, c| if r == c { cell(c, all.clone()) } else { None }),
        ),
        Collective::AllGather => (
            grid(&|r, c| if r == c { cell(c, vec![r]) } else { None }),
            grid(&|_, c| cell(c, vec![c])),
        ),
        Collective::AllToAll => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|r, c| cell(r, vec![c])),
        ),
        Collective::Broadcast => (
            grid(&|r, c| if r == 0 { cell(c, vec![0]) } else { None }),
            grid(&|_, c| cell(c, vec![0])),
        ),
        Collective::Reduce => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|r, c| if r == 0 { cell(c, all.clone()) } else { None }),
        ),
        Collective::SendRecv => (
            grid(&|r, c| if r == 0 { cell(c, vec![0]) } else { None }),
            grid(&|r, c| if r <= 1 { cell(c, vec![0]) } else { None }),
        ),
    };
    let uses = comms
        .iter()
        .filter(|i| i.op == op)
        .map(|i| {
            let per_call = i.message_bytes * op.busbw_factor(i.ranks);
            CollectiveUse {
                purpose: i.purpose,
                group: i.group,
                ranks: i.ranks,
                domain: i.domain,
                message_bytes: i.message_bytes,
                bytes_sent_per_rank_per_call: per_call,
                calls_per_step: i.calls_per_step,
                bytes_sent_per_rank_per_step: per_call * i.calls_per_step,
            }
        })
        .collect();
    Ok(CollectiveDemo {
        op,
        ranks,
        before,
        after,
        busbw_factor: op.busbw_factor(u64::from(n)),
        uses,
    })
}

/// The article's four collectives on four ranks, each with the current layout's uses.
pub fn collective_figure(
    scenario: &Scenario,
    model: &ModelSpec,
    options: &CostOptions,
) -> Vec<CollectiveDemo> {
    let comms = layout_comms(scenario, model, options);
    DEMO_COLLECTIVES
        .iter()
        .filter_map(|&op| collective_demo(op, 4, &comms).ok())
        .collect()
}

/// Every communication item of the scenario's layout.
fn layout_comms(scenario: &Scenario, model: &ModelSpec, options: &CostOptions) -> Vec<CommItem> {
    let step = StepModel::for_scenario(model, scenario, options.clone());
    let placement = step.placement(&scenario.layout);
    step_comms(&step.comm_inputs, &scenario.layout, &placement, &step.comm)
        .iter()
        .copied()
        .collect()
}

// ---------------------------------------------------------------------------
// Six strategy sketches
// ---------------------------------------------------------------------------

/// A fraction `part/of` (`1/1` is the whole).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// Which part, 0-based.
    pub part: u32,
    /// Into how many parts.
    pub of: u32,
}

impl Share {
    const WHOLE: Share = Share { part: 0, of: 1 };
}

/// How a GPU holds each layer's weights in a sketch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightSplit {
    /// Whole layers.
    Whole,
    /// A flat shard of every layer, gathered only while computing (FSDP).
    Shard,
    /// A column/row slice of every matrix (TP).
    Slice,
}

/// What one of the four GPUs holds and computes in one strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SketchGpu {
    /// Layers held, `[first, last]` of the 4 drawn layers (1-based).
    pub layers: [u32; 2],
    /// How the held layers are split.
    pub weights: WeightSplit,
    /// Which share of each held layer's weights.
    pub weight_share: Share,
    /// Which batch it processes (`part` of `of`; `of = 1`: the same batch as every GPU).
    pub batch: Share,
    /// Which part of each sequence it processes.
    pub sequence: Share,
    /// The expert it holds (EP), if any.
    pub expert: Option<u32>,
}

/// One strategy sketch on four GPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrategySketch {
    /// Stable id: ddp, fsdp, tp, cp, pp, ep.
    pub id: String,
    /// Label.
    pub label: String,
    /// The collective it introduces (the article's table).
    pub collective: Collective,
    /// The four GPUs.
    pub gpus: [SketchGpu; 4],
}

/// The article's six sketches of four GPUs: DDP (whole model, own batch), FSDP
/// (a quarter of every layer, own batch), TP (a slice of every layer, same batch),
/// CP (a part of the sequence), PP (one layer group), EP (one expert).
pub fn strategy_sketches() -> [StrategySketch; 6] {
    let each = |f: fn(u32) -> SketchGpu| [f(0), f(1), f(2), f(3)];
    [
        StrategySketch {
            id: "ddp".into(),
            label: "DDP".into(),
            collective: Collective::AllReduce,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share { part: g, of: 4 },
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "fsdp".into(),
            label: "FSDP / ZeRO-3".into(),
            collective: Collective::AllGather,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Shard,
                weight_share: Share { part: g, of: 4 },
                batch: Share { part: g, of: 4 },
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "tp".into(),
            label: "Tensor parallel".into(),
            collective: Collective::AllReduce,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Slice,
                weight_share: Share { part: g, of: 4 },
                batch: Share::WHOLE,
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "cp".into(),
            label: "Context parallel".into(),
            collective: Collective::SendRecv,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share::WHOLE,
                sequence: Share { part: g, of: 4 },
                expert: None,
            }),
        },
        StrategySketch {
            id: "pp".into(),
            label: "Pipeline parallel".into(),
            collective: Collective::SendRecv,
            gpus: each(|g| SketchGpu {
                layers: [g + 1, g + 1],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share::WHOLE,
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "ep".into(),
            label: "Expert parallel".into(),
            collective: Collective::AllToAll,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share { part: g, of: 4 },
                sequence: Share::WHOLE,
                expert: Some(g),
            }),
        },
    ]
}

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
// DDP: bucketed all-reduce overlapping backward
// ---------------------------------------------------------------------------

/// A drawn block of layers in the DDP timeline: its backward and its gradients' all-reduce.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpBlock {
    /// Layers of the block, `[first, last]` in forward numbering (backward runs last to first).
    pub layers: [u32; 2],
    /// Backward of the block starts, seconds from the start of backward.
    pub backward_start_s: f64,
    /// Backward of the block ends.
    pub backward_end_s: f64,
    /// First all-reduce of the block's gradient buckets starts.
    pub all_reduce_start_s: f64,
    /// Last all-reduce of the block's buckets ends.
    pub all_reduce_end_s: f64,
    /// Gradient bytes of the block on this rank.
    pub grad_bytes: f64,
    /// Buckets of the block.
    pub buckets: f64,
}

/// One rank's DDP backward on one link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpTimeline {
    /// The slowest link the gradient group crosses in this timeline.
    pub link: LinkDomain,
    /// How the group is placed (two-level when it has several GPUs on each of several nodes).
    pub domain: Domain,
    /// Bus bandwidth of `link`, bytes/s.
    pub busbw_bytes_per_s: f64,
    /// Latency per step, seconds.
    pub latency_s: f64,
    /// Blocks, in backward order (last layers first).
    pub blocks: Vec<DdpBlock>,
    /// Backward ends (the optimizer step could start).
    pub backward_end_s: f64,
    /// Last all-reduce ends (the optimizer step starts).
    pub all_reduce_end_s: f64,
    /// Time the GPU waits after backward: `all_reduce_end − backward_end`.
    pub exposed_wait_s: f64,
    /// All-reduce time if nothing overlapped.
    pub all_reduce_total_s: f64,
}

/// The DDP step figure: the same backward on a fast and a slow link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpOverlapDemo {
    /// Ranks in the gradient all-reduce (`dp × cp`, or 4 when the layout has none).
    pub ranks: u64,
    /// The rank count is the article's 4, not the layout's.
    pub ranks_assumed: bool,
    /// Gradient bytes per rank per step (`dense/(tp·pp) × grad bytes`).
    pub grad_bytes: f64,
    /// Bucket size, bytes.
    pub bucket_bytes: f64,
    /// Layers of this rank's stage.
    pub layers: u32,
    /// Where the layout's gradient group actually runs.
    pub current_domain: Domain,
    /// On NVLink/intra-node bandwidth.
    pub fast: DdpTimeline,
    /// On network bandwidth.
    pub slow: DdpTimeline,
    /// On the layout's own placement of the group (two-level when it spans nodes with
    /// several GPUs per node; the article's 4 ranks on NVLink when the layout has no DP).
    pub current: DdpTimeline,
    /// Assumptions, one line.
    pub assumption: String,
}

/// Simulates one backward: bucket `i` is full when backward has produced
/// `(i+1)·bucket` bytes (gradients appear at a steady rate), and each bucket's
/// all-reduce starts when it is full and the previous one has finished
/// (PyTorch DDP reduces buckets in order on one stream; Li et al. 2020 §3.2.3).
fn simulate_ddp(
    comm: &CommModel,
    g: &GroupPlacement,
    link: LinkDomain,
    grad_bytes: f64,
    bucket_bytes: f64,
    layers: u32,
    backward_s: f64,
) -> DdpTimeline {
    let ab = comm.link(Collective::AllReduce, link);
    let buckets = (grad_bytes / bucket_bytes.max(1.0))
        .ceil()
        .clamp(1.0, MAX_SIMULATED_BUCKETS);
    let per_bucket = grad_bytes / buckets;
    let t_bucket = comm.time_s(Collective::AllReduce, per_bucket, g);
    let blocks_n = DDP_DRAWN_BLOCKS.min(layers.max(1));
    let mut blocks = Vec::with_capacity(blocks_n as usize);
    let mut link_free = 0.0f64;
    let mut done = 0.0f64; // buckets simulated so far
    for b in 0..blocks_n {
        // Block b covers backward fraction [b/B, (b+1)/B): the last layers first.
        let lo_frac = f64::from(b) / f64::from(blocks_n);
        let hi_frac = f64::from(b + 1) / f64::from(blocks_n);
        let last_bucket = (hi_frac * buckets).round();
        let first_layer = layers - (f64::from(layers) * hi_frac).round() as u32 + 1;
        let last_layer = layers - (f64::from(layers) * lo_frac).round() as u32;
        let mut ar_start = f64::NAN;
        let n_in_block = last_bucket - done;
        while done < last_bucket {
            let ready = (done + 1.0) / buckets * backward_s;
            let start = ready.max(link_free);
            if ar_start.is_nan() {
                ar_start = start;
            }
            link_free = start + t_bucket;
            done += 1.0;
        }
        blocks.push(DdpBlock {
            layers: [first_layer.min(last_layer), last_layer],
            backward_start_s: lo_frac * backward_s,
            backward_end_s: hi_frac * backward_s,
            all_reduce_start_s: if ar_start.is_nan() {
                link_free
            } else {
                ar_start
            },
            all_reduce_end_s: link_free,
            grad_bytes: n_in_block * per_bucket,
            buckets: n_in_block,
        });
    }
    DdpTimeline {
        link,
        domain: g.domain,
        busbw_bytes_per_s: ab.busbw_bytes_per_s,
        latency_s: ab.latency_s,
        blocks,
        backward_end_s: backward_s,
        all_reduce_end_s: link_free.max(backward_s),
        exposed_wait_s: (link_free - backward_s).max(0.0),
        all_reduce_total_s: t_bucket * buckets,
    }
}

/// One rank's DDP backward (the last micro-batch, when gradients are reduced)
/// with this model's gradient buckets all-reduced on a fast (intra-node) and a
/// slow (network) link.
pub fn ddp_overlap_demo(
    scenario: &Scenario,
    model: &ModelSpec,
    options: &CostOptions,
) -> DdpOverlapDemo {
    let share = layer_share(scenario, model, options);
    let (ranks, ranks_assumed) = demo_group(&share.group);
    let inp = &share.step.comm_inputs;
    let grad_bytes = share.params_per_layer * share.layers_per_stage * inp.grad_bytes;
    let backward_s = share.backward_per_layer_s * share.layers_per_stage;
    let layers = share.layers_per_stage as u32;
    let current = if ranks_assumed {
        on_one_link(ranks, LinkDomain::IntraNode)
    } else {
        share.group
    };
    let current_link = if current.crosses_nodes() {
        LinkDomain::InterNode
    } else {
        LinkDomain::IntraNode
    };
    let run = |link| {
        simulate_ddp(
            &share.step.comm,
            &on_one_link(ranks, link),
            link,
            grad_bytes,
            inp.bucket_bytes,
            layers,
            backward_s,
        )
    };
    DdpOverlapDemo {
        ranks,
        ranks_assumed,
        grad_bytes,
        bucket_bytes: inp.bucket_bytes,
        layers,
        current_domain: share.group.domain,
        fast: run(LinkDomain::IntraNode),
        slow: run(LinkDomain::InterNode),
        current: simulate_ddp(
            &share.step.comm,
            &current,
            current_link,
            grad_bytes,
            inp.bucket_bytes,
            layers,
            backward_s,
        ),
        assumption: format!(
            "{} B gradients per parameter spread evenly over {layers} layers; buckets of {:.0} MB reduced in order as backward fills them; ring all-reduce α–β on one link",
            inp.grad_bytes,
            inp.bucket_bytes / 1e6
        ),
    }
}

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

// ---------------------------------------------------------------------------
// Megatron MLP split
// ---------------------------------------------------------------------------

/// One matrix on one rank: rows × columns and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixShape {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Bytes at the given dtype.
    pub bytes: f64,
}

/// A collective of the split: which and its size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitCollective {
    /// Operation.
    pub op: Collective,
    /// Message size, nccl-tests convention, bytes.
    pub message_bytes: f64,
    /// Bytes each rank sends: `message × busbw factor(tp)`.
    pub bytes_sent_per_rank: f64,
}

/// The MLP of one layer split over `tp` ranks (Shoeybi et al. 2019 §3, Fig. 3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MlpSplit {
    /// TP degree.
    pub tp: u32,
    /// Tokens in the micro-batch on this TP group (`b · s / cp`).
    pub tokens: u64,
    /// Input X on every rank: tokens × h (sequence parallel: tokens/tp × h before the all-gather).
    pub x: MatrixShape,
    /// Column slice of A: h × (f/tp) (SwiGLU: gate and up, h × 2f/tp).
    pub a: MatrixShape,
    /// Y = act(X·A_i): tokens × f/tp, no communication.
    pub y: MatrixShape,
    /// Row slice of B: (f/tp) × h.
    pub b: MatrixShape,
    /// Partial output Z_i = Y_i·B_i: tokens × h, summed by one all-reduce.
    pub z_partial: MatrixShape,
    /// Forward: one all-reduce of Z (g in the paper).
    pub forward: Vec<SplitCollective>,
    /// Backward: one all-reduce of dX (f in the paper).
    pub backward: Vec<SplitCollective>,
    /// Sequence parallel (Korthikanti et al. 2022 §4.2.2): all-gather of X before A and
    /// reduce-scatter of Z after B, the same bytes as the all-reduce.
    pub sequence_parallel_forward: Vec<SplitCollective>,
    /// Sequence parallel backward, in time order: all-gather of dZ (the reduce-scatter's
    /// conjugate), then reduce-scatter of dX (the all-gather's conjugate). Megatron also
    /// re-gathers X for the weight gradient, overlapped with compute; not counted here.
    pub sequence_parallel_backward: Vec<SplitCollective>,
}

/// The Megatron MLP split of `model` over `tp` ranks for `tokens` tokens
/// (`micro_batch · seq_len / cp`) at `bytes_per_value` (2 for BF16).
pub fn megatron_mlp_split(
    model: &ModelSpec,
    tp: u32,
    tokens: u64,
    bytes_per_value: f64,
) -> Result<MlpSplit, FieldError> {
    if tp == 0 {
        return Err(field_error("tp", "must be at least 1".to_string()));
    }
    let ffn = match &model.moe {
        Some(m) if model.ffn == 0 => m.expert_ffn,
        _ => model.ffn,
    };
    if !ffn.is_multiple_of(tp) {
        return Err(field_error(
            "tp",
            format!("must divide the FFN width {ffn}, got {tp}"),
        ));
    }
    let h = u64::from(model.hidden);
    let f_slice = u64::from(ffn / tp);
    let t = u64::from(tp);
    // SwiGLU's gate and up projections are both column-parallel: A_i = [gate_i | up_i].
    let a_cols = match model.ffn_kind {
        FfnKind::SwiGlu => 2 * f_slice,
        FfnKind::GeluMlp => f_slice,
    };
    let shape = |rows: u64, cols: u64| MatrixShape {
        rows,
        cols,
        bytes: rows as f64 * cols as f64 * bytes_per_value,
    };
    let z = tokens as f64 * h as f64 * bytes_per_value;
    let c = |op: Collective| SplitCollective {
        op,
        message_bytes: z,
        bytes_sent_per_rank: z * op.busbw_factor(t),
    };
    Ok(MlpSplit {
        tp,
        tokens,
        x: shape(tokens, h),
        a: shape(h, a_cols),
        y: shape(tokens, f_slice),
        b: shape(f_slice, h),
        z_partial: shape(tokens, h),
        forward: vec![c(Collective::AllReduce)],
        backward: vec![c(Collective::AllReduce)],
        sequence_parallel_forward: vec![c(Collective::AllGather), c(Collective::ReduceScatter)],
        sequence_parallel_backward: vec![c(Collective::AllGather), c(Collective::ReduceScatter)],
    })
}

// ---------------------------------------------------------------------------
// Context parallelism: causal grid and ring
// ---------------------------------------------------------------------------

/// How sequence chunks are assigned to CP ranks.
///
/// Megatron-LM (`get_batch_on_this_cp_rank`) cuts the sequence into `2·cp`
/// chunks and gives rank r chunks r and `2cp−1−r`, so every rank gets one early
/// (cheap) and one late (expensive) chunk of the causal triangle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpAssignment {
    /// Rank r holds chunks 2r and 2r+1 (contiguous).
    Plain,
    /// Rank r holds chunks r and 2cp−1−r (Megatron's load-balanced "zig-zag").
    ZigZag,
}

/// One (query chunk, key chunk) block of the causal attention grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttentionBlock {
    /// Query chunk.
    pub q: u32,
    /// Key/value chunk.
    pub k: u32,
    /// Rank that computes it (owner of the query chunk).
    pub rank: u32,
    /// Computed (`k ≤ q`); skipped blocks are above the diagonal.
    pub computed: bool,
    /// On the diagonal: half of it is masked.
    pub diagonal: bool,
    /// Ring step in which the keys arrive: `(rank − owner(k)) mod cp` (0 = own keys).
    pub ring_step: u32,
}

/// The causal grid under one assignment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpGrid {
    /// The assignment.
    pub assignment: CpAssignment,
    /// `chunks_of_rank[r]`: the chunks rank r holds.
    pub chunks_of_rank: Vec<[u32; 2]>,
    /// Row-major `2cp × 2cp` blocks (`q` major).
    pub blocks: Vec<AttentionBlock>,
    /// Work per rank in full blocks (a diagonal block counts ½).
    pub work_per_rank: Vec<f64>,
    /// Busiest rank's work over the mean: 1 is perfect balance.
    pub imbalance: f64,
}

/// The context-parallel figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpAttention {
    /// Ranks.
    pub cp: u32,
    /// Chunks: `2·cp`.
    pub chunks: u32,
    /// Tokens per chunk.
    pub tokens_per_chunk: f64,
    /// Computed blocks: `cp·(2cp+1)` (the lower triangle with its diagonal).
    pub computed_blocks: u32,
    /// Contiguous assignment.
    pub plain: CpGrid,
    /// Load-balanced assignment.
    pub zigzag: CpGrid,
    /// Ring steps per layer forward: `cp − 1` sends of K/V.
    pub ring_steps: u32,
    /// K/V bytes each rank passes to the next per ring step per layer:
    /// `seq/cp × K/V bytes per token per layer`.
    pub kv_bytes_per_step: f64,
}

fn cp_grid(cp: u32, assignment: CpAssignment) -> CpGrid {
    let chunks = 2 * cp;
    let owner = |c: u32| match assignment {
        CpAssignment::Plain => c / 2,
        CpAssignment::ZigZag => c.min(chunks - 1 - c),
    };
    let chunks_of_rank = (0..cp)
        .map(|r| match assignment {
            CpAssignment::Plain => [2 * r, 2 * r + 1],
            CpAssignment::ZigZag => [r, chunks - 1 - r],
        })
        .collect();
    let mut work = vec![0.0; cp as usize];
    let mut blocks = Vec::with_capacity((chunks * chunks) as usize);
    for q in 0..chunks {
        for k in 0..chunks {
            let rank = owner(q);
            let computed = k <= q;
            let diagonal = k == q;
            if computed {
                work[rank as usize] += if diagonal { 0.5 } else { 1.0 };
            }
            blocks.push(AttentionBlock {
                q,
                k,
                rank,
                computed,
                diagonal,
                // Ring attention (Liu et al. 2023): at step t rank r holds the K/V of rank r−t.
                ring_step: (rank + cp - owner(k)) % cp,
            });
        }
    }
    let mean = work.iter().sum::<f64>() / f64::from(cp);
    let max = work.iter().copied().fold(0.0, f64::max);
    CpGrid {
        assignment,
        chunks_of_rank,
        blocks,
        work_per_rank: work,
        imbalance: if mean > 0.0 { max / mean } else { 1.0 },
    }
}

/// The causal grid of `2·cp` chunks of a `seq_len` sequence under the plain and
/// zig-zag assignments, and the ring's K/V bytes per step for
/// `kv_bytes_per_token` (K and V bytes per token per layer on one rank).
pub fn cp_attention(
    cp: u32,
    seq_len: u32,
    kv_bytes_per_token: f64,
) -> Result<CpAttention, FieldError> {
    if !(1..=MAX_DRAWN_CP).contains(&cp) {
        return Err(field_error(
            "cp",
            format!("must be 1 to {MAX_DRAWN_CP} to draw, got {cp}"),
        ));
    }
    if seq_len < 2 * cp {
        return Err(field_error(
            "seq_len",
            format!("must be at least 2·cp = {}, got {seq_len}", 2 * cp),
        ));
    }
    let seq_per_rank = f64::from(seq_len) / f64::from(cp);
    Ok(CpAttention {
        cp,
        chunks: 2 * cp,
        tokens_per_chunk: f64::from(seq_len) / f64::from(2 * cp),
        computed_blocks: cp * (2 * cp + 1),
        plain: cp_grid(cp, CpAssignment::Plain),
        zigzag: cp_grid(cp, CpAssignment::ZigZag),
        ring_steps: cp - 1,
        kv_bytes_per_step: seq_per_rank * kv_bytes_per_token,
    })
}

/// [`cp_attention`] for the scenario: its CP degree (2 when the layout has none,
/// to show the idea), sequence length and the model's K/V bytes per token of a
/// micro-batch on one TP rank.
pub fn cp_attention_for(scenario: &Scenario, model: &ModelSpec) -> Result<CpAttention, FieldError> {
    let inp = CommInputs::new(
        model,
        &scenario.precision,
        &scenario.training,
        &scenario.overheads,
    );
    let layout = &scenario.layout;
    let cp = if layout.cp >= 2 { layout.cp } else { 2 };
    // comms.rs: TP splits K/V heads until it exceeds them.
    let kv_split = f64::from(layout.tp.max(1)).min(f64::from(inp.kv_heads.max(1)));
    // Per micro-batch: b sequences' K/V travel together.
    let kv_bytes = f64::from(layout.micro_batch.max(1)) * inp.kv_values_per_token / kv_split
        * inp.activation_bytes;
    cp_attention(cp.min(MAX_DRAWN_CP), scenario.training.seq_len, kv_bytes)
}

// ---------------------------------------------------------------------------
// Expert parallelism: routing with capacity
// ---------------------------------------------------------------------------

/// Where one token went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedToken {
    /// Token index.
    pub token: u32,
    /// Rank the token starts on.
    pub rank: u32,
    /// Experts chosen (top-k), in choice order.
    pub experts: Vec<u32>,
    /// For each chosen expert: dropped because the expert was already full.
    pub dropped: Vec<bool>,
}

/// One expert's load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpertLoad {
    /// Expert index.
    pub expert: u32,
    /// Rank that holds it.
    pub rank: u32,
    /// Assignments routed to it.
    pub routed: u32,
    /// Assignments it processes: `min(routed, capacity)`.
    pub kept: u32,
    /// Assignments over capacity: `max(0, routed − capacity)`.
    pub dropped: u32,
    /// Empty slots filled with padding: `max(0, capacity − routed)`.
    pub padded: u32,
}

/// All-to-all traffic of one rank.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankTraffic {
    /// Rank.
    pub rank: u32,
    /// Assignments this rank sends to experts on other ranks (dispatch).
    pub tokens_sent: u32,
    /// Assignments this rank receives from other ranks.
    pub tokens_received: u32,
    /// Dispatch bytes sent: `tokens_sent × hidden × bytes`; combine sends the same back.
    pub dispatch_bytes_sent: f64,
}

/// The routing figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpRouting {
    /// Expert-parallel ranks.
    pub ep: u32,
    /// Experts.
    pub experts: u32,
    /// Experts per token.
    pub top_k: u32,
    /// Tokens routed.
    pub tokens: u32,
    /// Capacity factor.
    pub capacity_factor: f64,
    /// Slots per expert: `ceil(capacity_factor · tokens · k / experts)`.
    pub capacity: u32,
    /// The model has no experts; the article's 4 experts, top-1, are used.
    pub illustrative: bool,
    /// Each token's route.
    pub routes: Vec<RoutedToken>,
    /// Each expert's load.
    pub loads: Vec<ExpertLoad>,
    /// Assignments dropped in all: `Σ max(0, load − capacity)`.
    pub dropped: u32,
    /// Padding slots in all.
    pub padded: u32,
    /// Each rank's all-to-all.
    pub ranks: Vec<RankTraffic>,
    /// Bytes of one token's hidden state: `hidden × bytes per value`.
    pub bytes_per_token: f64,
}

/// Xorshift64 (Marsaglia 2003): a tiny deterministic generator for the routing figure.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        // A zero state stays zero; mix the seed so 0 is usable.
        XorShift(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u32) -> u32 {
        (self.next() % u64::from(n.max(1))) as u32
    }
}

/// Routes `tokens` tokens, spread evenly over `ep` ranks, to the model's
/// experts (top-k, pseudo-random from `seed`), with expert capacity
/// `ceil(capacity_factor · tokens·k / experts)`; assignments beyond capacity are
/// dropped in token order (Megatron's drop policy), free slots padded.
pub fn ep_routing(
    model: &ModelSpec,
    ep: u32,
    capacity_factor: f64,
    tokens: u32,
    seed: u64,
    bytes_per_value: f64,
) -> Result<EpRouting, FieldError> {
    let (experts, top_k, illustrative) = match &model.moe {
        Some(m) if m.routed_experts > 0 => (m.routed_experts, m.experts_per_token.max(1), false),
        _ => (4, 1, true),
    };
    if experts > MAX_DRAWN_EXPERTS {
        return Err(field_error(
            "model.moe.routed_experts",
            format!("at most {MAX_DRAWN_EXPERTS} experts can be drawn, got {experts}"),
        ));
    }
    if top_k > MAX_DRAWN_TOP_K {
        return Err(field_error(
            "model.moe.experts_per_token",
            format!("at most {MAX_DRAWN_TOP_K} experts per token can be drawn, got {top_k}"),
        ));
    }
    if top_k > experts {
        return Err(field_error(
            "model.moe.experts_per_token",
            format!("top-k {top_k} exceeds {experts} experts"),
        ));
    }
    if ep == 0 || !experts.is_multiple_of(ep) {
        return Err(field_error(
            "ep",
            format!("must divide the {experts} experts, got {ep}"),
        ));
    }
    if tokens == 0 || tokens > MAX_ROUTED_TOKENS || !tokens.is_multiple_of(ep) {
        return Err(field_error(
            "tokens",
            format!("must be a multiple of ep = {ep} from 1 to {MAX_ROUTED_TOKENS}, got {tokens}"),
        ));
    }
    if !(capacity_factor.is_finite() && capacity_factor > 0.0) {
        return Err(field_error(
            "capacity_factor",
            format!("must be positive, got {capacity_factor}"),
        ));
    }
    let per_rank_tokens = tokens / ep;
    let experts_per_rank = experts / ep;
    let expert_rank = |e: u32| e / experts_per_rank;
    // Lepikhin et al. 2020 (GShard) §2.2: capacity = capacity_factor · tokens·k / experts.
    let capacity = (capacity_factor * f64::from(tokens) * f64::from(top_k) / f64::from(experts))
        .ceil()
        .min(f64::from(u32::MAX)) as u32;
    let mut rng = XorShift::new(seed);
    let mut routed = vec![0u32; experts as usize];
    let mut sent = vec![0u32; ep as usize];
    let mut received = vec![0u32; ep as usize];
    let mut routes = Vec::with_capacity(tokens as usize);
    for token in 0..tokens {
        let rank = token / per_rank_tokens;
        let mut chosen: Vec<u32> = Vec::with_capacity(top_k as usize);
        let mut dropped = Vec::with_capacity(top_k as usize);
        while chosen.len() < top_k as usize {
            let e = rng.below(experts);
            if chosen.contains(&e) {
                continue;
            }
            chosen.push(e);
            let load = &mut routed[e as usize];
            dropped.push(*load >= capacity);
            *load += 1;
            let dest = expert_rank(e);
            if dest != rank {
                sent[rank as usize] += 1;
                received[dest as usize] += 1;
            }
        }
        routes.push(RoutedToken {
            token,
            rank,
            experts: chosen,
            dropped,
        });
    }
    let loads: Vec<ExpertLoad> = routed
        .iter()
        .enumerate()
        .map(|(e, &r)| ExpertLoad {
            expert: e as u32,
            rank: expert_rank(e as u32),
            routed: r,
            kept: r.min(capacity),
            dropped: r.saturating_sub(capacity),
            padded: capacity.saturating_sub(r),
        })
        .collect();
    let bytes_per_token = f64::from(model.hidden) * bytes_per_value;
    Ok(EpRouting {
        ep,
        experts,
        top_k,
        tokens,
        capacity_factor,
        capacity,
        illustrative,
        dropped: loads.iter().map(|l| l.dropped).sum(),
        padded: loads.iter().map(|l| l.padded).sum(),
        loads,
        routes,
        ranks: (0..ep)
            .map(|r| RankTraffic {
                rank: r,
                tokens_sent: sent[r as usize],
                tokens_received: received[r as usize],
                dispatch_bytes_sent: f64::from(sent[r as usize]) * bytes_per_token,
            })
            .collect(),
        bytes_per_token,
    })
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
