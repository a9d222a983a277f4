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
    if n.zero3_gathered_bytes > 0.0 {
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
        let (formula, worked, assumption) = if layout.zero == ZeroStage::Zero3 {
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
    terms.push(term(
        "cuda_context",
        "CUDA context",
        n.cuda_context_bytes,
        "context",
        fmt_bytes(n.cuda_context_bytes),
        "CUDA context and kernels per process; outside the caching allocator (adjustable)"
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
            "one communicator per group with more than one rank: DP×CP, TP, PP, CP, EP (adjustable)".to_string(),
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
            "PyTorch caching allocator (docs: notes/cuda.html, memory management): max_memory_reserved = max_memory_allocated ({}) + cached blocks no request fits; this fraction is an adjustable assumption, not a measurement (the gap depends on allocation order; expandable_segments narrows it); reserved = {}",
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
