//! The GEMM efficiency curve: the fraction of peak a matrix multiply reaches as
//! a function of its smallest dimension. A calibration fits it; the step cost
//! ([`crate::time::cost`]) prices GEMMs with it.

use serde::{Deserialize, Serialize};

/// Fraction of peak a GEMM reaches as a function of its smallest dimension `d`:
/// `max_fraction · d / (d + half_dim)` (a saturating fit; `half_dim` is where
/// half of `max_fraction` is reached).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmEfficiency {
    /// Fraction of the datasheet peak that large GEMMs reach.
    pub max_fraction: f64,
    /// Smallest GEMM dimension at which half of `max_fraction` is reached.
    pub half_dim: f64,
}

impl Default for GemmEfficiency {
    /// 0.75 of peak for large GEMMs: an H200 here ran one large BF16 matmul at ~790 of
    /// 989 TFLOP/s (0.8, domain notes); sustained training runs clock lower. `half_dim` 128
    /// lies inside the range OpenXLA's measured H100 (sm_90) BF16 table gives for this curve
    /// (openxla/xla `xla/service/gpu/model/matmul_interpolator_data.h`, `kDefaultMatmulPTable`,
    /// batch 4, the two other dimensions 4096, against the 4096³ entry, 793 TFLOP/s): a small
    /// N of 512 and 1024 keeps 0.919 and 0.980 of it (half_dim ≈ 45), a small K of 256 and 512
    /// keeps 0.635 and 0.782 (half_dim ≈ 165); one curve over the smallest dimension cannot tell
    /// them apart. A calibration fits it for the user's own GPUs.
    fn default() -> Self {
        GemmEfficiency {
            max_fraction: 0.75,
            half_dim: 128.0,
        }
    }
}

impl GemmEfficiency {
    /// Efficiency for smallest dimension `d`.
    pub fn at(&self, d: f64) -> f64 {
        let d = d.max(1.0);
        (self.max_fraction * d / (d + self.half_dim.max(0.0))).clamp(1e-3, 1.0)
    }
}

/// The share of its BF16 datasheet peak a BF16 GEMM reaches on `gpu_id`, relative to the
/// share on the H100 SXM whose class of GPU the default curve ([`GemmEfficiency`]) was measured
/// on: the ratio of the two BF16 Maximum Achievable Matmul FLOPS fractions (stas00/ml-engineering
/// compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table", BF16,
/// mamf-finder.py). 1 for a GPU whose row is not lower there or not measured. A calibration's
/// fitted curve replaces the scaled default.
pub fn bf16_relative_gemm_efficiency(gpu_id: &str) -> f64 {
    match gpu_id {
        // AMD MI300X: 668.4 of 1300 TFLOPS (51.4%, torch 2.5.1+rocm6.3, PYTORCH_TUNABLEOP_ENABLED=1)
        // against the H100 SXM's 794.5 of 989 (80.3%).
        "mi300x" => 0.514 / 0.803,
        // AMD MI325X: 784.9 of 1300 (60.4%, torch 2.6.0+rocm6.2.4, PYTORCH_TUNABLEOP_ENABLED=1, 1000 W).
        "mi325x" => 0.604 / 0.803,
        // B200 SXM: 1745.0 of 2250 (77.6%, torch 2.7.1+cu128).
        "b200" => 0.776 / 0.803,
        // GB200: 1822.0 of 2500 (72.9%, torch 2.10.0.dev20250916+cu130).
        "gb200-nvl72" => 0.729 / 0.803,
        _ => 1.0,
    }
}

/// The share of its own datasheet peak an FP8 GEMM reaches, relative to the share a BF16
/// GEMM reaches on the same GPU: the ratio of the two measured Maximum Achievable Matmul
/// FLOPS fractions (stas00/ml-engineering compute/accelerator/README.md, "Maximum
/// Achievable Matmul FLOPS comparison table", mamf-finder.py, BF16 and `float8_e4m3fn`).
/// The GEMM curve ([`GemmEfficiency`]) is a BF16 figure; an FP8 GEMM runs at the curve
/// times this ratio. 1 for a GPU whose FP8 row is not measured there (or which has no FP8).
pub fn fp8_relative_gemm_efficiency(gpu_id: &str) -> f64 {
    match gpu_id {
        // H100 SXM: FP8 1402.6 of 1979 (70.9%), BF16 794.5 of 989 (80.3%). H800 and the
        // 96 GB HBM2e H100 are the same GH100 die; no row of their own.
        "h100-sxm" | "h800" | "h100-96gb" => 0.709 / 0.803,
        // H200 SXM: FP8 1453.4 of 1979 (73.4%); BF16 as the H100 SXM row ("H200 is the same").
        "h200" => 0.734 / 0.803,
        // B200 SXM: FP8 3432.5 of 4500 (76.3%), BF16 1745.0 of 2250 (77.6%).
        "b200" => 0.763 / 0.776,
        // GB200: FP8 3615.6 of 5000 (72.3%), BF16 1822.0 of 2500 (72.9%).
        "gb200-nvl72" => 0.723 / 0.729,
        // MI300X: the table's FP8 row is empty; Azure/AI-benchmarking-guide
        // Azure_Results/ND_MI300X_v5_results.md, "GEMM HipBLASLt" FP8: 1159.23 TFLOPS at
        // 8192³ of the datasheet's 2615 (44.3%), over the table's BF16 51.4%.
        "mi300x" => (1159.23 / 2615.0) / 0.514,
        _ => 1.0,
    }
}

/// HBM bytes per element that an FP8 GEMM input's second, transposed FP8 copy adds to its
/// cast on `gpu_id`: 1 (one more FP8 write) where FP8 GEMMs run in the TN layout only, 0
/// where any layout runs. Hopper's FP8 GEMMs are TN-only, so every FP8 operand is kept in
/// both layouts: Transformer Engine casts a linear layer's input with
/// `fp8_cast_transpose_fused` ("FP8 input for forward, FP8 input transpose for backward
/// wgrad", transformer_engine/pytorch/module/linear.py), its `dY` likewise in
/// `grad_output_preprocess`, and its weight into `weight_fp8` and `weight_t_fp8`;
/// transformer_engine/common/gemm/cublaslt_gemm.cu: "Hopper only supports TN GEMMs for FP8",
/// "Blackwell supports any GEMM layout for FP8" (cuBLAS docs, `cublasLtMatmul`: "A must be
/// transposed and B non-transposed (The "TN" format)"). The fused kernel writes the second
/// copy in the same pass (one BF16 read, two FP8 writes); a transpose run as its own pass
/// (`fp8_transpose`, TE's sequence-parallel and LayerNormLinear paths) reads 1 B more, which
/// this lower bound leaves out. torchao's Float8 training (torchtitan) keeps the second copy
/// too: torchao/float8/float8_linear.py casts `dY` and `X` again for grad_weight
/// (`grad_output_reshaped_maybe_fp8_dim1`), `torch._scaled_mm` taking its second operand
/// column-major. 0 for a GPU without FP8 or whose FP8 layout rule was not found
/// (MI300X, MI325X).
pub fn fp8_transpose_bytes_per_element(gpu_id: &str) -> f64 {
    match gpu_id {
        // Hopper (GH100): H100 SXM, the 96 GB HBM2e H100, H800, H200.
        "h100-sxm" | "h100-96gb" | "h800" | "h200" => 1.0,
        _ => 0.0,
    }
}
