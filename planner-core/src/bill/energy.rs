//! The power a training run draws and the energy it takes: each GPU at its datasheet board
//! power while it computes and at its idle draw while it waits (pipeline bubble, exposed
//! communication), each node's own overhead, and the facility's PUE on top.

/// wilicc/gpu-burn issue #114 (nvidia-smi, 2024-10-25): an "NVIDIA H100 80GB HBM3" at 0%
/// utilisation in P0, 72.8 GB allocated, draws 140–145 W of its 700 W cap; the share of board
/// power a GPU holding a job draws while it waits (measured on the H100 only).
pub const WAITING_POWER_SHARE: f64 = 145.0 / 700.0;

/// Share of a step a GPU computes: `1 − (bubble + exposed communication) / step`, where it waits
/// on its pipeline neighbours and on the network; 1 for an empty step.
pub fn busy_share(step_s: f64, bubble_s: f64, exposed_comm_s: f64) -> f64 {
    if step_s > 0.0 {
        (1.0 - (bubble_s + exposed_comm_s) / step_s).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// A GPU's average draw over a step, watts: `P_board × (busy + (1 − busy) × waiting share)`.
pub fn gpu_average_w(board_power_w: f64, busy: f64) -> f64 {
    board_power_w * (busy + (1.0 - busy) * WAITING_POWER_SHARE)
}

/// The facility's draw for `gpus` GPUs, watts: `N × (P_gpu + overhead / GPUs per node) × PUE`,
/// each GPU carrying its share of its node's overhead.
pub fn facility_w(
    gpus: f64,
    gpu_w: f64,
    node_overhead_w: f64,
    gpus_per_node: f64,
    pue: f64,
) -> f64 {
    gpus * (gpu_w + node_overhead_w / gpus_per_node.max(1.0)) * pue
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_by_hand() {
        // Step 10 s, bubble 1 s, exposed comm 1 s: busy 0.8.
        assert!((busy_share(10.0, 1.0, 1.0) - 0.8).abs() < 1e-12);
        // 700 W × (0.8 + 0.2 × 145/700) = 560 + 29 = 589 W.
        assert!((gpu_average_w(700.0, 0.8) - 589.0).abs() < 1e-9);
        // 16 GPUs × (589 + 4,600/8) W × 1.56 = 16 × 1,164 × 1.56 = 29,053.44 W.
        assert!((facility_w(16.0, 589.0, 4_600.0, 8.0, 1.56) - 29_053.44).abs() < 1e-6);
        assert_eq!(busy_share(0.0, 0.0, 0.0), 1.0);
    }
}
