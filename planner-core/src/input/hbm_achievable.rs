//! The share of its datasheet HBM bandwidth a GPU's streaming kernels reach, where it was
//! measured for that GPU; other GPUs take `CostOptions::hbm_achievable_fraction`.

/// Measured streaming share of the datasheet HBM bandwidth for `gpu_id`, or `None` where
/// no measurement of that GPU is cited (the caller's default then applies).
pub fn measured_hbm_fraction(gpu_id: &str) -> Option<f64> {
    match gpu_id {
        // Azure/AI-benchmarking-guide, Azure_Results/ND_MI300X_v5_results.md, "HBM Bandwidth"
        // (BabelStream on ND MI300X v5, ROCm 6.2): Copy 4.11 TB/s of the datasheet's 5.3 TB/s.
        "mi300x" => Some(4.11 / 5.3),
        _ => None,
    }
}
