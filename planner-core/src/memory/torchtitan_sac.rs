//! torchtitan's per-op selective activation checkpointing: which tensors of a dense
//! decoder layer its policy saves, and so what a torchtitan run with
//! `selective_ac_option = "op"` holds per layer.
//!
//! torchtitan/parallelisms/parallelize_llama.py (`_apply_ac_to_transformer_block`,
//! `_custom_policy`): outputs of the ops in `_save_list` (`aten.mm`, the SDPA flash and
//! efficient-attention kernels, `reduce_scatter_tensor`) are saved, "except every second
//! mm"; every other op is recomputed. The mm counter is a fresh `defaultdict(int)` per
//! checkpoint region, so within each block the 1st, 3rd, 5th and 7th mm are saved. In
//! torchtitan's Llama block the mms run wq, wk, wv, wo (attention), w1, w3, w2 (SwiGLU
//! `w2(silu(w1(x)) * w3(x))`): wq, wv, w1 and w2 outputs are saved.

use crate::input::model::{FfnKind, ModelSpec};
use crate::memory::activations::ActivationSetup;

/// Bytes one dense layer saves under torchtitan's per-op policy for one micro-batch on
/// one rank, or `None` where the policy's op order is not modelled (MLA attention).
///
/// Tokens on the rank: `T = (s/cp)·b`. Saved: the block input (the checkpoint's input,
/// sequence-sharded ÷t under torchtitan's TP, which always shards the norms' sequence),
/// the odd-numbered mm outputs (column-parallel ones ÷t; a row-parallel mm's output is a
/// full-size partial sum before its reduce-scatter), the flash attention output and its
/// fp32 log-sum-exp, and under TP the two reduce-scatter outputs (÷t).
pub fn dense_layer_saved_bytes(model: &ModelSpec, setup: &ActivationSetup) -> Option<f64> {
    if model.mla.is_some() {
        return None;
    }
    let t = f64::from(setup.tp.max(1));
    let tokens = setup.seq_len / f64::from(setup.cp.max(1)) * setup.micro_batch;
    let a = setup.activation_bytes;
    let h = f64::from(model.hidden);
    let q_width = f64::from(model.heads) * f64::from(model.head_dim);
    let kv_width = f64::from(model.kv_heads) * f64::from(model.head_dim);
    let f = f64::from(model.ffn);
    // mm outputs in torchtitan's order, as (width on this rank).
    let mm_outputs: Vec<f64> = match model.ffn_kind {
        FfnKind::SwiGlu => vec![q_width / t, kv_width / t, kv_width / t, h, f / t, f / t, h],
        FfnKind::GeluMlp => vec![q_width / t, kv_width / t, kv_width / t, h, f / t, h],
    };
    // Counter incremented before the test: counts 1, 3, 5, … are saved.
    let saved_mm_width: f64 = mm_outputs.iter().step_by(2).sum();
    let input_width = h / t;
    let attention_out_width = q_width / t;
    let reduce_scatter_width = if setup.tp > 1 { 2.0 * h / t } else { 0.0 };
    let lse_bytes = 4.0 * f64::from(model.heads) / t;
    Some(
        tokens
            * (a * (input_width + saved_mm_width + attention_out_width + reduce_scatter_width)
                + lse_bytes),
    )
}
