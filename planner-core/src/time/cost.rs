//! Step time, throughput, MFU and HFU of a layout: compute at the GPU's rate
//! times a GEMM efficiency, the communication that overlap cannot hide, and
//! the pipeline bubble.
//!
//! [`StepModel`] holds everything that does not depend on the layout, so the
//! mesh search evaluates candidates with arithmetic only; [`StepModel::evaluate`]
//! is the same arithmetic plus the explanations the app shows.

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::input::finetune::DEQUANT_BYTES_PER_PARAM;
use crate::input::framework::Framework;
pub use crate::input::gemm_efficiency::GemmEfficiency;
use crate::input::kernels::Kernels;
use crate::input::layer_ops::{layer_ops, AttentionCore, Owner};
use crate::input::layout::{Layout, Recompute, ZeroStage};
use crate::input::model::ModelSpec;
use crate::input::overlap::AppliedOverlap;
use crate::input::precision::ComputeDtype;
use crate::input::scenario::Scenario;
use crate::parallel::topology::{GroupKind, Placement, RankOrder};
use crate::time::adapters::AdapterTime;
use crate::time::collectives::{CommModel, COMM_TIME_ASSUMPTION};
use crate::time::comms::Purpose;
use crate::time::comms::{step_comms_paced, CommInputs, CommItem, Overlap};
use crate::time::elementwise::MemoryBoundBytes;

/// Choices of the time model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostOptions {
    /// GEMM efficiency curve (replaced by a calibration's fit when given).
    pub gemm: GemmEfficiency,
    /// Count attention FLOPs for the causal half only. Off by default: PaLM's
    /// (Chowdhery et al. 2022, App. B) and Megatron's MFU count the full `s × s`.
    pub causal_attention_flops: bool,
    /// Fraction of TP communication hidden behind GEMMs (Megatron `tp_comm_overlap`); 0 by default.
    pub tp_overlap_fraction: f64,
    /// Fraction of the BF16 peak the attention kernels reach (FlashAttention-2, Dao 2023:
    /// 50–73% of peak forward on A100, backward lower); BF16 under the FP8 recipe too.
    pub attention_efficiency: f64,
    /// Price the memory-bound ops of [`crate::time::elementwise`] (norms, activations,
    /// residuals, RoPE, copies, softmax without flash, the cross-entropy); on by default.
    pub memory_bound_ops: bool,
    /// Fraction of the datasheet HBM bandwidth that streaming kernels reach: one H200 here
    /// copied device memory at ~4.3 of 4.8 TB/s (domain notes, "Achieved figures"), 0.9.
    /// GPUs with a measured figure of their own take it instead
    /// ([`crate::input::gpu_traits::ComputeShares::hbm_stream_fraction`]).
    pub hbm_achievable_fraction: f64,
    /// Fractional slowdown of compute while communication runs beside it (its time beside
    /// the communication over its time alone, minus 1): NCCL kernels take SMs and HBM
    /// bandwidth from the GEMMs. Each hidden second of communication then costs
    /// `slowdown / (1 + slowdown)` seconds ([`overlap_interference_s`]). One figure for every
    /// overlap path: no published measurement of its own was found for Transformer Engine's
    /// userbuffers TP overlap or Megatron's EP overlap (combined 1F1B).
    pub overlap_slowdown: f64,
    /// Rank numbering order.
    pub rank_order: RankOrder,
}

impl Default for CostOptions {
    fn default() -> Self {
        CostOptions {
            gemm: GemmEfficiency::default(),
            causal_attention_flops: false,
            tp_overlap_fraction: 0.0,
            attention_efficiency: 0.5,
            memory_bound_ops: true,
            hbm_achievable_fraction: 0.9,
            // Lee et al. 2025, "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning" (arXiv 2507.03114): overlapped compute 18.9% slower on average (max 40.0%) than alone, GPT and LLaMA training on 4× A100, H100, MI250, MI210.
            overlap_slowdown: 0.189,
            rank_order: RankOrder::default(),
        }
    }
}

/// Seconds a step loses to `hidden_s` seconds of communication hidden behind compute that
/// runs `slowdown` slower beside it: in that window the compute advances `hidden_s / (1 +
/// slowdown)` seconds of its own work, and the rest, `hidden_s · slowdown / (1 + slowdown)`,
/// is paid after it. A negative or NaN slowdown counts as none, an infinite one as a stall.
pub fn overlap_interference_s(hidden_s: f64, slowdown: f64) -> f64 {
    let sigma = if slowdown.is_nan() {
        0.0
    } else {
        slowdown.max(0.0)
    };
    let share = if sigma.is_infinite() {
        1.0
    } else {
        sigma / (1.0 + sigma)
    };
    hidden_s.max(0.0) * share
}

/// FLOPs per token of one training step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlopsPerToken {
    /// Parameters whose matmuls a token runs (active, without the input embedding lookup).
    pub matmul_params: f64,
    /// `2 × matmul_params`: forward matmuls.
    pub dense_forward: f64,
    /// Forward attention scores and weighted values: `2·L·s·a·(d_qk + d_v)` (×½ if causal).
    pub attention_forward: f64,
    /// Of `dense_forward`, the output layer (LM head): `2·V·h`.
    #[serde(default)]
    pub output_forward: f64,
    /// Of `dense_forward`, the routed experts' GEMMs: `2 × top-k × expert params × MoE layers`.
    #[serde(default)]
    pub routed_expert_forward: f64,
    /// Of `dense_forward`, the MTP modules' matmuls other than their LM head (decoder layer
    /// with its top-k experts, `2h → h` projection): they run on the last pipeline stage.
    #[serde(default)]
    pub mtp_forward: f64,
    /// Of `attention_forward`, the MTP modules' attention cores (last pipeline stage).
    #[serde(default)]
    pub mtp_attention_forward: f64,
    /// Of `mtp_forward` (and of `routed_expert_forward`), the MTP modules' routed experts.
    #[serde(default)]
    pub mtp_routed_expert_forward: f64,
}

impl FlopsPerToken {
    /// Model FLOPs per token: `3 × forward` = `6N + 12·L·h·s` for MHA (PaLM App. B;
    /// Narayanan et al. 2021 eq. 3 without the vocabulary term, which `N` already holds).
    pub fn model(&self) -> f64 {
        3.0 * (self.dense_forward + self.attention_forward)
    }

    /// Hardware FLOPs per token: model FLOPs plus what recompute repeats.
    pub fn hardware(&self, recompute: Recompute) -> f64 {
        self.model() + self.recompute_extra(recompute)
    }

    /// FLOPs per token that recompute repeats: a full forward, or the attention core only.
    pub fn recompute_extra(&self, recompute: Recompute) -> f64 {
        match recompute {
            Recompute::None => 0.0,
            // Korthikanti et al. 2022 §5: selective recomputes the attention core (QKᵀ, softmax, ·V).
            Recompute::Selective => self.attention_forward,
            Recompute::Full => self.dense_forward + self.attention_forward,
        }
    }
}

/// FLOPs per token for a model at sequence length `seq_len`.
pub fn flops_per_token(model: &ModelSpec, seq_len: u32, causal: bool) -> FlopsPerToken {
    let pb = model.param_breakdown();
    let scale = model.param_scale();
    // The input embedding is a lookup, not a matmul; a tied output projection still is.
    let lookup = if model.tied_embeddings {
        0
    } else {
        pb.embedding
    };
    // Each MTP module runs the shared LM head once more (DeepSeek-V3 §2.2: OutHead shared;
    // Megatron training.py num_floating_point_operations: logits × (mtp_num_layers + 1)).
    let mtp = pb.mtp_modules as f64;
    let head_params = f64::from(model.vocab) * f64::from(model.hidden);
    let matmul_params =
        pb.active().saturating_sub(lookup) as f64 * scale + mtp * head_params * scale;
    let core = AttentionCore::of(model);
    let (d_qk, d_v) = (core.qk_head_dim, core.v_head_dim);
    let causal_factor = if causal { 0.5 } else { 1.0 };
    // QKᵀ: 2·s·d_qk and P·V: 2·s·d_v FLOPs per token per head per layer.
    let attention_forward = if model.attention_window.is_some() {
        // Windowed layers score a query against min(i + 1, w) keys, not i + 1 (Longformer §3.1).
        2.0 * crate::input::attention_window::attended_keys_sum(model, seq_len, causal)
            * f64::from(model.heads)
            * (d_qk + d_v)
    } else {
        2.0 * f64::from(model.layers)
            * f64::from(seq_len)
            * f64::from(model.heads)
            * (d_qk + d_v)
            * causal_factor
    };
    // An MTP module's decoder layer attends over the whole sequence like a full layer
    // (Megatron counts it as one more layer: num_layers + mtp_num_layers).
    let mtp_attention_forward =
        2.0 * mtp * f64::from(seq_len) * f64::from(model.heads) * (d_qk + d_v) * causal_factor;
    let attention_forward = attention_forward + mtp_attention_forward;
    // The output layer multiplies every token by the V × h matrix (tied or not), once for the
    // main model and once per MTP module.
    let output_forward = 2.0 * head_params * (1.0 + mtp) * scale;
    // Each token runs top-k routed experts per MoE layer: 2 FLOPs per active expert parameter.
    let routed_expert_forward = model.moe.as_ref().map_or(0.0, |m| {
        let per_expert = pb.routed_experts_per_layer as f64 / f64::from(m.routed_experts.max(1));
        2.0 * f64::from(m.experts_per_token)
            * per_expert
            * (pb.moe_layers + pb.mtp_moe_layers()) as f64
            * scale
    });
    let mtp_forward = 2.0 * pb.mtp_active() as f64 * scale;
    let mtp_routed_expert_forward = model.moe.as_ref().map_or(0.0, |m| {
        let per_expert = pb.routed_experts_per_layer as f64 / f64::from(m.routed_experts.max(1));
        2.0 * f64::from(m.experts_per_token) * per_expert * pb.mtp_moe_layers() as f64 * scale
    });
    FlopsPerToken {
        matmul_params,
        dense_forward: 2.0 * matmul_params,
        attention_forward,
        output_forward: output_forward.min(2.0 * matmul_params),
        routed_expert_forward: routed_expert_forward.min(2.0 * matmul_params),
        mtp_forward: mtp_forward.min(2.0 * matmul_params),
        mtp_attention_forward: mtp_attention_forward.min(attention_forward),
        mtp_routed_expert_forward: mtp_routed_expert_forward.min(mtp_forward),
    }
}

/// HBM bytes of one FP8 cast per element: one read of the BF16 tensor (2 B) and one
/// write of its FP8 copy (1 B). Delayed scaling takes the scale from the amax history,
/// so the amax of the tensor is recorded in the same pass: one read per quantization
/// (Transformer Engine docs, features/low_precision_training/fp8_delayed_scaling: "reduces tensor
/// reads per quantization from two to one"; Micikevicius et al. 2022, "FP8 Formats for Deep
/// Learning", per-tensor scaling of GEMM inputs).
pub const FP8_CAST_BYTES_PER_ELEMENT: f64 = 2.0 + 1.0;

/// What the FP8 recipe adds to a step besides the faster GEMMs: the casts of the
/// linear layers' GEMM inputs to FP8, for the whole model.
#[derive(Clone, Debug, PartialEq)]
pub struct Fp8Casts {
    /// Activation elements per token the forward FP8 GEMMs read: `Σ K` over every
    /// linear layer's `K × N` weight (the input `X` of each fprop GEMM).
    pub forward_elements_per_token: f64,
    /// Gradient elements per token the backward FP8 GEMMs read: `Σ N` (the `dY`
    /// of each dgrad GEMM; wgrad reuses the FP8 copies of `X` and `dY`).
    pub backward_elements_per_token: f64,
    /// FP8 linear-layer weights outside the routed experts (split over tp·pp).
    pub dense_weights: f64,
    /// Routed-expert weights (split over ep·expert_tp·pp, [`crate::parallel::fold`]).
    pub expert_weights: f64,
}

impl Fp8Casts {
    /// The FP8 GEMMs of `model` under Transformer Engine's recipe: QKV (or the MLA
    /// projections), attention output, and the FFN/expert projections of every layer;
    /// not the LM head or the embedding, and not attention's own matmuls.
    pub fn of(model: &ModelSpec) -> Self {
        let h = f64::from(model.hidden);
        // (Σ K, Σ N) of the linear GEMMs of one attention block and of each FFN kind: QKV (or
        // the MLA projections, DeepSeek-V2 §2.1.2), the output projection, fc1 (gate and up
        // fused) and fc2.
        let dense = layer_ops(model, false);
        let (attn_k, attn_n) = dense.fused_gemm_widths(Owner::Attention);
        let (dense_k, dense_n) = dense.fused_gemm_widths(Owner::DenseFfn);
        let pb = model.param_breakdown();
        let (dense_layers, moe_layers) = (pb.dense_layers as f64, pb.moe_layers as f64);
        // Each token runs its top-k routed experts and the shared ones.
        let (moe_k, moe_n) = match &model.moe {
            Some(_) => {
                let moe = layer_ops(model, true);
                let (shared_k, shared_n) = moe.fused_gemm_widths(Owner::SharedExpert);
                let (routed_k, routed_n) = moe.fused_gemm_widths(Owner::RoutedExpert);
                (shared_k + routed_k, shared_n + routed_n)
            }
            None => (0.0, 0.0),
        };
        // MTP modules: one more layer of the model's kind each, and the `2h → h` projection
        // (a Transformer Engine linear in Megatron's MTP spec).
        let mtp = pb.mtp_modules as f64;
        let mtp_moe = pb.mtp_moe_layers() as f64;
        let (dense_layers, moe_layers) = (dense_layers + mtp - mtp_moe, moe_layers + mtp_moe);
        let layers = dense_layers + moe_layers;
        let scale = model.param_scale();
        let experts = pb.routed_experts_total() as f64;
        // The router stays outside Transformer Engine (Megatron's TopKRouter): not FP8.
        let linear = (pb.layers_total() + pb.mtp_total()
            - pb.norms_per_layer * (pb.dense_layers + pb.moe_layers + pb.mtp_modules)
            - pb.mtp_norms_per_module * pb.mtp_modules
            - pb.router_per_layer * (pb.moe_layers + pb.mtp_moe_layers()))
            as f64;
        Fp8Casts {
            forward_elements_per_token: layers * attn_k
                + dense_layers * dense_k
                + moe_layers * moe_k
                + mtp * 2.0 * h,
            backward_elements_per_token: layers * attn_n
                + dense_layers * dense_n
                + moe_layers * moe_n
                + mtp * h,
            dense_weights: (linear - experts).max(0.0) * scale,
            expert_weights: experts * scale,
        }
    }
}

/// Exposed seconds of a per-unit gather (or gather + reduce-scatter) of one micro-batch:
/// `c_u + (U − 1)·max(0, c_u − t_u)`, with `c_u = comm_s/U`, `t_u = compute_s/U`, `U = units`.
///
/// PyTorch FSDP notes ("FSDP Prefetch Nuances") and Zhao et al. 2023 §3.3: unit k+1's
/// all-gather overlaps unit k's compute (one unit prefetched), and the first all-gather
/// cannot overlap anything; so the first unit's transfer is exposed whole and each later
/// unit exposes what its transfer exceeds one unit's compute. Exact for equal units: the
/// step is `max(U·c_u + t_u, c_u + U·t_u)`, the link or the compute stream being busy. In
/// backward `c_u` is a gather plus a reduce-scatter: the first unit's gather (fill) and the
/// last unit's reduce-scatter (drain, after the last backward) are the exposed `c_u`.
pub fn unit_exposed_s(comm_s: f64, compute_s: f64, units: f64) -> f64 {
    let u = units.max(1.0);
    let c_u = comm_s / u;
    let t_u = compute_s / u;
    c_u + (u - 1.0) * (c_u - t_u).max(0.0)
}

/// Seconds of one step by component; no strings, so the search can make millions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSeconds {
    /// Forward + backward compute time over all micro-batches (one stage), FP8 casts included.
    pub compute: f64,
    /// Of which recomputation.
    pub recompute: f64,
    /// Communication not hidden, by [`GroupKind::index`].
    pub exposed_comm: [f64; 8],
    /// Pipeline bubble.
    pub bubble: f64,
    /// Optimizer step (HBM-bound).
    pub optimizer: f64,
    /// Of `compute`, the FP8 cast passes (activations per micro-batch, weights once per step).
    #[serde(default)]
    pub fp8_casts: f64,
    /// Of `compute`, the memory-bound ops ([`crate::time::elementwise`]): layer ops forward,
    /// backward and recomputed, and the cross-entropy.
    #[serde(default)]
    pub memory_bound: f64,
    /// Offload transfers and the CPU optimizer step ([`crate::input::offload`]), not overlapped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offload: f64,
    /// Step time.
    pub total: f64,
    /// Micro-batches per step.
    pub micro_batches: f64,
}

/// "on" or "off", for the explanations.
fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Serde: a zero offload time is left out, so results without offload read as before.
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl StepSeconds {
    /// All exposed communication.
    pub fn exposed_comm_total(&self) -> f64 {
        self.exposed_comm.iter().sum()
    }
}

/// Where an input of a prediction came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSource {
    /// Input key ("gemm_efficiency", "all_reduce.inter_node", ...).
    pub key: String,
    /// True when measured (a calibration), false when a preset or default was assumed.
    pub measured: bool,
}

/// Full evaluation of one layout: seconds, rates and their explanations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCost {
    /// The component seconds.
    pub seconds: StepSeconds,
    /// Every communication item, before overlap.
    pub comms: Vec<CommItem>,
    /// Tokens per step.
    pub tokens_per_step: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilisation.
    pub mfu: f64,
    /// Hardware FLOPs utilisation (recompute counted).
    pub hfu: f64,
    /// GEMM efficiency used.
    pub gemm_efficiency: f64,
    /// Explanations (values in seconds or as the key says).
    pub terms: Vec<Term>,
    /// Which inputs were measured and which assumed.
    pub inputs: Vec<InputSource>,
}

/// Everything of the time model that does not depend on the layout.
#[derive(Clone, Debug, PartialEq)]
pub struct StepModel {
    /// Communication inputs.
    pub comm_inputs: CommInputs,
    /// HBM bytes the optimizer step moves per parameter it updates
    /// ([`crate::input::precision::Precision::optimizer_step_bytes`]).
    pub optimizer_step_bytes_per_param: f64,
    /// Link parameters.
    pub comm: CommModel,
    /// FLOPs per token.
    pub flops: FlopsPerToken,
    /// Peak dense rate of the compute dtype, FLOP/s (the linear-layer GEMMs; MFU's denominator).
    pub peak_flops_per_s: f64,
    /// Peak BF16 rate, FLOP/s: attention, and the GEMMs FP8 does not cover (LM head).
    pub bf16_flops_per_s: f64,
    /// Multiplies the GEMM curve for the GEMMs that run at `peak_flops_per_s`: 1 for BF16;
    /// under FP8, the share of its peak an FP8 GEMM reaches relative to a BF16 GEMM's
    /// ([`crate::input::gpu_traits::ComputeShares::fp8_gemm_relative_to_bf16`]).
    pub peak_gemm_efficiency_ratio: f64,
    /// Share of the datasheet tensor rates (BF16 and FP8) the GPU sustains at the power limit
    /// it runs at ([`crate::input::gpu_traits::ComputeShares::tensor_fraction_at_power_limit`]):
    /// multiplies the GEMMs' and attention's rates, not HBM-bound work; MFU keeps the
    /// datasheet peak. A measured GEMM curve ([`StepModel::with_calibration`]) already holds
    /// the device's clocks, so the GEMMs then take it as measured (attention still scaled).
    pub tensor_fraction_at_power_limit: f64,
    /// The FP8 casts, when the linear layers run in FP8; `None` for BF16.
    pub fp8: Option<Fp8Casts>,
    /// HBM bytes per element of one FP8 cast of a GEMM input: [`FP8_CAST_BYTES_PER_ELEMENT`]
    /// plus the transposed copy where the GPU's FP8 GEMMs are TN-only
    /// ([`crate::input::gpu_traits::ComputeShares::fp8_transpose_bytes_per_element`]).
    pub fp8_cast_bytes_per_element: f64,
    /// HBM bandwidth, bytes/s.
    pub hbm_bytes_per_s: f64,
    /// Share of `hbm_bytes_per_s` streaming kernels reach: the GPU's own measured figure
    /// ([`crate::input::gpu_traits::ComputeShares::hbm_stream_fraction`]), else
    /// `CostOptions::hbm_achievable_fraction`.
    pub hbm_achievable_fraction: f64,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// Options.
    pub options: CostOptions,
    /// GEMM efficiency curve came from a measurement.
    pub gemm_measured: bool,
    /// Hidden size.
    pub hidden: f64,
    /// Expert FFN width `f_e` and routed experts `E` (0 for dense models).
    pub expert_shape: (f64, f64),
    /// Parameters the optimizer updates: Ψ, or the LoRA adapters only.
    pub params: f64,
    /// LoRA/QLoRA adapter terms ([`crate::input::finetune`]); `None` for full training.
    pub adapters: Option<AdapterTime>,
    /// Offload's transfers and CPU optimizer ([`crate::input::offload`]).
    pub offload: crate::time::offload::OffloadTime,
    /// Memory-bound traffic per token ([`crate::time::elementwise`]); zero when switched off.
    pub memory_bound: MemoryBoundBytes,
    /// Fused (flash) attention kernels, whose rate falls with a short sequence
    /// ([`crate::input::attention_length`]); off: the scores go through HBM as GEMMs and
    /// softmax ops, priced by the memory-bound list.
    pub flash_attention: bool,
    /// The op list the memory-bound traffic follows (never the framework default).
    pub kernels: Kernels,
    /// Which communication overlaps compute ([`crate::input::overlap`], framework defaults applied).
    pub overlap: AppliedOverlap,
    /// What "selective" recompute repeats under torchtitan, whose selective is its per-op
    /// policy ([`crate::input::sac_policy`]); `None` elsewhere (Korthikanti's selective).
    pub op_sac: Option<OpSacRecompute>,
}

/// torchtitan's per-op selective checkpointing, as the backward repeats it
/// ([`crate::input::sac_policy`]): the dense layers' unsaved matmuls and every op outside its
/// save list (the element-wise ops and the FP8 casts); not the SDPA, whose output is saved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpSacRecompute {
    /// Forward FLOPs per token of the unsaved matmuls the backward needs, over all dense
    /// layers, without TP.
    pub matmul_flops_per_token: f64,
    /// The same under TP, where the row-parallel mm's reduce-scatter output is saved instead.
    pub matmul_flops_per_token_tp: f64,
    /// Share of the decoder layers that are dense (the policy's op order); MoE and MLA layers
    /// keep Korthikanti's selective recompute, as the memory model does.
    pub dense_share: f64,
}

impl OpSacRecompute {
    /// The policy's recompute for `model` when `framework` runs it; `None` otherwise.
    pub fn of(model: &ModelSpec, framework: Framework) -> Option<Self> {
        if framework != Framework::Torchtitan {
            return None;
        }
        let per_layer = |tp| crate::input::sac_policy::recomputed_matmul_flops_per_token(model, tp);
        let pb = model.param_breakdown();
        let layers = (pb.dense_layers + pb.moe_layers).max(1) as f64;
        let all = pb.dense_layers as f64 * model.param_scale();
        Some(OpSacRecompute {
            matmul_flops_per_token: per_layer(false)? * all,
            matmul_flops_per_token_tp: per_layer(true)? * all,
            dense_share: pb.dense_layers as f64 / layers,
        })
    }

    /// [`OpSacRecompute::matmul_flops_per_token`] at tensor-parallel degree `tp`.
    pub fn matmul_flops_at(&self, tp: u32) -> f64 {
        if tp > 1 {
            self.matmul_flops_per_token_tp
        } else {
            self.matmul_flops_per_token
        }
    }
}

/// Seconds as milliseconds, one decimal ("12.3 ms").
fn ms(seconds: f64) -> String {
    format!("{:.1} ms", seconds * 1e3)
}

/// One micro-batch on the pacing stage, seconds ([`StepModel::seconds_with`]'s stages).
#[derive(Clone, Copy)]
struct MicroBatchSeconds {
    /// Forward, with the LM head and loss when the pacing stage holds them.
    forward_s: f64,
    /// Backward: dgrad + wgrad, or dgrad only on frozen weights.
    backward_s: f64,
    /// What recompute repeats.
    recompute_s: f64,
    /// The forward's dense GEMMs (what TP's pipelined collectives hide behind).
    dense_forward_s: f64,
    /// The attention cores, forward and backward (3 × forward).
    attention_s: f64,
    /// FP8 casts of the forward.
    fp8_cast_forward_s: f64,
    /// FP8 casts of the backward.
    fp8_cast_backward_s: f64,
    /// FP8 casts recompute repeats.
    fp8_recast_s: f64,
    /// Memory-bound ops, forward, backward and recomputed.
    memory_bound_s: f64,
}

/// Communication left exposed by the overlaps, seconds.
struct Exposure {
    /// Per group over the step (indexed by [`GroupKind::index`]).
    exposed: [f64; 8],
    /// On one micro-batch's critical path.
    per_mb_critical_s: f64,
    /// After the pipeline drains (the last gradient bucket, the first gathers).
    after_pipeline_s: f64,
}

impl StepModel {
    /// The time model every view of `scenario` uses: [`StepModel::new`], with the
    /// scenario's calibration applied when the user switched measured numbers on.
    pub fn for_scenario(model: &ModelSpec, scenario: &Scenario, options: CostOptions) -> Self {
        let step = StepModel::new(model, scenario, options);
        match scenario.calibration.as_ref().filter(|m| m.enabled) {
            Some(measured) => step.with_calibration(&measured.summary),
            None => step,
        }
    }

    /// Builds the layout-independent part from a scenario and its resolved model.
    pub fn new(model: &ModelSpec, scenario: &Scenario, options: CostOptions) -> Self {
        let gpu = &scenario.cluster.gpu;
        let fp8 = scenario.precision.compute == ComputeDtype::Fp8 && gpu.fp8_flops_per_s > 0.0;
        // NVFP4 GEMMs on FP4 tensor cores where the part has them, else the BF16 rate.
        let fp4 = (scenario.precision.compute == ComputeDtype::Fp4)
            .then(|| gpu.traits().sheet.native_fp4_flops_per_s(true))
            .flatten();
        let peak = match (fp4, fp8) {
            (Some(rate), _) => rate,
            (None, true) => gpu.fp8_flops_per_s,
            (None, false) => gpu.bf16_flops_per_s,
        };
        let shares = &gpu.traits().compute;
        let adapters = AdapterTime::of(model, &scenario.training.finetune);
        // The default curve is an H100-class BF16 figure: GPUs whose measured BF16 share of peak
        // is lower reach proportionally less (`bf16_gemm_relative_to_h100`, ml-engineering MAMF).
        let mut options = options;
        options.gemm.max_fraction *= shares.bf16_gemm_relative_to_h100;
        StepModel {
            optimizer_step_bytes_per_param: scenario.precision.optimizer_step_bytes(),
            comm_inputs: CommInputs::new(
                model,
                &scenario.precision,
                &scenario.training,
                &scenario.overheads,
            ),
            comm: CommModel::assumed(&scenario.cluster),
            flops: flops_per_token(
                model,
                scenario.training.seq_len,
                options.causal_attention_flops,
            ),
            peak_flops_per_s: peak,
            bf16_flops_per_s: gpu.bf16_flops_per_s,
            // ml-engineering's MAMF table: FP8 GEMMs reach a smaller share of their peak than
            // BF16 GEMMs on the same GPU (H100 SXM 70.9% against 80.3%).
            peak_gemm_efficiency_ratio: if fp8 {
                shares.fp8_gemm_relative_to_bf16
            } else {
                1.0
            },
            // A power limit below the datasheet's lowers the SM clock: torchtitan's 500 W H100
            // sits between the vendor's SXM and NVL ratings (input/power_limit.rs).
            tensor_fraction_at_power_limit: shares.tensor_fraction_at_power_limit,
            fp8: fp8.then(|| Fp8Casts::of(model)),
            // Hopper keeps each FP8 GEMM operand in both layouts (TN-only FP8 GEMMs).
            fp8_cast_bytes_per_element: FP8_CAST_BYTES_PER_ELEMENT
                + shares.fp8_transpose_bytes_per_element,
            hbm_bytes_per_s: gpu.hbm_bytes_per_s,
            hbm_achievable_fraction: shares
                .hbm_stream_fraction
                .unwrap_or(options.hbm_achievable_fraction),
            gpus_per_node: scenario.cluster.gpus_per_node,
            gemm_measured: false,
            hidden: f64::from(model.hidden),
            expert_shape: model.moe.as_ref().map_or((0.0, 0.0), |m| {
                (f64::from(m.expert_ffn), f64::from(m.routed_experts))
            }),
            params: adapters.map_or_else(|| model.params(), |a| a.adapter_params),
            adapters,
            offload: crate::time::offload::OffloadTime::of(scenario),
            memory_bound: if options.memory_bound_ops {
                MemoryBoundBytes::of(
                    model,
                    scenario.training.seq_len,
                    scenario.activations.flash_attention,
                    scenario.overheads.kernels,
                    scenario.overheads.framework,
                )
            } else {
                MemoryBoundBytes::default()
            },
            flash_attention: scenario.activations.flash_attention,
            kernels: scenario
                .overheads
                .kernels
                .applied(scenario.overheads.framework),
            overlap: scenario
                .overheads
                .overlap
                .applied(scenario.overheads.framework),
            op_sac: OpSacRecompute::of(model, scenario.overheads.framework),
            options,
        }
    }

    /// A rank holds more than one routed expert (`E > ep`): Megatron's dispatcher sorts the
    /// received tokens by local expert (token_dispatcher.py, `num_local_experts > 1`).
    pub fn local_expert_sort(&self, layout: &Layout) -> bool {
        self.expert_shape.1 > f64::from(layout.ep.max(1))
    }

    /// The load Megatron's sort by local expert runs at: the busiest EP rank's
    /// ([`CommInputs::expert_load`]) where a rank sorts ([`StepModel::local_expert_sort`]), else 0.
    pub fn local_sort_load(&self, layout: &Layout) -> f64 {
        if self.local_expert_sort(layout) {
            self.comm_inputs.expert_load(layout)
        } else {
            0.0
        }
    }

    /// Achievable HBM bandwidth for streaming (memory-bound) kernels, bytes/s.
    pub fn hbm_streaming_bytes_per_s(&self) -> f64 {
        (self.hbm_bytes_per_s * self.hbm_achievable_fraction.clamp(1e-3, 1.0)).max(1.0)
    }

    /// What the power limit leaves of the tensor rates for attention and other tensor work the
    /// GEMM curve does not cover ([`StepModel::tensor_fraction_at_power_limit`]).
    pub fn tensor_power_fraction(&self) -> f64 {
        self.tensor_fraction_at_power_limit.clamp(1e-3, 1.0)
    }

    /// What the power limit leaves of the tensor rates for the GEMMs priced by the GEMM curve:
    /// 1 when the curve was measured (its clocks are the device's own), else
    /// [`StepModel::tensor_power_fraction`].
    pub fn gemm_power_fraction(&self) -> f64 {
        if self.gemm_measured {
            1.0
        } else {
            self.tensor_power_fraction()
        }
    }

    /// Memory-bound seconds of one micro-batch on one GPU of an even stage, before the
    /// pacing scale: (forward, backward, what selective recompute repeats, loss forward, loss
    /// backward). Per layer, `tokens/cp · L/pp · bytes(tp, sp) / BW`; the loss is
    /// `tokens/cp · V/tp · bytes / BW` on the last stage, spread as `1/pp` like the LM head.
    pub fn memory_bound_seconds(&self, layout: &Layout) -> [f64; 5] {
        let mb = &self.memory_bound;
        let bw = self.hbm_streaming_bytes_per_s();
        let tp = f64::from(layout.tp.max(1));
        let pp = f64::from(layout.pp.max(1));
        let tokens = f64::from(layout.micro_batch.max(1)) * self.comm_inputs.seq_len
            / f64::from(layout.cp.max(1));
        let (fwd, bwd) = mb.per_layer(tp, layout.sequence_parallel, self.local_sort_load(layout));
        // MTP modules run their decoder layer's element-wise ops too, spread like the LM head.
        let layers =
            (f64::from(self.comm_inputs.layers) + f64::from(self.comm_inputs.mtp_layers)) / pp;
        let per = |bytes: f64| tokens * layers * bytes / bw;
        let loss = |bytes: f64| tokens * bytes / tp / pp / bw;
        [
            per(fwd),
            per(bwd),
            per(mb.scores_fwd / tp),
            loss(mb.loss_fwd),
            loss(mb.loss_bwd),
        ]
    }

    /// Parameters whose optimizer step one GPU of the pacing stage runs: Ψ over TP·PP and,
    /// under ZeRO, over DP·CP (as `seconds` counts the HBM-bound step).
    fn optimizer_partition_params(
        &self,
        layout: &Layout,
        pace: &crate::input::stage_split::StagePace,
    ) -> f64 {
        let sharded_over = match layout.zero {
            ZeroStage::Ddp => 1.0,
            _ => f64::from(layout.dp.max(1)) * f64::from(layout.cp.max(1)),
        };
        let tp_pp = f64::from(layout.tp.max(1)) * f64::from(layout.pp.max(1));
        self.params / tp_pp / sharded_over * pace.layer_scale
    }

    /// Forward seconds per micro-batch on one GPU of the adapters' GEMMs, of QLoRA's
    /// dequantization of the base weights (repeated in backward) and of DoRA's weight norm
    /// (forward only); zeros for full training.
    fn adapter_seconds(&self, layout: &Layout, per_gpu_tokens: f64) -> (f64, f64, f64) {
        let Some(a) = &self.adapters else {
            return (0.0, 0.0, 0.0);
        };
        // Hu et al. 2021 §4.1: x·Aᵀ·Bᵀ costs 2·Ψ_A FLOPs per token; both GEMMs have the rank r
        // as one dimension, so they run at the GEMM curve's efficiency for r.
        let rate = self.peak_flops_per_s.max(1.0)
            * self.peak_gemm_efficiency_ratio
            * self.gemm_power_fraction()
            * self.options.gemm.at(a.rank).max(1e-3);
        let adapter_f = per_gpu_tokens * 2.0 * a.active_adapter_params / rate;
        let pp = f64::from(layout.pp.max(1));
        let dense = a.quantized_dense_params / (f64::from(layout.tp.max(1)) * pp);
        let experts = a.quantized_expert_params / (f64::from(layout.ep.max(1)) * pp);
        // bitsandbytes MatMul4Bit.forward dequantizes each NF4 weight before its GEMM, once per
        // micro-batch: memory-bound, DEQUANT_BYTES_PER_PARAM of HBM traffic per parameter.
        let dequant =
            (dense + experts) * DEQUANT_BYTES_PER_PARAM / self.hbm_streaming_bytes_per_s();
        // DoRA's weight norm, recomputed every forward (time/adapters.rs `dora_norm_bytes`).
        let dora = a.dora_norm_bytes
            / (f64::from(layout.tp.max(1)) * pp)
            / self.hbm_streaming_bytes_per_s();
        (adapter_f, dequant, dora)
    }

    /// The share of the long-sequence attention rate a fused attention call reaches over one
    /// rank's query tokens: the sequence over CP (a context-parallel rank's kernels run on its
    /// chunk; FlashAttention-3, Figure 5, [`crate::input::attention_length`]); 1 without
    /// flash attention.
    pub fn attention_length_share(&self, layout: &Layout) -> f64 {
        if !self.flash_attention {
            return 1.0;
        }
        let chunk = self.comm_inputs.seq_len / f64::from(layout.cp.max(1));
        crate::input::attention_length::attention_length_share(chunk)
    }

    /// GEMM efficiency for a layout: the smallest of the tokens a rank multiplies
    /// per micro-batch (`b·s/cp`) and the TP-split hidden size (`h/tp`).
    pub fn gemm_efficiency(&self, layout: &Layout) -> f64 {
        let tokens = f64::from(layout.micro_batch.max(1)) * self.comm_inputs.seq_len
            / f64::from(layout.cp.max(1));
        let split = self.hidden / f64::from(layout.tp.max(1));
        self.options.gemm.at(tokens.min(split))
    }

    /// GEMM efficiency of the routed experts' GEMMs on the busiest EP rank: the smaller of the
    /// tokens one of its experts multiplies per micro-batch and its expert-TP-split width
    /// `f_e/expert_tp`. Tokens per expert: the rank's mean routed pairs
    /// ([`crate::input::moe_routing::assignments_per_rank`]) over its `E/ep` experts, times
    /// the busiest rank's load ([`CommInputs::expert_load`]). A grouped GEMM runs each group
    /// at a dense GEMM's rate for the group's shape: DeepGEMM's H800 FP8 tables (README at
    /// 327ec92) give 1346 TFLOP/s for 8 groups of M 4096, N 4096, K 7168 against 1410 for one
    /// 4096 × 4096 × 7168 GEMM, and 1214 against 1168 at N 7168, K 2048.
    pub fn expert_gemm_efficiency(&self, layout: &Layout) -> f64 {
        let (fe, experts) = self.expert_shape;
        let etp = f64::from(layout.expert_tp.max(1));
        let pairs = crate::input::moe_routing::assignments_per_rank(
            self.comm_inputs.routed_tokens_per_rank(layout),
            layout.expert_tp,
            self.comm_inputs.experts_per_token,
        );
        let tokens_expert = pairs * f64::from(layout.ep.max(1)) / experts.max(1.0)
            * self.comm_inputs.expert_load(layout);
        self.options.gemm.at(tokens_expert.min(fe / etp))
    }

    /// Placement of a layout's groups on this cluster.
    pub fn placement(&self, layout: &Layout) -> Placement {
        Placement::of(layout, self.gpus_per_node, self.options.rank_order)
    }

    /// Component seconds for `layout` with its groups at `placement`, paced by its slowest
    /// stage ([`StepModel::pacing`]). No allocation.
    pub fn seconds(&self, layout: &Layout, placement: &Placement) -> StepSeconds {
        self.pacing(layout, placement).1
    }

    /// The stage that paces `layout`'s step, with the step it gives: the stage with the most
    /// counted work ([`CommInputs::pace`]) or, where another stage holds more MoE layers
    /// ([`crate::input::stage_split::StageSplit::pace_rival`]), whichever of the two is
    /// slower. Narayanan et al. 2021 §2.2: a pipeline's steady state runs at its slowest
    /// stage's rate, and an MoE layer's all-to-alls and smaller expert GEMMs make it slower
    /// than the layer count says.
    pub fn pacing(
        &self,
        layout: &Layout,
        placement: &Placement,
    ) -> (crate::input::stage_split::StagePace, StepSeconds) {
        let (pace, _, seconds) = self.paced(layout, placement);
        (pace, seconds)
    }

    /// The communication items of `layout`'s step, as its pacing stage ([`StepModel::pacing`])
    /// runs them.
    pub fn step_comms(
        &self,
        layout: &Layout,
        placement: &Placement,
    ) -> crate::time::comms::StepComms {
        self.paced(layout, placement).1
    }

    /// [`StepModel::pacing`] with the winning stage's communication items, built once per
    /// candidate stage (evaluate needs all three; the items are a fixed array, no allocation).
    fn paced(
        &self,
        layout: &Layout,
        placement: &Placement,
    ) -> (
        crate::input::stage_split::StagePace,
        crate::time::comms::StepComms,
        StepSeconds,
    ) {
        let priced = |pace: crate::input::stage_split::StagePace| {
            let comms = step_comms_paced(&self.comm_inputs, layout, placement, &self.comm, &pace);
            let seconds = self.seconds_with(layout, comms.iter(), &pace);
            (pace, comms, seconds)
        };
        let counted = priced(self.comm_inputs.pace(layout));
        match self.comm_inputs.pace_rival(layout).map(priced) {
            Some(rival) if rival.2.total > counted.2.total => rival,
            _ => counted,
        }
    }

    /// [`StepModel::seconds`] with the layout's pacing stage ([`CommInputs::pace`]) already
    /// resolved (the mesh search resolves it once per PP, virtual stages and split).
    pub fn seconds_paced(
        &self,
        layout: &Layout,
        placement: &Placement,
        pace: &crate::input::stage_split::StagePace,
    ) -> StepSeconds {
        let comms = step_comms_paced(&self.comm_inputs, layout, placement, &self.comm, pace);
        self.seconds_with(layout, comms.iter(), pace)
    }

    /// [`StepModel::seconds_paced`] with the layout's communication items already built, in
    /// [`step_comms_paced`]'s order (the mesh search builds their data-parallel and
    /// model-parallel parts once for the candidates that share them and passes them
    /// [`crate::time::comms::chained`]).
    pub fn seconds_with<'c>(
        &self,
        layout: &Layout,
        comms: impl IntoIterator<Item = &'c CommItem>,
        pace: &crate::input::stage_split::StagePace,
    ) -> StepSeconds {
        let inp = &self.comm_inputs;
        let m = inp.micro_batches(layout);
        let pp = f64::from(layout.pp.max(1));
        let shards = f64::from(layout.tp.max(1)) * f64::from(layout.cp.max(1)) * pp;
        let hbm = self.hbm_streaming_bytes_per_s();
        let mb = self.micro_batch_seconds(layout, pace);
        let MicroBatchSeconds {
            forward_s: t_f,
            backward_s: t_b,
            recompute_s: t_rc,
            fp8_cast_forward_s: cast_f,
            fp8_cast_backward_s: cast_b,
            fp8_recast_s: recast,
            memory_bound_s: memory_bound_mb,
            ..
        } = mb;
        let Exposure {
            exposed,
            per_mb_critical_s: per_mb_critical,
            after_pipeline_s: after_pipeline,
        } = self.exposed_comms(layout, comms, m, &mb);
        let t_mb = t_f + t_b + t_rc + per_mb_critical;
        let ideal = m * t_mb;
        // Overhead relative to ideal time, not the idle share (pipeline.rs names both).
        let m_whole = u32::try_from(m.round() as u64).unwrap_or(u32::MAX);
        let bubble = crate::parallel::pipeline::bubble(
            layout.schedule,
            layout.pp.max(1),
            m_whole,
            layout.virtual_stages.max(1),
        )
        .overhead_vs_ideal
            * ideal;
        let pp_exposed = exposed[GroupKind::Pp.index()];

        let sharded_over = match layout.zero {
            ZeroStage::Ddp => 1.0,
            _ => f64::from(layout.dp.max(1)) * f64::from(layout.cp.max(1)),
        };
        // The optimizer of every stage runs at once: the pacing stage's share (1 when even).
        let params_local =
            self.params / (shards / f64::from(layout.cp.max(1))) / sharded_over * pace.layer_scale;
        // Offload (crate::input::offload): the CPU steps the optimizer instead, after the transfers.
        let offload = self.offload.seconds(layout.zero, params_local, m).total_s;
        let optimizer = if self.offload.moves_optimizer(layout.zero) {
            0.0
        } else {
            params_local * self.optimizer_step_bytes_per_param / hbm
        };
        // TE casts each weight to FP8 on the first micro-batch of a step and reuses the copy (TE user
        // guide, examples/advanced_optimizations "FP8 weight caching"; Megatron passes is_first_microbatch).
        let weight_cast = match &self.fp8 {
            None => 0.0,
            Some(c) => {
                let stage = pp * f64::from(layout.tp.max(1));
                // MoE parallel folding (Liu et al. 2025 §3): a rank holds routed/(EP·ETP) per stage.
                let experts = pp * f64::from(layout.ep.max(1)) * f64::from(layout.expert_tp.max(1));
                (c.dense_weights / stage + c.expert_weights / experts)
                    * pace.layer_scale
                    * self.fp8_cast_bytes_per_element
                    / hbm
            }
        };
        let total =
            ideal + bubble + pp_exposed + after_pipeline + optimizer + weight_cast + offload;
        StepSeconds {
            compute: m * (t_f + t_b + t_rc) + weight_cast,
            recompute: m * t_rc,
            exposed_comm: exposed,
            bubble,
            optimizer,
            fp8_casts: m * (cast_f + cast_b + recast) + weight_cast,
            memory_bound: m * memory_bound_mb,
            offload,
            total,
            micro_batches: m,
        }
    }

    /// One micro-batch on the pacing stage: forward, backward and recompute, the dense GEMMs,
    /// the attention cores, FP8 casts and memory-bound ops (seconds).
    fn micro_batch_seconds(
        &self,
        layout: &Layout,
        pace: &crate::input::stage_split::StagePace,
    ) -> MicroBatchSeconds {
        let inp = &self.comm_inputs;
        let b = f64::from(layout.micro_batch.max(1));
        let pp = f64::from(layout.pp.max(1));
        let shards = f64::from(layout.tp.max(1)) * f64::from(layout.cp.max(1)) * pp;
        // The GEMMs at the compute dtype's peak, FP8's lower achievable share applied
        // (`peak_gemm_efficiency_ratio`) and what the power limit leaves of the tensor rates
        // (`gemm_power_fraction`); MFU keeps the datasheet peak.
        let gemm_power = self.gemm_power_fraction();
        let peak = self.peak_flops_per_s.max(1.0) * self.peak_gemm_efficiency_ratio * gemm_power;
        let bf16 = self.bf16_flops_per_s.max(1.0) * gemm_power;
        let hbm = self.hbm_streaming_bytes_per_s();
        let eff = self.gemm_efficiency(layout);
        let gemm_rate = peak * eff;
        // FlashAttention-2/3 run QKᵀ and P·V in BF16: TE's DotProductAttention stays BF16 under FP8
        // unless fp8_dpa is set (DelayedScaling, transformer_engine/common/recipe: default False).
        let attn_rate = self.bf16_flops_per_s.max(1.0)
            * self.tensor_power_fraction()
            * self.options.attention_efficiency.clamp(1e-3, 1.0)
            * self.attention_length_share(layout);
        let tokens_mb = b * inp.seq_len;
        // One stage's share of one micro-batch: the model's work split over tp·cp·pp GPUs.
        let per_gpu = tokens_mb / shards;
        let attn_f = per_gpu * self.flops.attention_forward / attn_rate;
        // Memory-bound ops of the op list (time/elementwise.rs), forward and backward apart.
        let [elem_f, elem_b, elem_sel, loss_f, loss_b] = self.memory_bound_seconds(layout);
        // Routed experts at their own GEMM shape (expert_gemm_efficiency), on the busiest EP
        // rank's tokens, which every rank waits for at the combine (CommInputs::expert_load);
        // 0 for dense models.
        let experts_fwd = self.flops.routed_expert_forward;
        let experts_s = if experts_fwd > 0.0 {
            experts_fwd * inp.expert_load(layout) / (peak * self.expert_gemm_efficiency(layout))
        } else {
            0.0
        };
        let (dense_f, cast_f, cast_b) = match &self.fp8 {
            None => (
                per_gpu * ((self.flops.dense_forward - experts_fwd) / gemm_rate + experts_s),
                0.0,
                0.0,
            ),
            Some(c) => {
                // Megatron-Core's output layer is its own ColumnParallelLinear, not a TE module:
                // the LM head runs BF16 (megatron/core/models/gpt/gpt_model.py).
                let lm = self.flops.output_forward;
                let dense = (self.flops.dense_forward - lm - experts_fwd) / gemm_rate
                    + lm / (bf16 * eff)
                    + experts_s;
                // Per FP8 GEMM input, one BF16 read + one FP8 write (FP8_CAST_BYTES_PER_ELEMENT),
                // and on Hopper the transposed FP8 copy wgrad/dgrad read (fp8_cast_bytes_per_element).
                let bytes = self.fp8_cast_bytes_per_element;
                let cast = |elements: f64| per_gpu * elements * bytes / hbm;
                (
                    per_gpu * dense,
                    cast(c.forward_elements_per_token),
                    cast(c.backward_elements_per_token),
                )
            }
        };
        // The LM head's GEMM runs BF16 under FP8 (see above), at the GEMM rate otherwise.
        let head_rate = if self.fp8.is_some() {
            bf16 * eff
        } else {
            gemm_rate
        };
        let head_f = per_gpu * self.flops.output_forward / head_rate;
        // Of the pacing stage's forward, the LM head's GEMM: spread over the stages on the
        // averaged stage, whole on the last stage when it paces, none on another.
        let head_on_stage = if pace.even {
            head_f
        } else if pace.output {
            pp * head_f
        } else {
            0.0
        };
        // The pacing stage (stage_split.rs): the stage with the most work per micro-batch sets
        // the pace of every schedule's steady state and of its bubble (Narayanan et al. 2021
        // §2.2: the bubble is (p − 1) stage times; with unequal stages the slowest one's).
        // Its decoder layers scale the per-layer work; the LM head is on it only when it is the
        // last stage, where it runs for the stage's whole share (× pp) rather than 1/pp of it.
        let (dense_f, attn_f, elem_f, cast_f, cast_b, elem_b, elem_sel, loss_f, loss_b) =
            if pace.even {
                (
                    dense_f, attn_f, elem_f, cast_f, cast_b, elem_b, elem_sel, loss_f, loss_b,
                )
            } else {
                // MTP modules sit on the last stage with the head (Megatron's layout `mL`): their
                // matmuls (routed experts at the expert rate) and attention cores run there whole.
                let mtp_experts = self.flops.mtp_routed_expert_forward;
                let mtp_f = per_gpu
                    * ((self.flops.mtp_forward - mtp_experts).max(0.0) / gemm_rate
                        + if experts_fwd > 0.0 {
                            experts_s * mtp_experts / experts_fwd
                        } else {
                            0.0
                        });
                let mtp_attn = per_gpu * self.flops.mtp_attention_forward / attn_rate;
                let on_stage = if pace.output {
                    pp * (head_f + mtp_f)
                } else {
                    0.0
                };
                let attn_on = if pace.output { pp * mtp_attn } else { 0.0 };
                // The cross-entropy runs where the LM head does.
                let loss_on = if pace.output { pp } else { 0.0 };
                let k = pace.layer_scale;
                (
                    (dense_f - head_f - mtp_f).max(0.0) * k + on_stage,
                    (attn_f - mtp_attn).max(0.0) * k + attn_on,
                    elem_f * k,
                    cast_f * k,
                    cast_b * k,
                    elem_b * k,
                    elem_sel * k,
                    loss_f * loss_on,
                    loss_b * loss_on,
                )
            };
        // LoRA adapters and QLoRA dequantization run per decoder layer, so they pace with it too.
        let (adapter_f, dequant, dora) = self.adapter_seconds(layout, per_gpu);
        let per_layer = if pace.even { 1.0 } else { pace.layer_scale };
        let t_f =
            dense_f + attn_f + elem_f + loss_f + cast_f + (adapter_f + dequant + dora) * per_layer;
        // Backward: dgrad + wgrad = 2 × the forward's FLOPs, the op list's backward traffic, dY's casts.
        let t_b = match &self.adapters {
            None => 2.0 * (dense_f + attn_f) + elem_b + loss_b + cast_b,
            // Frozen base weights: dgrad only (≈ 2N·tokens, no wgrad), the attention core and
            // element-wise backward unchanged; adapters dgrad + wgrad; QLoRA dequantizes again
            // (bitsandbytes MatMul4Bit.backward calls dequantize_4bit).
            Some(_) => {
                dense_f + 2.0 * attn_f + elem_b + loss_b + cast_b + 2.0 * adapter_f + dequant
            }
        };
        // Per micro-batch, what recompute repeats: (all of it, of which memory-bound, of which
        // FP8 casts).
        let (t_rc, rc_memory_bound, recast) = match (layout.recompute, self.op_sac) {
            (Recompute::None, _) => (0.0, 0.0, 0.0),
            // torchtitan's selective is its per-op policy (input/sac_policy.rs): on the dense
            // layers the unsaved matmuls at the GEMM rate, every element-wise op and FP8 cast of
            // the forward again, the SDPA not (its output is saved); other layers as Korthikanti's.
            (Recompute::Selective, Some(p)) => {
                let d = p.dense_share;
                let matmuls = per_gpu * p.matmul_flops_at(layout.tp) / gemm_rate * per_layer;
                (
                    matmuls + d * (elem_f + cast_f) + (1.0 - d) * (attn_f + elem_sel),
                    d * elem_f + (1.0 - d) * elem_sel,
                    d * cast_f,
                )
            }
            // Korthikanti et al. 2022 §5: selective recomputes the attention core only (with the
            // scores' softmax and dropout when they are materialised).
            (Recompute::Selective, None) => (attn_f + elem_sel, elem_sel, 0.0),
            // Full recompute repeats the layers' forward, not the LM head and loss outside them:
            // Megatron-Core checkpoints the TransformerBlock's layers (`_checkpointed_forward`,
            // megatron/core/transformer/transformer_block.py), the output layer runs after it;
            // torchtitan's full AC wraps each TransformerBlock, not `model.output`.
            (Recompute::Full, _) => (t_f - loss_f - head_on_stage, elem_f, cast_f),
        };
        let memory_bound_mb = elem_f + elem_b + loss_f + loss_b + rc_memory_bound;
        let t_attn = 3.0 * attn_f;
        MicroBatchSeconds {
            forward_s: t_f,
            backward_s: t_b,
            recompute_s: t_rc,
            dense_forward_s: dense_f,
            attention_s: t_attn,
            fp8_cast_forward_s: cast_f,
            fp8_cast_backward_s: cast_b,
            fp8_recast_s: recast,
            memory_bound_s: memory_bound_mb,
        }
    }

    /// The communication exposed beyond what overlaps it: per group over the step, on each
    /// micro-batch's critical path, and after the pipeline drains (seconds).
    fn exposed_comms<'c>(
        &self,
        layout: &Layout,
        comms: impl IntoIterator<Item = &'c CommItem>,
        m: f64,
        mb: &MicroBatchSeconds,
    ) -> Exposure {
        let MicroBatchSeconds {
            forward_s: t_f,
            backward_s: t_b,
            recompute_s: t_rc,
            dense_forward_s: dense_f,
            attention_s: t_attn,
            ..
        } = *mb;
        let mut exposed = [0.0f64; 8];
        let mut per_mb_critical = 0.0;
        let mut after_pipeline = 0.0;
        // ZeRO-3 backward: the unit's all-gather and reduce-scatter cross the same link, so
        // their times add before they are set against one unit's backward (after the loop).
        let (mut unit_bwd_s, mut unit_bwd_units, mut unit_bwd_group) = (0.0, 1.0, 0);
        // TP collectives pipelined with their GEMMs (when switched on), summed first: they
        // share one micro-batch's GEMM time.
        let mut tp_pipelined_s = 0.0;
        // EP all-to-alls under Megatron's combined 1F1B (when switched on and the layout allows
        // it, input/overlap.rs `ep_overlap_blocker`), summed first: priced per micro-batch below.
        let ep_paired =
            self.overlap.ep_comm && crate::input::overlap::ep_overlap_blocker(layout).is_none();
        let mut ep_paired_s = 0.0;
        // Sum items by overlap class and group first (an item class may appear twice).
        for item in comms {
            let s = item.seconds_per_step;
            let g = item.group.index();
            if item.overlap == Overlap::EachUnitBackward {
                unit_bwd_s += s;
                unit_bwd_units = item.chunks_per_call;
                unit_bwd_group = g;
                continue;
            }
            // An overlap switched off (input/overlap.rs): Megatron then reduces gradients after
            // the backward (finalize_model_grads) and gathers parameters before the forward, so
            // the collective is on the critical path whole.
            let switched_off = match item.purpose {
                Purpose::GradAllReduce
                | Purpose::GradReduceScatter
                | Purpose::ExpertGradAllReduce => !self.overlap.grad_reduce,
                Purpose::ParamAllGather => !self.overlap.param_gather,
                _ => false,
            };
            if switched_off {
                if item.overlap == Overlap::EachBackward {
                    per_mb_critical += s / m;
                } else {
                    after_pipeline += s;
                }
                exposed[g] += s;
                continue;
            }
            if ep_paired && item.group == GroupKind::Ep && item.overlap == Overlap::None {
                ep_paired_s += s;
                continue;
            }
            if self.overlap.tp_comm && item.group == GroupKind::Tp && item.overlap == Overlap::None
            {
                tp_pipelined_s += s;
                continue;
            }
            let e = match item.overlap {
                Overlap::None => {
                    let hidden = match item.group {
                        GroupKind::Tp => self.options.tp_overlap_fraction,
                        _ => 0.0,
                    };
                    let e = s * (1.0 - hidden.clamp(0.0, 1.0));
                    if item.group != GroupKind::Pp {
                        per_mb_critical += e / m;
                    }
                    e
                }
                Overlap::Attention => {
                    let e = (s / m - t_attn).max(0.0) * m;
                    per_mb_critical += e / m;
                    e
                }
                Overlap::EachForward => {
                    let e = m * unit_exposed_s(s / m, t_f, item.chunks_per_call);
                    per_mb_critical += e / m;
                    e
                }
                Overlap::EachUnitBackward => 0.0,
                Overlap::EachBackward => {
                    let last = s / (m * item.chunks_per_call);
                    let e = (s / m - t_b).max(last) * m;
                    per_mb_critical += e / m;
                    e
                }
                Overlap::LastBackward => {
                    // The last bucket cannot overlap: it is reduced after backward ends.
                    let last = s / (item.calls_per_step * item.chunks_per_call);
                    let e = (s - t_b).max(last);
                    after_pipeline += e;
                    e
                }
                Overlap::FirstForward => {
                    let e = (s - t_f).max(0.0);
                    after_pipeline += e;
                    e
                }
            };
            // What overlap hid still costs a share of its time (SMs and HBM taken by NCCL).
            let interference = overlap_interference_s(s - e, self.options.overlap_slowdown);
            match item.overlap {
                Overlap::LastBackward | Overlap::FirstForward => after_pipeline += interference,
                _ => per_mb_critical += interference / m,
            }
            exposed[g] += e + interference;
        }
        if unit_bwd_s > 0.0 {
            let e = m * unit_exposed_s(unit_bwd_s / m, t_b + t_rc, unit_bwd_units);
            let interference =
                overlap_interference_s(unit_bwd_s - e, self.options.overlap_slowdown);
            per_mb_critical += (e + interference) / m;
            exposed[unit_bwd_group] += e + interference;
        }
        if tp_pipelined_s > 0.0 {
            // Transformer Engine's userbuffers comm-GEMM overlap (Megatron --tp-comm-overlap):
            // each TP collective is split into tp chunks, each chunk's transfer pipelined with the
            // GEMM chunk it feeds (Wang et al. 2022, "Overlap Communication with Dependent
            // Computation via Decomposition", ASPLOS, §3): per micro-batch the exposed time is
            // max(comm − GEMM, comm/tp), the first chunk never hiding.
            let gemm_mb = dense_f
                * match layout.recompute {
                    Recompute::Full => 4.0,
                    _ => 3.0,
                };
            let comm_mb = tp_pipelined_s / m;
            let e_mb = (comm_mb - gemm_mb).max(comm_mb / f64::from(layout.tp.max(1)));
            let interference =
                overlap_interference_s(comm_mb - e_mb, self.options.overlap_slowdown);
            per_mb_critical += e_mb + interference;
            exposed[GroupKind::Tp.index()] += m * (e_mb + interference);
        }
        if ep_paired_s > 0.0 {
            // Megatron --overlap-moe-expert-parallel-comm (pipeline_parallel/combined_1f1b.py):
            // one micro-batch's forward runs beside another's backward, "EP A2A in forward step is
            // hidden by the attention/mlp computation in the backward step, and vice versa"; the
            // first forward and the last backward run alone. With pp > 1 the interleaved
            // schedule's warm-up chunk steps run alone too, as many cool-down ones: schedules.py
            // num_warmup_microbatches = (pp − 1)·2 + (v − 1)·pp + 1 under this overlap (first rank).
            let pp_f = f64::from(layout.pp.max(1));
            let v = f64::from(layout.virtual_stages.max(1));
            let alone_steps = if layout.pp > 1 {
                (pp_f - 1.0) * 2.0 + (v - 1.0) * pp_f + 1.0
            } else {
                1.0
            };
            let alone = (alone_steps / (m * v)).clamp(0.0, 1.0);
            let comm_mb = ep_paired_s / m;
            // Of the 4 all-to-alls per MoE layer and micro-batch, dispatch and combine of the
            // forward are 2 (hidden by the other's backward), those of the backward 2 (by its forward).
            let half = comm_mb / 2.0;
            let paired_mb = (half - (t_b + t_rc)).max(0.0) + (half - t_f).max(0.0);
            let e_mb = alone * comm_mb + (1.0 - alone) * paired_mb;
            let interference =
                overlap_interference_s(comm_mb - e_mb, self.options.overlap_slowdown);
            per_mb_critical += e_mb + interference;
            exposed[GroupKind::Ep.index()] += m * (e_mb + interference);
        }
        Exposure {
            exposed,
            per_mb_critical_s: per_mb_critical,
            after_pipeline_s: after_pipeline,
        }
    }

    /// Every input of the time model and whether it was measured: the peak rate
    /// (datasheet), the GEMM curve, and each operation on each link.
    pub fn input_sources(&self) -> Vec<InputSource> {
        let mut out = vec![
            InputSource {
                key: "peak_flops".into(),
                measured: false,
            },
            InputSource {
                key: "gemm_efficiency".into(),
                measured: self.gemm_measured,
            },
        ];
        for op in crate::time::collectives::Collective::ALL {
            for domain in [
                crate::time::collectives::LinkDomain::IntraNode,
                crate::time::collectives::LinkDomain::InterNode,
            ] {
                out.push(InputSource {
                    key: format!("{}.{}", op.id(), domain.id()),
                    measured: self.comm.is_measured(op, domain),
                });
            }
        }
        out
    }

    /// Tokens per step.
    pub fn tokens_per_step(&self) -> f64 {
        self.comm_inputs.global_batch * self.comm_inputs.seq_len
    }

    /// Model FLOPs utilisation of a step that took `seconds` on `gpus`.
    pub fn mfu(&self, seconds: f64, gpus: f64) -> f64 {
        self.tokens_per_step() * self.flops.model() / (gpus * self.peak_flops_per_s * seconds)
    }

    /// How the stages' work is counted, for the compute term: balanced, or the pacing stage.
    fn stage_balance(
        &self,
        layout: &Layout,
        pace: &crate::input::stage_split::StagePace,
    ) -> String {
        if pace.even && !layout.stage_split.is_even() {
            return "Balanced stages (the stage split does not fit this model's layers and pp × v, see the rules)".into();
        }
        if pace.even {
            return "Balanced stages".into();
        }
        let sh = crate::input::stage_split::SplitShape::new(
            self.comm_inputs.layers,
            layout.pp,
            layout.virtual_stages,
        );
        format!(
            "{} stages ({}): stage {} sets the pace with {} decoder layers{} ({:.3} × the average stage's layers; LM head ≈ {:.2} layers)",
            if layout.stage_split.is_even() { "Equal-layer" } else { "Uneven" },
            layout.stage_split.describe(sh),
            pace.rank,
            pace.layers,
            if pace.output { " and the LM head" } else { "" },
            pace.layer_scale,
            self.comm_inputs.head_layers
        )
    }

    /// Hardware FLOPs per token under `recompute`: [`FlopsPerToken::hardware`], except that
    /// torchtitan's selective repeats its unsaved matmuls rather than the attention core
    /// ([`OpSacRecompute`]).
    pub fn hardware_flops_per_token(&self, recompute: Recompute, tp: u32) -> f64 {
        match (recompute, self.op_sac) {
            (Recompute::Selective, Some(p)) => {
                self.flops.model()
                    + p.matmul_flops_at(tp)
                    + (1.0 - p.dense_share) * self.flops.attention_forward
            }
            _ => self.flops.hardware(recompute),
        }
    }

    /// The compute term: GEMMs, attention, memory-bound ops, FP8 casts and recompute.
    fn compute_term(
        &self,
        layout: &Layout,
        pace: &crate::input::stage_split::StagePace,
        s: &StepSeconds,
    ) -> Term {
        let eff = self.gemm_efficiency(layout);
        Term {
            key: "time.compute".into(),
            label: "Compute".into(),
            unit: Unit::Seconds,
            value: s.compute,
            formula: "m · b·s/(tp·cp·pp) · 3 · ((2N − F_head − F_exp)/(peak·eff_gemm) + F_exp·load/(peak·eff_expert) + F_head/(peak_bf16·eff_gemm) + F_attn/(peak_bf16·eff_attn·share_len(s/cp)) + bytes_elem/HBM) + FP8 casts + recompute (peak = peak_bf16, or peak_fp8 · r_fp8 under FP8: r_fp8 the FP8-over-BF16 achievable share, ml-engineering MAMF table)".into(),
            worked: format!(
                "{} micro-batches × {} tokens over {} GPUs per replica, GEMMs {:.0} TFLOP/s × {:.2}{}, attention and LM head at BF16 {:.0} TFLOP/s (attention × {:.2} × {:.2} for {}-token calls, FlashAttention-3 Fig. 5){} = {} (of which recompute {})",
                s.micro_batches,
                f64::from(layout.micro_batch) * self.comm_inputs.seq_len,
                u64::from(layout.tp) * u64::from(layout.cp) * u64::from(layout.pp),
                self.peak_flops_per_s / 1e12,
                eff,
                // Only a model with routed experts has expert GEMMs to rate.
                if self.comm_inputs.expert_params > 0.0 {
                    format!(
                        " (routed experts × {:.2}, on the busiest EP rank's {:.3}× the mean tokens: {})",
                        self.expert_gemm_efficiency(layout),
                        self.comm_inputs.expert_load(layout),
                        self.comm_inputs.moe_routing.describe()
                    )
                } else {
                    String::new()
                },
                self.bf16_flops_per_s / 1e12,
                self.options.attention_efficiency,
                self.attention_length_share(layout),
                (self.comm_inputs.seq_len / f64::from(layout.cp.max(1))).round(),
                if self.tensor_power_fraction() < 1.0 {
                    format!(
                        ", tensor rates × {:.3} at the power limit (GEMMs × {:.3})",
                        self.tensor_power_fraction(),
                        self.gemm_power_fraction()
                    )
                } else {
                    String::new()
                },
                ms(s.compute),
                ms(s.recompute)
            ),
            assumption: format!(
                "{}; backward = 2 × forward FLOPs; GEMM efficiency {} by the smallest GEMM dimension; memory-bound ops as the term below prices them{}",
                self.stage_balance(layout, pace),
                if self.gemm_measured { "measured" } else { "assumed" },
                if self.tensor_power_fraction() < 1.0 {
                    "; the power limit lowers the SM clock: tensor work runs at the share of the datasheet rates the vendor's ratings give that board power (input/power_limit.rs), HBM-bound work at the HBM figure"
                } else {
                    ""
                },
            ),
        }
    }

    /// The communication terms: each group's exposed time, then the ZeRO-3 units not hidden.
    fn comm_terms(
        &self,
        layout: &Layout,
        comms: &crate::time::comms::StepComms,
        s: &StepSeconds,
        terms: &mut Vec<Term>,
    ) {
        for kind in GroupKind::ALL {
            let e = s.exposed_comm[kind.index()];
            let raw: f64 = comms
                .iter()
                .filter(|i| i.group == kind)
                .map(|i| i.seconds_per_step)
                .sum();
            if raw > 0.0 {
                terms.push(Term {
                    key: format!("time.comm.{}", kind.id()),
                    label: format!("Exposed {} communication", kind.id()),
                    unit: Unit::Seconds,
                    value: e,
                    formula: "steps·α + bytes·factor(n)/busbw, minus what overlaps".into(),
                    worked: format!("{} of {} total", ms(e), ms(raw)),
                    assumption: format!(
                        "{COMM_TIME_ASSUMPTION}; overlap (input/overlap.rs): TP comm {}, gradient reduce {}, parameter gather {}, EP all-to-all {}",
                        on_off(self.overlap.tp_comm),
                        on_off(self.overlap.grad_reduce),
                        on_off(self.overlap.param_gather),
                        match (
                            self.overlap.ep_comm,
                            crate::input::overlap::ep_overlap_blocker(layout)
                        ) {
                            (true, Some(why)) => format!("off ({why})"),
                            (on, _) => on_off(on).to_string(),
                        }
                    ),
                });
            }
        }
        // ZeRO-3 per-unit overlap (unit_exposed_s: PyTorch FSDP notes, Zhao et al. 2023 §3.3), seconds.
        let per_unit = |o: Overlap| -> (f64, f64) {
            comms
                .iter()
                .filter(|i| i.overlap == o)
                .fold((0.0, 1.0), |(t, _), i| {
                    (t + i.seconds_per_step, i.chunks_per_call)
                })
        };
        let (fwd_s, units) = per_unit(Overlap::EachForward);
        let (bwd_s, bwd_units) = per_unit(Overlap::EachUnitBackward);
        if fwd_s + bwd_s > 0.0 {
            let m = s.micro_batches.max(1.0);
            let t_f = (s.compute - s.recompute) / (3.0 * m);
            let t_bwd = 2.0 * t_f + s.recompute / m;
            let e_f = m * unit_exposed_s(fwd_s / m, t_f, units);
            let e_b = m * unit_exposed_s(bwd_s / m, t_bwd, bwd_units);
            terms.push(Term {
                key: "time.comm.zero3_units".into(),
                label: "ZeRO-3 gathers and reduce-scatters not hidden (seconds)".into(),
                unit: Unit::Seconds,
                value: e_f + e_b,
                formula: "m · Σ_{fwd, bwd} [c_u + (U−1)·max(0, c_u − t_u)], c_u = comm per unit (bwd: all-gather + reduce-scatter), t_u = compute per unit".into(),
                worked: format!(
                    "m = {m}, U = {units}: forward c_u {} vs t_u {} → {}; backward c_u {} vs t_u {} → {}",
                    ms(fwd_s / (m * units)),
                    ms(t_f / units),
                    ms(e_f),
                    ms(bwd_s / (m * bwd_units)),
                    ms(t_bwd / bwd_units),
                    ms(e_b)
                ),
                assumption: "One layer per unit, one unit prefetched, the first gather and the last reduce-scatter of each micro-batch exposed; gradients reduce-scattered every micro-batch (no deferred sync); DeepSpeed under full recompute also gathers for the recomputed forward, and DeepSpeed of 2021 moves each call no faster than its per-parameter gather path (time/deepspeed_zero3.rs); before the overlap slowdown".into(),
            });
        }
    }

    /// The memory-bound ops' term: the op list's bytes per token at HBM speed.
    fn memory_bound_term(&self, layout: &Layout, s: &StepSeconds) -> Term {
        let mb = &self.memory_bound;
        let (fwd, bwd) = mb.per_layer(
            f64::from(layout.tp.max(1)),
            layout.sequence_parallel,
            self.local_sort_load(layout),
        );
        Term {
            key: "time.memory_bound".into(),
            label: "Memory-bound ops (of compute)".into(),
            unit: Unit::Seconds,
            value: s.memory_bound,
            formula: "m · b·s/cp · [L/pp · (bytes_fwd + bytes_bwd [+ recomputed]) + V/(tp·pp) · bytes_loss] / (HBM · achievable)".into(),
            worked: format!(
                "{} op list: {:.0} + {:.0} B per token per layer on one GPU (tp {}, sequence parallel {}), loss {:.0} B per token over the vocabulary, at {:.2} TB/s = {}",
                self.kernels.label(),
                fwd,
                bwd,
                layout.tp,
                if layout.sequence_parallel { "on" } else { "off" },
                mb.loss_fwd + mb.loss_bwd,
                self.hbm_streaming_bytes_per_s() / 1e12,
                ms(s.memory_bound)
            ),
            assumption: format!(
                "Norms, activations, residual adds, RoPE, copies and (without flash attention) softmax and dropout over the scores, each reading and writing HBM once per op (time/elementwise.rs cites each); hidden-width ops replicated over TP without sequence parallel (Korthikanti et al. 2022 §4.2.2); HBM at {:.0}% of the datasheet",
                self.hbm_achievable_fraction * 100.0
            ),
        }
    }

    /// Full evaluation with explanations.
    pub fn evaluate(&self, layout: &Layout) -> StepCost {
        let placement = self.placement(layout);
        let (pace, comms, s) = self.paced(layout, &placement);
        let gpus = layout.world_size() as f64;
        let tokens = self.tokens_per_step();
        let mfu = self.mfu(s.total, gpus);
        let hfu = tokens * self.hardware_flops_per_token(layout.recompute, layout.tp)
            / (gpus * self.peak_flops_per_s * s.total);
        let eff = self.gemm_efficiency(layout);
        let mut terms = vec![
            self.compute_term(layout, &pace, &s),
            Term {
                key: "time.bubble".into(),
                label: "Pipeline bubble".into(),
                unit: Unit::Seconds,
                value: s.bubble,
                formula: "overhead_vs_ideal(schedule, p, m, v) × m · t_micro-batch".into(),
                worked: format!("{} × p={} m={} v={} = {}", layout.schedule.label(), layout.pp, s.micro_batches, layout.virtual_stages, ms(s.bubble)),
                assumption: "Overhead relative to ideal time ((p−1)/m, (p−1)/(v·m) interleaved; Narayanan et al. 2021)".into(),
            },
            Term {
                key: "time.optimizer".into(),
                label: "Optimizer step".into(),
                unit: Unit::Seconds,
                value: s.optimizer,
                formula: "local params × bytes moved / HBM bandwidth".into(),
                worked: ms(s.optimizer),
                assumption: format!(
                    "{} B of HBM traffic per local parameter",
                    self.optimizer_step_bytes_per_param
                ),
            },
        ];
        if s.memory_bound > 0.0 {
            terms.push(self.memory_bound_term(layout, &s));
        }
        if s.offload > 0.0 {
            let params_local = self.optimizer_partition_params(layout, &pace);
            let parts = self
                .offload
                .seconds(layout.zero, params_local, s.micro_batches);
            terms.push(self.offload.term(&parts, params_local));
        }
        if let Some(c) = &self.fp8 {
            // Transformer Engine docs, "FP8 Delayed Scaling": one read per quantization, the
            // amax recorded in the same pass; weights cast once per step ("FP8 weight caching").
            terms.push(Term {
                key: "time.fp8_casts".into(),
                label: "FP8 casts (of compute)".into(),
                unit: Unit::Seconds,
                value: s.fp8_casts,
                formula: "m · b·s/(tp·cp·pp) · (ΣK fwd + ΣN bwd [+ ΣK recomputed]) · c / HBM + (W_dense/(tp·pp) + W_experts/(ep·etp·pp)) · c / HBM, c = 3 B (+1 B transposed copy on Hopper)".into(),
                worked: format!(
                    "{:.3e} forward + {:.3e} backward elements per token, {:.3e} + {:.3e} weights, {} B each at {:.2} TB/s = {}",
                    c.forward_elements_per_token,
                    c.backward_elements_per_token,
                    c.dense_weights,
                    c.expert_weights,
                    self.fp8_cast_bytes_per_element,
                    self.hbm_streaming_bytes_per_s() / 1e12,
                    ms(s.fp8_casts)
                ),
                assumption: "Delayed scaling: each FP8 GEMM input (X forward, dY backward, each weight once per step) is read in BF16 and written in FP8, on Hopper also as its transposed FP8 copy (TN-only FP8 GEMMs: TE fp8_cast_transpose_fused, one pass); a transpose run as its own pass and casts fused into norms are not counted separately; split over tp like the other memory-bound work".into(),
            });
        }
        self.comm_terms(layout, &comms, &s, &mut terms);
        terms.push(Term {
            key: "rate.mfu".into(),
            label: "MFU".into(),
            unit: Unit::Fraction,
            value: mfu,
            formula: "tokens · 6N+12Lhs per token / (GPUs · peak · step time)".into(),
            worked: format!(
                "{:.3e} tokens · {:.3e} FLOP / ({} · {:.0} TFLOP/s · {:.3} s) = {:.1}%",
                tokens,
                self.flops.model(),
                gpus,
                self.peak_flops_per_s / 1e12,
                s.total,
                mfu * 100.0
            ),
            assumption: "Model FLOPs exclude recompute (HFU includes it); full s×s attention counted".into(),
        });
        terms.push(Term {
            key: "rate.hfu".into(),
            label: "HFU".into(),
            unit: Unit::Fraction,
            value: hfu,
            formula: "tokens · (model + recompute FLOPs per token) / (GPUs · peak · step time)"
                .into(),
            worked: format!(
                "{:.1}% with {} recompute",
                hfu * 100.0,
                layout.recompute.id()
            ),
            assumption: if self.op_sac.is_some() {
                "Selective is torchtitan's per-op policy: it repeats every second matmul of a dense layer (input/sac_policy.rs), not the attention core; full repeats the forward"
            } else {
                "Selective recompute repeats the attention core; full repeats the forward"
            }
            .into(),
        });
        terms.push(Term {
            key: "rate.tokens_per_s_per_gpu".into(),
            label: "Tokens/s per GPU".into(),
            unit: Unit::TokensPerSecond,
            value: tokens / s.total / gpus,
            formula: "global batch · seq / step time / GPUs".into(),
            worked: format!(
                "{tokens:.3e} / {:.3} s / {gpus} = {:.0}",
                s.total,
                tokens / s.total / gpus
            ),
            assumption: "Every GPU of the layout counted".into(),
        });
        // The inputs this layout used: peak, GEMM curve, and the links its items crossed.
        let mut inputs: Vec<InputSource> = self.input_sources().into_iter().take(2).collect();
        for item in comms.iter() {
            let key = format!("{}.{}", item.op.id(), item.domain.id());
            if !inputs.iter().any(|i| i.key == key) {
                inputs.push(InputSource {
                    key,
                    measured: item.measured,
                });
            }
        }
        StepCost {
            seconds: s,
            comms: comms.iter().copied().collect(),
            tokens_per_step: tokens,
            tokens_per_s_per_gpu: tokens / s.total / gpus,
            mfu,
            hfu,
            gemm_efficiency: eff,
            terms,
            inputs,
        }
    }
}

/// Which scaling is shown: the denominator every efficiency needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalingKind {
    /// Total work fixed (global batch constant) as GPUs grow.
    Strong,
    /// Work per GPU fixed (global batch grows with DP) as GPUs grow.
    Weak,
}

/// One point of a scaling curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    /// Data-parallel degree.
    pub dp: u32,
    /// GPUs.
    pub gpus: u64,
    /// Global batch (sequences).
    pub global_batch: u32,
    /// Step time, seconds.
    pub step_s: f64,
    /// Tokens per second, whole job.
    pub tokens_per_s: f64,
    /// Strong: `T_base·G_base / (T·G)`; weak: `T_base / T` (baseline: the first point).
    pub efficiency: f64,
}

/// A scaling curve and the baseline its efficiencies are relative to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalingCurve {
    /// Strong or weak.
    pub kind: ScalingKind,
    /// The denominator, in words: which point and what is held fixed.
    pub baseline: String,
    /// The points, baseline first.
    pub points: Vec<ScalingPoint>,
}

/// Scaling over data-parallel degrees with everything else of `scenario.layout`
/// fixed; the baseline is the first entry of `dp_values`.
pub fn scaling_curve(
    model: &ModelSpec,
    scenario: &Scenario,
    options: &CostOptions,
    kind: ScalingKind,
    dp_values: &[u32],
) -> ScalingCurve {
    let points = scaling(model, scenario, options, kind, dp_values);
    let baseline = match points.first() {
        None => "no points".to_string(),
        Some(b) => match kind {
            ScalingKind::Strong => format!(
                "strong scaling: global batch fixed at {} sequences; efficiency = (T·GPUs at dp {} on {} GPUs) / (T·GPUs)",
                b.global_batch, b.dp, b.gpus
            ),
            ScalingKind::Weak => format!(
                "weak scaling: {} sequences per data-parallel rank fixed; efficiency = T at dp {} on {} GPUs / T",
                f64::from(b.global_batch) / f64::from(b.dp.max(1)),
                b.dp,
                b.gpus
            ),
        },
    };
    ScalingCurve {
        kind,
        baseline,
        points,
    }
}

/// Points of [`scaling_curve`] (baseline: the first entry of `dp_values`).
pub fn scaling(
    model: &ModelSpec,
    scenario: &Scenario,
    options: &CostOptions,
    kind: ScalingKind,
    dp_values: &[u32],
) -> Vec<ScalingPoint> {
    let base_dp = dp_values.first().copied().unwrap_or(1).max(1);
    let base_batch = scenario.training.global_batch;
    let mut out: Vec<ScalingPoint> = Vec::with_capacity(dp_values.len());
    for &dp in dp_values {
        let dp = dp.max(1);
        let mut sc = scenario.clone();
        sc.layout.dp = dp;
        if kind == ScalingKind::Weak {
            let per = u64::from(base_batch) * u64::from(dp) / u64::from(base_dp);
            sc.training.global_batch = u32::try_from(per).unwrap_or(u32::MAX);
        }
        let model_t = StepModel::for_scenario(model, &sc, options.clone());
        let s = model_t.seconds(&sc.layout, &model_t.placement(&sc.layout));
        let gpus = sc.layout.world_size();
        let tokens_per_s = model_t.tokens_per_step() / s.total;
        let efficiency = match out.first() {
            None => 1.0,
            Some(b) => match kind {
                ScalingKind::Strong => b.step_s * b.gpus as f64 / (s.total * gpus as f64),
                ScalingKind::Weak => b.step_s / s.total,
            },
        };
        out.push(ScalingPoint {
            dp,
            gpus,
            global_batch: sc.training.global_batch,
            step_s: s.total,
            tokens_per_s,
            efficiency,
        });
    }
    out
}

/// Evaluates a scenario's own layout: resolves its model, applies `calibration`
/// when given, and returns the explained step cost. The scenario's own calibration
/// is not consulted (the page compares datasheet and measured this way);
/// [`StepModel::for_scenario`] is the model that honours it.
pub fn evaluate_scenario(
    scenario: &Scenario,
    options: CostOptions,
    calibration: Option<&crate::input::calibration::CalibrationSummary>,
) -> Result<StepCost, crate::resolve::presets::ScenarioError> {
    let model = scenario.model_spec()?;
    let mut step_model = StepModel::new(&model, scenario, options);
    if let Some(cal) = calibration {
        step_model = step_model.with_calibration(cal);
    }
    Ok(step_model.evaluate(&scenario.layout))
}

impl StepModel {
    /// This model with measured links and GEMM efficiency in place of the assumed ones.
    pub fn with_calibration(mut self, cal: &crate::input::calibration::CalibrationSummary) -> Self {
        self.comm.apply_calibration(cal);
        if let Some(g) = &cal.gemm {
            // The fit is relative to the peak it was measured against; rescale to ours.
            let scale = if self.peak_flops_per_s > 0.0 {
                g.peak_flops_per_s / self.peak_flops_per_s
            } else {
                1.0
            };
            self.options.gemm = GemmEfficiency {
                max_fraction: (g.efficiency.max_fraction * scale).clamp(1e-3, 1.0),
                half_dim: g.efficiency.half_dim,
            };
            self.gemm_measured = true;
        }
        self
    }
}
