//! `validate --parts`: the model's parts against published micro-benchmarks.

use std::fmt::Write as _;
use std::path::Path;

use planner_core::edges::parts_validation::{validate_parts, Part, PartsReport, PARTS_JSON};

use super::validate::{group_table, json_error, pct, render_text, value};
use crate::error::CliError;

/// Runs the parts validation on the built-in datasets, or on one part's file.
pub fn run(dataset: Option<&Path>, json: bool, table: bool) -> Result<String, CliError> {
    let owned;
    let datasets: Vec<(Part, &str)> = match dataset {
        None => PARTS_JSON.to_vec(),
        Some(path) => {
            let shown = path.display().to_string();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let part = [Part::Collective, Part::Gemm, Part::Attention, Part::Hbm]
                .into_iter()
                .find(|p| name.starts_with(p.id()))
                .ok_or_else(|| {
                    CliError::BadInput(format!(
                        "{shown}: name the file after its part: collectives, gemm, attention or hbm (.json)"
                    ))
                })?;
            owned =
                std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{shown}: {e}")))?;
            vec![(part, owned.as_str())]
        }
    };
    let report = validate_parts(&datasets)
        .map_err(|e| CliError::BadInput(format!("invalid parts dataset: {e}")))?;
    if json {
        return serde_json::to_string_pretty(&report).map_err(json_error);
    }
    Ok(render_text(&report, table, rows_table, summary_tables))
}

/// The row count, then the per-part and per-source tables.
fn summary_tables(out: &mut String, report: &PartsReport) {
    let _ = writeln!(
        out,
        "meshplan validate --parts: {} published micro-benchmark rows; |error| = |predicted / measured − 1|",
        report.rows.len()
    );
    let _ = writeln!(out);
    group_table(out, "part", &report.by_part);
    let _ = writeln!(out);
    group_table(out, "source", &report.by_source);
}

fn rows_table(out: &mut String, r: &PartsReport) {
    let _ = writeln!(
        out,
        "{:<48} {:<11} {:>10} {:>10} {:>8}  how",
        "id", "part", "measured", "predicted", "error"
    );
    for row in &r.rows {
        let (pred, err, how) = match (&row.predicted, &row.not_representable) {
            (Some(p), _) => (value(*p), pct(row.relative_error), row.how.clone()),
            (None, Some(why)) => (
                "—".to_string(),
                "—".to_string(),
                format!("not representable: {why}"),
            ),
            (None, None) => ("—".to_string(), "—".to_string(), String::new()),
        };
        let _ = writeln!(
            out,
            "{:<48} {:<11} {:>10} {:>10} {:>8}  {how}",
            row.id,
            row.part.id(),
            value(row.measured),
            pred,
            err
        );
    }
    let _ = writeln!(out);
}
