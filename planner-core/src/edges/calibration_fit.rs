//! Fitting the time model to measurements: α–β per collective and link from
//! nccl-tests or gpu-bench collectives, and GEMM efficiency by shape; and the
//! comparison of a fit with the assumed model. The fitted numbers are an
//! [`input::calibration::CalibrationSummary`](crate::input::calibration::CalibrationSummary).

use serde::{Deserialize, Serialize};

use crate::base::bounds::MAX_COLLECTIVE_RANKS;
use crate::edges::nccl_tests::NcclRun;
use crate::edges::report::{BenchReport, CollectiveOp, Dtype};
use crate::input::calibration::{
    CalibrationSummary, CommSample, FittedLink, GemmFit, GemmSample, CALIBRATION_VERSION,
};
use crate::input::precision::ComputeDtype;
use crate::parallel::topology::Domain;
use crate::time::collectives::{AlphaBeta, Collective, CommModel, LinkDomain};
use crate::time::cost::GemmEfficiency;

/// The link class a sample measured.
pub fn sample_domain(sample: &CommSample) -> Domain {
    let k = sample.ranks_per_node.clamp(1, sample.ranks.max(1));
    if sample.ranks <= 1 {
        Domain::Local
    } else if k >= sample.ranks {
        Domain::IntraNode
    } else if k == 1 {
        Domain::InterNode
    } else {
        Domain::Hierarchical
    }
}

/// Samples from one nccl-tests run. `op`, `ranks` and `ranks_per_node` override
/// (or supply) what the output does not say.
pub fn samples_from_nccl(
    run: &NcclRun,
    op: Option<Collective>,
    ranks: Option<u64>,
    ranks_per_node: Option<u64>,
) -> Result<Vec<CommSample>, String> {
    let op = op
        .or(run.op)
        .ok_or("nccl-tests output does not name its operation: give it (e.g. --op all_reduce)")?;
    let ranks = ranks
        .or(run.ranks)
        .ok_or("nccl-tests output does not list its ranks: give them (--ranks N)")?;
    let rpn = ranks_per_node
        .or_else(|| run.ranks_per_node())
        .unwrap_or(ranks);
    check_group_ranks(ranks, rpn)?;
    Ok(run
        .rows
        .iter()
        .filter(|r| r.wrong.is_none_or(|w| w == 0.0))
        .map(|r| CommSample {
            op,
            ranks,
            ranks_per_node: rpn,
            bytes: r.size_bytes,
            time_s: r.time_us * 1e-6,
        })
        .collect())
}

/// Refuses a group no run can have: no ranks, more than
/// [`MAX_COLLECTIVE_RANKS`], or ranks per node outside 1..=ranks. The messages
/// name the flag that supplies the number (`--ranks`, `--ranks-per-node`).
pub fn check_group_ranks(ranks: u64, ranks_per_node: u64) -> Result<(), String> {
    if !(1..=MAX_COLLECTIVE_RANKS).contains(&ranks) {
        return Err(format!(
            "--ranks: must be in 1..={MAX_COLLECTIVE_RANKS}, got {ranks}"
        ));
    }
    if !(1..=ranks).contains(&ranks_per_node) {
        return Err(format!(
            "--ranks-per-node: must be in 1..={ranks} (no more than the ranks), got {ranks_per_node}"
        ));
    }
    Ok(())
}

/// The planner's name for a report's operation.
pub fn collective_of(op: CollectiveOp) -> Collective {
    match op {
        CollectiveOp::AllReduce => Collective::AllReduce,
        CollectiveOp::AllGather => Collective::AllGather,
        CollectiveOp::ReduceScatter => Collective::ReduceScatter,
        CollectiveOp::AllToAll => Collective::AllToAll,
        CollectiveOp::Broadcast => Collective::Broadcast,
        CollectiveOp::Reduce => Collective::Reduce,
        CollectiveOp::SendRecv => Collective::SendRecv,
    }
}

/// Samples from a gpu-bench report: every error-free collective, and the GEMMs
/// run in the dtype `compute` selects (BF16/FP16, or FP8).
pub fn samples_from_report(
    report: &BenchReport,
    compute: ComputeDtype,
) -> (Vec<CommSample>, Vec<GemmSample>) {
    let comm = report
        .collectives
        .iter()
        .filter(|c| c.wrong == 0 && c.time_us > 0.0)
        .map(|c| CommSample {
            op: collective_of(c.op),
            ranks: u64::from(c.ranks),
            ranks_per_node: u64::from(c.ranks_per_node.max(1)),
            bytes: c.bytes as f64,
            time_s: c.time_us * 1e-6,
        })
        .collect();
    let gemm = report
        .gemms
        .iter()
        .filter(|g| match compute {
            ComputeDtype::Bf16 => matches!(g.dtype, Dtype::Bf16 | Dtype::Fp16),
            ComputeDtype::Fp8 => g.dtype == Dtype::Fp8E4m3,
            // No FP4 GEMM dtype in a benchmark report yet.
            ComputeDtype::Fp4 => false,
        })
        .map(|g| GemmSample {
            m: g.m,
            n: g.n,
            k: g.k,
            flops_per_s: g.tflops * 1e12,
        })
        .collect();
    (comm, gemm)
}

/// Weighted least squares of `t = α·steps + x/B` (weights 1/t², so every size
/// counts by its relative error); α is clamped at 0.
fn fit_alpha_beta(points: &[(f64, f64, f64)]) -> Option<(f64, f64)> {
    // (steps, x = bytes·factor, t)
    let (mut sss, mut ssx, mut sxx, mut sst, mut sxt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(s, x, t) in points {
        let w = 1.0 / (t * t);
        sss += w * s * s;
        ssx += w * s * x;
        sxx += w * x * x;
        sst += w * s * t;
        sxt += w * x * t;
    }
    let det = sss * sxx - ssx * ssx;
    let (mut alpha, mut inv_b) = if det.abs() > 1e-300 && points.len() >= 2 {
        ((sst * sxx - ssx * sxt) / det, (sss * sxt - ssx * sst) / det)
    } else {
        (0.0, if sxx > 0.0 { sxt / sxx } else { 0.0 })
    };
    if alpha < 0.0 || inv_b <= 0.0 {
        alpha = 0.0;
        inv_b = if sxx > 0.0 { sxt / sxx } else { 0.0 };
    }
    if inv_b <= 0.0 || !inv_b.is_finite() || !alpha.is_finite() {
        return None;
    }
    Some((alpha, 1.0 / inv_b))
}

/// Fits α–β per (operation, link). Single-node samples fit the intra-node link,
/// one-rank-per-node samples the inter-node link; two-level samples fit the
/// inter-node link after subtracting the intra-node stages predicted by
/// `assumed` (or by the intra fit when there is one).
pub fn fit_links(samples: &[CommSample], assumed: &CommModel) -> Vec<FittedLink> {
    let mut out = Vec::new();
    let mut model = assumed.clone();
    for domain in [LinkDomain::IntraNode, LinkDomain::InterNode] {
        for op in Collective::ALL {
            let mut pts: Vec<(f64, f64, f64)> = Vec::new();
            for s in samples.iter().filter(|s| s.op == op && s.time_s > 0.0) {
                match (sample_domain(s), domain) {
                    (Domain::IntraNode, LinkDomain::IntraNode)
                    | (Domain::InterNode, LinkDomain::InterNode) => {
                        pts.push((
                            op.latency_steps(s.ranks),
                            s.bytes * op.busbw_factor(s.ranks),
                            s.time_s,
                        ));
                    }
                    (Domain::Hierarchical, LinkDomain::InterNode) => {
                        if let Some(p) = inter_part(s, &model) {
                            pts.push(p);
                        }
                    }
                    _ => {}
                }
            }
            if pts.is_empty() {
                continue;
            }
            let Some((alpha, bw)) = fit_alpha_beta(&pts) else {
                continue;
            };
            let max_relative_error = pts
                .iter()
                .map(|&(st, x, t)| ((alpha * st + x / bw) - t).abs() / t)
                .fold(0.0, f64::max);
            let fit = FittedLink {
                op,
                domain,
                latency_s: alpha,
                busbw_bytes_per_s: bw,
                points: pts.len() as u32,
                max_relative_error,
            };
            model.set_measured(
                op,
                domain,
                AlphaBeta {
                    latency_s: alpha,
                    busbw_bytes_per_s: bw,
                },
            );
            out.push(fit);
        }
    }
    out
}

/// The inter-node stage of a two-level sample as an (steps, x, t) point.
fn inter_part(s: &CommSample, model: &CommModel) -> Option<(f64, f64, f64)> {
    let k = s.ranks_per_node.max(1);
    let m = s.ranks / k;
    let kf = k as f64;
    let intra = |o: Collective, b: f64| model.link(o, LinkDomain::IntraNode).time_s(o, b, k);
    let (inner_op, intra_t) = match s.op {
        Collective::AllReduce => (
            Collective::AllReduce,
            intra(Collective::ReduceScatter, s.bytes) + intra(Collective::AllGather, s.bytes),
        ),
        Collective::ReduceScatter => (
            Collective::ReduceScatter,
            intra(Collective::ReduceScatter, s.bytes),
        ),
        Collective::AllGather => (Collective::AllGather, intra(Collective::AllGather, s.bytes)),
        _ => return None,
    };
    let t = s.time_s - intra_t;
    if t <= 0.0 || m <= 1 {
        return None;
    }
    let b = s.bytes / kf;
    Some((inner_op.latency_steps(m), b * inner_op.busbw_factor(m), t))
}

/// Fits `eff(d) = M·d/(d + H)` (d = smallest GEMM dimension) by regressing
/// `1/eff = 1/M + (H/M)·(1/d)`.
pub fn fit_gemm(samples: &[GemmSample], peak_flops_per_s: f64) -> Option<GemmFit> {
    if peak_flops_per_s <= 0.0 {
        return None;
    }
    let pts: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.flops_per_s > 0.0 && s.m > 0 && s.n > 0 && s.k > 0)
        .map(|s| {
            let d = s.m.min(s.n).min(s.k) as f64;
            (d, (s.flops_per_s / peak_flops_per_s).min(1.0))
        })
        .collect();
    if pts.is_empty() {
        return None;
    }
    let n = pts.len() as f64;
    let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
    for &(d, e) in &pts {
        let (x, y) = (1.0 / d, 1.0 / e);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let det = n * sxx - sx * sx;
    let default = GemmEfficiency::default();
    let eff = if pts.len() >= 2 && det.abs() > 1e-30 {
        let c = (n * sxy - sx * sy) / det;
        let a = (sy - c * sx) / n;
        if a > 0.0 && c >= 0.0 {
            GemmEfficiency {
                max_fraction: (1.0 / a).min(1.0),
                half_dim: c / a,
            }
        } else {
            // Efficiency not rising with size: a flat curve at the mean.
            GemmEfficiency {
                max_fraction: pts.iter().map(|p| p.1).sum::<f64>() / n,
                half_dim: 0.0,
            }
        }
    } else {
        // One shape: keep the assumed knee, scale the ceiling through the point.
        let (d, e) = pts[0];
        GemmEfficiency {
            max_fraction: (e * (d + default.half_dim) / d).min(1.0),
            half_dim: default.half_dim,
        }
    };
    let max_relative_error = pts
        .iter()
        .map(|&(d, e)| (eff.at(d) - e).abs() / e)
        .fold(0.0, f64::max);
    Some(GemmFit {
        efficiency: eff,
        peak_flops_per_s,
        points: pts.len() as u32,
        max_relative_error,
    })
}

/// One measured collective next to what the fitted and the assumed links predict for it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommComparison {
    /// The measurement.
    pub sample: CommSample,
    /// Measured bus bandwidth: `bytes · busbw_factor / time` (nccl-tests convention), bytes/s.
    pub measured_busbw_bytes_per_s: f64,
    /// Bus bandwidth the calibrated model predicts at this size, bytes/s.
    pub fitted_busbw_bytes_per_s: f64,
    /// Bus bandwidth the preset (datasheet) model predicts at this size, bytes/s.
    pub assumed_busbw_bytes_per_s: f64,
}

/// Bus bandwidth that a time implies for one sample (0 when it cannot be formed).
fn busbw_of(s: &CommSample, time_s: f64) -> f64 {
    let factor = s.op.busbw_factor(s.ranks);
    if time_s > 0.0 && time_s.is_finite() {
        // nccl-tests doc/PERFORMANCE.md: busbw = algbw · factor, algbw = size / time.
        s.bytes * factor / time_s
    } else {
        0.0
    }
}

/// Bus bandwidth `model` predicts for one `op` of `bytes` on `ranks` ranks,
/// `ranks_per_node` to a node (nccl-tests convention), bytes/s.
pub fn predicted_busbw_bytes_per_s(
    model: &CommModel,
    op: Collective,
    ranks: u64,
    ranks_per_node: u64,
    bytes: f64,
) -> f64 {
    let s = CommSample {
        op,
        ranks,
        ranks_per_node,
        bytes,
        time_s: 0.0,
    };
    busbw_of(&s, model.time_s(op, bytes, &sample_group(&s)))
}

/// Each sample against the calibrated model (`assumed` with `summary` applied) and the assumed one.
pub fn compare_comm(
    samples: &[CommSample],
    summary: &CalibrationSummary,
    assumed: &CommModel,
) -> Vec<CommComparison> {
    let mut fitted = assumed.clone();
    fitted.apply_calibration(summary);
    samples
        .iter()
        .map(|s| {
            let predict = |m: &CommModel| {
                predicted_busbw_bytes_per_s(m, s.op, s.ranks, s.ranks_per_node, s.bytes)
            };
            CommComparison {
                sample: *s,
                measured_busbw_bytes_per_s: busbw_of(s, s.time_s),
                fitted_busbw_bytes_per_s: predict(&fitted),
                assumed_busbw_bytes_per_s: predict(assumed),
            }
        })
        .collect()
}

/// The placed group a sample ran on.
fn sample_group(s: &CommSample) -> crate::parallel::topology::GroupPlacement {
    crate::parallel::topology::GroupPlacement::from_factors(
        crate::parallel::topology::GroupKind::Dp,
        &[(1, s.ranks.max(1))],
        s.ranks_per_node.max(1),
    )
}

/// One measured GEMM next to the fitted curve and the peak.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmComparison {
    /// The measurement.
    pub sample: GemmSample,
    /// Measured rate over the peak.
    pub measured_fraction: f64,
    /// The fitted curve at this GEMM's smallest dimension (`None` without a fit).
    pub fitted_fraction: Option<f64>,
    /// The assumed (default) curve at this GEMM's smallest dimension.
    pub assumed_fraction: f64,
}

/// Each GEMM sample against `peak_flops_per_s`, the fit and the default curve.
pub fn compare_gemm(
    samples: &[GemmSample],
    fit: Option<&GemmFit>,
    peak_flops_per_s: f64,
) -> Vec<GemmComparison> {
    let assumed = GemmEfficiency::default();
    samples
        .iter()
        .map(|s| {
            let d = s.m.min(s.n).min(s.k) as f64;
            GemmComparison {
                sample: *s,
                measured_fraction: if peak_flops_per_s > 0.0 {
                    s.flops_per_s / peak_flops_per_s
                } else {
                    0.0
                },
                fitted_fraction: fit.map(|f| f.efficiency.at(d)),
                assumed_fraction: assumed.at(d),
            }
        })
        .collect()
}

/// Fits links and GEMMs into one summary.
pub fn calibrate(
    comm_samples: &[CommSample],
    gemm_samples: &[GemmSample],
    assumed: &CommModel,
    peak_flops_per_s: f64,
) -> CalibrationSummary {
    CalibrationSummary {
        version: CALIBRATION_VERSION,
        links: fit_links(comm_samples, assumed),
        gemm: fit_gemm(gemm_samples, peak_flops_per_s),
    }
}

#[cfg(test)]
mod comparison_tests {
    use super::*;
    use crate::input::hardware::{gpu_preset, Cluster};

    fn assumed() -> CommModel {
        let Some(gpu) = gpu_preset("h100-sxm") else {
            panic!("h100-sxm preset")
        };
        CommModel::assumed(&Cluster::of(gpu, 1))
    }

    #[test]
    fn measured_busbw_follows_nccl_tests_and_the_fit_reproduces_it() {
        // 64 MiB all-reduce on 2 ranks in 400 µs: busbw = algbw · 2(n−1)/n = 167.77 GB/s.
        let s = CommSample {
            op: Collective::AllReduce,
            ranks: 2,
            ranks_per_node: 2,
            bytes: 67_108_864.0,
            time_s: 400e-6,
        };
        let big = CommSample {
            bytes: 4.0 * s.bytes,
            time_s: 4.0 * s.time_s,
            ..s
        };
        let a = assumed();
        let summary = calibrate(&[s, big], &[], &a, 989e12);
        let rows = compare_comm(&[s, big], &summary, &a);
        assert!((rows[0].measured_busbw_bytes_per_s - 167.772_16e9).abs() < 1e3);
        // A latency-free linear sample set is fitted exactly.
        for r in &rows {
            let rel = (r.fitted_busbw_bytes_per_s - r.measured_busbw_bytes_per_s).abs()
                / r.measured_busbw_bytes_per_s;
            assert!(rel < 1e-6, "{r:?}");
        }
        // The preset prices it as NCCL's tuner does (time/nccl_algo.rs) on an H100 node: on 2
        // ranks busbw = algbw = bytes / time, about 353 GB/s at 256 MiB.
        let t = a.time_s(Collective::AllReduce, big.bytes, &sample_group(&big));
        let busbw = big.bytes / t;
        assert!((rows[1].assumed_busbw_bytes_per_s / busbw - 1.0).abs() < 1e-9);
        assert!(busbw > 300e9 && busbw < 450e9, "{busbw}");
    }

    #[test]
    fn gemm_fraction_of_peak() {
        let g = GemmSample {
            m: 4096,
            n: 4096,
            k: 4096,
            flops_per_s: 549.755_813_888e12,
        };
        let rows = compare_gemm(&[g], None, 989e12);
        assert!((rows[0].measured_fraction - 549.755_813_888 / 989.0).abs() < 1e-12);
        assert_eq!(rows[0].fitted_fraction, None);
        let d = GemmEfficiency::default();
        assert!((rows[0].assumed_fraction - d.at(4096.0)).abs() < 1e-15);
    }
}
