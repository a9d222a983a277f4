//! The share of its datasheet HBM bandwidth a GPU's streaming kernels reach, where it was
//! measured for that GPU; other GPUs take `CostOptions::hbm_achievable_fraction`.

/// Measured streaming share of the datasheet HBM bandwidth for `gpu_id`, or `None` where
/// no measurement of that GPU is cited (the caller's default then applies).
pub fn measured_hbm_fraction(gpu_id: &str) -> Option<f64> {
    match gpu_id {
        // Azure/AI-benchmarking-guide, Azure_Results/ND_MI300X_v5_results.md, "HBM Bandwidth"
        // (BabelStream on ND MI300X v5, ROCm 6.2): Copy 4.11 TB/s of the datasheet's 5.3 TB/s.
        "mi300x" => Some(4.11 / 5.3),
        // H200 keeps its own measurement, the one CostOptions::hbm_achievable_fraction stands
        // on (domain notes, "Achieved figures": one H200 copied device memory at ~4.3 TB/s);
        // Azure's BabelStream Copy on ND H200 v5 (Azure_Results/ND_H200_v5_results.md) reads
        // 4.01 TB/s, a second measurement 7% lower that is not preferred over the first.
        "h200" => Some(4.3 / 4.8),
        // Azure/AI-benchmarking-guide, Azure_Results/ND_A100_v4_results.md, "HBM Bandwidth"
        // (BabelStream on ND A100 v4, A100-SXM4-80GB, CUDA 12.5): Copy 1.61 TB/s of the
        // datasheet's 2.039 TB/s.
        "a100-80gb" => Some(1.61 / 2.039),
        _ => None,
    }
}
