//! `validate`: the step-time model against published training runs.

use std::fmt::Write as _;
use std::path::Path;

use planner_core::edges::error_band::{error_table, error_table_tsv};
use planner_core::edges::validation::{
    parse_runs, run_validation, GroupSummary, RowResult, ValidationOptions, ValidationReport,
};

use crate::error::CliError;

/// The dataset in the repository, built into the binary so the command runs from any directory.
pub const DEFAULT_DATASET: &str = planner_core::edges::validation::PUBLIC_RUNS_JSON;

/// Arguments of `validate`.
pub struct Args<'a> {
    pub dataset: Option<&'a Path>,
    pub json: bool,
    pub table: bool,
    pub search: bool,
    pub write_errors: Option<&'a Path>,
    /// Default to the memory rows (`validation/memory-runs.json`).
    pub memory: bool,
}

/// Runs the validation and formats its result.
pub fn run(args: &Args) -> Result<String, CliError> {
    let (default, default_name) = if args.memory {
        (
            planner_core::edges::validation::MEMORY_RUNS_JSON,
            "validation/memory-runs.json (built in)",
        )
    } else {
        (DEFAULT_DATASET, "validation/public-runs.json (built in)")
    };
    let (text, shown) = read_dataset(args.dataset, default, default_name)?;
    let report = run_validation(
        &text,
        ValidationOptions {
            search: args.search,
        },
    )
    .map_err(|e| CliError::BadInput(format!("{shown}: invalid dataset: {e}")))?;
    if let Some(path) = args.write_errors {
        write_error_table(path, &text, &report)?;
    }
    if args.json {
        return serde_json::to_string_pretty(&report).map_err(json_error);
    }
    Ok(render_text(&report, args.table, rows_table, summary_tables))
}

/// A report that cannot be written as JSON.
pub(super) fn json_error(e: serde_json::Error) -> CliError {
    CliError::BadInput(format!("result cannot be written as JSON: {e}"))
}

/// A validation report as text: the per-row table (`table`), then the summary.
pub(super) fn render_text<R>(
    report: &R,
    table: bool,
    rows_table: fn(&mut String, &R),
    summary: fn(&mut String, &R),
) -> String {
    let mut out = String::new();
    if table {
        rows_table(&mut out, report);
    }
    summary(&mut out, report);
    out.trim_end().to_string()
}

/// Writes the error table the bands read (`planner_core::edges::error_band`).
fn write_error_table(path: &Path, text: &str, report: &ValidationReport) -> Result<(), CliError> {
    let runs = parse_runs(text).map_err(|e| CliError::BadInput(e.to_string()))?;
    let table = error_table(&runs, report);
    std::fs::write(path, error_table_tsv(&table))
        .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

/// The dataset's text and how to name it: the file at `path`, or the built-in `default`.
pub(super) fn read_dataset(
    path: Option<&Path>,
    default: &str,
    default_name: &str,
) -> Result<(String, String), CliError> {
    match path {
        Some(path) => {
            let shown = path.display().to_string();
            let text =
                std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{shown}: {e}")))?;
            Ok((text, shown))
        }
        None => Ok((default.to_string(), default_name.to_string())),
    }
}

/// The per-quantity and per-source tables, then rows per reason of not being representable.
pub(super) fn groups_and_tally(
    out: &mut String,
    by_quantity: &[GroupSummary],
    by_source: &[GroupSummary],
) {
    let _ = writeln!(out);
    group_table(out, "quantity", by_quantity);
    let _ = writeln!(out);
    group_table(out, "source", by_source);
    let _ = writeln!(out);
    not_representable_tally(out, by_quantity.last());
}

/// The "Not representable" lines of the all-quantities group: rows per reason.
fn not_representable_tally(out: &mut String, all: Option<&GroupSummary>) {
    let Some(all) = all else { return };
    if all.not_representable.is_empty() {
        let _ = writeln!(out, "Not representable: none");
        return;
    }
    let _ = writeln!(out, "Not representable:");
    for t in &all.not_representable {
        let _ = writeln!(out, "  {} rows: {}", t.rows.len(), t.reason);
    }
}

pub(super) fn pct(x: Option<f64>) -> String {
    x.map_or("—".to_string(), |v| format!("{:.1}%", v * 100.0))
}

pub(super) fn value(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn rows_table(out: &mut String, r: &ValidationReport) {
    let _ = writeln!(
        out,
        "Per row (seconds per step; comm = exposed communication by group)"
    );
    let _ = writeln!(
        out,
        "{:<44} {:<23} {:>9} {:>9} {:>8}  {:>8} {:>8} {:>7} {:>7}  {:<26} {:>6}",
        "id",
        "quantity",
        "measured",
        "predicted",
        "error",
        "step_s",
        "compute",
        "bubble",
        "optim",
        "comm",
        "rank"
    );
    for row in &r.rows {
        match &row.comparison {
            Some(c) => {
                let b = &c.breakdown;
                let comm: Vec<String> = b
                    .exposed_comm_s
                    .iter()
                    .map(|(k, v)| format!("{k} {}", value(*v)))
                    .collect();
                let _ = writeln!(
                    out,
                    "{:<44} {:<23} {:>9} {:>9} {:>7.1}%  {:>8} {:>8} {:>7} {:>7}  {:<26} {:>6}",
                    row.id,
                    row.quantity.id(),
                    value(row.measured),
                    value(c.predicted),
                    c.relative_error * 100.0,
                    value(b.step_s),
                    value(b.compute_s),
                    value(b.bubble_s),
                    value(b.optimizer_s),
                    if comm.is_empty() {
                        "—".to_string()
                    } else {
                        comm.join(", ")
                    },
                    rank(row)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{:<44} {:<23} {:>9} {:>9} {:>8}  not representable",
                    row.id,
                    row.quantity.id(),
                    value(row.measured),
                    "—",
                    "—"
                );
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
    let notes = r
        .rows
        .iter()
        .filter_map(|row| row.comparison.as_ref().map(|c| (row, c)))
        .map(|(row, c)| {
            let mut parts = row.defaults.clone();
            parts.extend(c.rule_violations.iter().map(|v| format!("rule {v}")));
            (row.id.as_str(), parts)
        });
    row_notes_and_conventions(
        out,
        "Defaults taken for what the source leaves unsaid, and layout rules the published layout breaks:",
        notes,
        &r.conventions,
    );
}

/// The tail of a `--table` listing: per row what was assumed (rows with nothing to say are
/// left out), then the comparison's conventions. Shared by the training and serving tables.
pub(crate) fn row_notes_and_conventions<'a>(
    out: &mut String,
    title: &str,
    rows: impl Iterator<Item = (&'a str, Vec<String>)>,
    conventions: &[String],
) {
    let _ = writeln!(out, "\n{title}");
    for (id, parts) in rows.filter(|(_, parts)| !parts.is_empty()) {
        let _ = writeln!(out, "  {id}: {}", parts.join("; "));
    }
    let _ = writeln!(out, "\nConventions:");
    for c in conventions {
        let _ = writeln!(out, "  - {c}");
    }
    let _ = writeln!(out);
}

fn rank(row: &RowResult) -> String {
    match &row.search {
        None => "—".to_string(),
        Some(s) => match (s.rank, s.mesh_rank) {
            (Some(n), Some(m)) => format!("#{n} (mesh #{m})"),
            (Some(n), None) => format!("#{n}"),
            (None, _) => "rej".to_string(),
        },
    }
}

pub(super) fn group_table(out: &mut String, title: &str, groups: &[GroupSummary]) {
    // The first column fits the longest group name (at least 28 characters).
    let w = groups
        .iter()
        .map(|g| g.group.chars().count())
        .chain([28])
        .max()
        .unwrap_or(28);
    let _ = writeln!(
        out,
        "{:<w$} {:>4} {:>4} {:>4} {:>8} {:>8} {:>8} {:>7} {:>7}",
        title, "rows", "n/r", "cmp", "median", "p90", "max", "≤10%", "≤25%"
    );
    for g in groups {
        let s = &g.stats;
        let _ = writeln!(
            out,
            "{:<w$} {:>4} {:>4} {:>4} {:>8} {:>8} {:>8} {:>7} {:>7}",
            g.group,
            s.rows,
            s.not_representable,
            s.compared,
            pct(s.median),
            pct(s.p90),
            pct(s.max),
            pct(s.within_10),
            pct(s.within_25)
        );
    }
}

/// The rows that record their first-seen error: that error's summary beside today's, the
/// honest measure of the model on runs nobody working on it had seen.
fn first_seen_table(out: &mut String, r: &ValidationReport) {
    if r.first_seen.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "On rows when they were first seen (the honest figure: the model had not been developed against them), beside the same rows today"
    );
    let _ = writeln!(
        out,
        "{:<28} {:>5} {:>4}  {:>8} {:>8} {:>8}  {:>8} {:>8} {:>8}",
        "group", "rows", "n/r", "1st med", "1st p90", "1st max", "med now", "p90 now", "max now"
    );
    for (seen, now) in r.first_seen.iter().zip(&r.first_seen_today) {
        let (a, b) = (&seen.stats, &now.stats);
        let _ = writeln!(
            out,
            "{:<28} {:>5} {:>4}  {:>8} {:>8} {:>8}  {:>8} {:>8} {:>8}",
            seen.group,
            a.rows,
            a.not_representable,
            pct(a.median),
            pct(a.p90),
            pct(a.max),
            pct(b.median),
            pct(b.p90),
            pct(b.max)
        );
    }
}

fn summary_tables(out: &mut String, r: &ValidationReport) {
    let _ = writeln!(
        out,
        "meshplan validate: {} published rows; |error| = |predicted / measured − 1|; n/r = not representable, cmp = compared",
        r.dataset_rows
    );
    groups_and_tally(out, &r.by_quantity, &r.by_source);
    first_seen_table(out, r);
    if let Some(s) = &r.search {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Mesh search ({} rows, {} distinct searches): published mesh feasible in {} rows; in the search's list (each mesh once, at its best ZeRO stage, recompute, micro-batch and schedule) in the top 10 in {} ({}); median rank {}",
            s.rows,
            s.searches,
            s.ranked,
            s.mesh_top_10,
            pct(s.mesh_top_10_share),
            s.median_mesh_rank.map_or("—".to_string(), |m| format!("{m:.0}"))
        );
        let _ = writeln!(
            out,
            "  counting every knob setting as its own candidate: in the top 10 in {} ({}); median rank {}",
            s.top_10,
            pct(s.top_10_share),
            s.median_rank.map_or("—".to_string(), |m| format!("{m:.0}"))
        );
        for t in &s.rejected {
            let _ = writeln!(out, "  rejected ({}): {} rows", t.reason, t.rows.len());
        }
    }
}
