//! The serving engines' own all-reduce for the small messages of a decode step.
//!
//! vLLM (and SGLang, which ships the same kernel and TensorRT-LLM's) do not send a TP
//! group's per-layer all-reduce through NCCL when the group sits on one node's NVLink
//! switch and the message is small: a one-shot/two-shot kernel over peer-mapped buffers
//! (`vllm/distributed/device_communicators/custom_all_reduce.py`, vllm-project/vllm
//! PR #2192) replaces it, and its time is a measured table here instead of NCCL's α–β ring
//! (whose `2(n − 1)·α` latency, 42 µs at TP 8 with α = 3 µs, is what it avoids).
//!
//! Only what was measured is priced: H100 SXM (and H200, the same NVLink 4 / NVSwitch
//! fabric) at TP 2, 4 and 8 and messages up to 1 MiB; anything else keeps the α–β model.

use crate::input::hardware::GpuSpec;

/// Message sizes of the measurement, bytes.
const SIZES_BYTES: [f64; 6] = [512.0, 4096.0, 32768.0, 262_144.0, 524_288.0, 1_048_576.0];

/// vLLM's custom all-reduce on H100, latency per call in seconds at each of [`SIZES_BYTES`]
/// for TP 2, 4 and 8: sgl-project/sglang PR #2904 (2025-01-15), "unit test performance in
/// H100 (without cuda graph)", table "vllm" (ms: 0.0095/0.0091/0.0101 at 512 B …
/// 0.0266/0.0402/0.0450 at 1 MiB).
static LATENCY_S: [(u32, [f64; 6]); 3] = [
    (2, [9.5e-6, 8.8e-6, 8.7e-6, 12.9e-6, 17.7e-6, 26.6e-6]),
    (4, [9.1e-6, 8.5e-6, 9.2e-6, 20.6e-6, 26.9e-6, 40.2e-6]),
    (8, [10.1e-6, 9.3e-6, 11.8e-6, 24.1e-6, 30.4e-6, 45.0e-6]),
];

/// Where the measurement was taken, for explanations.
pub const SOURCE: &str = "vLLM custom all-reduce on H100, sgl-project/sglang PR #2904";

/// One TP size's measured latencies, at `SIZES_BYTES`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyRow(&'static [f64; 6]);

/// The measured row a serving replica's TP all-reduce runs at, if the engines' custom kernel
/// applies: a GPU of the measured NVLink 4 fabric and a TP group inside one node of a
/// measured size.
pub fn row_for(gpu: &GpuSpec, tp: u32, tp_within_node: bool) -> Option<LatencyRow> {
    if !(gpu.traits().serving.custom_all_reduce && tp_within_node) {
        return None;
    }
    LATENCY_S
        .iter()
        .find(|(n, _)| *n == tp)
        .map(|(_, row)| LatencyRow(row))
}

impl LatencyRow {
    /// Measured latency of one all-reduce of `bytes`, piecewise linear between the measured
    /// sizes (the smallest size's time below it); `None` above the largest size.
    pub fn latency_s(self, bytes: f64) -> Option<f64> {
        let row = self.0;
        if !(bytes.is_finite() && bytes >= 0.0) || bytes > SIZES_BYTES[SIZES_BYTES.len() - 1] {
            return None;
        }
        if bytes <= SIZES_BYTES[0] {
            return Some(row[0]);
        }
        let i = SIZES_BYTES.iter().position(|&s| s >= bytes)?;
        let (x0, x1) = (SIZES_BYTES[i - 1], SIZES_BYTES[i]);
        let (y0, y1) = (row[i - 1], row[i]);
        Some(y0 + (y1 - y0) * (bytes - x0) / (x1 - x0))
    }

    /// Measured latency at the largest measured size (1 MiB): a larger message on the same
    /// fabric takes at least this long.
    pub fn largest_measured_s(self) -> f64 {
        self.0[SIZES_BYTES.len() - 1]
    }
}

/// Measured latency of one all-reduce of `bytes` over `tp` GPUs ([`LatencyRow::latency_s`]);
/// `None` above the largest size or for an unmeasured TP.
pub fn latency_s(tp: u32, bytes: f64) -> Option<f64> {
    let row = &LATENCY_S.iter().find(|(n, _)| *n == tp)?.1;
    LatencyRow(row).latency_s(bytes)
}
