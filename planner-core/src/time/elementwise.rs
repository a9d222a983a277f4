//! Memory-bound work of a training step that the GEMM and attention terms do not price:
//! per decoder layer the norms, activations, residual adds, rotary embeddings, the copies
//! the model code makes, and (without flash attention) the softmax and dropout over the
//! `s × s` scores; per token the cross-entropy over the vocabulary. Each op moves bytes
//! at HBM bandwidth and does no GEMM FLOPs, so its time is bytes ÷ achievable bandwidth.
//!
//! The op list depends on who runs the layer ([`Kernels`]): Megatron-Core's fused
//! kernels, PyTorch eager (torchtitan's model code, one kernel per op) or
//! `torch.compile` (one kernel per fused chain). Each table entry gives the bytes the
//! op reads and writes per element of its width, forward and backward, with its source.

use crate::input::framework::Framework;
use crate::input::kernels::Kernels;
use crate::input::layer_ops::{layer_ops, AttentionCore};
use crate::input::model::{FfnKind, ModelSpec};

/// The tensor width an op runs over, per token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// The hidden size `h`: norms, residuals. Replicated on every TP rank unless sequence
    /// parallel splits it (Korthikanti et al. 2022 §4.2.2).
    Hidden,
    /// The query heads `a·d` (split over TP).
    Query,
    /// The key or value heads `a_kv·d` (split over TP).
    KeyValue,
    /// The FFN width `f` (split over TP).
    Ffn,
    /// One row of attention scores per head, `a·s` (split over TP); only without flash.
    Scores,
    /// A token's routed copies, `k·h` (MoE layers; token-sharded like [`Width::Hidden`]).
    RoutedCopies,
    /// The router's logits, `E` per token in FP32 (MoE layers; token-sharded).
    Experts,
}

/// What an op needs of the model to run at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Every layer.
    Always,
    /// Rotary position embeddings (no learned positions).
    Rope,
    /// Grouped-query attention (`a_kv < a`), where torchtitan's `repeat_kv` copies.
    Gqa,
    /// Gated FFN (SwiGLU).
    Gated,
    /// Plain GeLU MLP.
    Gelu,
    /// Dropout on (GPT-style models): the mask is written and read.
    Dropout,
    /// The attention scores are materialised (no flash attention).
    NoFlash,
    /// No flash attention and dropout on: attention-probability dropout.
    NoFlashDropout,
    /// MoE layers only (scaled by the share of layers that are MoE).
    Moe,
    /// MoE layers whose rank holds more than one expert: Megatron's second permutation.
    MoeLocalSort,
}

/// One memory-bound op: bytes read and written per element of its width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Op {
    /// What the op is.
    pub name: &'static str,
    /// Where its op list comes from.
    pub source: &'static str,
    /// The width it runs over.
    pub width: Width,
    /// How many of it one layer runs (two norms, K and V, ...).
    pub count: f64,
    /// When it runs.
    pub when: When,
    /// Forward bytes read, written per element.
    pub fwd: (f64, f64),
    /// Backward bytes read, written per element.
    pub bwd: (f64, f64),
}

const fn op(
    name: &'static str,
    source: &'static str,
    width: Width,
    count: f64,
    when: When,
    fwd: (f64, f64),
    bwd: (f64, f64),
) -> Op {
    Op {
        name,
        source,
        width,
        count,
        when,
        fwd,
        bwd,
    }
}

use When::{Always, Dropout, Gated, Gelu, Gqa, Moe, MoeLocalSort, NoFlash, NoFlashDropout, Rope};
use Width::{Experts, Ffn, Hidden, KeyValue, Query, RoutedCopies, Scores};

/// A MoE layer's routing and token shuffling, BF16 tokens (2 B), FP32 router logits (4 B):
/// memory-bound copies around the all-to-all of Megatron-Core's MoEAlltoAllTokenDispatcher
/// (megatron/core/transformer/moe/token_dispatcher.py); the same gathers and scatters run
/// whichever kernels run the dense part, so every op list shares this table.
pub const MOE_ROUTING: &[Op] = &[
    // Softmax over E logits r4 w4 and top-k r4 forward; softmax backward r8 w4.
    op("router softmax and top-k", "megatron/core/transformer/moe/router.py TopKRouter, moe_utils.py topk_softmax_with_capacity (FP32 logits)", Experts, 1.0, Moe, (8.0, 4.0), (8.0, 4.0)),
    op("permute: each token's row gathered once per routed expert", "megatron/core/transformer/moe/moe_utils.py permute (index_select by the routing map); backward scatters the copies' gradients back", RoutedCopies, 1.0, Moe, (2.0, 2.0), (2.0, 2.0)),
    op("sort by local expert after dispatch, and back before combine", "token_dispatcher.py 'Permutation 2: Sort tokens by local expert' (sort_chunks_by_idxs, when num_local_experts > 1), twice per layer", RoutedCopies, 2.0, MoeLocalSort, (2.0, 2.0), (2.0, 2.0)),
    op("unpermute: the k copies read", "moe_utils.py unpermute: copies weighted by their probabilities and summed into the token; backward writes each copy's gradient and reads the copy for the probability's gradient", RoutedCopies, 1.0, Moe, (2.0, 0.0), (2.0, 2.0)),
    op("unpermute: the token written", "moe_utils.py unpermute (scatter-add into the token's row); backward reads dY", Hidden, 1.0, Moe, (0.0, 2.0), (2.0, 0.0)),
];

/// Megatron-Core with Transformer Engine, BF16 activations (2 B): every op one fused kernel.
/// Backward of a pointwise op reads dY and what it saved, writes dX.
pub const MEGATRON_FUSED: &[Op] = &[
    op("input and pre-MLP norm", "transformer_engine/pytorch/module/layernorm_linear.py: one LN/RMSNorm kernel writes ln_out for the GEMM; bwd reads dY and x, writes dx", Hidden, 2.0, Always, (2.0, 2.0), (4.0, 2.0)),
    op("rotary embedding, q and k", "megatron/core/models/common/embeddings/rope_utils.py apply_rotary_pos_emb (fused_apply_rotary_pos_emb with apply_rope_fusion)", Query, 1.0, Rope, (2.0, 2.0), (2.0, 2.0)),
    op("rotary embedding, k", "megatron/core/models/common/embeddings/rope_utils.py (same kernel on k)", KeyValue, 1.0, Rope, (2.0, 2.0), (2.0, 2.0)),
    op("bias-dropout-add after attention and MLP", "megatron/core/fusions/fused_bias_dropout.py: reads the branch output and the residual, writes the sum; bwd reads dY, writes the branch's dX (the residual's gradient is dY itself)", Hidden, 2.0, Always, (4.0, 2.0), (2.0, 2.0)),
    op("dropout mask of bias-dropout-add", "torch dropout inside fused_bias_dropout.py: a 1 B mask written forward, read backward", Hidden, 2.0, Dropout, (0.0, 1.0), (1.0, 0.0)),
    op("residual gradient sum", "torch/csrc/autograd/input_buffer.cpp accumulate: x's gradient from the norm and from the residual are added (reads two, writes one)", Hidden, 2.0, Always, (0.0, 0.0), (4.0, 2.0)),
    op("fused SwiGLU", "megatron/core/fusions/fused_bias_swiglu.py: reads gate and up (2·f), writes f; bwd reads dY and both inputs, writes both gradients", Ffn, 1.0, Gated, (4.0, 2.0), (6.0, 4.0)),
    op("fused bias-GeLU", "megatron/core/fusions/fused_bias_gelu.py: reads f, writes f; bwd reads dY and the input, writes dX", Ffn, 1.0, Gelu, (2.0, 2.0), (4.0, 2.0)),
    op("fused scale-mask-softmax", "megatron/core/fusions/fused_softmax.py (ScaledUpperTriangMaskedSoftmax): reads the scores, writes the probabilities; bwd reads dY and Y, writes dX", Scores, 1.0, NoFlash, (2.0, 2.0), (4.0, 2.0)),
    op("attention dropout", "megatron/core/transformer/dot_product_attention.py attention_dropout: reads and writes the probabilities, writes a 1 B mask; bwd reads dY and the mask", Scores, 1.0, NoFlashDropout, (2.0, 3.0), (3.0, 2.0)),
];

/// torchtitan's Llama model code in PyTorch eager (torchtitan/models/llama3/model/model.py):
/// one kernel per op, BF16 activations (2 B) with FP32 (4 B) where the code upcasts.
pub const TORCH_EAGER: &[Op] = &[
    // Composite F.rms_norm (aten/src/ATen/native/layer_norm.cpp rms_norm_composite): upcast r2 w4,
    // pow r4 w4, mean r4, mul rsqrt r4 w4, mul weight r4 w4, type_as r4 w2. Backward, op by op:
    // type_as r2 w4, mul weight r4+r8 w4, mul rsqrt r4+r8 w4, mean w4, pow r8 w4, sum of x's two
    // gradients r8 w4, upcast r4 w2.
    op("RMSNorm, composite (attention_norm, ffn_norm)", "aten/src/ATen/native/layer_norm.cpp rms_norm_composite, called by nn.RMSNorm in torchtitan model.py", Hidden, 2.0, Always, (22.0, 18.0), (46.0, 26.0)),
    // apply_rotary_emb: xq.float() r2 w4, complex multiply r4 w4, type_as r4 w2; backward the same.
    op("rotary embedding, q (float, complex mul, type_as)", "torchtitan/models/llama3/model/model.py apply_rotary_emb", Query, 1.0, Rope, (10.0, 10.0), (10.0, 10.0)),
    op("rotary embedding, k", "torchtitan/models/llama3/model/model.py apply_rotary_emb", KeyValue, 1.0, Rope, (10.0, 10.0), (10.0, 10.0)),
    // repeat_kv: expand + reshape materialises n_rep copies of k and v; backward sums them.
    op("repeat_kv read of k and v", "torchtitan/models/llama3/model/model.py repeat_kv", KeyValue, 2.0, Gqa, (2.0, 0.0), (0.0, 2.0)),
    op("repeat_kv write of k and v", "torchtitan/models/llama3/model/model.py repeat_kv", Query, 2.0, Gqa, (0.0, 2.0), (2.0, 0.0)),
    op("attention output transpose(1, 2).contiguous()", "torchtitan/models/llama3/model/model.py Attention.forward (sdpa branch)", Query, 1.0, Always, (2.0, 2.0), (2.0, 2.0)),
    op("residual adds h = x + attn, out = h + ffn", "torchtitan/models/llama3/model/model.py TransformerBlock.forward; bwd: the gradient sum of x's two uses (input_buffer.cpp)", Hidden, 2.0, Always, (4.0, 2.0), (4.0, 2.0)),
    op("F.silu(w1(x))", "torchtitan/models/llama3/model/model.py FeedForward.forward; silu_backward reads dY and x", Ffn, 1.0, Gated, (2.0, 2.0), (4.0, 2.0)),
    op("silu(w1(x)) * w3(x)", "torchtitan/models/llama3/model/model.py FeedForward.forward; mul backward reads dY and both inputs, writes both gradients", Ffn, 1.0, Gated, (4.0, 2.0), (6.0, 4.0)),
    op("GeLU (unfused)", "torch.nn.functional.gelu as its own kernel; gelu_backward reads dY and x", Ffn, 1.0, Gelu, (2.0, 2.0), (4.0, 2.0)),
    op("softmax over materialised scores", "torch.softmax as its own kernel (math attention); softmax_backward reads dY and Y", Scores, 1.0, NoFlash, (2.0, 2.0), (4.0, 2.0)),
];

/// The same model code under `torch.compile`: Inductor fuses the pointwise ops and
/// reductions between two extern kernels (GEMMs, SDPA) into one Triton kernel, which
/// reads the chain's inputs and writes its outputs once (Ansel et al. 2024, "PyTorch 2",
/// ASPLOS, §4.2–4.3); torchtitan compiles each TransformerBlock on its own
/// (torchtitan/models/llama3/infra/parallelize.py apply_compile), so no chain crosses blocks.
pub const TORCH_COMPILED: &[Op] = &[
    // attention_norm: r x, w normed (FP32 kept in registers); bwd r dY, x and the residual's dY, w dx.
    op(
        "attention_norm (one kernel)",
        "Inductor fused reduction kernel over torchtitan's RMSNorm",
        Hidden,
        1.0,
        Always,
        (2.0, 2.0),
        (6.0, 2.0),
    ),
    // h = x + attn fused with ffn_norm(h): reads x and attn, writes h and the normed h.
    op(
        "residual add + ffn_norm (one kernel)",
        "Inductor fuses the add into the norm's reduction (torchtitan TransformerBlock.forward)",
        Hidden,
        1.0,
        Always,
        (4.0, 4.0),
        (6.0, 2.0),
    ),
    op(
        "rotary embedding, q (one kernel)",
        "Inductor fuses float/complex-mul/type_as of apply_rotary_emb",
        Query,
        1.0,
        Rope,
        (2.0, 2.0),
        (2.0, 2.0),
    ),
    op(
        "rotary embedding, k (one kernel)",
        "Inductor fuses float/complex-mul/type_as of apply_rotary_emb",
        KeyValue,
        1.0,
        Rope,
        (2.0, 2.0),
        (2.0, 2.0),
    ),
    // SDPA is an extern kernel: its inputs are materialised, so repeat_kv still copies.
    op(
        "repeat_kv read of k and v",
        "torchtitan repeat_kv feeding SDPA (extern kernel, inputs materialised)",
        KeyValue,
        2.0,
        Gqa,
        (2.0, 0.0),
        (0.0, 2.0),
    ),
    op(
        "repeat_kv write of k and v",
        "torchtitan repeat_kv feeding SDPA (extern kernel, inputs materialised)",
        Query,
        2.0,
        Gqa,
        (0.0, 2.0),
        (2.0, 0.0),
    ),
    op(
        "attention output transpose copy",
        "transpose(1, 2).contiguous() between SDPA and wo (two extern kernels)",
        Query,
        1.0,
        Always,
        (2.0, 2.0),
        (2.0, 2.0),
    ),
    op(
        "silu(w1(x)) * w3(x) (one kernel)",
        "Inductor pointwise fusion of FeedForward.forward",
        Ffn,
        1.0,
        Gated,
        (4.0, 2.0),
        (6.0, 4.0),
    ),
    op(
        "GeLU (one kernel)",
        "Inductor pointwise kernel",
        Ffn,
        1.0,
        Gelu,
        (2.0, 2.0),
        (4.0, 2.0),
    ),
    // The block's last add cannot fuse into the next block's norm (separate compiled blocks);
    // its backward is a pass-through, the next norm's backward sums the gradients.
    op(
        "residual add out = h + ffn",
        "torchtitan TransformerBlock.forward, end of the compiled block",
        Hidden,
        1.0,
        Always,
        (4.0, 2.0),
        (0.0, 0.0),
    ),
    op(
        "softmax over materialised scores (one kernel)",
        "Inductor softmax kernel (math attention)",
        Scores,
        1.0,
        NoFlash,
        (2.0, 2.0),
        (4.0, 2.0),
    ),
];

/// The op list of a kernel choice ([`Kernels::applied`] first).
pub fn op_list(kernels: Kernels) -> &'static [Op] {
    match kernels {
        Kernels::Eager => TORCH_EAGER,
        Kernels::Compiled => TORCH_COMPILED,
        Kernels::Fused | Kernels::FrameworkDefault => MEGATRON_FUSED,
    }
}

/// Cross-entropy over the vocabulary, bytes read and written per logit of one token,
/// forward and backward (the logits' own write is the LM-head GEMM's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossBytes {
    /// Where the op list comes from.
    pub source: &'static str,
    /// Forward bytes read, written per logit.
    pub fwd: (f64, f64),
    /// Backward bytes read, written per logit.
    pub bwd: (f64, f64),
}

/// Megatron-Core's vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py):
/// `.float()` r2 w4, max r4, subtract max in place r4 w4, exp in place r4 w4, sum r4, divide by
/// the sum in place r4 w4; backward: softmax − one-hot times dY in place r4 w4, cast to BF16 for
/// the LM head's dgrad r4 w2.
pub const MEGATRON_LOSS: LossBytes = LossBytes {
    source: "megatron/core/tensor_parallel/cross_entropy.py VocabParallelCrossEntropy",
    fwd: (22.0, 16.0),
    bwd: (8.0, 6.0),
};

/// torchtitan's loss (torchtitan/components/loss.py: `F.cross_entropy(pred.float(), ...)`):
/// `.float()` r2 w4; log_softmax reads each row twice (max and sum pass, then the write pass,
/// aten/src/ATen/native/cuda/SoftMax.cu) r8 w4; backward: nll_loss_backward writes the
/// one-hot gradient w4, log_softmax_backward reads dY twice and Y r12 w4, the cast r4 w2.
pub const TORCH_LOSS: LossBytes = LossBytes {
    source:
        "torchtitan/components/loss.py cross_entropy_loss; aten/src/ATen/native/cuda/SoftMax.cu",
    fwd: (10.0, 8.0),
    bwd: (16.0, 10.0),
};

/// Bytes of memory-bound traffic per token, by how they shard; layout-independent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemoryBoundBytes {
    /// Per layer, forward, over the hidden width: split over TP only under sequence parallel.
    pub hidden_fwd: f64,
    /// Per layer, backward, hidden width.
    pub hidden_bwd: f64,
    /// Per layer, forward, over head/FFN widths: split over TP.
    pub split_fwd: f64,
    /// Per layer, backward, head/FFN widths.
    pub split_bwd: f64,
    /// Of `split_fwd`, the scores' ops (what selective recompute repeats without flash).
    pub scores_fwd: f64,
    /// Cross-entropy per token, forward (split over TP: vocab-parallel).
    pub loss_fwd: f64,
    /// Cross-entropy per token, backward.
    pub loss_bwd: f64,
    /// Per layer (averaged over all layers), Megatron's sort by local expert, forward;
    /// token-sharded; paid only when a rank holds more than one expert.
    pub moe_sort_fwd: f64,
    /// Per layer, the sort's backward.
    pub moe_sort_bwd: f64,
}

impl MemoryBoundBytes {
    /// The traffic of `model` at `seq_len` under `kernels` (resolved against `framework`),
    /// with or without flash attention.
    pub fn of(
        model: &ModelSpec,
        seq_len: u32,
        flash_attention: bool,
        kernels: Kernels,
        framework: Framework,
    ) -> Self {
        let applied = kernels.applied(framework);
        let h = f64::from(model.hidden);
        // MLA expands k and v per head (DeepSeek-V2 §2.1.2); no grouped heads to repeat.
        let core = AttentionCore::of(model);
        let (q, kv) = (core.query_width(), core.key_width());
        let pb = model.param_breakdown();
        let layers = (pb.dense_layers + pb.moe_layers).max(1) as f64;
        // The FFN width a token's activations run over, averaged over the layers: a MoE layer's
        // token visits top-k routed and the shared experts, each of width f_e.
        let ffn = match &model.moe {
            Some(_) => {
                let dense = layer_ops(model, false).ffn_width_per_token();
                let moe = layer_ops(model, true).ffn_width_per_token();
                (pb.dense_layers as f64 * dense + pb.moe_layers as f64 * moe) / layers
            }
            None => layer_ops(model, false).ffn_width_per_token(),
        };
        let scores = f64::from(model.heads) * f64::from(seq_len);
        let (routed_copies, experts, moe_share) = match &model.moe {
            Some(m) => (
                f64::from(m.experts_per_token) * h,
                f64::from(m.routed_experts),
                pb.moe_layers as f64 / layers,
            ),
            None => (0.0, 0.0, 0.0),
        };
        let gated = model.ffn_kind == FfnKind::SwiGlu;
        let applies = |w: When| match w {
            Always => true,
            Rope => model.learned_positions == 0,
            Gqa => model.mla.is_none() && model.kv_heads < model.heads,
            Gated => gated,
            Gelu => !gated,
            Dropout => model.dropout,
            NoFlash => !flash_attention,
            NoFlashDropout => !flash_attention && model.dropout,
            Moe | MoeLocalSort => model.moe.is_some(),
        };
        let mut out = MemoryBoundBytes::default();
        let ops = op_list(applied).iter().chain(MOE_ROUTING.iter());
        for o in ops.filter(|o| applies(o.when)) {
            let per_layer = match o.when {
                Moe | MoeLocalSort => moe_share,
                _ => 1.0,
            };
            let n = o.count
                * per_layer
                * match o.width {
                    Hidden => h,
                    RoutedCopies => routed_copies,
                    Query => q,
                    KeyValue => kv,
                    Ffn => ffn,
                    Scores => scores,
                    Experts => experts,
                };
            let (f, b) = (n * (o.fwd.0 + o.fwd.1), n * (o.bwd.0 + o.bwd.1));
            if o.when == MoeLocalSort {
                out.moe_sort_fwd += f;
                out.moe_sort_bwd += b;
            } else if matches!(o.width, Hidden | RoutedCopies | Experts) {
                out.hidden_fwd += f;
                out.hidden_bwd += b;
            } else {
                out.split_fwd += f;
                out.split_bwd += b;
                if o.width == Scores {
                    out.scores_fwd += f;
                }
            }
        }
        let loss = match applied {
            Kernels::Eager | Kernels::Compiled => TORCH_LOSS,
            Kernels::Fused | Kernels::FrameworkDefault => MEGATRON_LOSS,
        };
        // One cross-entropy for the main head and one per MTP module (DeepSeek-V3 §2.2, L_MTP).
        let v = f64::from(model.vocab) * (1.0 + f64::from(model.mtp_layers));
        out.loss_fwd = v * (loss.fwd.0 + loss.fwd.1);
        out.loss_bwd = v * (loss.bwd.0 + loss.bwd.1);
        out
    }

    /// Per-layer bytes per token on one GPU: token-sharded ops (hidden width, MoE routing)
    /// split over `tp` only under sequence parallel, the others over `tp`; Megatron's sort by
    /// local expert, run on the tokens a rank received, at `sort_load` × its mean (the busiest
    /// EP rank's load; 0 where a rank holds one expert and sorts nothing); (forward, backward).
    pub fn per_layer(&self, tp: f64, sequence_parallel: bool, sort_load: f64) -> (f64, f64) {
        let tp = tp.max(1.0);
        let h_split = if sequence_parallel { tp } else { 1.0 };
        let (sf, sb) = (self.moe_sort_fwd * sort_load, self.moe_sort_bwd * sort_load);
        (
            (self.hidden_fwd + sf) / h_split + self.split_fwd / tp,
            (self.hidden_bwd + sb) / h_split + self.split_bwd / tp,
        )
    }
}
