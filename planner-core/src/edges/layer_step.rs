//! Predicted time of a measured sharded-layer step (gpu-bench's `layer_steps`):
//! the same arithmetic the step model uses — GEMM FLOPs at the peak times the
//! GEMM-efficiency curve, collectives on the α–β links — applied to the step's
//! own shapes, so a calibration can be checked against a measurement it was
//! not fitted to.

use serde::{Deserialize, Serialize};

use crate::edges::report::{LayerStepKind, LayerStepResult};
use crate::parallel::topology::{GroupKind, GroupPlacement};
use crate::time::collectives::{Collective, CommModel};
use crate::time::cost::GemmEfficiency;

/// Units in gpu-bench's FSDP step (two MLP units, `gpu-bench/src/layer.rs`).
pub const FSDP_UNITS: f64 = 2.0;

/// What the model predicts for one measured step, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerStepPrediction {
    /// GEMMs alone.
    pub compute_s: f64,
    /// Collectives alone.
    pub comm_s: f64,
    /// Compute then communication on one stream: `compute + comm`.
    pub sequential_s: f64,
}

/// Measured against predicted for one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerStepCheck {
    /// "TP MLP" or "FSDP unit", with the report's label.
    pub label: String,
    /// The prediction.
    pub predicted: LayerStepPrediction,
    /// Measured compute, communication and sequential time, seconds.
    pub measured: LayerStepPrediction,
}

impl LayerStepCheck {
    /// `(predicted − measured) / measured` of the sequential step (0 when nothing was measured).
    pub fn sequential_error(&self) -> f64 {
        relative_error(self.predicted.sequential_s, self.measured.sequential_s)
    }
}

/// `(predicted − measured) / measured`; 0 when the measurement is not positive.
pub fn relative_error(predicted: f64, measured: f64) -> f64 {
    if measured > 0.0 && measured.is_finite() && predicted.is_finite() {
        (predicted - measured) / measured
    } else {
        0.0
    }
}

/// Time of one GEMM `m×k · k×n` at `peak_flops_per_s × gemm.at(min(m, n, k))`.
fn gemm_s(m: f64, n: f64, k: f64, gemm: &GemmEfficiency, peak_flops_per_s: f64) -> f64 {
    // 2 FLOPs per multiply-add (Kaplan et al. 2020, §2.1).
    let flops = 2.0 * m * n * k;
    let rate = peak_flops_per_s.max(1.0) * gemm.at(m.min(n).min(k));
    flops / rate
}

/// Predicts one step from its shapes. `ranks_per_node` places the step's group
/// (the report's `environment.ranks_per_node`). The first projection is taken
/// as `gate_up_matrices × ffn` wide (2 for SwiGLU, 1 for a GELU MLP): the report
/// does not record the MLP kind.
pub fn predict(
    step: &LayerStepResult,
    gate_up_matrices: u32,
    comm: &CommModel,
    gemm: &GemmEfficiency,
    peak_flops_per_s: f64,
    ranks_per_node: u64,
) -> LayerStepPrediction {
    let (h, f, t) = (step.hidden as f64, step.ffn as f64, step.tokens as f64);
    let f_in = f * f64::from(gate_up_matrices.max(1));
    let bytes_per_elem = step.dtype.bytes() as f64;
    let rpn = ranks_per_node.max(1);
    let (compute_s, comm_s) = match step.kind {
        LayerStepKind::TpMlp => {
            let tp = f64::from(step.tp.max(1));
            // Megatron MLP (Shoeybi et al. 2019, §3): column-parallel up, row-parallel down, one all-reduce of the output.
            let compute = gemm_s(t, f_in / tp, h, gemm, peak_flops_per_s)
                + gemm_s(t, h, f / tp, gemm, peak_flops_per_s);
            let group =
                GroupPlacement::from_factors(GroupKind::Tp, &[(1, u64::from(step.tp.max(1)))], rpn);
            let comm_s = comm.time_s(Collective::AllReduce, t * h * bytes_per_elem, &group);
            (compute, comm_s)
        }
        LayerStepKind::FsdpUnit => {
            let dp = u64::from(step.dp.max(1));
            // Forward: in and out projections; backward: data and weight gradients of each (2× forward).
            let unit_compute = gemm_s(t, f_in, h, gemm, peak_flops_per_s)
                + gemm_s(t, h, f, gemm, peak_flops_per_s)
                + gemm_s(t, f, h, gemm, peak_flops_per_s)
                + gemm_s(f, h, t, gemm, peak_flops_per_s)
                + gemm_s(t, h, f_in, gemm, peak_flops_per_s)
                + gemm_s(h, f_in, t, gemm, peak_flops_per_s);
            // ZeRO-3 (Rajbhandari et al. 2020, §5.3): all-gather parameters, reduce-scatter gradients, padded to split evenly.
            let params = (h * f_in + f * h) / dp as f64;
            let padded_bytes = params.ceil() * dp as f64 * bytes_per_elem;
            let group = GroupPlacement::from_factors(GroupKind::Dp, &[(1, dp)], rpn);
            let unit_comm = comm.time_s(Collective::AllGather, padded_bytes, &group)
                + comm.time_s(Collective::ReduceScatter, padded_bytes, &group);
            (FSDP_UNITS * unit_compute, FSDP_UNITS * unit_comm)
        }
    };
    LayerStepPrediction {
        compute_s,
        comm_s,
        sequential_s: compute_s + comm_s,
    }
}

/// Width of the first MLP projection in units of `ffn` for a step of these
/// shapes: 2 (gate + up, SwiGLU) or 1 (GELU MLP), from the model preset with the
/// same hidden and FFN width (gpu-bench runs preset models); 2 when none matches.
pub fn gate_up_matrices_for(hidden: u64, ffn: u64) -> u32 {
    crate::resolve::presets::model_presets()
        .into_iter()
        .find(|p| u64::from(p.spec.hidden) == hidden && u64::from(p.spec.ffn) == ffn)
        .map_or(2, |p| {
            u32::try_from(p.spec.ffn_kind.matrices().saturating_sub(1)).unwrap_or(2)
        })
}

/// Measured figures of a step in seconds.
pub fn measured(step: &LayerStepResult) -> LayerStepPrediction {
    LayerStepPrediction {
        compute_s: step.compute_us * 1e-6,
        comm_s: step.comm_us * 1e-6,
        sequential_s: step.sequential_us * 1e-6,
    }
}

/// Every step of a report, predicted and measured.
pub fn check_all(
    steps: &[LayerStepResult],
    gate_up_matrices: u32,
    comm: &CommModel,
    gemm: &GemmEfficiency,
    peak_flops_per_s: f64,
    ranks_per_node: u64,
) -> Vec<LayerStepCheck> {
    steps
        .iter()
        .map(|s| {
            let kind = match s.kind {
                LayerStepKind::TpMlp => format!("TP MLP, tp = {}", s.tp),
                LayerStepKind::FsdpUnit => format!("FSDP unit, dp = {}", s.dp),
            };
            LayerStepCheck {
                label: format!("{kind} ({})", s.label),
                predicted: predict(
                    s,
                    gate_up_matrices,
                    comm,
                    gemm,
                    peak_flops_per_s,
                    ranks_per_node,
                ),
                measured: measured(s),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edges::report::Dtype;
    use crate::input::hardware::{gpu_preset, Cluster};
    use crate::time::collectives::{AlphaBeta, LinkDomain};

    fn step(kind: LayerStepKind, tp: u32, dp: u32) -> LayerStepResult {
        LayerStepResult {
            kind,
            label: "t".into(),
            hidden: 4096,
            ffn: 14336,
            tokens: 4096,
            dtype: Dtype::Bf16,
            tp,
            dp,
            compute_us: 900.0,
            comm_us: 200.0,
            sequential_us: 1100.0,
            overlapped_us: 950.0,
            exposed_comm_us: 50.0,
            peak_memory_bytes: 0,
        }
    }

    /// Perfect GEMMs (efficiency 1 at every size) and a latency-free link give closed forms.
    fn ideal() -> (CommModel, GemmEfficiency) {
        let Some(gpu) = gpu_preset("h100-sxm") else {
            panic!("h100-sxm preset")
        };
        let mut comm = CommModel::assumed(&Cluster::of(gpu, 1));
        for op in [
            Collective::AllReduce,
            Collective::AllGather,
            Collective::ReduceScatter,
        ] {
            comm.set_measured(
                op,
                LinkDomain::IntraNode,
                AlphaBeta {
                    latency_s: 0.0,
                    busbw_bytes_per_s: 100e9,
                },
            );
        }
        (
            comm,
            GemmEfficiency {
                max_fraction: 1.0,
                half_dim: 0.0,
            },
        )
    }

    #[test]
    fn tp_mlp_closed_form() {
        let (comm, gemm) = ideal();
        let p = predict(&step(LayerStepKind::TpMlp, 2, 1), 2, &comm, &gemm, 1e15, 8);
        // FLOPs: 2·t·h·(2f/tp) + 2·t·(f/tp)·h = 6·t·h·f/tp.
        let flops = 6.0 * 4096.0 * 4096.0 * 14336.0 / 2.0;
        assert!((p.compute_s - flops / 1e15).abs() < 1e-12);
        // All-reduce of t·h·2 B on 2 ranks: busbw factor 2(n−1)/n = 1.
        let bytes = 4096.0 * 4096.0 * 2.0;
        assert!((p.comm_s - bytes / 100e9).abs() < 1e-12);
        assert!((p.sequential_s - p.compute_s - p.comm_s).abs() < 1e-15);
    }

    #[test]
    fn fsdp_unit_closed_form() {
        let (comm, gemm) = ideal();
        let p = predict(
            &step(LayerStepKind::FsdpUnit, 1, 2),
            1,
            &comm,
            &gemm,
            1e15,
            8,
        );
        // Two units, each 3 × forward FLOPs 2·t·(h·f + f·h).
        let flops = 2.0 * 3.0 * 2.0 * 4096.0 * (2.0 * 4096.0 * 14336.0);
        assert!((p.compute_s - flops / 1e15).abs() < 1e-12);
        // Per unit: all-gather + reduce-scatter of 2·h·f·2 B on 2 ranks (factor (n−1)/n = ½).
        let bytes = 2.0 * 4096.0 * 14336.0 * 2.0;
        let want = 2.0 * 2.0 * bytes * 0.5 / 100e9;
        assert!((p.comm_s - want).abs() < 1e-12, "{} vs {want}", p.comm_s);
    }

    #[test]
    fn gate_up_width_follows_the_preset() {
        // Llama 3.1 8B (SwiGLU) and GPT-3 175B (GELU MLP, ffn = 4h).
        assert_eq!(gate_up_matrices_for(4096, 14336), 2);
        assert_eq!(gate_up_matrices_for(12288, 49152), 1);
        assert_eq!(gate_up_matrices_for(1, 1), 2);
    }

    #[test]
    fn relative_error_is_signed_and_safe() {
        assert!((relative_error(1.1, 1.0) - 0.1).abs() < 1e-12);
        assert!((relative_error(0.9, 1.0) + 0.1).abs() < 1e-12);
        assert_eq!(relative_error(1.0, 0.0), 0.0);
        assert_eq!(relative_error(f64::NAN, 1.0), 0.0);
    }
}
