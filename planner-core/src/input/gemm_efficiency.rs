//! The GEMM efficiency curve: the fraction of peak a matrix multiply reaches as
//! a function of its smallest dimension. A calibration fits it; the step cost
//! ([`crate::time::cost`]) prices GEMMs with it. Each GPU preset states how its measured BF16
//! and FP8 GEMM shares stand against the curve
//! ([`crate::input::gpu_traits::ComputeShares`]).

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
