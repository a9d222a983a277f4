//! Training memory per GPU: model state (DDP, ZeRO-1/2/3), activations,
//! buffers and headroom, per pipeline stage, against the GPU's capacity.
//!
//! All numbers come from [`stage_numbers`], which allocates nothing; the
//! explained [`training_memory`] and the mesh search's [`peak_memory_bytes`]
//! are both built on it, so the two cannot disagree.

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::input::framework::Framework;
use crate::input::layout::{Layout, Recompute, ZeroStage};
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::precision::Precision;
use crate::input::scenario::{ActivationOptions, Overheads, Scenario, Training};
use crate::input::stage_split::SplitShape;
use crate::memory::activations::{
    extras_bytes, in_flight_microbatches, layer_bytes, layer_recompute_transient_bytes,
    ActivationSetup, LayerKind,
};
use crate::memory::adapters::{adapter_state, state_terms as adapter_state_terms, AdapterState};
use crate::memory::deepspeed_zero;

/// Where a pipeline stage sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StagePosition {
    /// No pipeline: one stage holds everything.
    Only,
    /// First stage: embedding plus its layers.
    First,
    /// A middle stage (the second one, which holds the most in-flight micro-batches of the middles).
    Middle,
    /// Last stage: its layers, final norm, output projection and loss.
    Last,
}

impl StagePosition {
    /// "first stage", ...
    pub fn label(self) -> &'static str {
        match self {
            StagePosition::Only => "single stage",
            StagePosition::First => "first stage",
            StagePosition::Middle => "middle stage",
            StagePosition::Last => "last stage",
        }
    }
}

/// The layers and model ends one pipeline stage holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageSpan {
    /// Position in the pipeline.
    pub position: StagePosition,
    /// 0-based stage index.
    pub index: u32,
    /// Index of its first decoder layer.
    pub first_layer: u32,
    /// Decoder layers on the stage.
    pub layers: u32,
    /// Of those, layers with a dense FFN.
    pub dense_layers: u32,
    /// Of those, MoE layers.
    pub moe_layers: u32,
    /// Holds the input embedding.
    pub embedding: bool,
    /// Holds the final norm, output projection and loss.
    pub output: bool,
}

/// The stages to evaluate: the single one (pp = 1), or first, middle (pp ≥ 3)
/// and last. Layers are split as evenly as possible with the extra ones on the
/// earliest stages; dense-FFN layers are the model's first layers (DeepSeek).
pub fn stage_spans(params: &ParamBreakdown, pp: u32) -> ([StageSpan; 3], usize) {
    let p = pp.max(1);
    let total = u32::try_from(params.dense_layers + params.moe_layers).unwrap_or(u32::MAX);
    let dense_total = u32::try_from(params.dense_layers).unwrap_or(u32::MAX);
    let base = total / p;
    let rem = total % p;
    let span = |position, index: u32| {
        let layers = base + u32::from(index < rem);
        let first_layer = index * base + index.min(rem);
        let end = first_layer + layers;
        let dense_layers = dense_total.min(end).saturating_sub(first_layer);
        StageSpan {
            position,
            index,
            first_layer,
            layers,
            dense_layers,
            moe_layers: layers - dense_layers,
            embedding: index == 0,
            output: index == p - 1,
        }
    };
    let only = span(StagePosition::Only, 0);
    match p {
        1 => ([only, only, only], 1),
        2 => {
            let last = span(StagePosition::Last, 1);
            ([span(StagePosition::First, 0), last, last], 2)
        }
        _ => (
            [
                span(StagePosition::First, 0),
                span(StagePosition::Middle, 1),
                span(StagePosition::Last, p - 1),
            ],
            3,
        ),
    }
}

/// The stages to evaluate for a layout: [`stage_spans`] for the even split; for an
/// uneven one the first, second and last ranks (the middle ranks hold equal counts, or
/// the earliest the most), or every rank of an explicit list, each with its own layers
/// (`StageSplit::rank_layers`) and dense-FFN layers among them. Allocates only for lists.
/// A split validation refuses is evaluated as the even one (its rule reports the error).
pub fn stage_spans_of(params: &ParamBreakdown, layout: &Layout) -> StageSpans {
    let split = &layout.stage_split;
    let total = u32::try_from(params.dense_layers + params.moe_layers).unwrap_or(u32::MAX);
    let sh = SplitShape::new(total, layout.pp, layout.virtual_stages);
    if split.is_even() || split.problem(sh).is_some() {
        let (fixed, count) = stage_spans(params, layout.pp);
        return StageSpans {
            fixed,
            count,
            listed: Vec::new(),
        };
    }
    let p = layout.pp.max(1);
    let dense_total = u32::try_from(params.dense_layers).unwrap_or(u32::MAX);
    let span = |index: u32| {
        let layers = split.rank_layers(sh, index);
        let dense_layers = split.rank_dense_layers(sh, index, dense_total).min(layers);
        let position = match (index == 0, index + 1 == p) {
            (true, true) => StagePosition::Only,
            (true, false) => StagePosition::First,
            (false, true) => StagePosition::Last,
            (false, false) => StagePosition::Middle,
        };
        StageSpan {
            position,
            index,
            first_layer: u32::try_from(split.chunk_start(sh, u64::from(index))).unwrap_or(u32::MAX),
            layers,
            dense_layers,
            moe_layers: layers - dense_layers,
            embedding: index == 0,
            output: index + 1 == p,
        }
    };
    let mut out = StageSpans {
        fixed: [span(0); 3],
        count: 0,
        listed: Vec::new(),
    };
    if matches!(split, crate::input::layout::StageSplit::Chunks(_)) {
        out.listed = split.ranks_to_check(p).map(span).collect();
    } else {
        for r in split.ranks_to_check(p) {
            out.fixed[out.count] = span(r);
            out.count += 1;
        }
    }
    out
}

/// The stages [`stage_spans_of`] evaluates.
#[derive(Clone, Debug, PartialEq)]
pub struct StageSpans {
    fixed: [StageSpan; 3],
    count: usize,
    listed: Vec<StageSpan>,
}

impl StageSpans {
    /// The stages, first to last.
    pub fn as_slice(&self) -> &[StageSpan] {
        if self.listed.is_empty() {
            &self.fixed[..self.count.clamp(1, 3)]
        } else {
            &self.listed
        }
    }
}

/// Parameters one rank of a stage holds (after TP, PP and EP), split by the
/// ZeRO group that shards them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankParams {
    /// Dense parameters (attention, norms, dense FFN, shared experts, router,
    /// embedding/output), sharded by ZeRO over `dp·cp`.
    pub dense: f64,
    /// Routed-expert parameters, sharded by ZeRO over the expert-data-parallel
    /// group `tp·cp·dp/(expert_tp·ep)`.
    pub expert: f64,
    /// The largest unit FSDP/ZeRO-3 gathers at once (one layer, or the
    /// embedding/output), on this rank after TP/EP.
    pub largest_unit: f64,
}

impl RankParams {
    /// All parameters on the rank.
    pub fn total(&self) -> f64 {
        self.dense + self.expert
    }
}

/// Parameters one rank of `span` holds.
///
/// Megatron conventions: attention, dense FFN, shared experts, embedding and
/// output are split by TP (vocab-parallel embedding); norms and the router are
/// replicated in the TP group; routed experts are split by EP and each expert by
/// expert-TP ([`crate::parallel::fold`]);
/// tied embeddings keep a second copy on the last stage when pp > 1.
/// `nominal_params` scales every component by `Ψ_nominal / Ψ_computed`.
pub fn rank_params(
    model: &ModelSpec,
    params: &ParamBreakdown,
    layout: &Layout,
    span: &StageSpan,
) -> RankParams {
    let t = f64::from(layout.tp.max(1));
    // Liu et al. 2025 (arXiv 2504.14960) §3: a rank holds routed/EP experts of each MoE
    // layer, each split over ETP, so routed parameters per layer ÷ (EP·ETP).
    let expert_split = f64::from(layout.ep.max(1)) * f64::from(layout.expert_tp.max(1));
    let computed_total = params.total() as f64;
    let psi = model.nominal_params.unwrap_or(computed_total);
    // Ratio first, so a rank holding the whole model gets exactly Ψ_nominal.
    let scale = |raw: f64| {
        if computed_total > 0.0 {
            raw / computed_total * psi
        } else {
            0.0
        }
    };
    let attention = params.attention_per_layer as f64 / t + params.norms_per_layer as f64;
    let dense_layer = attention + params.dense_ffn_per_layer as f64 / t;
    let moe_dense_part =
        attention + params.shared_experts_per_layer as f64 / t + params.router_per_layer as f64;
    let experts_per_layer = params.routed_experts_per_layer as f64 / expert_split;
    let embedding = params.embedding as f64 / t;
    let output = if params.output > 0 {
        params.output as f64 / t
    } else if layout.pp > 1 {
        // Tied weights: Megatron keeps a copy of the embedding on the last stage.
        embedding
    } else {
        0.0
    };
    let mut dense =
        f64::from(span.dense_layers) * dense_layer + f64::from(span.moe_layers) * moe_dense_part;
    let mut largest: f64 = 0.0;
    if span.dense_layers > 0 {
        largest = dense_layer;
    }
    if span.moe_layers > 0 {
        largest = largest.max(moe_dense_part + experts_per_layer);
    }
    if span.embedding {
        dense += embedding;
        largest = largest.max(embedding);
    }
    if span.output {
        dense += output + params.final_norm as f64;
        largest = largest.max(output + params.final_norm as f64);
    }
    RankParams {
        dense: scale(dense),
        expert: scale(f64::from(span.moe_layers) * experts_per_layer),
        largest_unit: scale(largest),
    }
}

/// Ranks sharing ZeRO state: `dp·cp` for dense parameters (CP ranks hold the
/// same weights; Megatron shards the optimizer over DP×CP) and the expert-data-parallel
/// group `tp·cp·dp/(expert_tp·ep)` for routed experts ([`crate::parallel::fold`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardGroups {
    /// `N` for dense parameters.
    pub dense: f64,
    /// `N_e` for routed experts.
    pub expert: f64,
}

impl ShardGroups {
    /// The groups of a layout.
    pub fn of(layout: &Layout) -> Self {
        let dense = f64::from(layout.dp.max(1)) * f64::from(layout.cp.max(1));
        ShardGroups {
            dense,
            // Megatron parallel_state.py: expert_data_parallel_size = world / (ETP·EP·PP).
            expert: crate::parallel::fold::expert_dp_ranks(layout),
        }
    }
}

/// Bytes of one model-state category: the part every rank of the shard group
/// replicates and the part it holds one shard of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatePart {
    /// Replicated on every rank of the group.
    pub replicated: f64,
    /// This rank's shard.
    pub sharded: f64,
}

impl StatePart {
    fn of(rank: &RankParams, groups: &ShardGroups, bytes_per_param: f64, sharded: bool) -> Self {
        if sharded {
            StatePart {
                replicated: 0.0,
                sharded: bytes_per_param * rank.dense / groups.dense
                    + bytes_per_param * rank.expert / groups.expert,
            }
        } else {
            StatePart {
                replicated: bytes_per_param * rank.total(),
                sharded: 0.0,
            }
        }
    }

    /// Both parts.
    pub fn total(&self) -> f64 {
        self.replicated + self.sharded
    }
}

/// Model-state bytes on one rank, per category.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelStateBytes {
    /// Working weights.
    pub weights: StatePart,
    /// Gradients.
    pub gradients: StatePart,
    /// Optimizer state: master weights plus moments.
    pub optimizer: StatePart,
}

impl ModelStateBytes {
    /// Everything.
    pub fn total(&self) -> f64 {
        self.weights.total() + self.gradients.total() + self.optimizer.total()
    }
}

/// Model state per rank under a ZeRO stage (Rajbhandari et al. 2020, §5, Fig. 1):
/// stage 1 shards optimizer state, 2 also gradients, 3 also weights.
pub fn model_state_bytes(
    rank: &RankParams,
    groups: &ShardGroups,
    precision: &Precision,
    zero: ZeroStage,
) -> ModelStateBytes {
    let n = zero.number();
    ModelStateBytes {
        weights: StatePart::of(rank, groups, precision.weight_bytes, n >= 3),
        gradients: StatePart::of(rank, groups, precision.grad_bytes, n >= 2),
        optimizer: StatePart::of(rank, groups, precision.optimizer_state_bytes(), n >= 1),
    }
}

/// References to the parts of a scenario the memory model reads.
#[derive(Clone, Copy, Debug)]
pub struct MemoryInputs<'a> {
    /// The model.
    pub model: &'a ModelSpec,
    /// Its parameter breakdown (`model.param_breakdown()`, computed once by the caller).
    pub params: &'a ParamBreakdown,
    /// Bytes per parameter and activation.
    pub precision: &'a Precision,
    /// The layout.
    pub layout: &'a Layout,
    /// Sequence and global batch.
    pub training: &'a Training,
    /// Activation switches.
    pub activations: &'a ActivationOptions,
    /// Buffers and headroom.
    pub overheads: &'a Overheads,
}

impl MemoryInputs<'_> {
    /// Micro-batches per optimizer step per pipeline: `ceil(global_batch / (dp·micro_batch))`.
    pub fn microbatches(&self) -> u32 {
        self.layout.micro_batches(self.training.global_batch)
    }

    /// Communicators with more than one rank this GPU belongs to: DP×CP
    /// (gradients), TP, PP, CP and the expert group.
    pub fn nccl_groups(&self) -> u32 {
        let l = self.layout;
        let dp_cp = u64::from(l.dp) * u64::from(l.cp);
        [
            dp_cp,
            u64::from(l.tp),
            u64::from(l.pp),
            u64::from(l.cp),
            u64::from(l.ep),
        ]
        .iter()
        .map(|&g| u32::from(g > 1))
        .sum()
    }
}

/// Every number of one stage, without text.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageNumbers {
    /// The stage.
    pub span: StageSpan,
    /// Parameters on the rank.
    pub params: RankParams,
    /// Model state on the GPU under the layout's ZeRO stage (after offload).
    pub state: ModelStateBytes,
    /// Parameters of this GPU's ZeRO partition (whose optimizer state it holds).
    pub partition_params: f64,
    /// Host and NVMe bytes of this GPU's process under `training.offload`.
    pub offload_host: crate::memory::offload::HostPerGpu,
    /// LoRA/QLoRA: frozen base and adapter state ([`crate::input::finetune`]); `state` then holds its sums.
    pub adapters: Option<AdapterState>,
    /// Micro-batches' worth of activations held at the peak.
    pub in_flight: f64,
    /// Saved activations of the stage's layers for one micro-batch.
    pub layer_activation_bytes_per_microbatch: f64,
    /// Embedding/output/logit activations for one micro-batch.
    pub extra_activation_bytes_per_microbatch: f64,
    /// `in_flight × (layers + extras)`.
    pub activation_bytes: f64,
    /// One layer's recomputed tensors held during its backward.
    pub recompute_transient_bytes: f64,
    /// ZeRO-3 gathered units in flight.
    pub zero3_gathered_bytes: f64,
    /// Gradient communication buckets.
    pub gradient_bucket_bytes: f64,
    /// The loss's logit-sized transients at the start of backward (framework semantics).
    pub loss_transient_bytes: f64,
    /// cuBLAS workspaces (allocated through the caching allocator).
    pub cublas_workspace_bytes: f64,
    /// The optimizer step's transients (DeepSpeed's fp32 gradient partition).
    pub step_transient_bytes: f64,
    /// How far the optimizer step's peak exceeds the backward's (0 when it does not).
    pub step_excess_bytes: f64,
    /// Live tensors at the peak: what `torch.cuda.max_memory_allocated` reports.
    pub allocated_bytes: f64,
    /// The caching allocator's blocks at the peak: `torch.cuda.max_memory_reserved`
    /// (allocated plus fragmentation).
    pub reserved_bytes: f64,
    /// CUDA context.
    pub cuda_context_bytes: f64,
    /// NCCL communicators with more than one rank.
    pub nccl_groups: u32,
    /// NCCL buffers.
    pub nccl_bytes: f64,
    /// Allocator fragmentation on top of the allocated tensors.
    pub allocator_bytes: f64,
    /// Everything the device holds (`nvidia-smi`): reserved plus CUDA context and NCCL
    /// buffers, which PyTorch's counters do not see.
    pub total_bytes: f64,
}

/// The activation sums of one [`ActivationSetup`] (micro-batch, TP, CP, sequence parallel,
/// expert-TP, recompute): what one decoder layer of each kind saves and drops for one
/// micro-batch, the ends' tensors for each (embedding, output) pair, and the loss's
/// logit-sized transient. Every stage, DP, PP and ZeRO stage of a layout with that setup
/// shares them, so the mesh search computes them once per setup ([`crate::search::memo`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActivationSums {
    /// The setup they were computed for.
    pub setup: ActivationSetup,
    /// One dense-FFN layer: (kept, dropped by recompute) bytes; 0 without dense layers.
    pub dense: (f64, f64),
    /// One MoE layer: (kept, dropped by recompute) bytes; 0 without MoE layers.
    pub moe: (f64, f64),
    /// [`extras_bytes`] by `2 · embedding + output`.
    pub extras: [f64; 4],
    /// [`crate::memory::loss_memory::loss_transient_bytes`] without and with the output.
    pub loss: [f64; 2],
}

/// The activation sums of `inputs`' layout. No allocation.
pub fn activation_sums(inputs: &MemoryInputs) -> ActivationSums {
    let MemoryInputs {
        model,
        params,
        precision,
        layout,
        training,
        activations,
        overheads,
    } = *inputs;
    let setup = ActivationSetup::new(layout, training, activations, precision);
    // torchtitan's "selective" is its per-op policy, not Korthikanti's selective recompute.
    let torchtitan_dense = if overheads.framework == Framework::Torchtitan
        && layout.recompute == Recompute::Selective
    {
        crate::memory::torchtitan_sac::dense_layer_saved_bytes(model, &setup)
    } else {
        None
    };
    let dense = if params.dense_layers > 0 {
        match torchtitan_dense {
            Some(kept) => {
                let all = layer_bytes(
                    model,
                    LayerKind::Dense,
                    &ActivationSetup {
                        recompute: Recompute::None,
                        ..setup
                    },
                );
                (kept, (all - kept).max(0.0))
            }
            None => (
                layer_bytes(model, LayerKind::Dense, &setup),
                layer_recompute_transient_bytes(model, LayerKind::Dense, &setup),
            ),
        }
    } else {
        (0.0, 0.0)
    };
    let moe = if params.moe_layers > 0 {
        (
            layer_bytes(model, LayerKind::Moe, &setup),
            layer_recompute_transient_bytes(model, LayerKind::Moe, &setup),
        )
    } else {
        (0.0, 0.0)
    };
    let ends = |embedding, output| extras_bytes(model, &setup, embedding, output);
    let loss = |output| {
        crate::memory::loss_memory::loss_transient_bytes(
            overheads.framework,
            model.vocab,
            &setup,
            output,
        )
    };
    ActivationSums {
        setup,
        dense,
        moe,
        extras: [
            ends(false, false),
            ends(false, true),
            ends(true, false),
            ends(true, true),
        ],
        loss: [loss(false), loss(true)],
    }
}

/// All numbers of one stage. No allocation, no text.
pub fn stage_numbers(inputs: &MemoryInputs, span: &StageSpan) -> StageNumbers {
    stage_numbers_with(inputs, span, &activation_sums(inputs))
}

/// [`stage_numbers`] with the layout's [`activation_sums`] already computed.
pub fn stage_numbers_with(
    inputs: &MemoryInputs,
    span: &StageSpan,
    sums: &ActivationSums,
) -> StageNumbers {
    stage_numbers_from(inputs, span, sums, &stage_state(inputs, span))
}

/// The numbers of one stage that do not depend on the micro-batch, the recompute policy or
/// the schedule: its parameters and model state, ZeRO-3's gathered units, the gradient
/// buckets and the NCCL buffers. The mesh search reuses them across those knobs
/// ([`crate::search::memo`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageState {
    /// Parameters on the rank.
    pub params: RankParams,
    /// Model state on the GPU under the layout's ZeRO stage (after offload).
    pub state: ModelStateBytes,
    /// Parameters of this GPU's ZeRO partition (whose optimizer state it holds).
    pub partition_params: f64,
    /// Host and NVMe bytes of this GPU's process under `training.offload`.
    pub offload_host: crate::memory::offload::HostPerGpu,
    /// LoRA/QLoRA: frozen base and adapter state.
    pub adapters: Option<AdapterState>,
    /// ZeRO-3 gathered units in flight.
    pub zero3_gathered_bytes: f64,
    /// Gradient communication buckets.
    pub gradient_bucket_bytes: f64,
    /// NCCL communicators with more than one rank.
    pub nccl_groups: u32,
    /// NCCL buffers.
    pub nccl_bytes: f64,
    /// Transients of the optimizer step held with the model state (DeepSpeed's fp32
    /// gradient partition); 0 for other frameworks.
    pub step_transient_bytes: f64,
}

/// The [`StageState`] of `span` under `inputs`' layout. No allocation.
pub fn stage_state(inputs: &MemoryInputs, span: &StageSpan) -> StageState {
    let (model, params, layout) = (inputs.model, inputs.params, inputs.layout);
    let (precision, training, overheads) = (inputs.precision, inputs.training, inputs.overheads);
    let rank = rank_params(model, params, layout, span);
    let groups = ShardGroups::of(layout);
    let adapters = adapter_state(
        model,
        params,
        precision,
        layout,
        span,
        &rank,
        &training.finetune,
    );
    let state = match &adapters {
        Some(a) => a.model_state(),
        None => model_state_bytes(&rank, &groups, precision, layout.zero),
    };
    // Offload ([`crate::input::offload`]): what it moves leaves the GPU and is held by the host.
    let optimizer_bytes_per_param = precision.optimizer_state_bytes();
    let partition_params = if optimizer_bytes_per_param > 0.0 {
        state.optimizer.total() / optimizer_bytes_per_param
    } else {
        rank.dense / groups.dense + rank.expert / groups.expert
    };
    let (state, offload_host) = offload_split(state, partition_params, precision, layout, training);
    let deepspeed = overheads.framework == Framework::DeepSpeed;
    let zero3_gathered_bytes = if layout.zero == ZeroStage::Zero3 {
        let unit_bytes = match &adapters {
            // FSDP-QLoRA gathers the packed 4-bit storage, not a dequantized copy.
            Some(a) => {
                rank.largest_unit * a.base_bytes_per_param
                    + a.adapters.largest_unit * precision.weight_bytes
            }
            None if deepspeed => {
                // DeepSpeed ZeRO-3: the unit computing plus the prefetch bucket, under the live cap.
                deepspeed_zero::zero3_gathered_elements(rank.largest_unit) * precision.weight_bytes
            }
            None => rank.largest_unit * precision.weight_bytes,
        };
        if deepspeed && adapters.is_none() {
            unit_bytes
        } else {
            f64::from(overheads.zero3_units_in_flight) * unit_bytes
        }
    } else {
        0.0
    };
    let gradient_bucket_bytes = if groups.dense <= 1.0 {
        0.0
    } else if layout.zero == ZeroStage::Zero3 {
        // FSDP reduce-scatters one unit's full gradient before keeping its shard.
        rank.largest_unit * precision.grad_bytes
    } else {
        // One bucket being reduced while the next fills (buckets are views of the gradients).
        2.0 * overheads.gradient_bucket_bytes
    };
    // Only adapters have gradients: a bucket never holds more than all of them.
    let gradient_bucket_bytes = match &adapters {
        Some(a) if layout.zero == ZeroStage::Zero3 => {
            a.adapters.largest_unit * precision.grad_bytes
        }
        Some(a) => gradient_bucket_bytes.min(a.adapters.total() * precision.grad_bytes),
        None => gradient_bucket_bytes,
    };
    // DeepSpeed allocates its contiguous-gradient buffers at full size whatever the model.
    let gradient_bucket_bytes = if deepspeed && layout.zero != ZeroStage::Ddp {
        deepspeed_zero::ipg_buffer_bytes(layout.zero, precision.grad_bytes)
    } else {
        gradient_bucket_bytes
    };
    let step_transient_bytes = if deepspeed
        && layout.zero != ZeroStage::Ddp
        && training.offload.optimizer_device().is_none()
    {
        deepspeed_zero::fp32_grad_partition_bytes(partition_params)
    } else {
        0.0
    };
    let nccl_groups = inputs.nccl_groups();
    StageState {
        params: rank,
        state,
        partition_params,
        offload_host,
        adapters,
        zero3_gathered_bytes,
        gradient_bucket_bytes,
        nccl_groups,
        nccl_bytes: f64::from(nccl_groups) * overheads.nccl_buffer_bytes_per_group,
        step_transient_bytes,
    }
}

/// A stage's numbers from its [`activation_sums`] and [`stage_state`], both for `inputs`'
/// layout: the mesh search's inner loop (inlined there, so only the total is built).
#[inline(always)]
pub fn stage_numbers_from(
    inputs: &MemoryInputs,
    span: &StageSpan,
    sums: &ActivationSums,
    st: &StageState,
) -> StageNumbers {
    let MemoryInputs {
        layout, overheads, ..
    } = *inputs;
    let mut layer_acts = 0.0;
    let mut transient: f64 = 0.0;
    if span.dense_layers > 0 {
        let (kept, dropped) = sums.dense;
        layer_acts += f64::from(span.dense_layers) * kept;
        transient = transient.max(dropped);
    }
    if span.moe_layers > 0 {
        let (kept, dropped) = sums.moe;
        layer_acts += f64::from(span.moe_layers) * kept;
        transient = transient.max(dropped);
    }
    if layout.recompute == Recompute::None {
        transient = 0.0;
    }
    let extras = sums.extras[usize::from(span.embedding) * 2 + usize::from(span.output)];
    let in_flight = in_flight_microbatches(
        layout.schedule,
        layout.pp,
        layout.virtual_stages,
        inputs.microbatches(),
        span.index,
    );
    let activation_bytes = in_flight * (layer_acts + extras);
    let loss_transient_bytes = sums.loss[usize::from(span.output)];
    let backward_peak = st.state.total()
        + activation_bytes
        + transient
        + st.zero3_gathered_bytes
        + st.gradient_bucket_bytes
        + loss_transient_bytes
        + overheads.cublas_workspace_bytes;
    // The optimizer step holds the model state and its own transients once activations are
    // freed; where that is the larger, the excess over the backward peak is its own term.
    let step_peak = st.state.total() + st.step_transient_bytes + overheads.cublas_workspace_bytes;
    let step_excess_bytes = (step_peak - backward_peak).max(0.0);
    let allocated = backward_peak + step_excess_bytes;
    let allocator_bytes = overheads.allocator_fraction * allocated;
    let reserved_bytes = allocated + allocator_bytes;
    // CUDA context and NCCL buffers are allocated outside PyTorch's caching allocator.
    let total_bytes = reserved_bytes + overheads.cuda_context_bytes + st.nccl_bytes;
    StageNumbers {
        span: *span,
        params: st.params,
        state: st.state,
        partition_params: st.partition_params,
        offload_host: st.offload_host,
        adapters: st.adapters,
        in_flight,
        layer_activation_bytes_per_microbatch: layer_acts,
        extra_activation_bytes_per_microbatch: extras,
        activation_bytes,
        recompute_transient_bytes: transient,
        zero3_gathered_bytes: st.zero3_gathered_bytes,
        gradient_bucket_bytes: st.gradient_bucket_bytes,
        loss_transient_bytes,
        cublas_workspace_bytes: overheads.cublas_workspace_bytes,
        step_transient_bytes: st.step_transient_bytes,
        step_excess_bytes,
        allocated_bytes: allocated,
        reserved_bytes,
        cuda_context_bytes: overheads.cuda_context_bytes,
        nccl_groups: st.nccl_groups,
        nccl_bytes: st.nccl_bytes,
        allocator_bytes,
        total_bytes,
    }
}

/// The GPU's model state after `training.offload` moves its categories off, and what the
/// host then holds for this GPU ([`crate::memory::offload::host_per_gpu`]).
fn offload_split(
    state: ModelStateBytes,
    partition_params: f64,
    precision: &Precision,
    layout: &Layout,
    training: &Training,
) -> (ModelStateBytes, crate::memory::offload::HostPerGpu) {
    let offload = training.offload;
    if offload.is_none() {
        return (state, crate::memory::offload::HostPerGpu::default());
    }
    let host = crate::memory::offload::host_per_gpu(
        offload,
        layout.zero,
        &crate::memory::offload::GpuState {
            weight_bytes: state.weights.total(),
            gradient_bytes: state.gradients.total(),
            optimizer_bytes: state.optimizer.total(),
            partition_params,
            weight_bytes_per_param: precision.weight_bytes,
        },
    );
    let moved = crate::input::offload::moved(offload, layout.zero);
    let keep = |part: StatePart, gone: bool| if gone { StatePart::default() } else { part };
    let state = ModelStateBytes {
        weights: keep(state.weights, moved.weights),
        gradients: keep(state.gradients, moved.gradients),
        optimizer: keep(state.optimizer, moved.optimizer),
    };
    (state, host)
}

/// Peak bytes per GPU over the pipeline stages, and the index (into
/// [`stage_spans`]) of the stage that peaks. Allocation-free.
pub fn peak_memory(inputs: &MemoryInputs) -> (f64, usize) {
    let spans = stage_spans_of(inputs.params, inputs.layout);
    let sums = activation_sums(inputs);
    let totals = spans
        .as_slice()
        .iter()
        .map(|span| stage_numbers_with(inputs, span, &sums).total_bytes);
    highest(totals)
}

/// [`peak_memory`] with the layout's stages ([`stage_spans_of`]), [`activation_sums`] and
/// each stage's [`stage_state`] (in the stages' order) already computed: the mesh search
/// reuses them across candidates ([`crate::search::memo`]).
pub fn peak_memory_from(
    inputs: &MemoryInputs,
    spans: &StageSpans,
    sums: &ActivationSums,
    states: &[StageState],
) -> (f64, usize) {
    let totals = spans
        .as_slice()
        .iter()
        .zip(states)
        .map(|(span, st)| stage_numbers_from(inputs, span, sums, st).total_bytes);
    highest(totals)
}

/// The largest of the stages' totals and its index (the first on ties; NaN never wins).
fn highest(totals: impl Iterator<Item = f64>) -> (f64, usize) {
    let mut peak = f64::NEG_INFINITY;
    let mut at = 0;
    for (i, total) in totals.enumerate() {
        if total > peak {
            peak = total;
            at = i;
        }
    }
    (peak, at)
}

/// Peak training memory per GPU, bytes: the mesh search's fast path (no text,
/// no heap). Equals [`training_memory`]'s `peak_bytes` for the same inputs.
pub fn peak_memory_bytes(
    model: &ModelSpec,
    params: &ParamBreakdown,
    precision: &Precision,
    layout: &Layout,
    training: &Training,
    activations: &ActivationOptions,
    overheads: &Overheads,
) -> f64 {
    peak_memory(&MemoryInputs {
        model,
        params,
        precision,
        layout,
        training,
        activations,
        overheads,
    })
    .0
}

// ---------------------------------------------------------------------------
// Explained results.

/// One bar of the model-state chart: a ZeRO stage's bytes per GPU, split into
/// the part every rank replicates and the part it shards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelStateBar {
    /// The stage.
    pub zero: ZeroStage,
    /// Categories every rank of the shard group holds in full.
    pub replicated: Vec<Term>,
    /// Categories each rank holds one shard of.
    pub sharded: Vec<Term>,
    /// Sum of both.
    pub total_bytes: f64,
}

/// Memory of one pipeline stage, explained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageMemory {
    /// Position.
    pub position: StagePosition,
    /// Decoder layers on it.
    pub layers: u32,
    /// Every term, summing to `total_bytes`.
    pub terms: Vec<Term>,
    /// `torch.cuda.max_memory_allocated` on this stage.
    pub allocated_bytes: f64,
    /// `torch.cuda.max_memory_reserved` on this stage.
    pub reserved_bytes: f64,
    /// Total bytes per GPU.
    pub total_bytes: f64,
}

/// Training memory per GPU for a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingMemory {
    /// First, (middle), last stage; a single one when pp = 1.
    pub stages: Vec<StageMemory>,
    /// The largest stage total (what the device holds, `nvidia-smi`).
    pub peak_bytes: f64,
    /// The largest stage's `torch.cuda.max_memory_allocated`.
    pub peak_allocated_bytes: f64,
    /// The largest stage's `torch.cuda.max_memory_reserved` (what torchtitan logs).
    pub peak_reserved_bytes: f64,
    /// Whose memory semantics the transients followed.
    pub framework: crate::input::framework::Framework,
    /// Index into `stages` of the peak.
    pub peak_stage: usize,
    /// GPU memory as the device reports it (what fits compare against).
    pub capacity_bytes: f64,
    /// The datasheet's decimal figure the chart labels the line with ("80 GB").
    pub capacity_label_bytes: f64,
    /// `capacity × usable_fraction`.
    pub usable_bytes: f64,
    /// `peak_bytes ≤ usable_bytes`.
    pub fits: bool,
    /// Host memory and NVMe per node under offload ([`crate::input::offload`]); `None` without offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::memory::offload::HostMemory>,
}

pub(crate) use crate::base::explain::{fmt_bytes, fmt_num};

#[derive(Clone, Copy)]
enum Category {
    Weights,
    Gradients,
    Optimizer,
}

impl Category {
    fn key(self) -> &'static str {
        match self {
            Category::Weights => "weights",
            Category::Gradients => "gradients",
            Category::Optimizer => "optimizer",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Category::Weights => "weights",
            Category::Gradients => "gradients",
            Category::Optimizer => "optimizer state (master + moments)",
        }
    }
    fn bytes_per_param(self, p: &Precision) -> f64 {
        match self {
            Category::Weights => p.weight_bytes,
            Category::Gradients => p.grad_bytes,
            Category::Optimizer => p.optimizer_state_bytes(),
        }
    }
    /// Rajbhandari et al. 2020 §5: the first ZeRO stage that shards this category.
    fn sharded_under(self, zero: ZeroStage) -> bool {
        let from = match self {
            Category::Optimizer => 1,
            Category::Gradients => 2,
            Category::Weights => 3,
        };
        zero.number() >= from
    }
    fn part(self, s: &ModelStateBytes) -> StatePart {
        match self {
            Category::Weights => s.weights,
            Category::Gradients => s.gradients,
            Category::Optimizer => s.optimizer,
        }
    }
}

/// What the model-state terms' text needs.
struct StateText<'a> {
    rank: &'a RankParams,
    groups: &'a ShardGroups,
    precision: &'a Precision,
    layout: &'a Layout,
    key_prefix: &'a str,
}

fn state_term(category: Category, part: StatePart, ctx: &StateText, sharded: bool) -> Term {
    let StateText {
        rank,
        groups,
        precision,
        layout,
        key_prefix,
    } = *ctx;
    let k = category.bytes_per_param(precision);
    let kk = fmt_num(k);
    let has_experts = rank.expert > 0.0;
    let (bytes, formula, worked) = match (sharded, has_experts) {
        (false, false) => (
            part.replicated,
            format!("{kk}Ψ"),
            format!("{kk} × {}", fmt_num(rank.dense)),
        ),
        (false, true) => (
            part.replicated,
            format!("{kk}(Ψd + Ψe)"),
            format!(
                "{kk} × ({} + {})",
                fmt_num(rank.dense),
                fmt_num(rank.expert)
            ),
        ),
        (true, false) => (
            part.sharded,
            format!("{kk}Ψ/N"),
            format!("{kk} × {} / {}", fmt_num(rank.dense), fmt_num(groups.dense)),
        ),
        (true, true) => (
            part.sharded,
            format!("{kk}(Ψd/N + Ψe/Ne)"),
            format!(
                "{kk} × ({} / {} + {} / {})",
                fmt_num(rank.dense),
                fmt_num(groups.dense),
                fmt_num(rank.expert),
                fmt_num(groups.expert)
            ),
        ),
    };
    let split = if layout.tp > 1 || layout.pp > 1 || has_experts {
        format!(
            "Ψ = parameters on this rank (TP ÷{}, norms/router replicated; PP stage share; routed experts Ψe ÷EP·ETP {}·{})",
            layout.tp, layout.ep, layout.expert_tp
        )
    } else {
        "Ψ = all parameters".to_string()
    };
    let group = if sharded {
        format!(
            "; N = dp·cp = {}{}",
            fmt_num(groups.dense),
            if has_experts {
                format!(", Ne = tp·cp·dp/(ep·etp) = {}", fmt_num(groups.expert))
            } else {
                String::new()
            }
        )
    } else {
        String::new()
    };
    Term {
        key: format!("{key_prefix}{}", category.key()),
        label: format!(
            "{} ({})",
            category.label(),
            if sharded { "sharded" } else { "replicated" }
        ),
        value: bytes,
        unit: Unit::Bytes,
        formula,
        worked: format!("{worked} = {}", fmt_bytes(bytes)),
        assumption: format!(
            "{} B/param ({}); {split}{group}; ZeRO paper (Rajbhandari et al. 2020) §5",
            kk,
            precision.recipe.label()
        ),
    }
}

fn state_terms(
    zero: ZeroStage,
    state: &ModelStateBytes,
    ctx: &StateText,
) -> (Vec<Term>, Vec<Term>) {
    let mut replicated = Vec::new();
    let mut sharded = Vec::new();
    for c in [Category::Weights, Category::Gradients, Category::Optimizer] {
        let is_sharded = c.sharded_under(zero);
        let term = state_term(c, c.part(state), ctx, is_sharded);
        if is_sharded {
            sharded.push(term);
        } else {
            replicated.push(term);
        }
    }
    (replicated, sharded)
}

/// [`model_state`] in the scenario's fine-tuning mode: under LoRA/QLoRA the frozen base
/// and the adapters' state ([`crate::memory::adapters::model_state_bars`]).
pub fn model_state_for(
    model: &ModelSpec,
    precision: &Precision,
    layout: &Layout,
    training: &Training,
) -> Vec<ModelStateBar> {
    let mut bars =
        crate::memory::adapters::model_state_bars(model, precision, layout, &training.finetune)
            .unwrap_or_else(|| model_state(model, precision, layout));
    crate::memory::offload::offload_bars(&mut bars, training.offload);
    bars
}

/// The four model-state bars (DDP, ZeRO-1, ZeRO-2, ZeRO-3) for this layout's
/// shard group, on the pipeline stage holding the most parameters.
///
/// With TP = PP = 1 and no experts these are the ZeRO paper's 16Ψ,
/// 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N and 16Ψ/N for mixed-precision Adam.
pub fn model_state(
    model: &ModelSpec,
    precision: &Precision,
    layout: &Layout,
) -> Vec<ModelStateBar> {
    let params = model.param_breakdown();
    let spans = stage_spans_of(&params, layout);
    let spans = spans.as_slice();
    let mut rank = rank_params(model, &params, layout, &spans[0]);
    for span in spans.iter().skip(1) {
        let r = rank_params(model, &params, layout, span);
        if r.total() > rank.total() {
            rank = r;
        }
    }
    let groups = ShardGroups::of(layout);
    ZeroStage::ALL
        .iter()
        .map(|&zero| {
            let state = model_state_bytes(&rank, &groups, precision, zero);
            let ctx = StateText {
                rank: &rank,
                groups: &groups,
                precision,
                layout,
                key_prefix: "",
            };
            let (replicated, sharded) = state_terms(zero, &state, &ctx);
            ModelStateBar {
                zero,
                replicated,
                sharded,
                total_bytes: state.total(),
            }
        })
        .collect()
}

fn term(
    key: &str,
    label: &str,
    bytes: f64,
    formula: &str,
    worked: String,
    assumption: String,
) -> Term {
    Term {
        key: key.to_string(),
        label: label.to_string(),
        value: bytes,
        unit: Unit::Bytes,
        formula: formula.to_string(),
        worked: format!("{worked} = {}", fmt_bytes(bytes)),
        assumption,
    }
}

fn stage_memory(inputs: &MemoryInputs, n: &StageNumbers) -> StageMemory {
    let layout = inputs.layout;
    let overheads = inputs.overheads;
    let groups = ShardGroups::of(layout);
    let ctx = StateText {
        rank: &n.params,
        groups: &groups,
        precision: inputs.precision,
        layout,
        key_prefix: "model_state.",
    };
    let mut terms = match (&n.adapters, inputs.training.finetune.adapters()) {
        (Some(a), Some(lora)) => adapter_state_terms(a, inputs.precision, layout, lora),
        _ => {
            let (replicated, sharded) = state_terms(layout.zero, &n.state, &ctx);
            let mut terms = replicated;
            terms.extend(sharded);
            terms
        }
    };
    crate::memory::offload::mark_offloaded(
        &mut terms,
        inputs.training.offload,
        layout.zero,
        &n.offload_host,
    );

    let recompute = layout.recompute.id();
    let schedule = layout.schedule.label();
    let m = inputs.microbatches();
    let flight = format!(
        "{schedule}, p = {}, v = {}, m = {m} micro-batches: stage {} holds {} micro-batches' activations",
        layout.pp,
        layout.virtual_stages,
        n.span.index,
        fmt_num(n.in_flight)
    );
    let layer_bytes_total = n.in_flight * n.layer_activation_bytes_per_microbatch;
    terms.push(term(
        "activations.layers",
        "activations (decoder layers)",
        layer_bytes_total,
        "m_f × Σ_layers A_layer",
        format!(
            "{} × {}",
            fmt_num(n.in_flight),
            fmt_bytes(n.layer_activation_bytes_per_microbatch)
        ),
        format!(
            "{flight}; {} layers; tensor-by-tensor accounting (Korthikanti et al. 2022 §4), recompute {recompute}, s = {}, b = {}, t = {}, cp = {}, SP {}",
            n.span.layers,
            inputs.training.seq_len,
            layout.micro_batch,
            layout.tp,
            layout.cp,
            if layout.sequence_parallel { "on" } else { "off" }
        ),
    ));
    if n.extra_activation_bytes_per_microbatch > 0.0 {
        terms.push(term(
            "activations.outside_layers",
            "activations (embedding / output / logits)",
            n.in_flight * n.extra_activation_bytes_per_microbatch,
            "m_f × (embedding dropout | final norm + output input + s·b·V/t logits)",
            format!(
                "{} × {}",
                fmt_num(n.in_flight),
                fmt_bytes(n.extra_activation_bytes_per_microbatch)
            ),
            format!(
                "Korthikanti §4.3; logits {}, {} (one copy: softmax and its gradient written in place)",
                if inputs.activations.count_logits { "counted" } else { "not counted" },
                if inputs.activations.fp32_logits { "fp32" } else { "activation dtype" }
            ),
        ));
    }
    if n.recompute_transient_bytes > 0.0 {
        terms.push(term(
            "activations.recompute_transient",
            "recomputed tensors of one layer",
            n.recompute_transient_bytes,
            "A_layer(no recompute) − A_layer(kept), one layer",
            fmt_bytes(n.recompute_transient_bytes),
            format!("recompute {recompute}: one layer's dropped tensors are rebuilt and held during its backward"),
        ));
    }
    let deepspeed = overheads.framework == Framework::DeepSpeed;
    if n.zero3_gathered_bytes > 0.0 && deepspeed && n.adapters.is_none() {
        terms.push(term(
            "zero3.gathered",
            "ZeRO-3 gathered parameters (DeepSpeed)",
            n.zero3_gathered_bytes,
            "min(P_unit + prefetch_bucket, max_live) × bytes_w",
            format!(
                "min({} + {}, {}) × {}",
                fmt_num(n.params.largest_unit),
                fmt_num(deepspeed_zero::STAGE3_PREFETCH_BUCKET_SIZE_ELEMENTS),
                fmt_num(deepspeed_zero::STAGE3_MAX_LIVE_PARAMETERS),
                fmt_num(inputs.precision.weight_bytes)
            ),
            "DeepSpeed deepspeed/runtime/zero/config.py defaults: stage3_prefetch_bucket_size 5e7 elements fetched ahead of the module computing, stage3_max_live_parameters 1e9 resident at most; parameters under stage3_param_persistence_threshold (1e5) stay whole (norms, biases)".to_string(),
        ));
    } else if n.zero3_gathered_bytes > 0.0 {
        terms.push(term(
            "zero3.gathered",
            "ZeRO-3 gathered units in flight",
            n.zero3_gathered_bytes,
            "u × P_unit × bytes_w",
            format!(
                "{} × {} × {}",
                overheads.zero3_units_in_flight,
                fmt_num(n.params.largest_unit),
                fmt_num(inputs.precision.weight_bytes)
            ),
            "the unit computing plus prefetched ones, gathered in full (one layer, or embedding/output); FSDP2 reshard_after_forward".to_string(),
        ));
    }
    if n.gradient_bucket_bytes > 0.0 {
        let (formula, worked, assumption) = if deepspeed && layout.zero != ZeroStage::Ddp {
            let buffers = n.gradient_bucket_bytes
                / (deepspeed_zero::REDUCE_BUCKET_SIZE_ELEMENTS * inputs.precision.grad_bytes);
            (
                "buffers × reduce_bucket_size × bytes_g",
                format!(
                    "{} × {} × {}",
                    fmt_num(buffers),
                    fmt_num(deepspeed_zero::REDUCE_BUCKET_SIZE_ELEMENTS),
                    fmt_num(inputs.precision.grad_bytes)
                ),
                "DeepSpeed contiguous_gradients (default on, config.py): stage_1_and_2.py backward() allocates torch.empty(reduce_bucket_size = 5e8) in the gradient dtype, a second with overlap_comm (default on only for stage 3); stage3.py keeps one flat IPG bucket of reduce_bucket_size".to_string(),
            )
        } else if layout.zero == ZeroStage::Zero3 {
            (
                "P_unit × bytes_g",
                format!(
                    "{} × {}",
                    fmt_num(n.params.largest_unit),
                    fmt_num(inputs.precision.grad_bytes)
                ),
                "one unit's full gradient before its reduce-scatter (FSDP)".to_string(),
            )
        } else {
            (
                "2 × bucket",
                format!("2 × {}", fmt_bytes(overheads.gradient_bucket_bytes)),
                "one bucket reducing while the next fills; buckets are views of the gradients (Megatron grad buffer, DDP gradient_as_bucket_view)".to_string(),
            )
        };
        terms.push(term(
            "gradient_buckets",
            "gradient communication buckets",
            n.gradient_bucket_bytes,
            formula,
            worked,
            assumption,
        ));
    }
    if n.loss_transient_bytes > 0.0 {
        terms.push(loss_term(inputs, n));
    }
    if n.step_excess_bytes > 0.0 {
        terms.push(term(
            "deepspeed.step_fp32_gradients",
            "optimizer step: fp32 gradient partition (DeepSpeed)",
            n.step_excess_bytes,
            "(state + 4 B × partition) − backward peak",
            format!(
                "4 × {} = {} at the step; its excess over the backward peak",
                fmt_num(n.partition_params),
                fmt_bytes(n.step_transient_bytes)
            ),
            "DeepSpeed stage_1_and_2.py step(): the rank's 16-bit gradient partition is flattened and converted .to(fp32) for the optimizer (docs memory.rst: 4 bytes per gradient at the step); activations are freed by then, so only the excess over the backward peak adds".to_string(),
        ));
    }
    if n.cublas_workspace_bytes > 0.0 {
        terms.push(term(
            "cublas_workspace",
            "cuBLAS workspaces",
            n.cublas_workspace_bytes,
            "2 handles × workspace per handle",
            fmt_bytes(n.cublas_workspace_bytes),
            "PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp: one workspace per (handle, stream), 32 MiB on Hopper (4096 KiB × 8), else 4096 KiB × 2 + 16 KiB × 8; two handles, the forward's thread and the autograd engine's; cuBLASLt shares it (unified workspace); allocated through the caching allocator, so inside max_memory_allocated (adjustable)".to_string(),
        ));
    }
    terms.push(term(
        "cuda_context",
        "CUDA context",
        n.cuda_context_bytes,
        "context",
        fmt_bytes(n.cuda_context_bytes),
        "CUDA context and lazily loaded kernels per process, outside the caching allocator: pytorch/pytorch PR #86509 measured 287,047,680 B used after a first 6.4 MB tensor with lazy loading (the default since CUDA 11.7 / PyTorch 1.13; 666,632,192 B eager), 266,076,160 B without that tensor's 20 MiB segment; kernels loaded later add to it (\"around 400MB\", ptrblck, #109888) (adjustable)"
            .to_string(),
    ));
    if n.nccl_bytes > 0.0 {
        terms.push(term(
            "nccl_buffers",
            "NCCL buffers",
            n.nccl_bytes,
            "groups × buffer",
            format!(
                "{} × {}",
                n.nccl_groups,
                fmt_bytes(overheads.nccl_buffer_bytes_per_group)
            ),
            "one communicator per group with more than one rank: DP×CP, TP, PP, CP, EP; each holds NCCL's ring buffers, per channel one connection of Simple 4 MiB + LL 512 KiB + LL128 4,800 KiB in 2 MiB pages = 10 MiB (NVIDIA/nccl src/init.cc defaults; the 10485760-byte allocations of nccl #1685), 16 channels on an NVLink H100 node (nccl #1453) = 160 MiB; all-to-all and tree/NVLS connections add more (nccl #1685: +3.3 GB after a 32-channel all-to-all) (adjustable)".to_string(),
        ));
    }
    terms.push(term(
        "allocator_headroom",
        "allocator fragmentation",
        n.allocator_bytes,
        "fraction × allocated",
        format!(
            "{} × {}",
            fmt_num(overheads.allocator_fraction),
            fmt_bytes(n.allocated_bytes)
        ),
        format!(
            "PyTorch caching allocator (docs: notes/cuda.html, memory management; c10/cuda/CUDACachingAllocator.cpp): max_memory_reserved = max_memory_allocated ({}) + cached blocks no request fits (requests rounded to 512 B; under 1 MiB packed in 2 MiB segments, 1-10 MiB in 20 MiB segments, larger rounded to 2 MiB). The default fraction is one run's measured gap: NeMo pretrain_qwen3_30b_a3b (NVIDIA-NeMo #14850) logged max_memory_reserved 57,466,159,104 B over max_memory_allocated 53,930,270,720 B = 6.56%; the gap depends on allocation order, so it is adjustable; expandable_segments narrows it. reserved = {}",
            fmt_bytes(n.allocated_bytes),
            fmt_bytes(n.reserved_bytes)
        ),
    ));
    StageMemory {
        position: n.span.position,
        layers: n.span.layers,
        terms,
        allocated_bytes: n.allocated_bytes,
        reserved_bytes: n.reserved_bytes,
        total_bytes: n.total_bytes,
    }
}

/// The loss's logit-sized transients, one term (its parts named in the assumption).
fn loss_term(inputs: &MemoryInputs, n: &StageNumbers) -> Term {
    let framework = inputs.overheads.framework;
    let parts = crate::memory::loss_memory::loss_transients(framework);
    let per_logit: f64 = parts.iter().map(|t| t.bytes_per_logit).sum();
    let names: Vec<String> = parts
        .iter()
        .map(|t| {
            format!(
                "{} ({} B; {})",
                t.name,
                fmt_num(t.bytes_per_logit),
                t.source
            )
        })
        .collect();
    let layout = inputs.layout;
    term(
        "loss.transient",
        "loss transients (logit-sized)",
        n.loss_transient_bytes,
        "(s/cp)·b·V/t × bytes per logit",
        format!(
            "{} / {} × {} × {} / {} × {}",
            inputs.training.seq_len,
            layout.cp,
            layout.micro_batch,
            inputs.model.vocab,
            layout.tp,
            fmt_num(per_logit)
        ),
        format!(
            "{}: {}; held at the start of backward beside every saved activation",
            framework.label(),
            names.join("; ")
        ),
    )
}

/// Training memory per GPU, stage by stage, every term explained.
pub fn training_memory(scenario: &Scenario, model: &ModelSpec) -> TrainingMemory {
    let params = model.param_breakdown();
    let inputs = MemoryInputs {
        model,
        params: &params,
        precision: &scenario.precision,
        layout: &scenario.layout,
        training: &scenario.training,
        activations: &scenario.activations,
        overheads: &scenario.overheads,
    };
    let spans = stage_spans_of(&params, &scenario.layout);
    let mut stages = Vec::with_capacity(spans.as_slice().len());
    let mut peak_bytes = f64::NEG_INFINITY;
    let mut peak_stage = 0;
    let mut peak_allocated_bytes: f64 = 0.0;
    let mut peak_reserved_bytes: f64 = 0.0;
    // The stage whose GPUs need the most host memory, and its partition and replica.
    let mut host_stage = (crate::memory::offload::HostPerGpu::default(), 0.0, 0.0);
    for (i, span) in spans.as_slice().iter().enumerate() {
        let numbers = stage_numbers(&inputs, span);
        if numbers.offload_host.cpu_bytes() + numbers.offload_host.nvme_bytes()
            > host_stage.0.cpu_bytes() + host_stage.0.nvme_bytes()
        {
            host_stage = (
                numbers.offload_host,
                numbers.partition_params,
                numbers.params.total(),
            );
        }
        peak_allocated_bytes = peak_allocated_bytes.max(numbers.allocated_bytes);
        peak_reserved_bytes = peak_reserved_bytes.max(numbers.reserved_bytes);
        if numbers.total_bytes > peak_bytes {
            peak_bytes = numbers.total_bytes;
            peak_stage = i;
        }
        stages.push(stage_memory(&inputs, &numbers));
    }
    let capacity_bytes = scenario.cluster.gpu.memory_bytes;
    let usable_bytes = capacity_bytes * scenario.overheads.usable_fraction;
    TrainingMemory {
        stages,
        peak_bytes,
        peak_allocated_bytes,
        peak_reserved_bytes,
        framework: scenario.overheads.framework,
        peak_stage,
        capacity_bytes,
        capacity_label_bytes: scenario.cluster.gpu.label_memory_bytes(),
        usable_bytes,
        fits: peak_bytes <= usable_bytes,
        host: (!scenario.training.offload.is_none()).then(|| {
            crate::memory::offload::host_memory(
                scenario.training.offload,
                scenario.layout.zero,
                host_stage.0,
                (host_stage.1, host_stage.2),
                scenario.cluster.gpus_per_node,
                scenario.cluster.host_spec().as_ref(),
            )
        }),
    }
}
