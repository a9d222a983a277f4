//! The sums the teaching drawings label: a lane bar's duration, the memory held
//! for an FSDP layer over an interval and at most over the step. Kept beside
//! `teaching.rs` (whose types they extend) so the page only places them.

use crate::figures::teaching::{FsdpLanes, HeldMemory, LaneBar};

impl LaneBar {
    /// How long the bar lasts, seconds (`end_s − start_s`).
    pub fn duration_s(&self) -> f64 {
        self.end_s - self.start_s
    }
}

impl HeldMemory {
    /// Everything held for the layer in this interval: own shards + gathered weights + full gradients.
    pub fn held_bytes(&self) -> f64 {
        self.shard_bytes + self.gathered_weight_bytes + self.full_grad_bytes
    }
}

impl FsdpLanes {
    /// The most held at any time of the step (the memory lane's scale); 0 without intervals.
    pub fn max_held_bytes(&self) -> f64 {
        self.memory
            .iter()
            .map(HeldMemory::held_bytes)
            .fold(0.0, f64::max)
    }
}
