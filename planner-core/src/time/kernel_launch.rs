//! The fixed time one kernel costs between the end of the kernel before it and the start of its
//! own work, even when the host has queued it in advance (a CUDA graph, or a host running ahead).

/// Launch cost of one kernel inside a CUDA graph on an H100, s: Hazy Research, "Look Ma, No
/// Bubbles! Designing a Low-Latency Megakernel for Llama-1B" (Spector, Juravsky et al.,
/// 2025-05-27, hazyresearch.stanford.edu/blog/2025-05-27-no-bubbles): "even with CUDA graphs"
/// they measured launch costs of about 1.3 µs per kernel on an H100.
pub const GRAPH_KERNEL_LAUNCH_S: f64 = 1.3e-6;
