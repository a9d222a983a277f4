//! The share of its datasheet HBM bandwidth a decode-shaped weight GEMM streams at, where a
//! GEMM of that shape and dtype was measured on that GPU.
//!
//! A decode GEMM (M = batch tokens ≪ N, K) reads its weight once; the copy-kernel share
//! (`StepModel::hbm_achievable_fraction`, 0.9) is what the roofline prices it at. vLLM's own
//! GEMM benchmark on an H100 (vllm-project/vllm PR #49363, 2026-07-21, "H100 benchmarks for
//! google/gemma-4-31B-it", `benchmarks/kernels/bench_fp8_gemm.py`, triton do_bench kernel
//! times, N = 12288, K = 5376) shows BF16 (torch/cuBLAS) does stream at that share once each
//! call's launch ([`kernel_gaps`]) is taken out, while the per-tensor FP8 GEMM
//! (`fp8-tensor-w-tensor-a-noquant`, the GEMM without the activation cast, which TensorRT-LLM
//! fuses into the kernel before) streams at a lower one. So FP8 weight GEMMs on H100 take that
//! measured share; other GPUs and dtypes keep the copy share.

use crate::input::hardware::GpuSpec;
use crate::input::scenario::ServeDtype;
use crate::serving::kernel_gaps;

/// The measured GEMM's N × K (gemma-4-31B-it's fused QKV at TP 1, as the PR prints it).
pub const MEASURED_N_K: (f64, f64) = (12288.0, 5376.0);

/// Batch sizes M of the decode rows the share is taken from (PR #49363's rows 0–2).
pub const MEASURED_BATCH: [f64; 3] = [1.0, 16.0, 64.0];

/// vLLM PR #49363, H100, `torch-bf16` TFLOP/s at M = 1, 16, 64: 2.870333, 46.541434, 182.588263.
pub const BF16_TFLOPS: [f64; 3] = [2.870333, 46.541434, 182.588263];

/// vLLM PR #49363, H100, `fp8-tensor-w-tensor-a-noquant` TFLOP/s at M = 1, 16, 64:
/// 5.162899, 83.053145, 318.410871.
pub const FP8_TFLOPS: [f64; 3] = [5.162899, 83.053145, 318.410871];

/// H100 SXM datasheet HBM3 bandwidth, bytes/s (the measured BF16 GEMM's 2.96 TB/s exceeds the
/// PCIe card's 2.0 TB/s, so the PR's H100 is the SXM part).
pub const H100_SXM_HBM_BYTES_PER_S: f64 = 3.35e12;

/// Bytes one GEMM call of the measurement moves: weight N·K at `weight_bytes`, input M·K at
/// `weight_bytes` (FP8 activations with FP8 weights, BF16 with BF16), output M·N in BF16.
pub fn measured_call_bytes(m: f64, weight_bytes: f64) -> f64 {
    let (n, k) = MEASURED_N_K;
    n * k * weight_bytes + m * k * weight_bytes + m * n * 2.0
}

/// Streaming share of the datasheet bandwidth one measured row implies: bytes over the call's
/// time less its launch ([`kernel_gaps::GRAPH_KERNEL_LAUNCH_S`], priced apart), per datasheet.
pub fn measured_share(m: f64, tflops: f64, weight_bytes: f64) -> f64 {
    let (n, k) = MEASURED_N_K;
    // GEMM FLOPs 2·M·N·K (one multiply-add per weight per token).
    let call_s = 2.0 * m * n * k / (tflops * 1e12);
    let stream_s = (call_s - kernel_gaps::GRAPH_KERNEL_LAUNCH_S).max(f64::MIN_POSITIVE);
    measured_call_bytes(m, weight_bytes) / stream_s / H100_SXM_HBM_BYTES_PER_S
}

/// Mean share over the measured decode batches for one column of TFLOP/s.
pub fn mean_share(tflops: &[f64; 3], weight_bytes: f64) -> f64 {
    MEASURED_BATCH
        .iter()
        .zip(tflops)
        .map(|(&m, &t)| measured_share(m, t, weight_bytes))
        .sum::<f64>()
        / MEASURED_BATCH.len() as f64
}

/// The share a decode weight GEMM of `dtype` streams at on `gpu`, or `None` where the copy
/// share applies (BF16 measured at it; other GPUs and dtypes unmeasured).
pub fn measured_weight_stream_fraction(gpu: &GpuSpec, dtype: ServeDtype) -> Option<f64> {
    let measured = gpu.traits().serving.fp8_weight_stream;
    (measured && dtype == ServeDtype::Fp8).then(|| mean_share(&FP8_TFLOPS, 1.0))
}

/// Where the figure comes from, for explanations.
pub const SOURCE: &str = "FP8 decode GEMMs on H100 at the share vLLM's FP8 GEMM benchmark measured (vllm-project/vllm PR #49363, M = 1–64)";
