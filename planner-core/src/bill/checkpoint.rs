//! A training checkpoint: what it holds, what each rank and node writes, and how long the write
//! takes at the storage's bandwidth per node.
//!
//! A checkpoint holds the working weights and the optimizer state (master weights and moments);
//! gradients are not saved. Megatron-Core's distributed checkpoint (`dist_checkpointing`,
//! `--ckpt-fully-parallel-save`, on by default since Megatron-Core 0.7) and PyTorch DCP's
//! deduplicating save planner write each tensor once, spread over the ranks that hold a copy:
//! a rank writes its stage's state split over the group that shares it (DP × CP for dense
//! parameters, the expert-data-parallel group for routed experts), whatever the ZeRO stage.

use crate::input::layout::Layout;
use crate::input::model::ModelSpec;
use crate::input::precision::Precision;
use crate::memory::model_state::{rank_params, stage_spans_of, ShardGroups};

/// What one checkpoint writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckpointSize {
    /// Bytes of saved state per parameter: working weights plus optimizer state.
    pub bytes_per_param: f64,
    /// The whole checkpoint, bytes: `Ψ × bytes_per_param`.
    pub total_bytes: f64,
    /// What the busiest rank (the heaviest pipeline stage) writes, bytes.
    pub per_rank_bytes: f64,
    /// What the busiest node writes: its GPUs at the busiest rank's share, bytes.
    pub per_node_bytes: f64,
}

/// The checkpoint of `model` under `layout` on nodes of `gpus_per_node`.
pub fn checkpoint_size(
    model: &ModelSpec,
    precision: &Precision,
    layout: &Layout,
    gpus_per_node: u32,
) -> CheckpointSize {
    let bytes_per_param = precision.weight_bytes + precision.optimizer_state_bytes();
    let params = model.param_breakdown();
    let groups = ShardGroups::of(layout);
    let per_rank_params = stage_spans_of(&params, layout)
        .as_slice()
        .iter()
        .map(|span| {
            let rank = rank_params(model, &params, layout, span);
            rank.dense / groups.dense.max(1.0) + rank.expert / groups.expert.max(1.0)
        })
        .fold(0.0, f64::max);
    let per_rank_bytes = bytes_per_param * per_rank_params;
    let ranks_on_node = u64::from(gpus_per_node.max(1)).min(layout.world_size().max(1));
    CheckpointSize {
        bytes_per_param,
        total_bytes: bytes_per_param * model.params(),
        per_rank_bytes,
        per_node_bytes: per_rank_bytes * ranks_on_node as f64,
    }
}

/// Seconds to write `bytes` at `gb_s` (decimal GB/s): `bytes / (gb_s × 1e9)`.
pub fn write_s(bytes: f64, gb_s: f64) -> f64 {
    bytes / (gb_s * 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::presets::article_mesh_scenario;

    #[test]
    fn a_dense_model_writes_its_state_once_over_every_rank() {
        let s = article_mesh_scenario();
        let model = s.model_spec().expect("preset");
        let size = checkpoint_size(&model, &s.precision, &s.layout, 8);
        // Mixed-precision Adam: 2 B bf16 weights + 4 B master + 8 B moments = 14 B per parameter.
        assert_eq!(size.bytes_per_param, 14.0);
        assert!((size.total_bytes - 14.0 * model.params()).abs() < 1.0);
        // Every rank holds 1/world of the state when the stages are even: per rank ≈ total / world.
        let world = s.layout.world_size() as f64;
        let even = size.total_bytes / world;
        assert!(
            size.per_rank_bytes >= even * 0.99,
            "{} vs {even}",
            size.per_rank_bytes
        );
        assert!(
            size.per_rank_bytes < even * 1.5,
            "{} vs {even}",
            size.per_rank_bytes
        );
        assert_eq!(size.per_node_bytes, 8.0 * size.per_rank_bytes);
        // 1 GB at 0.5 GB/s: 2 s.
        assert_eq!(write_s(1e9, 0.5), 2.0);
    }
}
