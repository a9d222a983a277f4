//! Training memory per GPU, explained: every term of every pipeline stage (model
//! state, activations, loss, buffers, offload, headroom) with its formula, the
//! allocated and reserved peaks, and the fit against the GPU's capacity
//! ([`training_memory`]). The numbers are [`crate::memory::stage_peak`]'s.

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::input::layout::ZeroStage;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::memory::adapters::state_terms as adapter_state_terms;
use crate::memory::deepspeed_zero;

use crate::base::explain::{fmt_bytes, fmt_num};
use crate::memory::model_state::{stage_spans_of, ShardGroups, StagePosition};
use crate::memory::stage_peak::{stage_numbers, MemoryInputs, StageNumbers};
use crate::memory::state_terms::{state_terms, StateText};

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

/// The stage's activations: the decoder layers' in flight, the embedding/output/logits and
/// one layer's recomputed tensors.
fn activation_terms(inputs: &MemoryInputs, n: &StageNumbers, terms: &mut Vec<Term>) {
    let layout = inputs.layout;
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
            "{flight}; {} layers{}; tensor-by-tensor accounting (Korthikanti et al. 2022 §4), recompute {recompute}, s = {}, b = {}, t = {}, cp = {}, SP {}",
            n.span.layers,
            if n.span.mtp_layers > 0 {
                format!(" + {} MTP module(s), each as one decoder layer", n.span.mtp_layers)
            } else {
                String::new()
            },
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
}

/// The buffers sharding and reduction hold: gathered ZeRO-3/FSDP parameters, FSDP's
/// unsharded gradients and the gradient buckets.
fn sharding_buffer_terms(inputs: &MemoryInputs, n: &StageNumbers, terms: &mut Vec<Term>) {
    let layout = inputs.layout;
    let overheads = inputs.overheads;
    let deepspeed = overheads.framework.is_deepspeed();
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
    } else if n.zero3_gathered_bytes > 0.0
        && crate::input::fsdp_semantics::FsdpSemantics::of(overheads.framework, layout.pp)
            .holds_stage_unsharded()
    {
        terms.push(term(
            "zero3.gathered",
            "FSDP parameters kept unsharded for the stage",
            n.zero3_gathered_bytes,
            "P_stage × bytes_w",
            format!(
                "{} × {}",
                fmt_num(n.params.total()),
                fmt_num(inputs.precision.weight_bytes)
            ),
            crate::input::fsdp_semantics::FsdpSemantics::of(overheads.framework, layout.pp)
                .describe()
                .to_string(),
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
    if n.fsdp_unsharded_grad_bytes > 0.0 {
        terms.push(term(
            "fsdp.unsharded_grads",
            "FSDP gradients accumulated unsharded (sync deferred)",
            n.fsdp_unsharded_grad_bytes,
            "P_trainable × 4 B",
            format!(
                "{} × 4",
                fmt_num(n.fsdp_unsharded_grad_bytes / crate::input::fsdp_semantics::DEFERRED_GRAD_BYTES)
            ),
            "PyTorch's pipeline stage turns gradient sync off until the last micro-batch (stage.py backward_maybe_with_nosync); FSDP2 then accumulates each gradient unsharded in reduce_dtype, fp32 in torchtitan (_fsdp_param.py to_accumulated_grad_if_needed)".to_string(),
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
}

/// The runtime's own memory: cuBLAS workspaces, the CUDA context, NCCL buffers and the
/// allocator's fragmentation.
fn runtime_terms(inputs: &MemoryInputs, n: &StageNumbers, terms: &mut Vec<Term>) {
    let overheads = inputs.overheads;
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
}

fn stage_memory(inputs: &MemoryInputs, n: &StageNumbers) -> StageMemory {
    let layout = inputs.layout;
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
    if n.unborn_grad_bytes > 0.0 {
        mark_unborn_gradients(&mut terms);
    }

    activation_terms(inputs, n, &mut terms);
    sharding_buffer_terms(inputs, n, &mut terms);
    if n.loss_transient_bytes > 0.0 {
        terms.push(loss_term(inputs, n));
    }
    if n.step_excess_bytes > 0.0 {
        terms.push(step_excess_term(inputs, n));
    }
    runtime_terms(inputs, n, &mut terms);
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
    let inputs = MemoryInputs::of(scenario, model, &params, &scenario.layout);
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

/// Gradient terms of a process whose gradients are freed between steps
/// ([`crate::memory::stage_peak::grads_born_in_backward`]): kept in the list at 0 bytes, saying
/// why, since the peak at the start of backward holds none of them.
fn mark_unborn_gradients(terms: &mut [Term]) {
    for t in terms.iter_mut().filter(|t| t.key.contains("gradients")) {
        t.label = format!("{} — not yet allocated when backward starts", t.label);
        t.worked = format!(
            "{} at the optimizer step; 0 B at the backward peak",
            t.worked
        );
        t.assumption = format!(
            "{}; optimizer.zero_grad() sets gradients to None (torch/optim/optimizer.py, set_to_none=True) and autograd allocates each when its weight's backward runs, so they are counted at the optimizer step instead",
            t.assumption
        );
        t.value = 0.0;
    }
}

/// The optimizer step's excess over the backward peak: DeepSpeed's fp32 gradient partition,
/// or the gradients and PyTorch's foreach-Adam temporary of a process that frees its gradients.
fn step_excess_term(inputs: &MemoryInputs, n: &StageNumbers) -> Term {
    if inputs.overheads.framework.is_deepspeed() {
        return term(
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
        );
    }
    term(
        "optimizer_step.excess",
        "optimizer step: gradients + foreach Adam temporary",
        n.step_excess_bytes,
        "(state + gradients + sqrt(v) copy) − backward peak",
        format!(
            "{} of gradients + {} temporary at the step; its excess over the backward peak",
            fmt_bytes(n.unborn_grad_bytes),
            fmt_bytes(n.step_transient_bytes)
        ),
        "torch/optim/adam.py _multi_tensor_adam: exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs), one second-moment-sized temporary while every gradient is alive; activations are freed by then, so only the excess over the backward peak adds".to_string(),
    )
}
