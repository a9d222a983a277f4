//! `validate --serving`: the serving time model against published serving measurements.

use std::fmt::Write as _;
use std::path::Path;

use planner_core::edges::serving_validation::{
    run_serving_validation, ServingRowResult, ServingValidationReport, SERVING_RUNS_JSON,
};

use super::validate::{
    groups_and_tally, json_error, pct, read_dataset, render_text, row_notes_and_conventions, value,
};
use crate::error::CliError;

/// Runs the serving validation and formats its result.
pub fn run(dataset: Option<&Path>, json: bool, table: bool) -> Result<String, CliError> {
    let (text, shown) = read_dataset(
        dataset,
        SERVING_RUNS_JSON,
        "validation/serving-runs.json (built in)",
    )?;
    let report = run_serving_validation(&text)
        .map_err(|e| CliError::BadInput(format!("{shown}: invalid dataset: {e}")))?;
    if json {
        return serde_json::to_string_pretty(&report).map_err(json_error);
    }
    Ok(render_text(&report, table, rows_table, summary_tables))
}

fn cell(row: &ServingRowResult, q: usize) -> String {
    let quantity = planner_core::edges::serving_validation::ServingQuantity::ALL[q];
    match row.comparisons.iter().find(|c| c.quantity == quantity) {
        Some(c) => format!(
            "{}/{} {:+.0}%",
            value(c.predicted),
            value(c.measured),
            c.relative_error * 100.0
        ),
        None if row.measured.contains(&quantity) => "n/r".to_string(),
        None => "—".to_string(),
    }
}

fn rows_table(out: &mut String, r: &ServingValidationReport) {
    let _ = writeln!(
        out,
        "Per row: predicted/measured error (TTFT, TPOT and end-to-end latency in ms, output tokens/s); breakdown in ms: prefill, decode step (memory | compute | comm), prefill interference per step, queue wait"
    );
    let _ = writeln!(
        out,
        "{:<44} {:>5} {:<22} {:<22} {:<24}  {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8}  bound",
        "id",
        "c",
        "ttft_ms",
        "tpot_ms",
        "output_tok_s",
        "prefill",
        "step",
        "memory",
        "compute",
        "comm",
        "interf",
        "queue"
    );
    for row in &r.rows {
        let ms = |s: f64| value(s * 1e3);
        match &row.breakdown {
            Some(b) => {
                let _ = writeln!(
                    out,
                    "{:<44} {:>5} {:<22} {:<22} {:<24} {:<24}  {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8}  {}",
                    row.id,
                    b.concurrency,
                    cell(row, 0),
                    cell(row, 1),
                    cell(row, 2),
                    cell(row, 3),
                    ms(b.prefill_s),
                    ms(b.decode_step_s),
                    ms(b.decode_memory_s),
                    ms(b.decode_compute_s),
                    ms(b.decode_comm_s),
                    ms(b.interference_s),
                    ms(b.queue_wait_s),
                    b.bound
                );
            }
            None => {
                let _ = writeln!(out, "{:<44} {:>5} not representable", row.id, "—");
            }
        }
    }
    let _ = writeln!(out, "\nNot representable:");
    for row in r.rows.iter().filter(|x| x.not_representable.is_some()) {
        let _ = writeln!(
            out,
            "  {}: {}",
            row.id,
            row.not_representable.as_deref().unwrap_or("")
        );
    }
    let notes = r.rows.iter().map(|row| {
        let mut parts: Vec<String> = row.model_source.iter().cloned().collect();
        parts.extend(row.defaults.iter().cloned());
        (row.id.as_str(), parts)
    });
    row_notes_and_conventions(
        out,
        "Model and defaults taken for what the source leaves unsaid:",
        notes,
        &r.conventions,
    );
}

fn summary_tables(out: &mut String, r: &ServingValidationReport) {
    let measurements: usize = r.rows.iter().map(|x| x.measured.len()).sum();
    let _ = writeln!(
        out,
        "meshplan validate --serving: {} published rows, {measurements} measurements; |error| = |predicted / measured − 1|; n/r = not representable, cmp = compared (counted per measurement)",
        r.dataset_rows
    );
    groups_and_tally(out, &r.by_quantity, &r.by_source);
    let misses: Vec<String> = r
        .rows
        .iter()
        .flat_map(|row| {
            row.comparisons
                .iter()
                .filter(|c| c.relative_error.abs() > 0.25)
                .map(move |c| {
                    format!(
                        "{} {} {}",
                        row.id,
                        c.quantity.id(),
                        pct(Some(c.relative_error))
                    )
                })
        })
        .collect();
    let _ = writeln!(out, "\nMissed by more than 25% ({}):", misses.len());
    for m in misses {
        let _ = writeln!(out, "  {m}");
    }
}
