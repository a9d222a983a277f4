//! Communication of one training step, per group: what is sent, how often,
//! over which link, and how long it takes before any overlap.
//!
//! Volumes are per rank. Which part of each item hides behind compute is
//! decided in [`crate::time::cost`], from the [`Overlap`] each item declares.

use serde::{Deserialize, Serialize};

use crate::input::layout::{Layout, Recompute, ZeroStage};
use crate::input::model::ModelSpec;
use crate::input::precision::Precision;
use crate::input::scenario::{Overheads, Training};
use crate::parallel::topology::{Domain, GroupKind, Placement};
use crate::time::collectives::{Collective, CommModel};

/// The model and batch quantities communication depends on, computed once per scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommInputs {
    /// Parameters outside the routed experts (Ψ scale applied).
    pub dense_params: f64,
    /// Routed-expert parameters of the whole model (Ψ scale applied).
    pub expert_params: f64,
    /// Decoder layers.
    pub layers: u32,
    /// MTP modules, each one more decoder layer on the last stage ([`ModelSpec::mtp_layers`]).
    pub mtp_layers: u32,
    /// Layers with a routed-expert FFN.
    pub moe_layers: u32,
    /// Hidden size `h`.
    pub hidden: f64,
    /// Key + value values per token per layer that ring attention circulates.
    pub kv_values_per_token: f64,
    /// Heads that carry K/V (TP splits them until it exceeds this, then replicates).
    pub kv_heads: u32,
    /// Routed experts each token visits (top-k).
    pub experts_per_token: f64,
    /// Shared experts per MoE layer (TP-split like a dense MLP).
    #[serde(default)]
    pub shared_experts: f64,
    /// Tokens per sequence.
    pub seq_len: f64,
    /// Sequences per step.
    pub global_batch: f64,
    /// Bytes per working weight.
    pub weight_bytes: f64,
    /// Bytes per gradient as reduced.
    pub grad_bytes: f64,
    /// Bytes per activation value.
    pub activation_bytes: f64,
    /// Gradient bucket size, bytes (latency is paid once per bucket).
    pub bucket_bytes: f64,
    /// The LM head (and any MTP modules with their heads) in decoder-layer equivalents: its
    /// `V × h` matmul parameters over one layer's active matmul parameters (both cost 2 FLOPs
    /// per parameter per token); picks the stage that sets an uneven pipeline's pace.
    pub head_layers: f64,
    /// Parameters with gradients outside the routed experts: all dense ones, or the
    /// LoRA adapters only ([`crate::input::finetune`]).
    pub trainable_dense_params: f64,
    /// Routed-expert parameters with gradients.
    pub trainable_expert_params: f64,
    /// Bytes per frozen base parameter a ZeRO-3 gather moves (LoRA/QLoRA; 0 for full training,
    /// whose weights are all trainable).
    pub frozen_weight_bytes: f64,
    /// Whose rule sizes the data-parallel gradient buckets
    /// ([`crate::input::framework::Framework::dp_bucket_params`]); older files read as the article's.
    #[serde(default)]
    pub framework: crate::input::framework::Framework,
    /// Gradient reduction overlaps backward (the scenario's switch, framework default applied).
    #[serde(default = "yes")]
    pub grad_reduce_overlap: bool,
    /// One decoder layer's modules' parameters in forward order, unsplit: the fused QKV
    /// projection, the output projection, the FFN's up (and gate) and its down projection
    /// (Megatron's modules); DeepSpeed's reuse rule reads them
    /// ([`crate::time::deepspeed_zero3::backward_regather_share`]).
    #[serde(default)]
    pub layer_modules_params: [f64; 4],
    /// How MoE layers route tokens ([`crate::input::moe_routing`]): the busiest EP rank's
    /// load scales what it receives and computes.
    #[serde(default)]
    pub moe_routing: crate::input::moe_routing::MoeRouting,
}

/// Serde default of [`CommInputs::grad_reduce_overlap`].
fn yes() -> bool {
    true
}

impl CommInputs {
    /// Gathers what the formulas need from a scenario's parts.
    pub fn new(
        model: &ModelSpec,
        precision: &Precision,
        training: &Training,
        overheads: &Overheads,
    ) -> Self {
        let pb = model.param_breakdown();
        let scale = model.param_scale();
        let expert_params = pb.routed_experts_total() as f64 * scale;
        let dense_params = pb.total() as f64 * scale - expert_params;
        let kv_values_per_token = match &model.mla {
            // Megatron CP with MLA circulates the up-projected K (nope + rope) and V of every head.
            Some(mla) => {
                f64::from(model.heads)
                    * f64::from(mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim)
            }
            None => 2.0 * f64::from(model.kv_heads) * f64::from(model.head_dim),
        };
        let kv_heads = if model.mla.is_some() {
            model.heads
        } else {
            model.kv_heads
        };
        let adapters = crate::time::adapters::AdapterTime::of(model, &training.finetune);
        let (trainable_dense_params, trainable_expert_params, frozen_weight_bytes) = match &adapters
        {
            Some(a) => (
                a.adapter_params - a.expert_adapter_params,
                a.expert_adapter_params,
                a.base_bytes_per_param(precision),
            ),
            None => (dense_params, expert_params, 0.0),
        };
        CommInputs {
            dense_params,
            expert_params,
            layers: model.layers,
            mtp_layers: model.mtp_layers,
            moe_layers: pb.moe_layers as u32,
            hidden: f64::from(model.hidden),
            kv_values_per_token,
            kv_heads,
            experts_per_token: model
                .moe
                .as_ref()
                .map_or(0.0, |m| f64::from(m.experts_per_token)),
            shared_experts: model
                .moe
                .as_ref()
                .map_or(0.0, |m| f64::from(m.shared_experts)),
            seq_len: f64::from(training.seq_len),
            global_batch: f64::from(training.global_batch),
            weight_bytes: precision.weight_bytes,
            grad_bytes: precision.grad_bytes,
            activation_bytes: precision.activation_bytes,
            bucket_bytes: overheads.gradient_bucket_bytes,
            head_layers: head_layers(model, &pb),
            trainable_dense_params,
            trainable_expert_params,
            frozen_weight_bytes,
            framework: overheads.framework,
            grad_reduce_overlap: overheads.overlap.applied(overheads.framework).grad_reduce,
            layer_modules_params: layer_modules_params(model, &pb),
            moe_routing: overheads.moe_routing,
        }
    }

    /// Tokens one rank routes per micro-batch and MoE layer
    /// ([`crate::input::moe_routing::routed_tokens_per_rank`]).
    pub fn routed_tokens_per_rank(&self, layout: &Layout) -> f64 {
        crate::input::moe_routing::routed_tokens_per_rank(
            f64::from(layout.micro_batch),
            self.seq_len,
            layout.cp,
            layout.tp,
            layout.sequence_parallel,
        )
    }

    /// The busiest EP rank's routed tokens over the mean
    /// ([`crate::input::moe_routing::MoeRouting::busiest_rank_load`]); 1 for a dense model.
    pub fn expert_load(&self, layout: &Layout) -> f64 {
        if self.moe_layers == 0 || self.experts_per_token <= 0.0 {
            return 1.0;
        }
        let n = crate::input::moe_routing::assignments_per_rank(
            self.routed_tokens_per_rank(layout),
            layout.expert_tp,
            self.experts_per_token,
        );
        self.moe_routing.busiest_rank_load(layout.ep, n)
    }

    /// The stage whose layers (and, on the last stage, LM head) set the pace of `layout`'s
    /// pipeline ([`crate::input::stage_split::StageSplit::pace`]).
    pub fn pace(&self, layout: &Layout) -> crate::input::stage_split::StagePace {
        layout
            .stage_split
            .pace(self.split_shape(layout), self.moe_layers, self.head_layers)
    }

    /// The stage with more MoE layers than [`CommInputs::pace`]'s, if any
    /// ([`crate::input::stage_split::StageSplit::pace_rival`]).
    pub fn pace_rival(&self, layout: &Layout) -> Option<crate::input::stage_split::StagePace> {
        layout
            .stage_split
            .pace_rival(self.split_shape(layout), self.moe_layers, self.head_layers)
    }

    fn split_shape(&self, layout: &Layout) -> crate::input::stage_split::SplitShape {
        crate::input::stage_split::SplitShape::new(self.layers, layout.pp, layout.virtual_stages)
    }

    /// Micro-batches per step per pipeline: `global_batch / (dp × micro_batch)`.
    pub fn micro_batches(&self, layout: &Layout) -> f64 {
        let per = f64::from(layout.dp.max(1)) * f64::from(layout.micro_batch.max(1));
        (self.global_batch / per).max(1.0)
    }
}

/// [`CommInputs::layer_modules_params`]: the output projection is `heads × value head dim × h`,
/// the rest of the attention the QKV projection (with MLA's down- and up-projections); the FFN
/// of a dense layer (of an MoE-only model: its shared and routed experts) splits as its
/// matrices do, one of them the down projection.
fn layer_modules_params(model: &ModelSpec, pb: &crate::input::model::ParamBreakdown) -> [f64; 4] {
    let v_dim = model.mla.as_ref().map_or(model.head_dim, |m| m.v_head_dim);
    let out_proj = f64::from(model.heads) * f64::from(v_dim) * f64::from(model.hidden);
    let qkv = (pb.attention_per_layer as f64 - out_proj).max(0.0);
    let ffn = if pb.dense_layers > 0 {
        pb.dense_ffn_per_layer
    } else {
        pb.shared_experts_per_layer + pb.routed_experts_per_layer
    } as f64;
    let down = ffn / model.ffn_kind.matrices() as f64;
    [qkv, out_proj, ffn - down, down]
}

/// What an item is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// DDP: all-reduce of dense gradients.
    GradAllReduce,
    /// All-reduce of routed-expert gradients over the expert data-parallel group.
    ExpertGradAllReduce,
    /// ZeRO: reduce-scatter of gradients to their owners.
    GradReduceScatter,
    /// ZeRO-1/2: all-gather of updated parameters after the optimizer step.
    ParamAllGather,
    /// ZeRO-3: all-gather of parameters before each forward.
    ParamAllGatherForward,
    /// ZeRO-3: all-gather of parameters before each backward.
    ParamAllGatherBackward,
    /// ZeRO-3 under DeepSpeed with full recompute: all-gather of parameters before the
    /// recomputed forward ([`crate::time::deepspeed_zero3`]).
    ParamAllGatherRecompute,
    /// TP collectives in the forward pass (2 per layer, Megatron).
    TpForward,
    /// TP collectives in the backward pass (2 per layer).
    TpBackward,
    /// TP collectives of the recomputed forward (full recompute).
    TpRecompute,
    /// PP: activations forward and their gradients backward between stages.
    PpActivations,
    /// CP: K/V blocks around the ring (and their gradients in backward).
    CpKvRing,
    /// EP: token dispatch and combine (forward and backward).
    EpDispatchCombine,
}

impl Purpose {
    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            Purpose::GradAllReduce => "grad_all_reduce",
            Purpose::ExpertGradAllReduce => "expert_grad_all_reduce",
            Purpose::GradReduceScatter => "grad_reduce_scatter",
            Purpose::ParamAllGather => "param_all_gather",
            Purpose::ParamAllGatherForward => "param_all_gather_forward",
            Purpose::ParamAllGatherBackward => "param_all_gather_backward",
            Purpose::ParamAllGatherRecompute => "param_all_gather_recompute",
            Purpose::TpForward => "tp_forward",
            Purpose::TpBackward => "tp_backward",
            Purpose::TpRecompute => "tp_recompute",
            Purpose::PpActivations => "pp_activations",
            Purpose::CpKvRing => "cp_kv_ring",
            Purpose::EpDispatchCombine => "ep_dispatch_combine",
        }
    }
}

/// What compute an item can hide behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// Bucketed gradient reduction during the last micro-batch's backward (PyTorch DDP, Megatron `overlap_grad_reduce`).
    LastBackward,
    /// Per-micro-batch gradient reduction during that micro-batch's backward.
    EachBackward,
    /// Parameter gather during the first micro-batch's forward (Megatron `overlap_param_gather`).
    FirstForward,
    /// ZeRO-3 forward all-gather, per unit of each micro-batch: the next unit's gather
    /// hides behind this unit's forward (prefetch depth one); the first cannot hide.
    EachForward,
    /// ZeRO-3 backward all-gather and reduce-scatter, per unit of each micro-batch: both
    /// share the rank's link and hide behind one unit's backward (with its recompute).
    EachUnitBackward,
    /// Ring attention: the next K/V block arrives while this one is computed.
    Attention,
    /// On the critical path (TP, EP, PP).
    None,
}

/// One communication item of a step, per rank.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommItem {
    /// Group it runs over.
    pub group: GroupKind,
    /// Operation.
    pub op: Collective,
    /// What it is for.
    pub purpose: Purpose,
    /// Size of one call in nccl-tests convention, bytes.
    pub message_bytes: f64,
    /// Calls per step.
    pub calls_per_step: f64,
    /// Buckets or units each call is split into (latency is paid per chunk; the
    /// last chunk of an overlapped call cannot hide).
    pub chunks_per_call: f64,
    /// Group size.
    pub ranks: u64,
    /// Link crossed.
    pub domain: Domain,
    /// Bytes each rank puts on the wire per step: `message × busbw factor × calls`.
    pub bus_bytes_per_step: f64,
    /// Time per step if nothing overlapped, seconds.
    pub seconds_per_step: f64,
    /// What it may hide behind.
    pub overlap: Overlap,
    /// Link parameters came from a measurement.
    pub measured: bool,
}

/// Most items a step can have: ZeRO-3's gather, re-gather, DeepSpeed's recompute gather and
/// reduce-scatter and the routed experts' gradient all-reduce (5, [`data_parallel_comms`]); TP and expert-TP each a
/// gather + reduce-scatter pair per forward, backward and recompute pass under sequence
/// parallel (2 × 6); one PP send, one CP ring and EP's all-to-all (3, [`model_parallel_comms`]).
/// It was 12, which silently dropped the last items (EP's all-to-all first) of MoE layouts
/// with expert TP, CP and sequence parallel.
pub const MAX_ITEMS: usize = 20;

/// The items of one step; a fixed array so the mesh search never allocates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepComms {
    items: [Option<CommItem>; MAX_ITEMS],
    len: usize,
}

impl Default for StepComms {
    fn default() -> Self {
        StepComms::new()
    }
}

impl StepComms {
    /// No items.
    pub fn new() -> Self {
        StepComms {
            items: [None; MAX_ITEMS],
            len: 0,
        }
    }

    /// Drops every item (the mesh search refills one in place: no copy of the array).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    fn push(&mut self, item: CommItem) {
        if item.calls_per_step <= 0.0 || item.ranks <= 1 && item.op != Collective::SendRecv {
            return;
        }
        // MAX_ITEMS counts every item the two builders can add, so no item is ever dropped.
        debug_assert!(
            self.len < MAX_ITEMS,
            "a step's communication items exceed MAX_ITEMS"
        );
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = Some(item);
            self.len += 1;
        }
    }

    /// The items.
    pub fn iter(&self) -> impl Iterator<Item = &CommItem> {
        self.items[..self.len].iter().flatten()
    }

    /// The item with this purpose, if present.
    pub fn get(&self, purpose: Purpose) -> Option<&CommItem> {
        self.iter().find(|i| i.purpose == purpose)
    }

    /// Sum of `bus_bytes_per_step` over items with these purposes.
    pub fn bus_bytes(&self, purposes: &[Purpose]) -> f64 {
        self.iter()
            .filter(|i| purposes.contains(&i.purpose))
            .map(|i| i.bus_bytes_per_step)
            .sum()
    }
}

/// [`CommInputs::head_layers`]: `V·h` over one decoder layer's active parameters
/// (attention, norms, FFN or shared + top-k routed experts, router), averaged over layers;
/// with MTP modules (all on the last stage), their active parameters and one more head each.
fn head_layers(model: &ModelSpec, pb: &crate::input::model::ParamBreakdown) -> f64 {
    let ends = pb.embedding + pb.output + pb.final_norm;
    let mtp = pb.mtp_active();
    let per_layer = pb.active().saturating_sub(ends + mtp) as f64 / f64::from(model.layers.max(1));
    // DeepSeek-V3 §2.2: every MTP module runs the shared output head on its own hidden states.
    let heads = 1.0 + pb.mtp_modules as f64;
    let head = f64::from(model.vocab) * f64::from(model.hidden) * heads;
    if per_layer > 0.0 {
        (head + mtp as f64) / per_layer
    } else {
        0.0
    }
}

/// Every communication item of one step for `layout`.
///
/// Per-rank model shares: dense parameters `/(tp·pp)`, routed experts
/// `/(ep·expert_tp·pp)` (MoE parallel folding, [`crate::parallel::fold`], as the memory model counts).
pub fn step_comms(
    inp: &CommInputs,
    layout: &Layout,
    placement: &Placement,
    comm: &CommModel,
) -> StepComms {
    step_comms_paced(inp, layout, placement, comm, &inp.pace(layout))
}

/// [`step_comms`] with the layout's pacing stage ([`CommInputs::pace`]) already resolved:
/// the mesh search resolves it once per (PP, virtual stages, split) for all its candidates.
/// The items of [`data_parallel_comms`], then those of [`model_parallel_comms`], as
/// [`chained`] yields the two parts built apart.
pub fn step_comms_paced(
    inp: &CommInputs,
    layout: &Layout,
    placement: &Placement,
    comm: &CommModel,
    pace: &crate::input::stage_split::StagePace,
) -> StepComms {
    let mut out = StepComms::new();
    data_parallel_comms(&mut out, inp, layout, placement, comm, pace);
    model_parallel_comms(&mut out, inp, layout, placement, comm, pace);
    out
}

/// The items of `dp` then those of `mp` (at most [`MAX_ITEMS`] together, since that counts
/// every item either can add): what [`step_comms_paced`] returns when `dp` and `mp` are its two parts for one layout, each
/// built into an empty [`StepComms`]. The mesh search keeps the parts apart, since each
/// depends on fewer of the layout's fields.
pub fn chained<'a>(dp: &'a StepComms, mp: &'a StepComms) -> impl Iterator<Item = &'a CommItem> {
    dp.iter().chain(mp.iter())
}

/// Adds one item to `out`: its time on `placement`'s group under `comm`.
///
/// `zero3_path_bytes_per_s`: the rate of a framework's own path for ZeRO-3's parameter gathers
/// and gradient reduce-scatters ([`crate::time::deepspeed_zero3`]), when it is slower than
/// the link: such a call takes the longer of the two.
fn adder<'a>(
    out: &'a mut StepComms,
    placement: &'a Placement,
    comm: &'a CommModel,
    zero3_path_bytes_per_s: Option<f64>,
) -> impl FnMut(GroupKind, Collective, Purpose, f64, f64, f64, Overlap) + 'a {
    move |group: GroupKind,
          op: Collective,
          purpose: Purpose,
          message_bytes: f64,
          calls_per_step: f64,
          chunks_per_call: f64,
          overlap: Overlap| {
        let g = placement.group(group);
        // Bucketed calls pay latency per chunk; bandwidth is the same in total.
        let chunks = chunks_per_call.max(1.0);
        let link_s = comm.time_s(op, message_bytes / chunks, g) * chunks;
        let zero3_item = matches!(
            purpose,
            Purpose::ParamAllGatherForward
                | Purpose::ParamAllGatherBackward
                | Purpose::ParamAllGatherRecompute
                | Purpose::GradReduceScatter
        );
        let seconds_per_call = match zero3_path_bytes_per_s {
            // Bytes through each rank: the call's `(n − 1)/n` share (nccl-tests' bus bytes).
            Some(rate) if zero3_item && rate > 0.0 => {
                link_s.max(message_bytes * op.busbw_factor(g.size) / rate)
            }
            _ => link_s,
        };
        out.push(CommItem {
            group,
            op,
            purpose,
            message_bytes,
            calls_per_step,
            chunks_per_call: chunks,
            ranks: g.size,
            domain: g.domain,
            bus_bytes_per_step: message_bytes * op.busbw_factor(g.size) * calls_per_step,
            seconds_per_step: seconds_per_call * calls_per_step,
            overlap,
            measured: comm.placement_measured(op, g),
        });
    }
}

/// Decoder layers and MoE layers of the pacing stage, MTP modules included: they are decoder
/// layers of their own on the last stage (Megatron layout `m`), so their TP, CP, EP and
/// ZeRO-3 traffic is the last stage's; the averaged stage (pp 1, or a refused split) spreads them as it does the head.
fn paced_layers(
    inp: &CommInputs,
    layout: &Layout,
    pace: &crate::input::stage_split::StagePace,
) -> (f64, f64) {
    let pp = f64::from(layout.pp.max(1));
    let mtp = f64::from(inp.mtp_layers);
    let mtp_here = if pace.even {
        mtp / pp
    } else if pace.output {
        mtp
    } else {
        0.0
    };
    let moe_mtp = if inp.moe_layers > 0 { mtp_here } else { 0.0 };
    (pace.layers + mtp_here, pace.moe_layers + moe_mtp)
}

/// Appends the data-parallel items of [`step_comms_paced`] to `out`: gradient reduction
/// and parameter gathers of the layout's ZeRO stage, and the routed experts' gradient
/// all-reduce. They read the ZeRO stage, the group sizes, the micro-batch, the pace and
/// whether recompute is full (DeepSpeed's ZeRO-3 gathers again for the recomputed forward),
/// never the schedule or virtual stages.
pub fn data_parallel_comms(
    out: &mut StepComms,
    inp: &CommInputs,
    layout: &Layout,
    placement: &Placement,
    comm: &CommModel,
    pace: &crate::input::stage_split::StagePace,
) {
    let tp = f64::from(layout.tp.max(1));
    let pp = f64::from(layout.pp.max(1));
    let ep = f64::from(layout.ep.max(1));
    let etp = f64::from(layout.expert_tp.max(1));
    let m = inp.micro_batches(layout);
    // Per-layer traffic counts the layers of the stage that sets the pace (stage_split.rs).
    let (layers_per_stage, _) = paced_layers(inp, layout, pace);
    let zero3_path = (layout.zero == ZeroStage::Zero3
        && inp.framework == crate::input::framework::Framework::DeepSpeed2021)
        .then(crate::time::deepspeed_zero3::gather_path_2021_bytes_per_s);
    let mut add = adder(out, placement, comm, zero3_path);

    // Data-parallel gradient and parameter traffic for this rank's shard of the model.
    // An uneven split: the pacing stage's share, by its decoder layers over the average stage's.
    let dense_per_rank = inp.dense_params / (tp * pp) * pace.layer_scale;
    // Only trainable parameters have gradients (LoRA: the adapters) and change in the optimizer step.
    let trainable_per_rank = inp.trainable_dense_params / (tp * pp) * pace.layer_scale;
    let grads = trainable_per_rank * inp.grad_bytes;
    // Liu et al. 2025 (arXiv 2504.14960) §3: each rank holds routed/(EP·ETP) of the expert weights.
    let expert_grads =
        inp.trainable_expert_params / (ep * etp * pp) * pace.layer_scale * inp.grad_bytes;
    let v = f64::from(layout.virtual_stages.max(1));
    let dp_cp = layout.dp.max(1).saturating_mul(layout.cp.max(1));
    // Buckets of one call: latency is paid per bucket.
    let buckets = |params: f64, bytes: f64| match inp.framework.dp_bucket_params(dp_cp) {
        None => (bytes / inp.bucket_bytes.max(1.0)).ceil(),
        // Megatron-Core (megatron/training/training.py `get_model`): with overlap_grad_reduce off
        // `bucket_size = None`, one bucket per model chunk; with it on, the first model chunk is
        // bucketed and the others are not (`disable_bucketing=(model_chunk_idx > 0)`, "since
        // communication for these model chunks is overlapped with compute anyway").
        Some(_) if !inp.grad_reduce_overlap => v,
        Some(per_bucket) => (params / v / per_bucket.max(1.0)).ceil().max(1.0) + (v - 1.0),
    };
    match layout.zero {
        ZeroStage::Ddp => {
            // Li et al. 2020 (PyTorch DDP): one bucketed all-reduce of all gradients per step.
            add(
                GroupKind::DpCp,
                Collective::AllReduce,
                Purpose::GradAllReduce,
                grads,
                1.0,
                buckets(trainable_per_rank, grads),
                Overlap::LastBackward,
            );
        }
        ZeroStage::Zero1 | ZeroStage::Zero2 => {
            // ZeRO-2 keeps only a gradient shard, so it must reduce every micro-batch
            // (DeepSpeed); ZeRO-1 accumulates locally and reduces once.
            let (calls, overlap) = if layout.zero == ZeroStage::Zero2 {
                (m, Overlap::EachBackward)
            } else {
                (1.0, Overlap::LastBackward)
            };
            // Rajbhandari et al. 2020 §7: reduce-scatter + all-gather = the all-reduce volume of DDP.
            add(
                GroupKind::DpCp,
                Collective::ReduceScatter,
                Purpose::GradReduceScatter,
                grads,
                calls,
                buckets(trainable_per_rank, grads),
                overlap,
            );
            add(
                GroupKind::DpCp,
                Collective::AllGather,
                Purpose::ParamAllGather,
                trainable_per_rank * inp.weight_bytes,
                1.0,
                buckets(trainable_per_rank, trainable_per_rank * inp.weight_bytes),
                Overlap::FirstForward,
            );
        }
        ZeroStage::Zero3 => {
            // Rajbhandari et al. 2020 §7.2.2: all-gather forward + all-gather backward
            // + reduce-scatter = 3Ψ, 1.5× DDP, paid for every forward and backward, i.e. per
            // micro-batch; Zhao et al. 2023 (PyTorch FSDP) §3.3/§4: one transformer layer per
            // unit, gathered before its forward and again before its backward; gradients are
            // reduce-scattered per micro-batch unless sync is deferred (`no_sync` /
            // `set_requires_gradient_sync`, pytorch/pytorch#126166), which holds unsharded
            // gradients; DeepSpeed's gradient-partitioning stages communicate at every
            // micro-batch, not only at accumulation boundaries (deepspeedai/DeepSpeed#338).
            // Latency is paid per unit (one call per layer). How often each runs per step is
            // the framework's FSDP semantics under this schedule (input/fsdp_semantics.rs).
            let units = layers_per_stage.max(1.0);
            let fsdp = crate::input::fsdp_semantics::FsdpSemantics::of(inp.framework, layout.pp);
            // FSDP gathers every parameter of a unit; frozen LoRA/QLoRA base weights move in
            // their stored dtype (4-bit packed under QLoRA), adapters in the working dtype.
            let w = if inp.frozen_weight_bytes > 0.0 {
                dense_per_rank * inp.frozen_weight_bytes + trainable_per_rank * inp.weight_bytes
            } else {
                dense_per_rank * inp.weight_bytes
            };
            add(
                GroupKind::DpCp,
                Collective::AllGather,
                Purpose::ParamAllGatherForward,
                w,
                fsdp.forward_gathers(m),
                units,
                if fsdp.reshard_after_backward {
                    Overlap::EachForward
                } else {
                    Overlap::FirstForward
                },
            );
            // DeepSpeed's per-module hooks under full recompute (time/deepspeed_zero3.rs): the
            // recomputed forward gathers the layer again, and backward only what the reuse
            // rule released; FSDP checkpoints inside its unit, so its backward gather serves both.
            let backward_share =
                if inp.framework.is_deepspeed() && layout.recompute == Recompute::Full {
                    add(
                        GroupKind::DpCp,
                        Collective::AllGather,
                        Purpose::ParamAllGatherRecompute,
                        w,
                        m,
                        units,
                        Overlap::EachUnitBackward,
                    );
                    let modules = inp.layer_modules_params.map(|p| p / tp);
                    crate::time::deepspeed_zero3::backward_regather_share(
                        &modules,
                        crate::time::deepspeed_zero3::MAX_REUSE_DISTANCE_PARAMS,
                    )
                } else {
                    1.0
                };
            add(
                GroupKind::DpCp,
                Collective::AllGather,
                Purpose::ParamAllGatherBackward,
                w * backward_share,
                fsdp.backward_gathers(m),
                units,
                Overlap::EachUnitBackward,
            );
            // Deferred, the unsharded fp32 accumulator is reduce-scattered once, unit by unit
            // inside the last micro-batch's backward (PyTorch 2.5's pipeline stage:
            // `set_requires_gradient_sync(last_backward)`).
            let (rs_bytes, rs_overlap) = if fsdp.defer_grad_sync {
                (
                    trainable_per_rank * crate::input::fsdp_semantics::DEFERRED_GRAD_BYTES,
                    Overlap::LastBackward,
                )
            } else {
                (grads, Overlap::EachUnitBackward)
            };
            add(
                GroupKind::DpCp,
                Collective::ReduceScatter,
                Purpose::GradReduceScatter,
                rs_bytes,
                fsdp.reduce_scatters(m),
                units,
                rs_overlap,
            );
        }
    }
    if expert_grads > 0.0 {
        add(
            GroupKind::ExpertDp,
            Collective::AllReduce,
            Purpose::ExpertGradAllReduce,
            expert_grads,
            1.0,
            buckets(expert_grads / inp.grad_bytes.max(1.0), expert_grads),
            Overlap::LastBackward,
        );
    }
}

/// Appends the model-parallel items of [`step_comms_paced`] to `out`: TP and expert-TP
/// collectives, PP sends, the CP ring and EP's all-to-all. They read the group sizes, the
/// micro-batch, virtual stages, sequence parallel, the pace and whether recompute is full,
/// never the ZeRO stage or schedule.
pub fn model_parallel_comms(
    out: &mut StepComms,
    inp: &CommInputs,
    layout: &Layout,
    placement: &Placement,
    comm: &CommModel,
    pace: &crate::input::stage_split::StagePace,
) {
    let tp = f64::from(layout.tp.max(1));
    let cp = f64::from(layout.cp.max(1));
    let etp = f64::from(layout.expert_tp.max(1));
    let v = f64::from(layout.virtual_stages.max(1));
    let b = f64::from(layout.micro_batch.max(1));
    let m = inp.micro_batches(layout);
    // Per-layer traffic counts the layers of the stage that sets the pace (stage_split.rs).
    let (layers_per_stage, moe_layers_per_stage) = paced_layers(inp, layout, pace);
    let full = layout.recompute == Recompute::Full;
    let mut add = adder(out, placement, comm, None);

    // Tensor parallel: Shoeybi et al. 2019 §3 — one all-reduce after attention and one
    // after the MLP in forward (g), the same two in backward (f); with sequence parallel
    // (Korthikanti et al. 2022 §4.2.2) each becomes an all-gather + reduce-scatter.
    // Under MoE parallel folding (Liu et al. 2025 §3) the MoE layers' routed experts run on
    // the expert-TP group instead: attention keeps its TP pair, dense layers their MLP pair,
    // MoE layers a TP pair only for shared experts (megatron/core/transformer/moe/
    // shared_experts.py, a TP-split MLP).
    let moe_per_stage = moe_layers_per_stage.min(layers_per_stage);
    let dense_per_stage = layers_per_stage - moe_per_stage;
    let shared = if inp.shared_experts > 0.0 { 1.0 } else { 0.0 };
    let act = b * (inp.seq_len / cp) * inp.hidden * inp.activation_bytes;
    // `per_mb`: collectives of each kind per micro-batch per direction on this stage.
    let mut tp_pairs = |group: GroupKind, message: f64, per_mb: f64| {
        let mut pair = |purpose: Purpose| {
            let calls = per_mb * m;
            if layout.sequence_parallel {
                add(
                    group,
                    Collective::AllGather,
                    purpose,
                    message,
                    calls,
                    1.0,
                    Overlap::None,
                );
                add(
                    group,
                    Collective::ReduceScatter,
                    purpose,
                    message,
                    calls,
                    1.0,
                    Overlap::None,
                );
            } else {
                add(
                    group,
                    Collective::AllReduce,
                    purpose,
                    message,
                    calls,
                    1.0,
                    Overlap::None,
                );
            }
        };
        pair(Purpose::TpForward);
        pair(Purpose::TpBackward);
        if full {
            pair(Purpose::TpRecompute);
        }
    };
    if layout.tp > 1 {
        let per_mb = layers_per_stage + dense_per_stage + shared * moe_per_stage;
        tp_pairs(GroupKind::Tp, act, per_mb);
    }
    // Expert TP: Megatron's all-to-all dispatcher all-gathers the routed tokens over the
    // expert-TP group after the dispatch and reduce-scatters them before the combine
    // (megatron/core/transformer/moe/token_dispatcher.py, `MoEAlltoAllTokenDispatcher`
    // dispatch_postprocess / combine_preprocess): per MoE layer one pair; each of the
    // expert-TP ranks contributes the top-k copies of its tokens (b·s/cp, split by TP under
    // sequence parallel), so the gathered message is expert_tp · k · tokens · h values.
    if layout.expert_tp > 1 && inp.moe_layers > 0 {
        let split = if layout.sequence_parallel { tp } else { 1.0 };
        let gathered = etp * inp.experts_per_token * act / split;
        tp_pairs(GroupKind::ExpertTp, gathered, moe_per_stage);
    }

    // Pipeline: Narayanan et al. 2021 §2.2 — each micro-batch crosses every chunk
    // boundary forward and its gradient backward; sequence parallel splits it by TP
    // (Megatron scatter/gather optimisation, §4.1).
    if layout.pp > 1 {
        let split = if layout.sequence_parallel { tp } else { 1.0 };
        let act = b * (inp.seq_len / cp) * inp.hidden * inp.activation_bytes / split;
        add(
            GroupKind::Pp,
            Collective::SendRecv,
            Purpose::PpActivations,
            act,
            2.0 * m * v,
            1.0,
            Overlap::None,
        );
    }

    // Context parallel: ring attention (Liu et al. 2023; Megatron CP) passes each rank's
    // K/V block cp−1 times per layer in forward, and K/V plus dK/dV in backward.
    if layout.cp > 1 {
        let kv_split = tp.min(f64::from(inp.kv_heads.max(1)));
        let block =
            b * (inp.seq_len / cp) * inp.kv_values_per_token / kv_split * inp.activation_bytes;
        let passes = if full { 4.0 } else { 3.0 };
        add(
            GroupKind::Cp,
            Collective::SendRecv,
            Purpose::CpKvRing,
            block,
            layers_per_stage * m * (cp - 1.0) * passes,
            1.0,
            Overlap::Attention,
        );
    }

    // Expert parallel: GShard/Megatron all-to-all dispatch and combine, forward and backward;
    // each of a rank's tokens (split by TP under sequence parallel) goes to top-k experts, and
    // the all-to-all ends when the busiest rank has received its share, `load ×` the mean
    // ([`CommInputs::expert_load`]; exactly the capacity when padded to it).
    // The EP group is placed as Megatron's expert rank generator numbers it (after expert-TP
    // in the stage's tp × cp × dp ranks, [`crate::parallel::fold`]), so with expert-TP 1 it spans TP ranks.
    if layout.ep > 1 && inp.moe_layers > 0 {
        let tokens = inp.routed_tokens_per_rank(layout) * inp.expert_load(layout);
        let msg = tokens * inp.experts_per_token * inp.hidden * inp.activation_bytes;
        let per_layer = if full { 6.0 } else { 4.0 };
        add(
            GroupKind::Ep,
            Collective::AllToAll,
            Purpose::EpDispatchCombine,
            msg,
            moe_layers_per_stage * m * per_layer,
            1.0,
            Overlap::None,
        );
    }
}
