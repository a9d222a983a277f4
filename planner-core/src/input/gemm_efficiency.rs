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
    /// 989 TFLOP/s (0.8, domain notes); sustained training runs clock lower. `half_dim`
    /// 128 is an assumption until a calibration fits it.
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
