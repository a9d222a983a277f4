//! What the memory view shows beyond the terms themselves: each memory term's
//! category (one colour and legend entry per category in every chart), whether
//! a term is model state or this GPU's shard, the peak stage's terms, the bytes
//! stacked above model state, each ZeRO bar's total, the legend, and the usable
//! share of device memory. The page only draws these.

use crate::base::explain::Term;
use crate::memory::state_terms::ModelStateBar;
use crate::memory::training_memory::TrainingMemory;

/// The category of a memory term, from its key (`memory.rs`, `activations.rs`,
/// `loss_memory.rs`, `finetune.rs` name their terms with these words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TermCategory {
    /// Parameters (BF16 copies, frozen or NF4 bases, adapters).
    Weights,
    /// Gradients.
    Gradients,
    /// Optimizer state (FP32 master weights, Adam moments).
    Optimizer,
    /// Saved activations of the layers.
    Activations,
    /// Activations outside the layers: embeddings, logits, the loss.
    OutsideLayers,
    /// ZeRO-3 / FSDP units gathered for compute.
    Gathered,
    /// NCCL's buffers and the CUDA context.
    Nccl,
    /// Recompute and loss transients.
    Transient,
    /// DDP / ZeRO gradient buckets.
    Bucket,
    /// Anything else (CUDA context, fragmentation…).
    Other,
}

impl TermCategory {
    /// Every category, in the order of the page's palette.
    pub const ALL: [TermCategory; 10] = [
        TermCategory::Weights,
        TermCategory::Gradients,
        TermCategory::Optimizer,
        TermCategory::Activations,
        TermCategory::OutsideLayers,
        TermCategory::Gathered,
        TermCategory::Nccl,
        TermCategory::Other,
        TermCategory::Transient,
        TermCategory::Bucket,
    ];

    /// The category a key names (case-insensitive). Checked in this order, since a key
    /// can hold two words: `activations.recompute_transient` is a transient, not an
    /// activation; a gradient bucket is a bucket, not a gradient.
    pub fn of_key(key: &str) -> TermCategory {
        let k = key.to_ascii_lowercase();
        if k.contains("bucket") {
            TermCategory::Bucket
        } else if k.contains("zero3") || k.contains("gathered") {
            TermCategory::Gathered
        } else if k.contains("optim") {
            TermCategory::Optimizer
        } else if k.contains("grad") {
            TermCategory::Gradients
        } else if k.contains("weight") {
            TermCategory::Weights
        } else if k.contains("transient") {
            TermCategory::Transient
        } else if k.contains("outside") || k.contains("logit") {
            TermCategory::OutsideLayers
        } else if k.contains("activation") {
            TermCategory::Activations
        } else if k.contains("nccl") {
            TermCategory::Nccl
        } else {
            TermCategory::Other
        }
    }

    /// Position in [`TermCategory::ALL`] (the page's palette index).
    pub fn index(self) -> usize {
        TermCategory::ALL
            .iter()
            .position(|c| *c == self)
            .unwrap_or(TermCategory::ALL.len() - 1)
    }
}

/// Weights, gradients or optimizer state (`memory.rs` keys them `model_state.*`).
pub fn is_model_state(t: &Term) -> bool {
    t.key.starts_with("model_state")
}

/// This GPU's shard of a ZeRO-partitioned state (`memory.rs` and `finetune.rs` label them "… (sharded)").
pub fn is_sharded(t: &Term) -> bool {
    t.label.contains("(sharded)")
}

/// The terms of the stage that sets the peak (the first stage if the index is off, none without stages).
pub fn peak_terms(m: &TrainingMemory) -> &[Term] {
    m.stages
        .get(m.peak_stage)
        .or(m.stages.first())
        .map(|s| s.terms.as_slice())
        .unwrap_or(&[])
}

/// The peak stage's terms other than model state: activations, gathered units, buffers, context.
pub fn other_terms(m: &TrainingMemory) -> impl Iterator<Item = &Term> {
    peak_terms(m).iter().filter(|t| !is_model_state(t))
}

/// Bytes of [`other_terms`]: the table's "+ other terms" column.
pub fn other_bytes(m: &TrainingMemory) -> f64 {
    other_terms(m).map(|t| t.value).sum()
}

/// The height of one bar of the ZeRO chart: its model state, plus the peak stage's
/// other terms of that ZeRO stage's memory when they are stacked on it.
pub fn stacked_bar_bytes(bar: &ModelStateBar, other: Option<&TrainingMemory>) -> f64 {
    let state: f64 = bar
        .replicated
        .iter()
        .chain(&bar.sharded)
        .map(|t| t.value)
        .sum();
    state + other.map_or(0.0, other_bytes)
}

/// The legend of the peak stage: one entry per (category, name), in term order; a
/// model-state term is named without its "(replicated)"/"(sharded)" suffix.
pub fn legend(m: &TrainingMemory) -> Vec<(TermCategory, String)> {
    let mut seen: Vec<(TermCategory, String)> = Vec::new();
    for t in peak_terms(m) {
        let c = TermCategory::of_key(&t.key);
        let name = if is_model_state(t) {
            t.label.split(" (").next().unwrap_or(&t.label).to_string()
        } else {
            t.label.clone()
        };
        if !seen.iter().any(|(sc, n)| *sc == c && *n == name) {
            seen.push((c, name));
        }
    }
    seen
}

/// Usable memory as a fraction of what the device reports, when it is visibly less
/// (under 99.9 %): the framework's allocator headroom (`memory.rs`, `usable_bytes`).
pub fn usable_fraction(m: &TrainingMemory) -> Option<f64> {
    (m.usable_bytes < m.capacity_bytes * 0.999).then(|| m.usable_bytes / m.capacity_bytes.max(1.0))
}
