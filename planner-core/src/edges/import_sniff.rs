//! The one import of measurement files: which format a file is (gpu-bench
//! report, nccl-tests JSON, nccl-tests text), sniffed once, then parsed into
//! calibration samples, the device it names and its notes; which GPU the GEMM
//! fit is relative to; and the fit itself, refused when it is empty or would
//! not pass `CalibrationSummary::check`. `meshplan calibrate` and the page's
//! measured view both call it, so a file means the same thing to both.

use crate::edges::calibration_fit::{calibrate, samples_from_nccl, samples_from_report};
use crate::edges::nccl_tests;
use crate::edges::report::{parse_report, LayerStepResult, MAX_REPORT_TEXT_BYTES};
use crate::input::calibration::{CalibrationSummary, CommSample, GemmSample};
use crate::input::hardware::{gpu_preset_for_device, Cluster, GpuSpec};
use crate::input::precision::ComputeDtype;
use crate::time::collectives::{Collective, CommModel};

/// Largest measurement file read: the larger of the two parsers' own limits (both 32 MiB).
pub const MAX_MEASUREMENT_FILE_BYTES: usize = if MAX_REPORT_TEXT_BYTES > nccl_tests::MAX_INPUT_BYTES
{
    MAX_REPORT_TEXT_BYTES
} else {
    nccl_tests::MAX_INPUT_BYTES
};

/// What a measurement file is, told from its text alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeasurementFormat {
    /// gpu-bench's report (planner-core/src/report.rs): a JSON object with `schema_version`.
    BenchReport,
    /// nccl-tests' `-J` JSON output: a JSON object without `schema_version`.
    NcclTestsJson,
    /// nccl-tests' printed table (stdout, with or without mpirun/srun prefixes).
    NcclTestsText,
}

impl MeasurementFormat {
    /// The one sniffing rule: a JSON object (first non-blank character `{`) naming
    /// `"schema_version"` is a report, any other JSON object is nccl-tests JSON, and
    /// everything else is read as nccl-tests' printed table.
    pub fn sniff(text: &str) -> MeasurementFormat {
        if !text.trim_start().starts_with('{') {
            MeasurementFormat::NcclTestsText
        } else if text.contains("\"schema_version\"") {
            MeasurementFormat::BenchReport
        } else {
            MeasurementFormat::NcclTestsJson
        }
    }

    /// How the page and the CLI name it.
    pub fn label(self) -> &'static str {
        match self {
            MeasurementFormat::BenchReport => "gpu-bench report",
            MeasurementFormat::NcclTestsJson | MeasurementFormat::NcclTestsText => {
                "nccl-tests output"
            }
        }
    }
}

/// What nccl-tests output may not say about itself and the caller can (CLI flags
/// `--op`, `--ranks`, `--ranks-per-node`; the page gives none).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NcclContext {
    /// The operation, when the output does not name its program.
    pub op: Option<Collective>,
    /// Ranks in the group, when the output does not list them.
    pub ranks: Option<u64>,
    /// Ranks per node, when the host names do not tell.
    pub ranks_per_node: Option<u64>,
}

/// Samples and context read from one file.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurements {
    /// What the file was read as.
    pub format: MeasurementFormat,
    /// Error-free collective measurements.
    pub comm: Vec<CommSample>,
    /// BF16 GEMM measurements (reports only).
    pub gemm: Vec<GemmSample>,
    /// Measured sharded-layer steps (reports only).
    pub layer_steps: Vec<LayerStepResult>,
    /// The first GPU's device name as the driver reported it (reports only).
    pub device: Option<String>,
    /// Ranks per node of the run (the report's environment, or the first nccl sample's).
    pub ranks_per_node: u64,
    /// The writer and environment, the report's remarks, and whether it stopped early.
    pub notes: Vec<String>,
}

/// Why a file could not be read as measurements; `Display` names the format it was taken for.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportError {
    /// What the file was taken for.
    pub format: MeasurementFormat,
    /// The parser's message (it names the field or line).
    pub message: String,
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.format {
            MeasurementFormat::BenchReport => {
                write!(f, "not a usable gpu-bench report — {}", self.message)
            }
            MeasurementFormat::NcclTestsJson => write!(
                f,
                "neither a gpu-bench report (no schema_version) nor nccl-tests JSON output — {}",
                self.message
            ),
            MeasurementFormat::NcclTestsText => write!(
                f,
                "neither a gpu-bench report (JSON) nor nccl-tests output — {}",
                self.message
            ),
        }
    }
}

impl std::error::Error for ImportError {}

/// Sniffs, parses and turns one file into calibration samples (BF16 GEMMs).
pub fn read_measurements(text: &str, nccl: &NcclContext) -> Result<Measurements, ImportError> {
    let format = MeasurementFormat::sniff(text);
    let fail = |message: String| ImportError { format, message };
    match format {
        MeasurementFormat::BenchReport => {
            let report = parse_report(text).map_err(|e| fail(e.to_string()))?;
            let (comm, gemm) = samples_from_report(&report, ComputeDtype::Bf16);
            let mut notes = vec![format!(
                "Written by “{}”; environment: {}.",
                report.tool, report.environment.topology
            )];
            notes.extend(
                report
                    .notes
                    .iter()
                    .map(|n| format!("{}: {} ({})", n.section, n.subject, n.message)),
            );
            if !report.complete {
                notes.push("The run stopped early: the report holds what was measured.".into());
            }
            Ok(Measurements {
                format,
                comm,
                gemm,
                device: report.environment.gpus.first().map(|g| g.name.clone()),
                ranks_per_node: u64::from(report.environment.ranks_per_node.max(1)),
                layer_steps: report.layer_steps,
                notes,
            })
        }
        MeasurementFormat::NcclTestsJson | MeasurementFormat::NcclTestsText => {
            let run = if format == MeasurementFormat::NcclTestsJson {
                nccl_tests::parse_json(text)
            } else {
                nccl_tests::parse_text(text)
            }
            .map_err(|e| fail(e.to_string()))?;
            let comm =
                samples_from_nccl(&run, nccl.op, nccl.ranks, nccl.ranks_per_node).map_err(fail)?;
            let ranks_per_node = comm.first().map_or(1, |c| c.ranks_per_node);
            Ok(Measurements {
                format,
                comm,
                gemm: Vec::new(),
                layer_steps: Vec::new(),
                device: None,
                ranks_per_node,
                notes: Vec::new(),
            })
        }
    }
}

/// The GPU the GEMM fit is relative to: the preset the measured device names, else
/// `fallback`; with the reason in words (the page shows it beside the GEMM table).
pub fn gpu_for_device(device: Option<&str>, fallback: &GpuSpec) -> (GpuSpec, String) {
    match device.map(|d| (d, gpu_preset_for_device(d))) {
        Some((_, Some(g))) => {
            let note = format!("the report's device “{}”", g.name);
            (g, note)
        }
        Some((d, None)) => (
            fallback.clone(),
            format!("the report's device “{d}” is not a preset, so the scenario's GPU stands in"),
        ),
        None => (
            fallback.clone(),
            "nccl-tests output names no device, so the scenario's GPU stands in".to_string(),
        ),
    }
}

/// A fit and the datasheet links it was fitted against.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The fitted numbers, checked.
    pub summary: CalibrationSummary,
    /// The preset's links for `gpu` (one node), what the fit replaces.
    pub assumed: CommModel,
}

/// Fits samples against `gpu`'s preset links and BF16 peak; refuses an empty fit and
/// one `CalibrationSummary::check` would refuse (so neither the link nor `--calibration`
/// is ever handed a summary it cannot read back).
pub fn fit_measurements(
    comm: &[CommSample],
    gemm: &[GemmSample],
    gpu: &GpuSpec,
) -> Result<Fit, String> {
    let assumed = CommModel::assumed(&Cluster::of(gpu.clone(), 1));
    let summary = calibrate(comm, gemm, &assumed, gpu.bf16_flops_per_s);
    if summary.links.is_empty() && summary.gemm.is_none() {
        return Err("nothing to fit — no error-free collectives or BF16 GEMMs in it".to_string());
    }
    summary
        .check()
        .map_err(|e| format!("the fit is not usable — {e}"))?;
    Ok(Fit { summary, assumed })
}
