//! `calibrate`: fit links and GEMM efficiency from measurements.

use std::fmt::Write as _;
use std::path::PathBuf;

use planner_core::base::bounds::MAX_COLLECTIVE_RANKS;
use planner_core::edges::calibration_fit::check_group_ranks;
use planner_core::edges::import_sniff::{
    fit_measurements, read_measurements, NcclContext, MAX_MEASUREMENT_FILE_BYTES,
};
use planner_core::input::calibration::{CalibrationSummary, CommSample, GemmSample};
use planner_core::input::hardware::{gpu_preset, gpu_preset_for_device, GpuSpec};
use planner_core::time::collectives::Collective;

use crate::error::CliError;

/// Arguments of `calibrate`.
pub struct Args<'a> {
    pub inputs: &'a [PathBuf],
    pub gpu: Option<&'a str>,
    pub op: Option<&'a str>,
    pub ranks: Option<u64>,
    pub ranks_per_node: Option<u64>,
    pub table: bool,
    pub compact: bool,
}

/// Fits every input into one summary.
pub fn run(args: &Args) -> Result<String, CliError> {
    let op = match args.op {
        Some(text) => Some(Collective::from_id(text).ok_or_else(|| {
            CliError::BadInput(format!(
                "--op: unknown operation `{text}` (all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv)"
            ))
        })?),
        None => None,
    };
    check_rank_flags(args.ranks, args.ranks_per_node)?;
    let nccl = NcclContext {
        op,
        ranks: args.ranks,
        ranks_per_node: args.ranks_per_node,
    };
    let mut comm: Vec<CommSample> = Vec::new();
    let mut gemm: Vec<GemmSample> = Vec::new();
    let mut device: Option<String> = None;
    for path in args.inputs {
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| CliError::Io(format!("{shown}: {e}")))?;
        if meta.len() > MAX_MEASUREMENT_FILE_BYTES as u64 {
            return Err(CliError::BadInput(format!(
                "{shown}: larger than {MAX_MEASUREMENT_FILE_BYTES} bytes"
            )));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{shown}: {e}")))?;
        let read = read_measurements(&text, &nccl)
            .map_err(|e| CliError::BadInput(format!("{shown}: {e}")))?;
        if device.is_none() {
            device = read.device;
        }
        comm.extend(read.comm);
        gemm.extend(read.gemm);
    }
    let gpu = match args.gpu {
        Some(id) => gpu_preset(id)
            .ok_or_else(|| CliError::BadInput(format!("--gpu: unknown GPU preset `{id}`")))?,
        None => device
            .as_deref()
            .and_then(gpu_preset_for_device)
            .or_else(|| gpu_preset("h100-sxm"))
            .ok_or_else(|| CliError::BadInput("no GPU preset".to_string()))?,
    };
    // Never write a summary that `search --calibration` and `cal=` would refuse.
    let summary = fit_measurements(&comm, &gemm, &gpu)
        .map_err(|e| CliError::BadInput(format!("the inputs: {e}")))?
        .summary;
    if args.compact {
        Ok(summary.to_compact())
    } else if args.table {
        Ok(table(&summary, &gpu, comm.len(), gemm.len()))
    } else {
        serde_json::to_string_pretty(&summary)
            .map_err(|e| CliError::BadInput(format!("summary cannot be written as JSON: {e}")))
    }
}

/// Refuses `--ranks` and `--ranks-per-node` no run can have, before any file is
/// read (a ranks-per-node beyond the ranks an output lists is refused when it is read).
fn check_rank_flags(ranks: Option<u64>, ranks_per_node: Option<u64>) -> Result<(), CliError> {
    let ranks = ranks.unwrap_or(MAX_COLLECTIVE_RANKS);
    check_group_ranks(ranks, ranks_per_node.unwrap_or(ranks)).map_err(CliError::BadInput)
}

fn table(s: &CalibrationSummary, gpu: &GpuSpec, comm: usize, gemm: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Calibration from {comm} collective and {gemm} GEMM measurements (GEMM efficiency relative to {} BF16 peak {:.0} TFLOP/s)\n",
        gpu.name,
        gpu.bf16_flops_per_s / 1e12
    );
    let _ = writeln!(
        out,
        "{:<15} {:<11} {:>12} {:>14} {:>7} {:>10}",
        "operation", "link", "α per step", "busbw GB/s", "points", "max error"
    );
    for l in &s.links {
        let _ = writeln!(
            out,
            "{:<15} {:<11} {:>9.2} µs {:>14.1} {:>7} {:>9.1}%",
            l.op.id(),
            l.domain.id(),
            l.latency_s * 1e6,
            l.busbw_bytes_per_s / 1e9,
            l.points,
            l.max_relative_error * 100.0
        );
    }
    match &s.gemm {
        Some(g) => {
            let _ = writeln!(
                out,
                "\nGEMM efficiency: {:.1}% × d/(d + {:.0}) of peak (d = smallest GEMM dimension), {} points, max error {:.1}%",
                g.efficiency.max_fraction * 100.0,
                g.efficiency.half_dim,
                g.points,
                g.max_relative_error * 100.0
            );
        }
        None => {
            let _ = writeln!(out, "\nGEMM efficiency: not measured (assumed curve stays)");
        }
    }
    out.trim_end().to_string()
}
