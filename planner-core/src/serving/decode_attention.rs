//! The share of its datasheet HBM bandwidth a decode-attention kernel reads the paged KV cache
//! at, where that engine's kernel was measured on that GPU.
//!
//! The roofline reads the KV at the copy share (`StepModel::hbm_achievable_fraction`). A decode
//! attention kernel streams the same bytes, but dequantizes them, runs the softmax and reduces
//! split-KV partials between its loads, so it need not reach a copy's bandwidth. TensorRT-LLM
//! published its own Hopper decode kernel's bandwidth (XQA, `cpp/kernels/xqa`): with a BF16
//! cache it reads at the copy share (4.31 TB/s on H200, against the 4.3 TB/s copy the H200's
//! share stands on), with an FP8 cache at 4.03 TB/s. So TensorRT-LLM rows whose engine runs
//! XQA for generation, with an FP8 cache on Hopper, read their KV at that measured share; every
//! other engine, GPU and cache dtype keeps the copy share (no kernel figure of its own is cited).

use crate::input::hardware::GpuSpec;
use crate::input::scenario::ServeDtype;
use serde::{Deserialize, Serialize};

/// The engine's generation-phase attention kernel, where one with a measured bandwidth runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeAttentionKernel {
    /// TensorRT-LLM's XQA (generation-phase MQA/GQA; `AttentionOp` `mEnableXQA = true` by
    /// default, the PyTorch backend's default `attn_backend='TRTLLM'` runs the same op).
    TrtllmXqa,
}

impl DecodeAttentionKernel {
    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            DecodeAttentionKernel::TrtllmXqa => "trtllm-xqa",
        }
    }
}

/// XQA decode with an FP8 KV cache on H200, bytes/s: TensorRT-LLM tech blog 16, "Accelerating
/// Long-Context Inference with Skip Softmax Attention" (docs/source/blogs/tech_blog/
/// blog16_Accelerating_Long_Context_Inference_with_Skip_Softmax_Attention.md), "Decode Baseline":
/// H200, 16k, FP8, 4.03 TB/s, 266 µs (batch 64, q_heads 64, kv_heads 4, head_dim 128). The 16k
/// row, not the 64k one (4.10 TB/s): the shorter of the two contexts measured.
pub const XQA_FP8_KV_H200_BYTES_PER_S: f64 = 4.03e12;

/// The same table's BF16 row at 16k, bytes/s: 4.31 TB/s, the copy share's 4.3 TB/s (so a BF16
/// cache keeps the copy share).
pub const XQA_BF16_KV_H200_BYTES_PER_S: f64 = 4.31e12;

/// H200 datasheet HBM3e bandwidth, bytes/s (NVIDIA H200 datasheet: 4.8 TB/s).
pub const H200_HBM_BYTES_PER_S: f64 = 4.8e12;

/// Where the figure comes from, for explanations.
pub const SOURCE: &str = "TensorRT-LLM's XQA decode kernel with an FP8 KV cache at 4.03 of the H200's 4.8 TB/s (TensorRT-LLM tech blog 16, Skip Softmax Attention, decode baseline)";

/// The share of the datasheet bandwidth the decode step's KV read reaches under `kernel` on
/// `gpu` with a `kv` cache, or `None` where the copy share applies.
pub fn measured_kv_stream_fraction(
    gpu: &GpuSpec,
    kv: ServeDtype,
    kernel: Option<DecodeAttentionKernel>,
) -> Option<f64> {
    // The GPUs whose preset carries the measurement (input/gpu_presets/: H200, and H100 SXM,
    // the same Hopper XQA kernel on the GH100 die with the H200's copy share).
    let measured = gpu.traits().serving.xqa_fp8_kv;
    match kernel {
        Some(DecodeAttentionKernel::TrtllmXqa) if measured && kv == ServeDtype::Fp8 => {
            Some(XQA_FP8_KV_H200_BYTES_PER_S / H200_HBM_BYTES_PER_S)
        }
        _ => None,
    }
}
