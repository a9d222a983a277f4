//! Every number of one pipeline stage, without text, and the peak over stages:
//! model state, activations, loss transients, buffers, offload and headroom per GPU.
//!
//! All numbers come from [`stage_numbers`], which allocates nothing; the
//! explained [`crate::memory::training_memory::training_memory`] and the mesh
//! search's [`peak_memory_bytes`] are both built on it, so the two cannot disagree.

use serde::{Deserialize, Serialize};

use crate::input::framework::Framework;
use crate::input::fsdp_semantics::FsdpSemantics;
use crate::input::layout::{Layout, Recompute, ZeroStage};
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::precision::Precision;
use crate::input::scenario::{ActivationOptions, Overheads, Scenario, Training};
use crate::memory::activations::{
    extras_bytes, in_flight_microbatches, layer_bytes, layer_recompute_transient_bytes,
    ActivationSetup, LayerKind,
};
use crate::memory::adapters::{adapter_state, AdapterState};
use crate::memory::deepspeed_zero;

use crate::memory::model_state::{
    model_state_bytes, rank_params, stage_spans_of, ModelStateBytes, RankParams, ShardGroups,
    StageSpan, StageSpans, StatePart,
};

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

impl<'a> MemoryInputs<'a> {
    /// The inputs of `scenario` with `layout` in place of its own (a search's candidate).
    pub fn of(
        scenario: &'a Scenario,
        model: &'a ModelSpec,
        params: &'a ParamBreakdown,
        layout: &'a Layout,
    ) -> Self {
        MemoryInputs {
            model,
            params,
            precision: &scenario.precision,
            layout,
            training: &scenario.training,
            activations: &scenario.activations,
            overheads: &scenario.overheads,
        }
    }

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
    /// FSDP with gradient sync deferred: the stage's unsharded gradient accumulator.
    pub fsdp_unsharded_grad_bytes: f64,
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
    /// Gradients that do not exist yet when backward starts ([`grads_born_in_backward`]).
    pub unborn_grad_bytes: f64,
    /// Paged optimizer state: in `total_bytes`, not in `allocated_bytes` or `reserved_bytes`.
    pub paged_optimizer_bytes: f64,
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
    let setup = ActivationSetup::new(
        layout,
        training,
        activations,
        precision,
        overheads.moe_routing,
        overheads.framework,
    );
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
    /// FSDP with gradient sync deferred: the stage's unsharded gradient accumulator.
    pub fsdp_unsharded_grad_bytes: f64,
    /// Gradient communication buckets.
    pub gradient_bucket_bytes: f64,
    /// NCCL communicators with more than one rank.
    pub nccl_groups: u32,
    /// NCCL buffers.
    pub nccl_bytes: f64,
    /// Transients of the optimizer step held with the model state (DeepSpeed's fp32
    /// gradient partition; PyTorch's foreach AdamW's `sqrt(v)` copy); 0 for other frameworks.
    pub step_transient_bytes: f64,
    /// Gradient bytes not yet allocated when the backward pass starts ([`grads_born_in_backward`]):
    /// subtracted from the model state at the backward peak, counted at the optimizer step.
    pub unborn_grad_bytes: f64,
    /// Optimizer state a paged optimizer keeps in CUDA unified memory (QLoRA): on the device,
    /// outside `max_memory_allocated` and `max_memory_reserved`.
    pub paged_optimizer_bytes: f64,
}

/// Whether the gradients are freed after every step and allocated again by the next backward,
/// so that none exists when the backward pass starts: a single process under Transformers'
/// model code (no DDP reducer, no ZeRO buffers). `optimizer.zero_grad()` sets gradients to
/// `None` by default (torch/optim/optimizer.py `zero_grad(set_to_none=True)`, PyTorch ≥ 2.0;
/// transformers Trainer calls `model.zero_grad()` after each step), and autograd allocates
/// each `.grad` when its weight's backward runs (torch/csrc/autograd/functions/accumulate_grad.h).
pub fn grads_born_in_backward(inputs: &MemoryInputs) -> bool {
    let l = inputs.layout;
    inputs.overheads.framework.frees_gradients_between_steps()
        && l.zero == ZeroStage::Ddp
        && u64::from(l.dp.max(1)) * u64::from(l.cp.max(1)) == 1
}

/// PyTorch's foreach Adam/AdamW step holds one temporary the size of the second moment:
/// torch/optim/adam.py `_multi_tensor_adam`: `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`
/// (the default on CUDA, `foreach=None` picks it); bitsandbytes' 8-bit optimizers update in one kernel.
fn foreach_adam_transient_bytes(inputs: &MemoryInputs, st_params: f64, moment_bytes: f64) -> f64 {
    let hf_torch_optimizer = inputs.overheads.framework
        == crate::input::framework::Framework::HfTransformers
        && inputs.precision.recipe != crate::input::precision::PrecisionRecipe::Adam8Bit
        && inputs.training.offload.is_none();
    if hf_torch_optimizer {
        st_params * moment_bytes / 2.0
    } else {
        0.0
    }
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
        (&training.finetune, overheads.framework),
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
    let deepspeed = overheads.framework.is_deepspeed();
    let fsdp = FsdpSemantics::of(overheads.framework, layout.pp);
    let zero3 = layout.zero == ZeroStage::Zero3;
    let zero3_gathered_bytes = if zero3 && fsdp.holds_stage_unsharded() {
        // Kept after forward (or across micro-batches): at the start of backward every unit
        // of the stage is unsharded (input/fsdp_semantics.rs).
        match &adapters {
            Some(a) => {
                rank.total() * a.base_bytes_per_param + a.adapters.total() * precision.weight_bytes
            }
            None => rank.total() * precision.weight_bytes,
        }
    } else if zero3 {
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
    // Sync deferred: the full gradient accumulates unsharded in the reduce dtype until the
    // last micro-batch's reduce-scatter (input/fsdp_semantics.rs `DEFERRED_GRAD_BYTES`).
    let fsdp_unsharded_grad_bytes = if zero3 && fsdp.defer_grad_sync {
        let trainable = adapters
            .as_ref()
            .map_or(rank.total(), |a| a.adapters.total());
        trainable * crate::input::fsdp_semantics::DEFERRED_GRAD_BYTES
    } else {
        0.0
    };
    let gradient_bucket_bytes = if groups.dense <= 1.0 {
        0.0
    } else if layout.zero == ZeroStage::Zero3 {
        // FSDP reduce-scatters one unit's full gradient before keeping its shard.
        rank.largest_unit * precision.grad_bytes
    } else {
        // One bucket being reduced while the next fills: DeepSpeed's ZeRO-1/2 keeps two
        // reduce buckets when it overlaps (deepspeed/runtime/zero/stage_1_and_2.py `ipg_buffer`:
        // `buf_0`, and `buf_1` under `overlap_comm`), the same bound for DDP's in-flight bucket.
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
        let (updated, moments) = match &adapters {
            Some(a) => (a.trainable_adapters.total(), a.adapter_bytes.optimizer),
            None => (partition_params, precision.optimizer_bytes),
        };
        foreach_adam_transient_bytes(inputs, updated, moments)
    };
    let unborn_grad_bytes = if grads_born_in_backward(inputs) {
        state.gradients.total()
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
        fsdp_unsharded_grad_bytes,
        gradient_bucket_bytes,
        nccl_groups,
        nccl_bytes: f64::from(nccl_groups) * overheads.nccl_buffer_bytes_per_group,
        step_transient_bytes,
        unborn_grad_bytes,
        paged_optimizer_bytes: match &adapters {
            Some(a) if state.optimizer.total() > 0.0 => a.paged_optimizer_bytes,
            _ => 0.0,
        },
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
    // An MTP module's decoder layer keeps what a layer of its kind keeps (the MoE kind in an
    // MoE model); its `2h` projection input and the second logits are left out.
    if span.mtp_layers > 0 {
        let (kept, dropped) = if sums.moe.0 > 0.0 {
            sums.moe
        } else {
            sums.dense
        };
        layer_acts += f64::from(span.mtp_layers) * kept;
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
    let backward_peak = st.state.total() - st.unborn_grad_bytes
        + activation_bytes
        + transient
        + st.zero3_gathered_bytes
        + st.fsdp_unsharded_grad_bytes
        + st.gradient_bucket_bytes
        + loss_transient_bytes
        + overheads.cublas_workspace_bytes;
    // The optimizer step holds the model state and its own transients once activations are
    // freed; where that is the larger, the excess over the backward peak is its own term.
    let step_peak = st.state.total() + st.step_transient_bytes + overheads.cublas_workspace_bytes;
    let step_excess_bytes = (step_peak - backward_peak).max(0.0);
    // A paged optimizer's state is cudaMallocManaged memory (bitsandbytes functional.py
    // `get_paged`), which PyTorch's caching allocator neither holds nor counts.
    let allocated = backward_peak + step_excess_bytes - st.paged_optimizer_bytes;
    let allocator_bytes = overheads.allocator_fraction * allocated;
    let reserved_bytes = allocated + allocator_bytes;
    // CUDA context and NCCL buffers are allocated outside PyTorch's caching allocator.
    let total_bytes =
        reserved_bytes + overheads.cuda_context_bytes + st.nccl_bytes + st.paged_optimizer_bytes;
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
        fsdp_unsharded_grad_bytes: st.fsdp_unsharded_grad_bytes,
        gradient_bucket_bytes: st.gradient_bucket_bytes,
        loss_transient_bytes,
        cublas_workspace_bytes: overheads.cublas_workspace_bytes,
        step_transient_bytes: st.step_transient_bytes,
        step_excess_bytes,
        unborn_grad_bytes: st.unborn_grad_bytes,
        paged_optimizer_bytes: st.paged_optimizer_bytes,
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
/// [`crate::memory::model_state::stage_spans`]) of the stage that peaks. Allocation-free.
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
/// no heap). Equals [`crate::memory::training_memory::training_memory`]'s `peak_bytes` for the same inputs.
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
