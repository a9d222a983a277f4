//! torchtitan's per-op selective activation checkpointing policy
//! (`selective_ac_option = "op"`, the default of its Llama configs): which matmuls of a
//! dense decoder layer keep their outputs and which the backward recomputes. Memory prices
//! what is kept (`memory/torchtitan_sac.rs`), time what is recomputed (`time/cost.rs`); both
//! read the one list here so they cannot disagree.
//!
//! torchtitan/parallelisms/parallelize_llama.py at 7c3a1fa (the tree of the torchtitan paper,
//! arXiv 2410.06511), `_apply_ac_to_transformer_block`, `_custom_policy`: outputs of the ops
//! in `_save_list` (`aten.mm`, the SDPA flash and efficient-attention kernels,
//! `reduce_scatter_tensor`) are saved, "except every second mm"; every other op is
//! recomputed. The mm counter is a fresh `defaultdict(int)` per checkpoint region, so within
//! each block the 1st, 3rd, 5th and 7th mm are saved. In torchtitan's Llama block the mms
//! run wq, wk, wv, wo (attention), w1, w3, w2 (SwiGLU `w2(silu(w1(x)) * w3(x))`).

use crate::input::layer_ops::{layer_ops, Split};
use crate::input::model::ModelSpec;

/// One matmul of a dense decoder block: `in_width → out_width` per token.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BlockMatmul {
    /// Input features `K`.
    pub in_width: f64,
    /// Output features `N`.
    pub out_width: f64,
    /// Column-parallel under TP (output split ÷t); a row-parallel one splits its input and
    /// writes a full-size partial sum.
    pub column_parallel: bool,
    /// The policy saves its output (odd-numbered in the block's order).
    pub saved: bool,
    /// The backward needs its output, so an unsaved one is recomputed. The block's last mm
    /// feeds only the residual add that leaves the block, whose backward reads no input:
    /// `torch.utils.checkpoint`'s non-reentrant recompute stops once every tensor the
    /// backward needs is back (`_enable_checkpoint_early_stop`, default on).
    pub output_needed: bool,
}

/// A dense block's matmuls in torchtitan's order, as many as the FFN has (7 for SwiGLU, 6
/// for a GeLU MLP; the rest of the array is unused), or `None` where the op order is not
/// modelled (MLA attention). Unsharded widths; fixed-size so the search's path does not
/// allocate.
pub fn block_matmuls(model: &ModelSpec) -> Option<([BlockMatmul; 7], usize)> {
    if model.mla.is_some() {
        return None;
    }
    let ops = layer_ops(model, false);
    let n = ops.len().min(7);
    let mut mms = [BlockMatmul::default(); 7];
    // wq, wk, wv, wo, then the FFN's: the layer's linears in the order it runs them.
    for (i, op) in ops.iter().take(mms.len()).enumerate() {
        mms[i] = BlockMatmul {
            in_width: op.d_in,
            out_width: op.d_out,
            column_parallel: op.split == Split::Column,
            // The counter is incremented before the test: counts 1, 3, 5, … (indices 0, 2, …).
            saved: i.is_multiple_of(2),
            output_needed: i + 1 < n,
        };
    }
    Some((mms, n))
}

/// Forward FLOPs per token of one dense layer that the policy repeats in the backward: its
/// unsaved matmuls whose outputs the backward needs, `2·K·N` each, unsharded. Under TP
/// (`tensor_parallel`) a row-parallel mm's output goes only to its reduce-scatter (torchtitan's
/// plan: `RowwiseParallel(output_layouts=Shard(1))`), whose output the policy saves, so the
/// row-parallel ones are not repeated. `None` where [`block_matmuls`] is.
pub fn recomputed_matmul_flops_per_token(model: &ModelSpec, tensor_parallel: bool) -> Option<f64> {
    let (mms, n) = block_matmuls(model)?;
    Some(
        mms[..n]
            .iter()
            .filter(|m| !m.saved && m.output_needed)
            .filter(|m| m.column_parallel || !tensor_parallel)
            .map(|m| 2.0 * m.in_width * m.out_width)
            .sum(),
    )
}
