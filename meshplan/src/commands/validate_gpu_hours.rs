//! `validate --gpu-hours`: the planner's expected GPU-hours against the totals model cards and
//! technical reports state (`validation/gpu-hours.json`), and the median |error|.

use std::fmt::Write;

use planner_core::base::explain::signed_percent;
use planner_core::edges::gpu_hours_validation::{gpu_hours_report, TotalsReport, GPU_HOURS_JSON};

use crate::error::CliError;

/// Compares the built-in dataset (or `dataset`'s text) and renders the report.
pub fn run(dataset: Option<&std::path::Path>, json: bool) -> Result<String, CliError> {
    let text = match dataset {
        Some(p) => {
            std::fs::read_to_string(p).map_err(|e| CliError::Io(format!("{}: {e}", p.display())))?
        }
        None => GPU_HOURS_JSON.to_string(),
    };
    let report = gpu_hours_report(&text).map_err(CliError::BadInput)?;
    if json {
        serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::BadInput(format!("result cannot be written as JSON: {e}")))
    } else {
        Ok(render(&report))
    }
}

fn millions(h: f64) -> String {
    format!("{:.3}M", h / 1e6)
}

fn render(r: &TotalsReport) -> String {
    let mut out =
        String::from("Published total GPU-hours against the planner's (goodput included):\n");
    let _ = writeln!(
        out,
        "  {:<30} {:>10} {:>10} {:>8}  note",
        "run", "stated", "planner", "error"
    );
    for row in &r.rows {
        let _ = writeln!(
            out,
            "  {:<30} {:>10} {:>10} {:>8}  {}",
            row.name,
            millions(row.stated_gpu_hours),
            row.predicted_gpu_hours.map_or("—".into(), millions),
            row.error.map_or("—".into(), signed_percent),
            row.note
        );
    }
    let median = r
        .median_abs_error
        .map_or("—".into(), |m| format!("{:.1}%", m * 100.0));
    let _ = write!(
        out,
        "Median |error| over the {} rows with a stated layout: {median} (target ≤ 20%)",
        r.compared
    );
    out
}
