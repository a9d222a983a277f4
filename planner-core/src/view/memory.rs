//! The memory view: the article's model-state bars (DDP, ZeRO-1/2/3) and the training
//! memory with each ZeRO stage in turn, and the ZeRO table's rows.

use serde::Serialize;

use crate::figures::memory_summary::other_bytes;
use crate::input::layout::ZeroStage;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::memory::state_terms::model_state_for;
use crate::memory::training_memory::training_memory;

/// One ZeRO stage's model state, split into replicated and sharded terms: the bars the view stacks.
pub use crate::memory::state_terms::ModelStateBar;

/// Per-stage training memory with every term: the per-stage chart and the peaks paragraph draw it.
pub use crate::memory::training_memory::TrainingMemory;

/// Offload's host side (RAM and NVMe per node): the host-memory table lists its terms.
pub use crate::memory::offload::HostMemory;

/// Everything the memory view draws.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryView {
    /// DDP, ZeRO-1, ZeRO-2, ZeRO-3 model state for this layout.
    pub bars: Vec<ModelStateBar>,
    /// The scenario's training memory with each ZeRO stage in turn, in [`ZeroStage::ALL`] order.
    pub per_zero: [TrainingMemory; 4],
    /// The layout's ZeRO stage.
    pub zero: ZeroStage,
    /// The ZeRO table's rows, in [`ZeroStage::ALL`] order.
    pub zero_rows: Vec<ZeroRow>,
}

impl MemoryView {
    /// The training memory of the scenario as set (its own ZeRO stage's entry).
    pub fn current(&self) -> &TrainingMemory {
        &self.per_zero[usize::from(self.zero.number())]
    }
}

/// One row of the ZeRO table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ZeroRow {
    /// The layout's own stage.
    pub selected: bool,
    /// Model state per GPU, bytes.
    pub state_bytes: f64,
    /// Every model-state term's formula with numbers, one per line.
    pub state_worked: String,
    /// Everything but model state on the peak stage, bytes.
    pub other_bytes: f64,
    /// Device peak, bytes.
    pub peak_bytes: f64,
    /// Whether the peak fits the usable memory.
    pub fits: bool,
}

/// The memory view of scenario `s` on `model`.
pub fn memory(s: &Scenario, model: &ModelSpec) -> MemoryView {
    let bars = model_state_for(
        model,
        &s.precision,
        &s.layout,
        &s.training,
        s.overheads.framework,
    );
    let per_zero = ZeroStage::ALL.map(|z| {
        let mut variant = s.clone();
        variant.layout.zero = z;
        training_memory(&variant, model)
    });
    let zero_rows = zero_rows(&bars, &per_zero, s.layout.zero);
    MemoryView {
        bars,
        per_zero,
        zero: s.layout.zero,
        zero_rows,
    }
}

/// The ZeRO table's rows: each bar beside the training memory at its stage.
fn zero_rows(bars: &[ModelStateBar], per_zero: &[TrainingMemory], zero: ZeroStage) -> Vec<ZeroRow> {
    bars.iter()
        .zip(per_zero.iter())
        .map(|(bar, m)| ZeroRow {
            selected: bar.zero == zero,
            state_bytes: bar.total_bytes,
            state_worked: bar
                .replicated
                .iter()
                .chain(bar.sharded.iter())
                .map(|t| t.worked.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            other_bytes: other_bytes(m),
            peak_bytes: m.peak_bytes,
            fits: m.fits,
        })
        .collect()
}
