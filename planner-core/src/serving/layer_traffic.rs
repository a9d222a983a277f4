//! The HBM bytes the memory-bound kernels of a serving forward move per token: the norms,
//! the rotary embedding, the KV-cache write and the gated activation between the GEMMs.
//!
//! A decode step's roofline reads the weights and the KV; the kernels between the GEMMs read
//! and write the batch's activations besides, once per token per layer. At a batch of a few
//! tokens that is nothing beside the weights; at hundreds of tokens, or a prefill chunk of
//! thousands, it is not. The kernels are the ones [`crate::serving::kernel_gaps`] counts in
//! vLLM's Llama layer (vLLM `vllm/model_executor/models/llama.py` `LlamaDecoderLayer.forward`,
//! 2024): each one's bytes per element follow from what it reads and writes. TensorRT-LLM's
//! layer runs the same tensors through its own fused kernels (residual + RMSNorm, RoPE fused
//! with the KV-cache write, SwiGLU); counted alike, its FP8-quantised outputs aside (they
//! write 1 B where this counts the activation dtype). Its SwiGLU is a kernel of its own
//! there too: TensorRT-LLM's `docs/source/performance.md` (the 0.6-era page, "Known Issues",
//! "Fused Matmul + Gated-SiLU (LLaMA)"): "combines two Matmul operations into one Matmul
//! followed by a separate SwiGLU kernel (when `--use_fused_mlp` is enabled)". Not counted:
//! the GEMMs' own activation reads and writes (at the batches where they would matter the
//! decode GEMMs are compute-bound), the logits and sampling, vLLM's separate FP8 input
//! quantisation kernel.

use crate::input::layer_ops::layer_ops;
use crate::input::model::{FfnKind, ModelSpec};
use crate::memory::kv_cache;

/// Bytes read and written per element of the op's tensor, in units of the activation dtype,
/// per hidden element: `fused_add_rms_norm(input, residual, weight)` (vLLM
/// `csrc/layernorm_kernels.cu`): `residual = input + residual; input = rms_norm(residual)`,
/// in place: reads input and residual, writes both. Two per layer (input_layernorm,
/// post_attention_layernorm).
pub const ADD_NORM_ELEMENTS_PER_HIDDEN: f64 = 4.0;
/// Norms per decoder layer.
pub const NORMS_PER_LAYER: f64 = 2.0;

/// `rotary_embedding(positions, query, key, ...)` (vLLM `csrc/pos_encoding_kernels.cu`): in
/// place on the query and key heads: reads and writes each element once.
pub const ROPE_ELEMENTS_PER_QK: f64 = 2.0;

/// `silu_and_mul(out, input)` (vLLM `csrc/activation_kernels.cu` `act_and_mul_kernel`): reads
/// gate and up (2·f), writes f, per FFN element.
pub const SILU_AND_MUL_ELEMENTS_PER_FFN: f64 = 3.0;

/// A GeLU MLP's activation (vLLM `GeluAndMul`'s plain counterpart, `F.gelu`): reads and writes
/// each FFN element.
pub const GELU_ELEMENTS_PER_FFN: f64 = 2.0;

/// `moe_sum` over the top-k expert outputs (vLLM `fused_moe.py`: `ops.moe_sum` of the
/// `[tokens, top_k, h]` cache into `[tokens, h]`): reads k·h, writes h.
pub fn moe_sum_elements_per_hidden(top_k: f64) -> f64 {
    top_k + 1.0
}

/// Bytes one token moves through one decoder layer's memory-bound kernels on one GPU of a
/// TP group of `tp`: activations of `act_bytes` per value, the KV cache written at `kv_bytes`.
/// `moe_layer`: the layer's MLP is a fused MoE (its activation runs over the token's top-k
/// expert rows, then `moe_sum`).
pub fn layer_bytes_per_token(
    model: &ModelSpec,
    tp: u32,
    moe_layer: bool,
    act_bytes: f64,
    kv_bytes: f64,
) -> f64 {
    let tp_f = f64::from(tp.max(1));
    let h = f64::from(model.hidden);
    // Norms and residuals run over the whole hidden width on every TP rank (no sequence
    // parallelism in serving).
    let norms = NORMS_PER_LAYER * ADD_NORM_ELEMENTS_PER_HIDDEN * h * act_bytes;
    // RoPE over the rank's query and key heads (MLA: its decoupled RoPE dimensions only, the
    // key's shared across heads, DeepSeek-V2 §2.1.3).
    let (q_rope, k_rope) = match &model.mla {
        Some(mla) => (
            f64::from(model.heads) * f64::from(mla.qk_rope_head_dim) / tp_f,
            f64::from(mla.qk_rope_head_dim),
        ),
        None => (
            f64::from(model.heads) * f64::from(model.head_dim) / tp_f,
            f64::from(model.kv_heads) * f64::from(model.head_dim) / tp_f,
        ),
    };
    let rope = ROPE_ELEMENTS_PER_QK * (q_rope + k_rope) * act_bytes;
    // `reshape_and_cache_flash` (vLLM `csrc/cache_kernels.cu`): reads the new token's K and V
    // (MLA: its latent) in the activation dtype, writes them in the cache's.
    let cache_values = kv_cache::values_per_token_per_layer_per_gpu(model, tp);
    let cache = cache_values * (act_bytes + kv_bytes);
    let per_ffn = match model.ffn_kind {
        FfnKind::SwiGlu => SILU_AND_MUL_ELEMENTS_PER_FFN,
        FfnKind::GeluMlp => GELU_ELEMENTS_PER_FFN,
    };
    // The activation over the rank's FFN rows (a MoE layer: the token's top-k routed experts'
    // and the shared experts', split over TP), then the MoE layer's sum of the k outputs.
    let ffn_rows: f64 = layer_ops(model, moe_layer)
        .ffn_widths()
        .map(|w| w / tp_f)
        .sum();
    let mlp = match (&model.moe, moe_layer) {
        (Some(moe), true) => {
            let k = f64::from(moe.experts_per_token);
            per_ffn * ffn_rows * act_bytes + moe_sum_elements_per_hidden(k) * h * act_bytes
        }
        _ => per_ffn * ffn_rows * act_bytes,
    };
    norms + rope + cache + mlp
}

/// Where the op list comes from, for explanations.
pub const SOURCE: &str = "per layer: 2 fused add + RMSNorm (r/w input and residual), RoPE on q and k, the KV-cache write, SiLU-and-mul (r 2f, w f), as vLLM's csrc kernels read and write them";
