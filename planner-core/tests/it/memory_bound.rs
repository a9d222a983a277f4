//! The memory-bound ops of a layer (time/elementwise.rs) against sums worked by hand from
//! the op tables, and their seconds in a step against the closed form.

use planner_core::input::framework::Framework;
use planner_core::input::kernels::Kernels;
use planner_core::input::layout::{Layout, Recompute, ZeroStage};
use planner_core::resolve::presets::{mesh_scenario, model_preset};
use planner_core::time::cost::{CostOptions, StepModel};
use planner_core::time::elementwise::MemoryBoundBytes;

// Llama 3.1 8B: h = q = 4096 (32 heads × 128), kv = 1024 (8 × 128), f = 14336, V = 128256;
// RoPE, GQA, SwiGLU, no dropout.
const H: f64 = 4096.0;
const Q: f64 = 4096.0;
const KV: f64 = 1024.0;
const F: f64 = 14336.0;
const V: f64 = 128_256.0;

fn bytes(kernels: Kernels, framework: Framework, flash: bool) -> MemoryBoundBytes {
    let model = model_preset("llama-3.1-8b").expect("preset");
    MemoryBoundBytes::of(&model, 8192, flash, kernels, framework)
}

/// (hidden forward, hidden backward, split forward, split backward) bytes per token per layer.
fn layer_bytes(b: &MemoryBoundBytes) -> [f64; 4] {
    [b.hidden_fwd, b.hidden_bwd, b.split_fwd, b.split_bwd]
}

#[test]
fn torchtitan_eager_op_list_by_hand() {
    let b = bytes(Kernels::FrameworkDefault, Framework::Torchtitan, true);
    // Hidden width: two composite RMSNorms (fwd 22 + 18 = 40, bwd 46 + 26 = 72) and two
    // residual adds (fwd 4 + 2, bwd 4 + 2): 80h + 12h forward, 144h + 12h backward.
    // Split widths, forward: RoPE 20q + 20kv, repeat_kv 2·2kv read + 2·2q write, the output
    // transpose 4q, silu 4f and mul 6f = 28q + 24kv + 10f; backward the same but silu 6f and
    // mul 10f = 28q + 24kv + 16f.
    let split = 28.0 * Q + 24.0 * KV;
    assert_eq!(
        layer_bytes(&b),
        [92.0 * H, 156.0 * H, split + 10.0 * F, split + 16.0 * F]
    );
    assert_eq!(b.scores_fwd, 0.0);
    // torchtitan's loss: (10 + 8) B forward, (16 + 10) B backward per logit.
    assert_eq!(b.loss_fwd, 18.0 * V);
    assert_eq!(b.loss_bwd, 26.0 * V);
}

#[test]
fn compile_and_megatron_fuse_what_eager_runs_apart() {
    let c = bytes(Kernels::Compiled, Framework::Torchtitan, true);
    // Compiled: attention_norm 4h / 8h, add + ffn_norm 8h / 8h, the block's last add 6h / 0:
    // 18h forward, 16h backward; RoPE 4q + 4kv, repeat_kv as eager (4kv + 4q), the
    // transpose 4q, silu·mul 6f forward and 10f backward.
    let split = 12.0 * Q + 8.0 * KV;
    assert_eq!(
        layer_bytes(&c),
        [18.0 * H, 16.0 * H, split + 6.0 * F, split + 10.0 * F]
    );
    let m = bytes(Kernels::FrameworkDefault, Framework::MegatronCore, true);
    // Megatron-Core fused: norms 2·4h / 2·6h, bias-dropout-add 2·6h / 2·4h, residual gradient
    // sums 0 / 2·6h: 20h forward, 32h backward; fused RoPE 4q + 4kv both ways, SwiGLU 6f / 10f.
    let split = 4.0 * Q + 4.0 * KV;
    assert_eq!(
        layer_bytes(&m),
        [20.0 * H, 32.0 * H, split + 6.0 * F, split + 10.0 * F]
    );
    // Megatron's vocab-parallel cross entropy: 38 B forward, 14 B backward per logit.
    assert_eq!(m.loss_fwd, 38.0 * V);
    assert_eq!(m.loss_bwd, 14.0 * V);
    // The article follows Megatron's list.
    assert_eq!(
        bytes(Kernels::FrameworkDefault, Framework::Article, true),
        m
    );
    let eager = bytes(Kernels::Eager, Framework::MegatronCore, true);
    assert!(eager.hidden_fwd + eager.split_fwd > 3.0 * (m.hidden_fwd + m.split_fwd));
}

#[test]
fn materialised_scores_and_sequence_parallel() {
    let flash = bytes(Kernels::Fused, Framework::MegatronCore, true);
    let math = bytes(Kernels::Fused, Framework::MegatronCore, false);
    // Without flash: the fused softmax moves 4 B forward and 6 B backward per score, a·s =
    // 32 × 8192 scores per token per layer; no dropout in Llama, so no attention dropout.
    let scores = 32.0 * 8192.0;
    assert_eq!(math.split_fwd - flash.split_fwd, 4.0 * scores);
    assert_eq!(math.split_bwd - flash.split_bwd, 6.0 * scores);
    assert_eq!(math.scores_fwd, 4.0 * scores);
    // TP 4: the hidden-width ops are replicated without sequence parallel, split with it.
    let (f_rep, _) = flash.per_layer(4.0, false, 0.0);
    let (f_sp, _) = flash.per_layer(4.0, true, 0.0);
    assert_eq!(f_rep, 20.0 * H + (4.0 * Q + 4.0 * KV + 6.0 * F) / 4.0);
    assert_eq!(f_sp, (20.0 * H + 4.0 * Q + 4.0 * KV + 6.0 * F) / 4.0);
}

#[test]
fn step_seconds_carry_the_closed_form() {
    // Llama 3.1 8B, 8 H100 (one node), DP 8, micro-batch 1, seq 8192, global batch 64:
    // m = 64 / 8 = 8 micro-batches of 8192 tokens, no recompute, Megatron's list.
    let mut sc = mesh_scenario("llama-3.1-8b", 1, 8192, 64);
    sc.overheads.framework = Framework::MegatronCore;
    sc.layout = Layout {
        dp: 8,
        tp: 1,
        pp: 1,
        cp: 1,
        ep: 1,
        micro_batch: 1,
        zero: ZeroStage::Zero1,
        recompute: Recompute::None,
        sequence_parallel: false,
        ..sc.layout.clone()
    };
    let model = sc.model_spec().expect("model");
    let step = StepModel::new(&model, &sc, CostOptions::default());
    let s = step.seconds(&sc.layout, &step.placement(&sc.layout));
    let bw = sc.cluster.gpu.hbm_bytes_per_s * 0.9;
    let per_layer = 20.0 * H + 32.0 * H + 8.0 * Q + 8.0 * KV + 16.0 * F;
    let expected = 8.0 * 8192.0 * (32.0 * per_layer + 52.0 * V) / bw;
    assert!(
        (s.memory_bound / expected - 1.0).abs() < 1e-12,
        "{} vs {expected}",
        s.memory_bound
    );
    // Switched off, the step is shorter by exactly that traffic.
    let off = StepModel::new(
        &model,
        &sc,
        CostOptions {
            memory_bound_ops: false,
            ..CostOptions::default()
        },
    );
    let t = off.seconds(&sc.layout, &off.placement(&sc.layout));
    assert_eq!(t.memory_bound, 0.0);
    assert!(
        (s.compute - t.compute - expected).abs() < 1e-9 * s.compute,
        "{} − {} vs {expected}",
        s.compute,
        t.compute
    );
}

#[test]
fn moe_routing_copies_by_hand() {
    // Mixtral 8x7B: h = 4096, every layer MoE, top-2 of 8 experts, so k·h = 8192 copies.
    // On top of Megatron's dense list (20h forward, 32h backward): router softmax + top-k
    // 12 B per logit both ways (8 logits), permute 4 B per copy both ways, unpermute 2 B per
    // copy forward and 4 B backward, its token write 2h both ways.
    let model = model_preset("mixtral-8x7b").expect("preset");
    let b = MemoryBoundBytes::of(&model, 4096, true, Kernels::Fused, Framework::MegatronCore);
    let (h, kh, e) = (4096.0, 8192.0, 8.0);
    assert_eq!(b.hidden_fwd, 20.0 * h + 12.0 * e + 6.0 * kh + 2.0 * h);
    assert_eq!(b.hidden_bwd, 32.0 * h + 12.0 * e + 8.0 * kh + 2.0 * h);
    // The sort by local expert and back: 2 × 4 B per copy each way, only when E > ep.
    assert_eq!((b.moe_sort_fwd, b.moe_sort_bwd), (8.0 * kh, 8.0 * kh));
    let (with_sort, _) = b.per_layer(1.0, false, 1.0);
    let (without, _) = b.per_layer(1.0, false, 0.0);
    assert_eq!(with_sort - without, 8.0 * kh);
    // Expert SwiGLU over the two routed experts' width: 6 B per element forward, 2 × 14336.
    assert_eq!(
        b.split_fwd,
        4.0 * 4096.0 + 4.0 * 1024.0 + 6.0 * 2.0 * 14336.0
    );
}
