//! The page's validation-worker protocol: what the worker sends ([`PageSummary`],
//! [`PageReply`] as record text or JSON, built by [`page_summary`]), and the rows nearest a
//! scenario ([`nearness`], [`nearest_rows`]).

use serde::{Deserialize, Serialize};

use crate::resolve::validate::FieldError;

use super::compare::{validate_runs, ValidationOptions};
use super::dataset::{parse_runs, PublishedRun};
use super::mapping::dataset_gpu_preset;
use super::summary::{ErrorStats, GroupSummary};

/// How far a published run lies from a scenario, for "the rows nearest yours": the
/// model size and cluster size as orders of magnitude (|log10| of their ratios), plus
/// one for another GPU and a half each for another TP or PP degree. A ranking aid,
/// not a physical quantity: rows at distance 0 are the same shape of run.
pub fn nearness(
    run: &PublishedRun,
    params_b: f64,
    gpus: u64,
    gpu_id: &str,
    tp: u32,
    pp: u32,
) -> f64 {
    shape_nearness(&RunShape::of(run), params_b, gpus, gpu_id, tp, pp)
}

/// The fields of a published run that [`nearness`] reads, so a run known only by
/// them (a [`PageRow`] the validation worker sent) is ranked by the same formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunShape<'a> {
    /// Published parameter count, billions.
    pub params_b: f64,
    /// GPUs of the run.
    pub gpus: u32,
    /// The dataset's GPU name (`A100-80GB`, `H100-80GB`…).
    pub gpu_type: &'a str,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
}

impl<'a> RunShape<'a> {
    /// The shape of a published run.
    pub fn of(run: &'a PublishedRun) -> Self {
        Self {
            params_b: run.params_b,
            gpus: run.gpus,
            gpu_type: &run.gpu_type,
            tp: run.tp,
            pp: run.pp,
        }
    }
}

/// [`nearness`] of a run given by its [`RunShape`].
pub fn shape_nearness(
    run: &RunShape<'_>,
    params_b: f64,
    gpus: u64,
    gpu_id: &str,
    tp: u32,
    pp: u32,
) -> f64 {
    let ratio = |a: f64, b: f64| (a.max(1e-9) / b.max(1e-9)).log10().abs();
    let run_gpu = dataset_gpu_preset(run.gpu_type).unwrap_or_default();
    let mut d = ratio(run.params_b, params_b) + ratio(f64::from(run.gpus), gpus as f64);
    if run_gpu != gpu_id {
        d += 1.0;
    }
    if run.tp != tp {
        d += 0.5;
    }
    if run.pp != pp {
        d += 0.5;
    }
    d
}

/// One summary row of the page's accuracy section ([`PageSummary`]): a group's name and
/// its [`ErrorStats`], whose fields sit beside `group` in the JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageGroup {
    /// Group name (a quantity id, [`TIME_GROUP`](super::TIME_GROUP) or
    /// [`ALL_GROUP`](super::ALL_GROUP)).
    pub group: String,
    /// |error| statistics of the group.
    #[serde(flatten)]
    pub stats: ErrorStats,
}

/// One compared row of the page's accuracy section ([`PageSummary`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageRow {
    /// Row id.
    pub id: String,
    /// Model name as published.
    pub model_name: String,
    /// Source of the row.
    pub source: String,
    /// The published layout, in words.
    pub layout: String,
    /// The quantity's id ([`Quantity::id`](super::Quantity::id)).
    pub quantity: String,
    /// The published value.
    pub measured: f64,
    /// meshplan's prediction.
    pub predicted: f64,
    /// predicted / measured − 1.
    pub relative_error: f64,
    /// Published parameter count, billions.
    pub params_b: f64,
    /// GPUs of the run.
    pub gpus: u32,
    /// The dataset's GPU name.
    pub gpu_type: String,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// The dataset's notes on the run.
    pub notes: String,
}

impl PageRow {
    /// The fields [`nearness`] reads.
    pub fn shape(&self) -> RunShape<'_> {
        RunShape {
            params_b: self.params_b,
            gpus: self.gpus,
            gpu_type: &self.gpu_type,
            tp: self.tp,
            pp: self.pp,
        }
    }
}

/// What the page's validation worker computes: the per-quantity summary, the
/// compared rows, and the worker's own time. The app only parses it, so the page's
/// wasm does not link the evaluation of the published runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageSummary {
    /// Rows in the dataset.
    pub dataset_rows: usize,
    /// Summary per quantity, then tokens/s + iteration time, then all rows
    /// ([`ValidationReport::by_quantity`](super::ValidationReport::by_quantity)).
    pub groups: Vec<PageGroup>,
    /// The rows that carry a first-seen error, summarised by that error
    /// ([`ValidationReport::first_seen`](super::ValidationReport::first_seen)): how the model
    /// did on runs it was not developed against.
    pub first_seen: Vec<PageGroup>,
    /// The same rows today
    /// ([`ValidationReport::first_seen_today`](super::ValidationReport::first_seen_today)),
    /// group for group.
    pub first_seen_today: Vec<PageGroup>,
    /// Compared rows, in dataset order.
    pub rows: Vec<PageRow>,
    /// Milliseconds the worker spent parsing, evaluating and summarising.
    pub worker_ms: f64,
}

/// A message from the page's validation worker to the page (record text,
/// [`PageReply::to_text`]; its JSON form is kept for tests and tools).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PageReply {
    /// The worker's wasm is loaded and listening: the page may post its request.
    Ready,
    /// The validation finished.
    Summary(PageSummary),
    /// The dataset did not parse.
    Failed(String),
}

impl PageReply {
    /// The reply as the worker posts it ([`crate::base::record_text`]): a head record
    /// (`Summary`, dataset rows, worker ms), then one record per group (`g`) and per
    /// row (`r`). The page reads it with [`PageReply::from_text`] and no JSON parser.
    pub fn to_text(&self) -> String {
        use crate::base::record_text::{maybe_field, record, RECORD};
        match self {
            PageReply::Ready => "Ready".to_string(),
            PageReply::Failed(e) => record(&["Failed".into(), e.clone()]),
            PageReply::Summary(s) => {
                let mut records = vec![record(&[
                    "Summary".into(),
                    s.dataset_rows.to_string(),
                    s.worker_ms.to_string(),
                ])];
                let kinds = [
                    ("g", &s.groups),
                    ("f", &s.first_seen),
                    ("t", &s.first_seen_today),
                ];
                for (kind, g) in kinds
                    .iter()
                    .flat_map(|(k, gs)| gs.iter().map(move |g| (*k, g)))
                {
                    let t = &g.stats;
                    records.push(record(&[
                        kind.into(),
                        g.group.clone(),
                        t.rows.to_string(),
                        t.compared.to_string(),
                        t.not_representable.to_string(),
                        maybe_field(t.median),
                        maybe_field(t.p90),
                        maybe_field(t.max),
                        maybe_field(t.within_10),
                        maybe_field(t.within_25),
                    ]));
                }
                for r in &s.rows {
                    records.push(record(&[
                        "r".into(),
                        r.id.clone(),
                        r.model_name.clone(),
                        r.source.clone(),
                        r.layout.clone(),
                        r.quantity.clone(),
                        r.measured.to_string(),
                        r.predicted.to_string(),
                        r.relative_error.to_string(),
                        r.params_b.to_string(),
                        r.gpus.to_string(),
                        r.gpu_type.clone(),
                        r.tp.to_string(),
                        r.pp.to_string(),
                        r.notes.clone(),
                    ]));
                }
                records.join(&RECORD.to_string())
            }
        }
    }

    /// Reads what [`PageReply::to_text`] wrote.
    pub fn from_text(text: &str) -> Result<Self, String> {
        use crate::base::record_text::{count, number, split, text as field};
        let records = split(text);
        let Some((head, rest)) = records.split_first() else {
            return Err("an empty validation reply".to_string());
        };
        match (head.first().map(String::as_str), head.len()) {
            (Some("Ready"), 1) if rest.is_empty() => return Ok(PageReply::Ready),
            (Some("Failed"), 2) if rest.is_empty() => {
                return Ok(PageReply::Failed(field(head, 1, "Failed")?))
            }
            (Some("Summary"), 3) => {}
            _ => return Err("not a validation reply".to_string()),
        }
        let mut summary = PageSummary {
            dataset_rows: count(head, 1, "dataset_rows")?,
            groups: Vec::new(),
            first_seen: Vec::new(),
            first_seen_today: Vec::new(),
            rows: Vec::new(),
            worker_ms: number(head, 2, "worker_ms")?,
        };
        for f in rest {
            match (f.first().map(String::as_str), f.len()) {
                (Some(kind @ ("g" | "f" | "t")), 10) => {
                    let group = page_group(f)?;
                    match kind {
                        "g" => summary.groups.push(group),
                        "f" => summary.first_seen.push(group),
                        _ => summary.first_seen_today.push(group),
                    }
                }
                (Some("r"), 15) => summary.rows.push(PageRow {
                    id: field(f, 1, "id")?,
                    model_name: field(f, 2, "model_name")?,
                    source: field(f, 3, "source")?,
                    layout: field(f, 4, "layout")?,
                    quantity: field(f, 5, "quantity")?,
                    measured: number(f, 6, "measured")?,
                    predicted: number(f, 7, "predicted")?,
                    relative_error: number(f, 8, "relative_error")?,
                    params_b: number(f, 9, "params_b")?,
                    gpus: count(f, 10, "gpus")?,
                    gpu_type: field(f, 11, "gpu_type")?,
                    tp: count(f, 12, "tp")?,
                    pp: count(f, 13, "pp")?,
                    notes: field(f, 14, "notes")?,
                }),
                _ => {
                    return Err("a validation reply record of neither a group nor a row".to_string())
                }
            }
        }
        Ok(PageReply::Summary(summary))
    }

    /// Reads a reply from its JSON text (what `serde_json::to_string` wrote).
    ///
    /// Equal to `serde_json::from_str::<PageReply>` (the tests check it), read through
    /// `serde_json::Value`. The page reads the record text instead ([`PageReply::from_text`]),
    /// so it links no JSON parser.
    pub fn from_json(text: &str) -> Result<Self, String> {
        use crate::base::json_value::{count, field, list, number, string};
        use serde_json::Value;
        let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if v.as_str() == Some("Ready") {
            return Ok(PageReply::Ready);
        }
        if let Some(e) = v.get("Failed") {
            return e
                .as_str()
                .map(|e| PageReply::Failed(e.to_string()))
                .ok_or_else(|| "`Failed` is not a string".to_string());
        }
        let s = field(&v, "Summary")?;
        let group_of = |g: &Value| -> Result<PageGroup, String> {
            Ok(PageGroup {
                group: string(g, "group")?,
                stats: ErrorStats::from_value(g)?,
            })
        };
        Ok(PageReply::Summary(PageSummary {
            dataset_rows: count(s, "dataset_rows")?,
            groups: list(s, "groups", group_of)?,
            first_seen: list(s, "first_seen", group_of)?,
            first_seen_today: list(s, "first_seen_today", group_of)?,
            rows: list(s, "rows", |r| {
                Ok(PageRow {
                    id: string(r, "id")?,
                    model_name: string(r, "model_name")?,
                    source: string(r, "source")?,
                    layout: string(r, "layout")?,
                    quantity: string(r, "quantity")?,
                    measured: number(r, "measured")?,
                    predicted: number(r, "predicted")?,
                    relative_error: number(r, "relative_error")?,
                    params_b: number(r, "params_b")?,
                    gpus: count(r, "gpus")?,
                    gpu_type: string(r, "gpu_type")?,
                    tp: count(r, "tp")?,
                    pp: count(r, "pp")?,
                    notes: string(r, "notes")?,
                })
            })?,
            worker_ms: number(s, "worker_ms")?,
        }))
    }
}

/// One group record of [`PageReply::to_text`] (kind `g`, `f` or `t`, then nine fields).
fn page_group(f: &[String]) -> Result<PageGroup, String> {
    use crate::base::record_text::{count, maybe_number, text as field};
    Ok(PageGroup {
        group: field(f, 1, "group")?,
        stats: ErrorStats {
            rows: count(f, 2, "rows")?,
            compared: count(f, 3, "compared")?,
            not_representable: count(f, 4, "not_representable")?,
            median: maybe_number(f, 5, "median")?,
            p90: maybe_number(f, 6, "p90")?,
            max: maybe_number(f, 7, "max")?,
            within_10: maybe_number(f, 8, "within_10")?,
            within_25: maybe_number(f, 9, "within_25")?,
        },
    })
}

/// Parses `json`, validates every row (no mesh search) and condenses the report for
/// the page; `worker_ms` is left at 0 for the caller to fill in.
pub fn page_summary(json: &str) -> Result<PageSummary, FieldError> {
    let runs = parse_runs(json)?;
    let report = validate_runs(&runs, ValidationOptions { search: false });
    let page_groups = |gs: &[GroupSummary]| -> Vec<PageGroup> {
        gs.iter()
            .map(|g| PageGroup {
                group: g.group.clone(),
                stats: g.stats.clone(),
            })
            .collect()
    };
    let groups = page_groups(&report.by_quantity);
    let rows = runs
        .iter()
        .zip(&report.rows)
        .filter_map(|(run, row)| {
            let c = row.comparison.as_ref()?;
            Some(PageRow {
                id: row.id.clone(),
                model_name: run.model_name.clone(),
                source: run.source.clone(),
                layout: row.layout.clone(),
                quantity: row.quantity.id().to_string(),
                measured: row.measured,
                predicted: c.predicted,
                relative_error: c.relative_error,
                params_b: run.params_b,
                gpus: run.gpus,
                gpu_type: run.gpu_type.clone(),
                tp: run.tp,
                pp: run.pp,
                notes: run.notes.clone(),
            })
        })
        .collect();
    Ok(PageSummary {
        dataset_rows: report.dataset_rows,
        groups,
        first_seen: page_groups(&report.first_seen),
        first_seen_today: page_groups(&report.first_seen_today),
        rows,
        worker_ms: 0.0,
    })
}

/// The `n` rows nearest a scenario by [`nearness`] (ties in dataset order).
pub fn nearest_rows<'a>(
    rows: &'a [PageRow],
    params_b: f64,
    gpus: u64,
    gpu_id: &str,
    tp: u32,
    pp: u32,
    n: usize,
) -> Vec<&'a PageRow> {
    let mut scored: Vec<(f64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                shape_nearness(&r.shape(), params_b, gpus, gpu_id, tp, pp),
                i,
            )
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(n).map(|(_, i)| &rows[i]).collect()
}
