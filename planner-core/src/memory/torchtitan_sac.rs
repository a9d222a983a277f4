//! torchtitan's per-op selective activation checkpointing: what a torchtitan run with
//! `selective_ac_option = "op"` holds per dense decoder layer. The policy itself (which
//! matmul outputs are kept) is `input/sac_policy.rs`, shared with the time model's recompute.

use crate::input::model::ModelSpec;
use crate::input::sac_policy::block_matmuls;
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
    let (mms, n) = block_matmuls(model)?;
    let t = f64::from(setup.tp.max(1));
    let tokens = setup.seq_len / f64::from(setup.cp.max(1)) * setup.micro_batch;
    let a = setup.activation_bytes;
    let h = f64::from(model.hidden);
    let q_width = f64::from(model.heads) * f64::from(model.head_dim);
    // The saved mm outputs, as their width on this rank (a column-parallel mm's output ÷t).
    let saved_mm_width: f64 = mms[..n]
        .iter()
        .filter(|m| m.saved)
        .map(|m| {
            if m.column_parallel {
                m.out_width / t
            } else {
                m.out_width
            }
        })
        .sum();
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
