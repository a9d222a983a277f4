//! Statistics of the errors: |error| quantiles ([`ErrorStats`], [`quantile`]), groups by
//! quantity and by source ([`GroupSummary`]), the first-seen groups, and the whole report
//! ([`ValidationReport`], [`summarize`]).

use serde::{Deserialize, Serialize};

use super::compare::{conventions, RowResult};
use super::dataset::{MemoryKind, Quantity};
use super::search_rank::{search_summary, SearchSummary};

/// |error| statistics of a group of rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorStats {
    /// Rows in the group.
    pub rows: usize,
    /// Rows compared.
    pub compared: usize,
    /// Rows not representable.
    pub not_representable: usize,
    /// Median |error|.
    pub median: Option<f64>,
    /// 90th percentile |error| (linear interpolation between order statistics).
    pub p90: Option<f64>,
    /// Largest |error|.
    pub max: Option<f64>,
    /// Share of compared rows with |error| ≤ 10%.
    pub within_10: Option<f64>,
    /// Share of compared rows with |error| ≤ 25%.
    pub within_25: Option<f64>,
}

impl ErrorStats {
    /// Reads the fields serde writes for these statistics from a JSON object, through
    /// `serde_json::Value` as [`PageReply::from_json`](super::PageReply::from_json) reads (see
    /// there why).
    pub fn from_value(v: &serde_json::Value) -> Result<Self, String> {
        use crate::base::json_value::{count, maybe};
        Ok(ErrorStats {
            rows: count(v, "rows")?,
            compared: count(v, "compared")?,
            not_representable: count(v, "not_representable")?,
            median: maybe(v, "median")?,
            p90: maybe(v, "p90")?,
            max: maybe(v, "max")?,
            within_10: maybe(v, "within_10")?,
            within_25: maybe(v, "within_25")?,
        })
    }
}

/// The `q`-quantile (0..=1) of ascending `sorted` by linear interpolation between the
/// order statistics at `q·(n−1)` (Hyndman & Fan 1996, type 7; numpy's default).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (a, b) = (sorted[lo.min(n - 1)], sorted[hi.min(n - 1)]);
    Some(a + (b - a) * (pos - lo as f64))
}

/// Statistics of relative errors (signed; their absolute values are summarised)
/// of `compared` rows, in a group that also holds `not_representable` rows.
pub fn error_stats(errors: &[f64], not_representable: usize) -> ErrorStats {
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let n = abs.len();
    let share =
        |limit: f64| (n > 0).then(|| abs.iter().filter(|e| **e <= limit).count() as f64 / n as f64);
    ErrorStats {
        rows: n + not_representable,
        compared: n,
        not_representable,
        median: quantile(&abs, 0.5),
        p90: quantile(&abs, 0.9),
        max: abs.last().copied(),
        within_10: share(0.10),
        within_25: share(0.25),
    }
}

/// Rows sharing a reason for not being representable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonTally {
    /// The reason.
    pub reason: String,
    /// Row ids.
    pub rows: Vec<String>,
}

/// Summary of one group (a quantity, a source, or a union of quantities).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Group name.
    pub group: String,
    /// |error| statistics.
    pub stats: ErrorStats,
    /// Why rows are not representable.
    pub not_representable: Vec<ReasonTally>,
}

/// Adds row `id` to the tally of `reason` in `tallies`, or a new tally after the others.
pub fn tally_reason(tallies: &mut Vec<ReasonTally>, reason: &str, id: &str) {
    match tallies.iter_mut().find(|t| t.reason == reason) {
        Some(t) => t.rows.push(id.to_string()),
        None => tallies.push(ReasonTally {
            reason: reason.to_string(),
            rows: vec![id.to_string()],
        }),
    }
}

/// One [`GroupSummary`] per source of `rows`, in first-seen order, each made by
/// `summarize(source, the rows of that source)`.
pub fn summarize_by_source<R>(
    rows: &[R],
    source: impl Fn(&R) -> &str,
    summarize: impl Fn(&str, &[&R]) -> GroupSummary,
) -> Vec<GroupSummary> {
    let mut sources: Vec<&str> = Vec::new();
    for r in rows {
        if !sources.contains(&source(r)) {
            sources.push(source(r));
        }
    }
    sources
        .iter()
        .map(|s| {
            let group: Vec<&R> = rows.iter().filter(|r| source(r) == *s).collect();
            summarize(s, &group)
        })
        .collect()
}

fn summarize_group(group: &str, rows: &[&RowResult]) -> GroupSummary {
    let errors: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.comparison.as_ref().map(|c| c.relative_error))
        .collect();
    let mut tallies: Vec<ReasonTally> = Vec::new();
    for r in rows {
        if let Some(reason) = &r.not_representable {
            tally_reason(&mut tallies, reason, &r.id);
        }
    }
    let not_representable = rows.len() - errors.len();
    GroupSummary {
        group: group.to_string(),
        stats: error_stats(&errors, not_representable),
        not_representable: tallies,
    }
}

/// Everything one validation run produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidationReport {
    /// Rows in the dataset.
    pub dataset_rows: usize,
    /// Conventions of the comparison, in words.
    pub conventions: Vec<String>,
    /// One result per row, in dataset order.
    pub rows: Vec<RowResult>,
    /// Summary per quantity, then tokens/s + iteration time together, then all rows.
    pub by_quantity: Vec<GroupSummary>,
    /// Summary per source.
    pub by_source: Vec<GroupSummary>,
    /// The mesh-search summary, when searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchSummary>,
    /// The same groups over the rows that record their first-seen error, by that error:
    /// how the model did on runs before anyone working on it had seen them.
    #[serde(default)]
    pub first_seen: Vec<GroupSummary>,
    /// The groups of `by_quantity` today, over those same rows, beside `first_seen`.
    #[serde(default)]
    pub first_seen_today: Vec<GroupSummary>,
}

/// Name of the summary group of tokens/s and iteration-time rows together.
pub const TIME_GROUP: &str = "tokens/s + iteration time";

/// Name of the summary group of every row.
pub const ALL_GROUP: &str = "all quantities";

/// Name of the summary group of every time quantity (tokens/s, iteration time, MFU, TFLOP/s).
pub const ALL_TIME_GROUP: &str = "all time quantities";

/// Whether a quantity is a training step's time (tokens/s, iteration time, MFU, TFLOP/s).
fn is_step_time(q: Quantity) -> bool {
    matches!(
        q,
        Quantity::TokensPerSPerGpu
            | Quantity::IterationTimeS
            | Quantity::Mfu
            | Quantity::TflopsPerGpuReported
    )
}

/// Builds the summaries of already evaluated rows (`searches`: distinct searches run, if any).
pub fn summarize(
    dataset_rows: usize,
    rows: Vec<RowResult>,
    searches: Option<usize>,
) -> ValidationReport {
    let mut by_quantity = Vec::new();
    for q in Quantity::ALL {
        let group: Vec<&RowResult> = rows.iter().filter(|r| r.quantity == q).collect();
        if !group.is_empty() {
            by_quantity.push(summarize_group(q.id(), &group));
        }
    }
    let time: Vec<&RowResult> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.quantity,
                Quantity::TokensPerSPerGpu | Quantity::IterationTimeS
            )
        })
        .collect();
    by_quantity.push(summarize_group(TIME_GROUP, &time));
    // Memory rows that name their peak: allocated and reserved apart (each is compared with
    // the matching prediction, and they miss differently).
    for (kind, name) in [
        (MemoryKind::Allocated, "peak memory (allocated)"),
        (MemoryKind::Reserved, "peak memory (reserved)"),
    ] {
        let group: Vec<&RowResult> = rows
            .iter()
            .filter(|r| r.memory_kind == Some(kind))
            .collect();
        if !group.is_empty() {
            by_quantity.push(summarize_group(name, &group));
        }
    }
    let all: Vec<&RowResult> = rows.iter().collect();
    by_quantity.push(summarize_group(ALL_GROUP, &all));

    let by_source = summarize_by_source(&rows, |r| r.source.as_str(), summarize_group);

    let search = searches.map(|n| search_summary(&rows, n));
    let first_seen = first_seen_groups(
        &rows,
        |r| r.first_seen.as_ref().and_then(|f| f.relative_error),
        |r| {
            r.first_seen
                .as_ref()
                .and_then(|f| f.not_representable.clone())
        },
    );
    let first_seen_today = first_seen_groups(
        &rows,
        |r| r.comparison.as_ref().map(|c| c.relative_error),
        |r| r.not_representable.clone(),
    );
    ValidationReport {
        dataset_rows,
        conventions: conventions(),
        rows,
        by_quantity,
        by_source,
        search,
        first_seen,
        first_seen_today,
    }
}

/// One group's statistics over the signed errors `error` gives each row (`None`: not
/// representable), with the reasons `reason` gives.
fn summarize_errors(
    group: &str,
    rows: &[&RowResult],
    error: impl Fn(&RowResult) -> Option<f64>,
    reason: impl Fn(&RowResult) -> Option<String>,
) -> GroupSummary {
    let errors: Vec<f64> = rows.iter().filter_map(|r| error(r)).collect();
    let mut tallies: Vec<ReasonTally> = Vec::new();
    for r in rows.iter().filter(|r| error(r).is_none()) {
        let why = reason(r).unwrap_or_else(|| "not compared".to_string());
        tally_reason(&mut tallies, &why, &r.id);
    }
    GroupSummary {
        group: group.to_string(),
        stats: error_stats(&errors, rows.len() - errors.len()),
        not_representable: tallies,
    }
}

/// The first-seen groups (tokens/s + iteration time, all time quantities, peak memory, KV
/// pool, all) over the rows that record a first-seen error, by `error`.
fn first_seen_groups(
    rows: &[RowResult],
    error: impl Fn(&RowResult) -> Option<f64> + Copy,
    reason: impl Fn(&RowResult) -> Option<String> + Copy,
) -> Vec<GroupSummary> {
    let seen: Vec<&RowResult> = rows.iter().filter(|r| r.first_seen.is_some()).collect();
    if seen.is_empty() {
        return Vec::new();
    }
    let pick = |f: &dyn Fn(Quantity) -> bool| -> Vec<&RowResult> {
        seen.iter().copied().filter(|r| f(r.quantity)).collect()
    };
    let groups: [(&str, Vec<&RowResult>); 5] = [
        (
            TIME_GROUP,
            pick(&|q| matches!(q, Quantity::TokensPerSPerGpu | Quantity::IterationTimeS)),
        ),
        (ALL_TIME_GROUP, pick(&is_step_time)),
        (
            Quantity::PeakMemoryGib.id(),
            pick(&|q| q == Quantity::PeakMemoryGib),
        ),
        ("kv pool", pick(&Quantity::is_kv_pool)),
        (ALL_GROUP, seen.clone()),
    ];
    groups
        .iter()
        .filter(|(_, g)| !g.is_empty())
        .map(|(name, g)| summarize_errors(name, g, error, reason))
        .collect()
}
