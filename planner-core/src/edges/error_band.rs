//! The error band every predicted step time, throughput, MFU and peak memory carries: the
//! median miss of the published runs nearest the scenario (model size, cluster size, GPU,
//! framework, TP and PP: [`band_nearness`]), taken from each run's error when it first
//! entered the repository where that is recorded (the honest figure), and from today's
//! error otherwise, so the band says how many of each it used. Where no published run is
//! near, the band says the figure is an extrapolation instead of printing a narrow band.
//!
//! The errors come from `validation/errors.tsv`, which `meshplan validate --write-errors`
//! writes from the model as it stands and a test (`error_table_is_current`) keeps current:
//! reading it costs microseconds, where evaluating every published run again would cost a
//! fifth of a second natively, too slow for a slider. It is tab-separated text, read here
//! with `str::split` and `str::parse`, which the page links anyway: a JSON table pulled
//! `serde_json` into the page's first-load wasm (391 → 434 KB gzipped).

use serde::{Deserialize, Serialize};

use crate::edges::validation::{
    dataset_gpu_preset, shape_nearness, PublishedRun, Quantity, RunShape, ValidationReport,
};
use crate::input::framework::Framework;
use crate::resolve::validate::FieldError;

/// The built-in error table (`validation/errors.tsv`).
pub const ERROR_TABLE_TSV: &str = include_str!("../../../validation/errors.tsv");

/// The table's header line: its columns, in order.
pub const ERROR_TABLE_HEADER: &str =
    "id\tquantity\tparams_b\tgpus\tgpu_type\tframework\ttp\tpp\tfirst_seen\ttoday";

/// Published runs a band is read from (the "12 most similar").
pub const BAND_ROWS: usize = 12;

/// Beyond this [`scale_distance`] the nearest run is another kind of run: a different GPU
/// (+1), or a model or cluster ten times larger or smaller (+1 each), and the figure is an
/// extrapolation.
pub const EXTRAPOLATION_DISTANCE: f64 = 1.0;

/// One published run's error, as the band reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorRow {
    /// Row id in `validation/public-runs.json`.
    pub id: String,
    /// What it measured.
    pub quantity: Quantity,
    /// Published parameters, billions.
    pub params_b: f64,
    /// GPUs of the run.
    pub gpus: u32,
    /// The dataset's GPU name.
    pub gpu_type: String,
    /// The framework the row maps to ([`Framework::id`]).
    pub framework: String,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// `predicted / measured − 1` when the row first entered the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<f64>,
    /// `predicted / measured − 1` today (rounded to 4 decimals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub today: Option<f64>,
}

/// Which figures a band covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BandKind {
    /// Step time, tokens/s, MFU, TFLOP/s.
    StepTime,
    /// Peak memory.
    PeakMemory,
}

impl BandKind {
    fn covers(self, q: Quantity) -> bool {
        match self {
            BandKind::StepTime => matches!(
                q,
                Quantity::TokensPerSPerGpu
                    | Quantity::IterationTimeS
                    | Quantity::Mfu
                    | Quantity::TflopsPerGpuReported
            ),
            BandKind::PeakMemory => q == Quantity::PeakMemoryGib,
        }
    }
}

/// A scenario as the band compares it with published runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandScenario<'a> {
    /// Model parameters, billions.
    pub params_b: f64,
    /// GPUs.
    pub gpus: u64,
    /// The GPU preset id.
    pub gpu_id: &'a str,
    /// The framework whose semantics the scenario follows.
    pub framework: Framework,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
}

/// The error the evidence supports for one kind of figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBand {
    /// Which figures it covers.
    pub kind: BandKind,
    /// Median |error| of the nearest runs (a fraction: 0.18 = ±18%).
    pub relative: f64,
    /// Runs it was read from.
    pub runs: usize,
    /// Of which scored when first seen.
    pub first_seen_runs: usize,
    /// Nearness of the nearest run ([`band_nearness`]).
    pub nearest_distance: f64,
    /// Ids of the runs used, nearest first.
    pub nearest_ids: Vec<String>,
    /// Set when no published run is near: the figure is an extrapolation, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extrapolation: Option<String>,
    /// The band in words.
    pub text: String,
}

impl ErrorBand {
    /// Whether two figures of this kind differ by less than the band (relative to the
    /// smaller): the model cannot tell them apart.
    pub fn indistinct(&self, a: f64, b: f64) -> bool {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        lo > 0.0 && hi / lo - 1.0 < self.relative
    }
}

/// Reads an error table: [`ERROR_TABLE_HEADER`], then one tab-separated [`ErrorRow`] per
/// line (an empty field is an absent error). A bad line names its line and column.
pub fn parse_error_table(tsv: &str) -> Result<Vec<ErrorRow>, FieldError> {
    let mut lines = tsv.lines().enumerate();
    match lines.next() {
        Some((_, h)) if h == ERROR_TABLE_HEADER => {}
        _ => return Err(FieldError::new("line 1", "not an error table header")),
    }
    lines
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| parse_error_row(i + 1, l))
        .collect()
}

/// One line of the table (`line` counted from 1).
fn parse_error_row(line: usize, text: &str) -> Result<ErrorRow, FieldError> {
    let f: Vec<&str> = text.split('\t').collect();
    let at = |col: &str| format!("line {line}: {col}");
    if f.len() != 10 {
        return Err(FieldError::new(
            &at("columns"),
            format!("{} columns, 10 expected", f.len()),
        ));
    }
    let num = |i: usize, col: &str| -> Result<f64, FieldError> {
        f[i].parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| FieldError::new(&at(col), format!("'{}' is not a number", f[i])))
    };
    let opt = |i: usize, col: &str| -> Result<Option<f64>, FieldError> {
        if f[i].is_empty() {
            Ok(None)
        } else {
            num(i, col).map(Some)
        }
    };
    let count = |i: usize, col: &str| -> Result<u32, FieldError> {
        f[i].parse::<u32>()
            .map_err(|_| FieldError::new(&at(col), format!("'{}' is not a count", f[i])))
    };
    let quantity = Quantity::ALL
        .into_iter()
        .find(|q| q.id() == f[1])
        .ok_or_else(|| FieldError::new(&at("quantity"), format!("'{}' is not a quantity", f[1])))?;
    Ok(ErrorRow {
        id: f[0].to_string(),
        quantity,
        params_b: num(2, "params_b")?,
        gpus: count(3, "gpus")?,
        gpu_type: f[4].to_string(),
        framework: f[5].to_string(),
        tp: count(6, "tp")?,
        pp: count(7, "pp")?,
        first_seen: opt(8, "first_seen")?,
        today: opt(9, "today")?,
    })
}

/// The table as [`parse_error_table`] reads it.
pub fn error_table_tsv(rows: &[ErrorRow]) -> String {
    let opt = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    let mut out = format!("{ERROR_TABLE_HEADER}\n");
    for r in rows {
        let fields = [
            r.id.clone(),
            r.quantity.id().to_string(),
            r.params_b.to_string(),
            r.gpus.to_string(),
            r.gpu_type.clone(),
            r.framework.clone(),
            r.tp.to_string(),
            r.pp.to_string(),
            opt(r.first_seen),
            opt(r.today),
        ];
        out.push_str(&fields.join("\t"));
        out.push('\n');
    }
    out
}

/// The error table of a validation run: each compared row's errors, with the fields the
/// band's nearness reads.
pub fn error_table(runs: &[PublishedRun], report: &ValidationReport) -> Vec<ErrorRow> {
    let round = |x: f64| (x * 1e4).round() / 1e4;
    runs.iter()
        .zip(&report.rows)
        .filter(|(run, _)| !run.quantity.is_kv_pool())
        .map(|(run, row)| ErrorRow {
            id: run.id.clone(),
            quantity: run.quantity,
            params_b: run.params_b,
            gpus: run.gpus,
            gpu_type: run.gpu_type.clone(),
            framework: crate::edges::validation::run_framework(run)
                .id()
                .to_string(),
            tp: run.tp,
            pp: run.pp,
            first_seen: run
                .first_seen
                .as_ref()
                .and_then(|f| f.relative_error)
                .map(round),
            today: row.comparison.as_ref().map(|c| round(c.relative_error)),
        })
        .collect()
}

/// How far a published run lies from the scenario: the page's "nearest runs" measure
/// ([`shape_nearness`]: orders of magnitude of model and cluster size, 1 for another GPU, ½ each
/// for another TP or PP degree) plus ½ for another framework, whose semantics move step time
/// and memory as much as a layout does.
pub fn band_nearness(row: &ErrorRow, s: &BandScenario<'_>) -> f64 {
    let framework = if row.framework == s.framework.id() {
        0.0
    } else {
        0.5
    };
    shape_nearness(&row_shape(row), s.params_b, s.gpus, s.gpu_id, s.tp, s.pp) + framework
}

/// Orders of magnitude between a row's model and cluster size and the scenario's, plus one for
/// another GPU: how far the evidence is from the scenario, whatever the layout ([`shape_nearness`]
/// at the row's own TP and PP).
pub fn scale_distance(row: &ErrorRow, s: &BandScenario<'_>) -> f64 {
    shape_nearness(
        &row_shape(row),
        s.params_b,
        s.gpus,
        s.gpu_id,
        row.tp,
        row.pp,
    )
}

/// The fields of a row the nearness measures read.
fn row_shape(row: &ErrorRow) -> RunShape<'_> {
    RunShape {
        params_b: row.params_b,
        gpus: row.gpus,
        gpu_type: &row.gpu_type,
        tp: row.tp,
        pp: row.pp,
    }
}

/// The band of `kind` for scenario `s` from `table`: the median |error| of the
/// [`BAND_ROWS`] nearest rows of that kind (first-seen error where recorded, today's
/// otherwise); an extrapolation when the nearest lies beyond [`EXTRAPOLATION_DISTANCE`].
pub fn error_band(table: &[ErrorRow], kind: BandKind, s: &BandScenario<'_>) -> Option<ErrorBand> {
    let candidates = table
        .iter()
        .filter(|r| kind.covers(r.quantity))
        .filter_map(|r| {
            let (e, first) = match (r.first_seen, r.today) {
                (Some(e), _) => (e, true),
                (None, Some(e)) => (e, false),
                (None, None) => return None,
            };
            Some((band_nearness(r, s), r, e.abs(), first))
        });
    let scored = nearest_first(candidates, BAND_ROWS);
    let nearest_distance = scored.first()?.0;
    let errors = ascending(scored.iter().map(|x| x.2));
    let relative = crate::edges::validation::quantile(&errors, 0.5)?;
    let first_seen_runs = scored.iter().filter(|x| x.3).count();
    let on_gpu = table
        .iter()
        .any(|r| dataset_gpu_preset(&r.gpu_type).as_deref() == Some(s.gpu_id));
    // Coverage reads model size, cluster size and GPU only: another layout or framework near
    // in scale is still evidence, and ranks the rows above.
    let coverage = table
        .iter()
        .filter(|r| kind.covers(r.quantity))
        .map(|r| scale_distance(r, s))
        .fold(f64::INFINITY, f64::min);
    let extrapolation = if !on_gpu {
        Some(format!(
            "no published run on {} in the dataset: the figure is an extrapolation",
            s.gpu_id
        ))
    } else if coverage > EXTRAPOLATION_DISTANCE {
        Some(format!(
            "no published run within 10× of this model and cluster size on this GPU (nearest {coverage:.1} orders of magnitude away): the figure is an extrapolation"
        ))
    } else {
        None
    };
    let text = match &extrapolation {
        Some(why) => format!(
            "extrapolation ({why}); the {} nearest runs missed by a median {:.0}%",
            scored.len(),
            relative * 100.0
        ),
        None => format!(
            "±{:.0}% (median miss of the {} most similar published runs, {} of them scored when first seen)",
            relative * 100.0,
            scored.len(),
            first_seen_runs
        ),
    };
    Some(ErrorBand {
        kind,
        relative,
        runs: scored.len(),
        first_seen_runs,
        nearest_distance,
        nearest_ids: scored.iter().map(|x| x.1.id.clone()).collect(),
        extrapolation,
        text,
    })
}

/// The `k` nearest of `rows` by (distance, id), nearest first: an insertion into a list of at
/// most `k`, which keeps the page's first-load wasm free of a general sort's code (the stable
/// sort's instantiations were 8.5 KB of it) for a list of 12.
fn nearest_first<'t>(
    rows: impl Iterator<Item = (f64, &'t ErrorRow, f64, bool)>,
    k: usize,
) -> Vec<(f64, &'t ErrorRow, f64, bool)> {
    let before = |a: &(f64, &ErrorRow, f64, bool), b: &(f64, &ErrorRow, f64, bool)| {
        a.0.total_cmp(&b.0).then(a.1.id.cmp(&b.1.id)).is_lt()
    };
    let mut out: Vec<(f64, &ErrorRow, f64, bool)> = Vec::with_capacity(k + 1);
    for row in rows {
        let at = out
            .iter()
            .position(|o| before(&row, o))
            .unwrap_or(out.len());
        if at < k {
            out.insert(at, row);
            out.truncate(k);
        }
    }
    out
}

/// `values` in ascending order (`f64::total_cmp`), by insertion: the band sorts at most 12.
fn ascending(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for v in values {
        let at = out
            .iter()
            .position(|o| v.total_cmp(o).is_lt())
            .unwrap_or(out.len());
        out.insert(at, v);
    }
    out
}

/// The built-in table, parsed once (an unreadable table reads as empty; a test keeps it
/// readable and current).
pub fn builtin_table() -> &'static [ErrorRow] {
    static TABLE: std::sync::OnceLock<Vec<ErrorRow>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| parse_error_table(ERROR_TABLE_TSV).unwrap_or_default())
}

/// Both bands of a scenario from the built-in table (none for a kind without rows).
pub fn builtin_bands(s: &BandScenario<'_>) -> Vec<ErrorBand> {
    [BandKind::StepTime, BandKind::PeakMemory]
        .into_iter()
        .filter_map(|k| error_band(builtin_table(), k, s))
        .collect()
}

/// One band of a scenario from the built-in table.
pub fn builtin_band(kind: BandKind, s: &BandScenario<'_>) -> Option<ErrorBand> {
    error_band(builtin_table(), kind, s)
}

/// The band scenario of `scenario` with `params_b` billion parameters and its own layout.
pub fn band_scenario<'a>(
    scenario: &'a crate::input::scenario::Scenario,
    params_b: f64,
) -> BandScenario<'a> {
    BandScenario {
        params_b,
        gpus: scenario.cluster.world_size(),
        gpu_id: &scenario.cluster.gpu.id,
        framework: scenario.overheads.framework,
        tp: scenario.layout.tp,
        pp: scenario.layout.pp,
    }
}

/// A mesh search's ranked candidates, marked where a candidate's step time lies within the
/// step-time band of the best one: the model cannot tell them apart ("within the model's error
/// of each other: benchmark both"). `true` for each such candidate after the first.
pub fn within_band_of_best(band: &ErrorBand, step_s: &[f64]) -> Vec<bool> {
    let Some(best) = step_s.first().copied() else {
        return Vec::new();
    };
    step_s
        .iter()
        .enumerate()
        .map(|(i, s)| i > 0 && band.indistinct(best, *s))
        .collect()
}

/// What the search says of candidates within the band of the best.
pub const WITHIN_BAND_NOTE: &str = "within the model's error of the best: benchmark both";
