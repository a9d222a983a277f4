//! Bytes per parameter for each category of model state, and the activation dtype.
//!
//! The categories are explicit because recipes differ: the article (ZeRO paper,
//! Rajbhandari et al. 2020 §3.1) counts 2 + 2 + 12 = 16 B; Megatron's distributed
//! optimizer keeps fp32 gradients (18 B); pure-BF16 recipes drop the fp32 master.

use serde::{Deserialize, Serialize};

use crate::input::number_format::NumberFormat;

/// Named precision/optimizer recipes; [`Precision::from_recipe`] gives their bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrecisionRecipe {
    /// BF16/FP16 weights and gradients, fp32 master + two fp32 Adam moments: 2 + 2 + 12 = 16 B.
    MixedAdam,
    /// As `MixedAdam` but gradients accumulated in fp32 (Megatron): 2 + 4 + 12 = 18 B.
    MixedAdamFp32Grads,
    /// BF16 weights and gradients, no fp32 master, fp32 moments: 2 + 2 + 8 = 12 B (the dtypes'
    /// sizes: a recipe a person picks, not a measured figure).
    Bf16NoMaster,
    /// FP8 compute copy of the weights beside a BF16 master, fp32 moments: 1 + 2 + 2 + 8 = 13 B
    /// (the dtypes' sizes, as for [`PrecisionRecipe::Bf16NoMaster`]).
    Fp8Bf16Master,
    /// Mixed precision with 8-bit Adam (Dettmers et al. 2022): 2 + 2 + 4 + 2 = 10 B.
    Adam8Bit,
    /// DeepSeek-V3-style block-scaled FP8 (Transformer Engine `Float8BlockScaling`: 128 × 128
    /// weight blocks, 1 × 128 activation tiles, FP32 scales): BF16 weights and their FP8 copy in
    /// both usages (TE's `Float8BlockQuantizer` for weights keeps rowwise and columnwise data,
    /// the Wᵀ of dgrad), fp32 moments: 2 + 2 × (1 + 4/16384) + 2 + 8 ≈ 14.0005 B.
    Fp8BlockBf16Master,
    /// MXFP8 (TE `MXFP8BlockScaling`, Blackwell): 32-element blocks along the reduction dim, so
    /// the weight's rowwise and columnwise MXFP8 copies differ (TE `MXFP8Quantizer` with both
    /// usages): 2 + 2 × (1 + 1/32) + 2 + 8 = 14.0625 B.
    Mxfp8Bf16Master,
    /// NVFP4 training (TE `NVFP4BlockScaling`; NVIDIA, "Pretraining Large Language Models with
    /// NVFP4", 2025: 16 × 16 2D weight blocks with E4M3 scales and an FP32 tensor scale, both
    /// usages): 2 + 2 × (0.5 + 1/256) + 2 + 8 ≈ 13.008 B; its GEMMs on FP4 tensor cores.
    Nvfp4Bf16Master,
    /// The model loaded in BF16 and trained without autocast: BF16 weights and gradients, and
    /// torch.optim.AdamW's moments in the parameters' dtype (torch/optim/adamw.py `_init_group`:
    /// `torch.zeros_like(p, memory_format=torch.preserve_format)`): 2 + 2 + 4 = 8 B.
    Bf16Pure,
}

impl PrecisionRecipe {
    /// All recipes, in display order.
    pub const ALL: [PrecisionRecipe; 9] = [
        PrecisionRecipe::MixedAdam,
        PrecisionRecipe::MixedAdamFp32Grads,
        PrecisionRecipe::Bf16NoMaster,
        PrecisionRecipe::Fp8Bf16Master,
        PrecisionRecipe::Fp8BlockBf16Master,
        PrecisionRecipe::Mxfp8Bf16Master,
        PrecisionRecipe::Nvfp4Bf16Master,
        PrecisionRecipe::Adam8Bit,
        PrecisionRecipe::Bf16Pure,
    ];

    /// Stable identifier used in links and the CLI.
    pub fn id(self) -> &'static str {
        match self {
            PrecisionRecipe::MixedAdam => "mixed-adam",
            PrecisionRecipe::MixedAdamFp32Grads => "mixed-adam-fp32-grads",
            PrecisionRecipe::Bf16NoMaster => "bf16-no-master",
            PrecisionRecipe::Fp8Bf16Master => "fp8-bf16-master",
            PrecisionRecipe::Fp8BlockBf16Master => "fp8-block-bf16-master",
            PrecisionRecipe::Mxfp8Bf16Master => "mxfp8-bf16-master",
            PrecisionRecipe::Nvfp4Bf16Master => "nvfp4-bf16-master",
            PrecisionRecipe::Adam8Bit => "adam-8bit",
            PrecisionRecipe::Bf16Pure => "bf16-pure",
        }
    }

    /// Parses [`PrecisionRecipe::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.id() == id)
    }

    /// Human-readable label.
    pub fn label(self) -> &'static str {
        match self {
            PrecisionRecipe::MixedAdam => "BF16 mixed precision, Adam (16 B/param, ZeRO paper)",
            PrecisionRecipe::MixedAdamFp32Grads => "BF16 + fp32 grads, Adam (18 B/param, Megatron)",
            PrecisionRecipe::Bf16NoMaster => "Pure BF16, no fp32 master (12 B/param)",
            PrecisionRecipe::Fp8Bf16Master => "FP8 compute, BF16 master (13 B/param)",
            PrecisionRecipe::Fp8BlockBf16Master => {
                "Block-scaled FP8 (DeepSeek-V3), BF16 master (14.0 B/param)"
            }
            PrecisionRecipe::Mxfp8Bf16Master => "MXFP8 (Blackwell), BF16 master (14.06 B/param)",
            PrecisionRecipe::Nvfp4Bf16Master => "NVFP4 (Blackwell), BF16 master (13.01 B/param)",
            PrecisionRecipe::Adam8Bit => "BF16 mixed precision, 8-bit Adam (10 B/param)",
            PrecisionRecipe::Bf16Pure => "Pure BF16, AdamW moments in BF16 (8 B/param)",
        }
    }
}

/// Compute dtype of the matrix multiplications (selects the GPU's peak rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeDtype {
    /// BF16/FP16 tensor cores.
    Bf16,
    /// FP8 tensor cores for the linear-layer GEMMs (fprop, dgrad, wgrad), as Transformer
    /// Engine runs them (`DelayedScaling`: `override_linear_precision` all False, `fp8_dpa`
    /// False); attention, the LM head and element-wise work stay BF16 (cost.rs).
    Fp8,
    /// NVFP4 tensor cores for the linear-layer GEMMs where the GPU has them (TE
    /// `NVFP4BlockScaling`; attention, norms, the router and the LM head stay BF16), else the
    /// BF16 rate ([`crate::input::number_format::NumberFormat::gemm_rate`]).
    Fp4,
}

/// Bytes per parameter for each model-state category, and bytes per activation value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precision {
    /// Recipe these bytes came from (bytes may have been edited since).
    pub recipe: PrecisionRecipe,
    /// Working weights used in forward/backward (incl. an FP8 copy if any).
    pub weight_bytes: f64,
    /// Gradients.
    pub grad_bytes: f64,
    /// Master weights kept by the optimizer (fp32 = 4, none = 0).
    pub master_bytes: f64,
    /// Optimizer moments (Adam fp32: 8; 8-bit Adam: 2).
    pub optimizer_bytes: f64,
    /// Bytes per saved activation value (BF16 = 2).
    pub activation_bytes: f64,
    /// Matrix-multiply dtype.
    pub compute: ComputeDtype,
}

impl Precision {
    /// The bytes of a named recipe.
    pub fn from_recipe(recipe: PrecisionRecipe) -> Self {
        let (weight_bytes, grad_bytes, master_bytes, optimizer_bytes, compute) = match recipe {
            PrecisionRecipe::MixedAdam => (2.0, 2.0, 4.0, 8.0, ComputeDtype::Bf16),
            PrecisionRecipe::MixedAdamFp32Grads => (2.0, 4.0, 4.0, 8.0, ComputeDtype::Bf16),
            PrecisionRecipe::Bf16NoMaster => (2.0, 2.0, 0.0, 8.0, ComputeDtype::Bf16),
            PrecisionRecipe::Fp8Bf16Master => (3.0, 2.0, 0.0, 8.0, ComputeDtype::Fp8),
            PrecisionRecipe::Fp8BlockBf16Master => (
                2.0 + 2.0 * NumberFormat::Fp8BlockWeight.bytes_per_element(),
                2.0,
                0.0,
                8.0,
                ComputeDtype::Fp8,
            ),
            PrecisionRecipe::Mxfp8Bf16Master => (
                2.0 + 2.0 * NumberFormat::Mxfp8.bytes_per_element(),
                2.0,
                0.0,
                8.0,
                ComputeDtype::Fp8,
            ),
            // 16 × 16 weight blocks: one E4M3 scale per 256 elements.
            PrecisionRecipe::Nvfp4Bf16Master => (
                2.0 + 2.0 * (0.5 + 1.0 / 256.0),
                2.0,
                0.0,
                8.0,
                ComputeDtype::Fp4,
            ),
            PrecisionRecipe::Adam8Bit => (2.0, 2.0, 4.0, 2.0, ComputeDtype::Bf16),
            PrecisionRecipe::Bf16Pure => (2.0, 2.0, 0.0, 4.0, ComputeDtype::Bf16),
        };
        Precision {
            recipe,
            weight_bytes,
            grad_bytes,
            master_bytes,
            optimizer_bytes,
            activation_bytes: 2.0,
            compute,
        }
    }

    /// Master weights plus optimizer moments: the ZeRO paper's "K" (12 for mixed Adam).
    pub fn optimizer_state_bytes(&self) -> f64 {
        self.master_bytes + self.optimizer_bytes
    }

    /// HBM bytes the optimizer step moves per parameter it updates. Adam reads the parameter
    /// it updates (the fp32 master, or the working weights without one), the gradient and both
    /// moments, and writes the parameter and both moments, in one pass (torch/optim/adam.py
    /// `_multi_tensor_adam`; apex and Transformer Engine `FusedAdam`); with a master, the working
    /// copy is then refreshed from it, one read of the master and one write of the copy
    /// (megatron/core/optimizer/optimizer.py `_copy_main_params_to_model_params`). Mixed Adam:
    /// 2·4 + 2 + 2·8 + (4 + 2) = 32 B.
    pub fn optimizer_step_bytes(&self) -> f64 {
        let has_master = self.master_bytes > 0.0;
        let updated = if has_master {
            self.master_bytes
        } else {
            self.weight_bytes
        };
        let refresh = if has_master {
            self.master_bytes + self.weight_bytes
        } else {
            0.0
        };
        2.0 * updated + self.grad_bytes + 2.0 * self.optimizer_bytes + refresh
    }

    /// All model-state bytes per parameter (16 for mixed Adam).
    pub fn model_state_bytes(&self) -> f64 {
        self.weight_bytes + self.grad_bytes + self.optimizer_state_bytes()
    }
}

impl Default for Precision {
    fn default() -> Self {
        Self::from_recipe(PrecisionRecipe::MixedAdam)
    }
}
