//! The share of its datasheet tensor-core rates a GPU sustains at the power limit it runs at,
//! where that limit is below the one its datasheet rates are quoted for; every other GPU
//! sustains its datasheet rates (1). Each GPU preset states its share
//! ([`crate::input::gpu_traits::ComputeShares::tensor_fraction_at_power_limit`]): below 1 only
//! for the 96 GB HBM2e H100 at its default 500 W, whose preset carries the SXM's 700 W
//! datasheet peaks.
//!
//! The cap lowers the SM clock, so it slows the tensor-core work (GEMMs, attention) and not the
//! HBM-bound work: no measurement of HBM bandwidth under a power cap on these parts was found,
//! so memory-bound time keeps the GPU's HBM figure.

/// NVIDIA H100 product page (nvidia.com/en-us/data-center/h100, specification table): H100 SXM
/// "BFLOAT16 Tensor Core 1,979 teraFLOPS" with sparsity, dense half of it.
pub const H100_SXM_BF16_DENSE_FLOPS_PER_S: f64 = 1_979e12 / 2.0;
/// The same table: H100 SXM "Max Thermal Design Power (TDP) Up to 700W".
pub const H100_SXM_RATED_POWER_WATTS: f64 = 700.0;
/// The same table: H100 NVL (the same 132-SM GH100) "BFLOAT16 Tensor Core 1,671 teraFLOPS"
/// with sparsity, dense half of it; its FP8 row (3,341 against the SXM's 3,958) stands in the
/// same ratio (0.844), so one fraction serves BF16 and FP8.
pub const H100_NVL_BF16_DENSE_FLOPS_PER_S: f64 = 1_671e12 / 2.0;
/// H100 NVL product brief PB-11773-001_v01 (March 2024), board power "400 W maximum
/// (default)"; the product page's "350-400W (configurable)".
pub const H100_NVL_RATED_POWER_WATTS: f64 = 400.0;
/// torchtitan docs/performance.md (Grand Teton, "96GB HBM2e"): "We used the default 500W
/// power limit".
pub const H100_96GB_POWER_LIMIT_WATTS: f64 = 500.0;

/// The vendor's tensor rating of the GH100 at `watts` of board power, as a share of the SXM's
/// 700 W rating: linear in board power between the two ratings NVIDIA publishes for the same
/// 132-SM die (NVL at 400 W, SXM at 700 W), 1 at or above 700 W, the NVL's share at or below
/// 400 W. torchtitan docs/performance.md, footnote 2, on its 500 W HBM2e part: "the actual peak
/// TFLOPs number is between SXM and NVL, and we don't know its exact value"; the board power is
/// what the two ratings differ by, so the 500 W part sits a third of the way from the NVL's.
/// The straight line between the two ratings is the one reading that needs no figure the
/// sources do not give; both things it leaves out would put the 500 W part higher, so it may
/// overstate the slowdown: dynamic power grows faster than the clock (P ∝ f·V², V rising with
/// f), and the NVL's 3.9 TB/s HBM3 takes more of its budget than the 500 W part's HBM2e. No
/// measurement of BF16 GEMMs under a 500 W cap was found (Ujeniya et al. 2026, arXiv
/// 2604.11391, cap the same HBM2e part with DGEMM and a bandwidth kernel only, in the parts
/// read).
pub fn gh100_tensor_rating_fraction(watts: f64) -> f64 {
    let nvl = H100_NVL_BF16_DENSE_FLOPS_PER_S / H100_SXM_BF16_DENSE_FLOPS_PER_S;
    let t = ((watts - H100_NVL_RATED_POWER_WATTS)
        / (H100_SXM_RATED_POWER_WATTS - H100_NVL_RATED_POWER_WATTS))
        .clamp(0.0, 1.0);
    nvl + t * (1.0 - nvl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_500_w_part_sits_a_third_of_the_way_from_the_nvl_rating() {
        // (835.5 + (500 − 400)/(700 − 400) · (989.5 − 835.5)) / 989.5 = 886.83 / 989.5.
        let at_500_w = crate::input::hardware::gpu_traits("h100-96gb");
        let f = at_500_w.compute.tensor_fraction_at_power_limit;
        assert!((f - 886.833_333 / 989.5).abs() < 1e-6, "{f}");
        assert!((gh100_tensor_rating_fraction(400.0) - 835.5 / 989.5).abs() < 1e-12);
        assert_eq!(gh100_tensor_rating_fraction(700.0), 1.0);
        assert_eq!(gh100_tensor_rating_fraction(900.0), 1.0);
        let sxm = crate::input::hardware::gpu_traits("h100-sxm");
        assert_eq!(sxm.compute.tensor_fraction_at_power_limit, 1.0);
    }
}
