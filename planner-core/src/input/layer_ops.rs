//! One description of a decoder layer's linears: every GEMM of one layer, in the order the
//! layer runs them, with its shape, TP split, the LoRA target name that adapts it, the tensor
//! it reads and the fused GEMM it runs in. Adapter parameters, the adapters' saved values and
//! norm bytes, torchtitan's recompute FLOPs and the FP8 casts all read this one list
//! (`docs/layer-ops.md`), so they cannot disagree about which linears a layer has.
//!
//! Module names and shapes: transformers models/llama/modeling_llama.py (`q_proj`, `k_proj`,
//! `v_proj`, `o_proj`, `gate_proj`, `up_proj`, `down_proj`); DeepSeek-V2 §2.1.2 and
//! transformers models/deepseek_v3/modeling_deepseek_v3.py for MLA (`q_proj` | `q_a_proj` +
//! `q_b_proj`, `kv_a_proj_with_mqa`, `kv_b_proj`, `o_proj`).

use crate::input::finetune::LoraTargets;
use crate::input::model::{FfnKind, ModelSpec};

/// What an op does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A linear layer: a `d_in → d_out` GEMM per token.
    Gemm,
}

/// Which part of the layer an op belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The attention block.
    Attention,
    /// The dense FFN of width `ModelSpec::ffn`.
    DenseFfn,
    /// A shared expert (MoE layers, width `expert_ffn`, TP-split like a dense FFN).
    SharedExpert,
    /// A routed expert (MoE layers; a token runs its top-k of them).
    RoutedExpert,
}

impl Owner {
    /// Whether the op is part of an FFN (dense, shared or routed).
    pub fn is_ffn(self) -> bool {
        self != Owner::Attention
    }
}

/// How Megatron-style tensor parallelism splits a linear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Column-parallel: the output dimension is split.
    Column,
    /// Row-parallel: the input dimension is split; a partial sum leaves it.
    Row,
    /// Not split by TP (MLA's down-projections).
    Replicated,
}

/// The tensor a linear reads: linears with the same input share one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Input {
    /// The attention norm's output (`h`).
    AttentionNorm,
    /// MLA's compressed query latent (`q_lora_rank`).
    QueryLatent,
    /// MLA's compressed key/value latent (`kv_lora_rank`).
    KvLatent,
    /// The attention core's output (`a·d_v`).
    AttentionOutput,
    /// The FFN norm's output (`h`).
    FfnNorm,
    /// The FFN's activation output (`f`).
    FfnHidden,
}

/// One op of a decoder layer, per token, unsharded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerOp {
    /// The Hugging Face module name.
    pub name: &'static str,
    /// What it does.
    pub kind: OpKind,
    /// The part of the layer it belongs to.
    pub owner: Owner,
    /// Input features `K`.
    pub d_in: f64,
    /// Output features `N`.
    pub d_out: f64,
    /// Copies of the module the layer holds (routed experts: `E`; shared experts: their count).
    pub instances: f64,
    /// Copies a token runs through (routed experts: top-k).
    pub per_token: f64,
    /// Its TP split.
    pub split: Split,
    /// The LoRA target names that adapt it, in [`LoraTargets::NAMES`] order (MLA's
    /// `kv_a_proj_with_mqa` and `kv_b_proj` answer to `k` or `v`).
    pub targets: [bool; 7],
    /// The tensor it reads.
    pub input: Input,
    /// The Megatron-Core GEMM it runs in (q, k and v fused in `linear_qkv`, gate and up in
    /// `linear_fc1`: one input cast per fused GEMM).
    pub fused_gemm: &'static str,
    /// PEFT's IA3 treats it as feed-forward (the down projections: the default
    /// `feedforward_modules` of Llama).
    pub feedforward: bool,
}

impl LayerOp {
    /// Whether `targets` puts an adapter on it.
    pub fn targeted_by(&self, targets: &LoraTargets) -> bool {
        self.targets
            .iter()
            .zip(targets.flags())
            .any(|(mine, on)| *mine && on)
    }

    /// Forward FLOPs per token: `2·K·N` for each copy a token runs.
    pub fn flops_per_token(&self) -> f64 {
        2.0 * self.d_in * self.d_out * self.per_token
    }
}

/// The attention core of a layer (`softmax(Q·Kᵀ)·V` over the heads): the widths of what it
/// reads and writes per token and its FLOPs per key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionCore {
    /// Query heads `a`.
    pub heads: u32,
    /// Heads of K and V: `a_kv` under GQA; `a` under MLA, whose up-projection expands K and V
    /// per head (DeepSeek-V2 §2.1.2).
    pub kv_heads: u32,
    /// Query/key head dimension `d_qk` (MLA: `d_nope + d_rope`).
    pub qk_head_dim: f64,
    /// Value head dimension `d_v`.
    pub v_head_dim: f64,
}

impl AttentionCore {
    /// The attention core of `model`'s layers.
    pub fn of(model: &ModelSpec) -> Self {
        match &model.mla {
            Some(mla) => AttentionCore {
                heads: model.heads,
                kv_heads: model.heads,
                qk_head_dim: f64::from(mla.qk_nope_head_dim + mla.qk_rope_head_dim),
                v_head_dim: f64::from(mla.v_head_dim),
            },
            None => AttentionCore {
                heads: model.heads,
                kv_heads: model.kv_heads,
                qk_head_dim: f64::from(model.head_dim),
                v_head_dim: f64::from(model.head_dim),
            },
        }
    }

    /// Q per token, `a·d_qk`.
    pub fn query_width(&self) -> f64 {
        f64::from(self.heads) * self.qk_head_dim
    }

    /// K per token, `a_kv·d_qk`.
    pub fn key_width(&self) -> f64 {
        f64::from(self.kv_heads) * self.qk_head_dim
    }

    /// V per token, `a_kv·d_v`.
    pub fn value_width(&self) -> f64 {
        f64::from(self.kv_heads) * self.v_head_dim
    }

    /// The output per token, `a·d_v`: the output projection's input.
    pub fn output_width(&self) -> f64 {
        f64::from(self.heads) * self.v_head_dim
    }
}

/// The most ops [`layer_ops`] lists (MLA attention 5, a MoE layer's shared and routed FFN 6).
const MAX_OPS: usize = 12;

/// A layer's ops, fixed-size so the search's path does not allocate.
#[derive(Clone, Copy, Debug)]
pub struct LayerOps {
    ops: [Option<LayerOp>; MAX_OPS],
    len: usize,
}

impl LayerOps {
    fn push(&mut self, op: LayerOp) {
        if self.len < MAX_OPS {
            self.ops[self.len] = Some(op);
            self.len += 1;
        }
    }

    /// The ops in the order the layer runs them.
    pub fn iter(&self) -> impl Iterator<Item = &LayerOp> + '_ {
        self.ops[..self.len].iter().flatten()
    }

    /// How many ops the layer runs.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the layer runs no op.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Per token, the input and output features of `owner`'s GEMMs, each fused GEMM's input
    /// counted once (q, k and v read one input in `linear_qkv`): `(Σ K, Σ N)` over the copies
    /// a token runs.
    pub fn fused_gemm_widths(&self, owner: Owner) -> (f64, f64) {
        let ops = || self.of(owner);
        ops().enumerate().fold((0.0, 0.0), |(k, n), (i, op)| {
            let first = ops().take(i).all(|o| o.fused_gemm != op.fused_gemm);
            let k_op = if first { op.d_in * op.per_token } else { 0.0 };
            (k + k_op, n + op.d_out * op.per_token)
        })
    }

    /// The FFN width a token's activations run over: `Σ f × copies` over the FFNs it visits
    /// (a MoE layer: its top-k routed and the shared experts), the down projections' input.
    pub fn ffn_width_per_token(&self) -> f64 {
        self.ffn_widths().sum()
    }

    /// Each FFN's width times the copies a token visits, in order (a MoE layer: the shared
    /// experts', then the routed ones').
    pub fn ffn_widths(&self) -> impl Iterator<Item = f64> + '_ {
        self.iter()
            .filter(|op| op.input == Input::FfnHidden)
            .map(|op| op.d_in * op.per_token)
    }

    /// Which inputs ([`Input`] as index) some linear adapted by `targets` reads.
    pub fn inputs_read_by(&self, targets: &LoraTargets) -> [bool; 6] {
        let mut read = [false; 6];
        for op in self.iter().filter(|op| op.targeted_by(targets)) {
            read[op.input as usize] = true;
        }
        read
    }

    /// The ops of one owner, in order.
    pub fn of(&self, owner: Owner) -> impl Iterator<Item = &LayerOp> + '_ {
        self.iter().filter(move |o| o.owner == owner)
    }
}

/// Target flags with the given indices in [`LoraTargets::NAMES`] order set.
const fn mask(on: &[usize]) -> [bool; 7] {
    let mut m = [false; 7];
    let mut i = 0;
    while i < on.len() {
        m[on[i]] = true;
        i += 1;
    }
    m
}

const Q: [bool; 7] = mask(&[0]);
const K: [bool; 7] = mask(&[1]);
const V: [bool; 7] = mask(&[2]);
const KV: [bool; 7] = mask(&[1, 2]);
const O: [bool; 7] = mask(&[3]);
const GATE: [bool; 7] = mask(&[4]);
const UP: [bool; 7] = mask(&[5]);
const DOWN: [bool; 7] = mask(&[6]);

fn attention_op(
    (name, fused_gemm): (&'static str, &'static str),
    (d_in, d_out): (f64, f64),
    split: Split,
    targets: [bool; 7],
    input: Input,
) -> LayerOp {
    LayerOp {
        name,
        kind: OpKind::Gemm,
        owner: Owner::Attention,
        d_in,
        d_out,
        instances: 1.0,
        per_token: 1.0,
        split,
        targets,
        input,
        fused_gemm,
        feedforward: false,
    }
}

/// The attention block's linears.
fn push_attention(model: &ModelSpec, ops: &mut LayerOps) {
    use Input as I;
    use Split as S;
    let h = f64::from(model.hidden);
    let a = f64::from(model.heads);
    match &model.mla {
        Some(mla) => {
            // DeepSeek-V2 §2.1.2: W^DQ, W^UQ (or one W^Q), W^DKV + W^KR, W^UK and W^UV, W^O;
            // the down-projections are not TP-split.
            let qk = f64::from(mla.qk_nope_head_dim + mla.qk_rope_head_dim);
            if mla.q_lora_rank == 0 {
                let dims = (h, a * qk);
                let names = ("q_proj", "linear_q_proj");
                ops.push(attention_op(names, dims, S::Column, Q, I::AttentionNorm));
            } else {
                let rq = f64::from(mla.q_lora_rank);
                let names = ("q_a_proj", "linear_q_down_proj");
                ops.push(attention_op(
                    names,
                    (h, rq),
                    S::Replicated,
                    Q,
                    I::AttentionNorm,
                ));
                let names = ("q_b_proj", "linear_q_up_proj");
                ops.push(attention_op(
                    names,
                    (rq, a * qk),
                    S::Column,
                    Q,
                    I::QueryLatent,
                ));
            }
            let kv = f64::from(mla.kv_lora_rank);
            let rope = f64::from(mla.qk_rope_head_dim);
            let up = a * f64::from(mla.qk_nope_head_dim + mla.v_head_dim);
            let names = ("kv_a_proj_with_mqa", "linear_kv_down_proj");
            ops.push(attention_op(
                names,
                (h, kv + rope),
                S::Replicated,
                KV,
                I::AttentionNorm,
            ));
            let names = ("kv_b_proj", "linear_kv_up_proj");
            ops.push(attention_op(names, (kv, up), S::Column, KV, I::KvLatent));
            let names = ("o_proj", "linear_proj");
            let o_in = a * f64::from(mla.v_head_dim);
            ops.push(attention_op(
                names,
                (o_in, h),
                S::Row,
                O,
                I::AttentionOutput,
            ));
        }
        None => {
            let d = f64::from(model.head_dim);
            let q = a * d;
            let kv = f64::from(model.kv_heads) * d;
            let norm = I::AttentionNorm;
            ops.push(attention_op(
                ("q_proj", "linear_qkv"),
                (h, q),
                S::Column,
                Q,
                norm,
            ));
            ops.push(attention_op(
                ("k_proj", "linear_qkv"),
                (h, kv),
                S::Column,
                K,
                norm,
            ));
            ops.push(attention_op(
                ("v_proj", "linear_qkv"),
                (h, kv),
                S::Column,
                V,
                norm,
            ));
            let out = I::AttentionOutput;
            ops.push(attention_op(
                ("o_proj", "linear_proj"),
                (q, h),
                S::Row,
                O,
                out,
            ));
        }
    }
}

/// One FFN's linears, of width `f`: SwiGLU's gate and up (`h → f`) and down (`f → h`), or a
/// GeLU MLP's up and down.
fn push_ffn(model: &ModelSpec, ops: &mut LayerOps, owner: Owner, f: f64, copies: (f64, f64)) {
    let h = f64::from(model.hidden);
    let (instances, per_token) = copies;
    let linear = |name, (d_in, d_out), split, targets, input, fused_gemm| LayerOp {
        name,
        kind: OpKind::Gemm,
        owner,
        d_in,
        d_out,
        instances,
        per_token,
        split,
        targets,
        input,
        fused_gemm,
        feedforward: targets == DOWN,
    };
    if model.ffn_kind == FfnKind::SwiGlu {
        ops.push(linear(
            "gate_proj",
            (h, f),
            Split::Column,
            GATE,
            Input::FfnNorm,
            "linear_fc1",
        ));
    }
    ops.push(linear(
        "up_proj",
        (h, f),
        Split::Column,
        UP,
        Input::FfnNorm,
        "linear_fc1",
    ));
    ops.push(linear(
        "down_proj",
        (f, h),
        Split::Row,
        DOWN,
        Input::FfnHidden,
        "linear_fc2",
    ));
}

/// The linears of one decoder layer of `model`: a MoE layer (`moe_layer` and a MoE model)
/// has shared experts, then routed experts, in place of the dense FFN.
pub fn layer_ops(model: &ModelSpec, moe_layer: bool) -> LayerOps {
    let mut ops = LayerOps {
        ops: [None; MAX_OPS],
        len: 0,
    };
    push_attention(model, &mut ops);
    match (&model.moe, moe_layer) {
        (Some(moe), true) => {
            let f = f64::from(moe.expert_ffn);
            let shared = f64::from(moe.shared_experts);
            let routed = f64::from(moe.routed_experts);
            let top_k = f64::from(moe.experts_per_token);
            push_ffn(model, &mut ops, Owner::SharedExpert, f, (shared, shared));
            push_ffn(model, &mut ops, Owner::RoutedExpert, f, (routed, top_k));
        }
        _ => push_ffn(
            model,
            &mut ops,
            Owner::DenseFfn,
            f64::from(model.ffn),
            (1.0, 1.0),
        ),
    }
    ops
}
