//! The fixed time each kernel of a decoder layer costs inside a captured CUDA graph.
//!
//! A decode step is one forward pass replayed from a CUDA graph (vLLM captures decode batch
//! sizes, `vllm/worker/model_runner.py` `capture_model`). The graph removes the host's launch
//! calls, not the gap between two dependent kernels: the next kernel's blocks start only after
//! the last block of the one before has finished, and during that launch no weight is streamed.
//! The roofline's `bytes / bandwidth` has no such term, so it is added here, per kernel.
//!
//! Only what was measured is priced: Hopper (H100 SXM, and H200, the same GH100 die and
//! front end with faster HBM); other GPUs keep the plain roofline.

use crate::input::hardware::GpuSpec;

/// Launch cost of one kernel inside a CUDA graph on an H100 (its source is cited where it lives).
pub use crate::time::kernel_launch::GRAPH_KERNEL_LAUNCH_S;

/// Kernels one Llama decoder layer runs per forward, TP all-reduces aside (those are priced by
/// the communication term): vLLM `vllm/model_executor/models/llama.py` `LlamaDecoderLayer.forward`
/// (2024): input_layernorm (fused add + RMSNorm), qkv_proj, rotary_emb, the attention backend's
/// KV-cache write and attention (FlashAttention backend: `reshape_and_cache_flash`, then
/// `flash_attn_with_kvcache`), o_proj, post_attention_layernorm, gate_up_proj, SiluAndMul,
/// down_proj: 10.
pub const KERNELS_PER_DECODER_LAYER: f64 = 10.0;

/// Kernels a fused-MoE layer runs in place of the dense MLP's three (gate_up_proj, SiluAndMul,
/// down_proj): vLLM `MixtralMoE.forward` and `fused_moe.py` (2024): the router gate GEMM,
/// `fused_topk`'s `ops.topk_softmax` and its renormalisation (a sum and a division),
/// `moe_align_block_size`, `invoke_fused_moe_kernel` for w1, `ops.silu_and_mul`,
/// `invoke_fused_moe_kernel` for w2 and the `torch.sum` over the top-k: 9.
pub const KERNELS_PER_MOE_MLP: f64 = 9.0;

/// Kernels of the dense MLP that a MoE layer replaces ([`KERNELS_PER_MOE_MLP`]).
pub const KERNELS_PER_DENSE_MLP: f64 = 3.0;

/// Where the figures come from, for explanations.
pub const SOURCE: &str = "1.3 µs per kernel inside a CUDA graph on H100 (Hazy Research, \"Look Ma, No Bubbles!\", 2025), 10 kernels per layer (vLLM llama.py LlamaDecoderLayer.forward), 16 per fused-MoE layer (vLLM fused_moe.py)";

/// The measured per-kernel launch cost for `gpu`, s, or `None` where none was measured.
pub fn launch_s_for(gpu: &GpuSpec) -> Option<f64> {
    // The GPUs whose preset carries the measurement (input/gpu_presets/: H100 SXM, and H200, the
    // same SMs and launch front end).
    gpu.traits()
        .serving
        .graph_kernel_launch
        .then_some(GRAPH_KERNEL_LAUNCH_S)
}

/// Kernels `layers` decoder layers run per forward, `moe_layers` of them fused-MoE layers.
pub fn layers_kernels(layers: f64, moe_layers: f64) -> f64 {
    let moe = moe_layers.clamp(0.0, layers.max(0.0));
    layers.max(0.0) * KERNELS_PER_DECODER_LAYER
        + moe * (KERNELS_PER_MOE_MLP - KERNELS_PER_DENSE_MLP)
}

/// Fixed time of those kernels per forward at `launch_s` per kernel, s.
pub fn layers_launch_s(layers: f64, moe_layers: f64, launch_s: f64) -> f64 {
    layers_kernels(layers, moe_layers) * launch_s.max(0.0)
}
