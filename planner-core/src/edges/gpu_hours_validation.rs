//! The run's bill against published totals (`validation/gpu-hours.json`): the GPU-hours (and
//! energy where stated) model cards and technical reports give for whole training runs, set
//! against the planner's expected GPU-hours for the stated tokens on the stated layout. The
//! totals fold in goodput, which is the point; a row whose layout the source does not state is
//! listed and not predicted. Nothing here is fitted to the rows.

use serde::{Deserialize, Serialize};

use crate::bill::run::training_bill;
use crate::edges::link::decode;

/// The dataset, built in.
pub const GPU_HOURS_JSON: &str = include_str!("../../../validation/gpu-hours.json");

/// One published total.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedTotal {
    /// The run.
    pub name: String,
    /// Where the figures are stated.
    pub source_url: String,
    /// GPU-hours the source states.
    pub stated_gpu_hours: f64,
    /// Facility or GPU energy the source states, kWh.
    #[serde(default)]
    pub stated_energy_kwh: Option<f64>,
    /// The GPU preset the run used.
    pub gpu: String,
    /// Tokens trained.
    pub tokens: f64,
    /// The stated layout as a share-link query (token budget included); `None`: not stated.
    pub link: Option<String>,
    /// What the comparison leaves out.
    pub note: String,
}

/// The dataset file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Dataset {
    about: String,
    rows: Vec<PublishedTotal>,
}

/// One row compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TotalComparison {
    /// The run.
    pub name: String,
    /// GPU-hours the source states.
    pub stated_gpu_hours: f64,
    /// The planner's expected GPU-hours on the stated layout; `None` when not predicted.
    pub predicted_gpu_hours: Option<f64>,
    /// `(predicted − stated) / stated`.
    pub error: Option<f64>,
    /// Energy the source states, kWh.
    pub stated_energy_kwh: Option<f64>,
    /// The planner's facility energy, kWh.
    pub predicted_energy_kwh: Option<f64>,
    /// The row's note, or why it was not predicted.
    pub note: String,
    /// Where the figures are stated.
    pub source_url: String,
}

/// Every row and the median |error| over the rows with a stated layout.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TotalsReport {
    /// The rows, in the dataset's order.
    pub rows: Vec<TotalComparison>,
    /// Rows predicted.
    pub compared: usize,
    /// Median |error| of the predicted rows.
    pub median_abs_error: Option<f64>,
}

/// Compares every row of `json` (the dataset's text).
pub fn gpu_hours_report(json: &str) -> Result<TotalsReport, String> {
    let data: Dataset =
        serde_json::from_str(json).map_err(|e| format!("gpu-hours dataset: {e}"))?;
    let rows: Vec<TotalComparison> = data.rows.iter().map(compare).collect();
    let mut errors: Vec<f64> = rows.iter().filter_map(|r| r.error.map(f64::abs)).collect();
    errors.sort_by(f64::total_cmp);
    Ok(TotalsReport {
        compared: errors.len(),
        median_abs_error: median(&errors),
        rows,
    })
}

/// The median of sorted values.
fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

fn compare(row: &PublishedTotal) -> TotalComparison {
    let predicted = row.link.as_deref().map(predict);
    let (gpu_hours, energy_kwh, note) = match predicted {
        Some(Ok((h, e))) => (Some(h), Some(e), row.note.clone()),
        Some(Err(why)) => (None, None, format!("not predicted: {why}")),
        None => (None, None, format!("not predicted: {}", row.note)),
    };
    TotalComparison {
        name: row.name.clone(),
        stated_gpu_hours: row.stated_gpu_hours,
        predicted_gpu_hours: gpu_hours,
        error: gpu_hours.map(|h| (h - row.stated_gpu_hours) / row.stated_gpu_hours),
        stated_energy_kwh: row.stated_energy_kwh,
        predicted_energy_kwh: energy_kwh,
        note,
        source_url: row.source_url.clone(),
    }
}

/// The planner's expected GPU-hours and facility kWh for the row's link.
fn predict(query: &str) -> Result<(f64, f64), String> {
    let scenario = decode(query).map_err(|e| {
        e.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let model = scenario.model_spec().map_err(|e| e.to_string())?;
    let bill = training_bill(&scenario, &model).map_err(|e| e.to_string())?;
    Ok((bill.numbers.gpu_hours, bill.numbers.energy_j / 3.6e6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_dataset_reads_and_its_stated_layouts_are_predicted() {
        let r = gpu_hours_report(GPU_HOURS_JSON).expect("dataset reads");
        assert_eq!(r.rows.len(), 8);
        assert_eq!(r.compared, 2, "{r:#?}");
        assert!(r.median_abs_error.is_some_and(f64::is_finite));
        assert_eq!(median(&[0.1, 0.3]), Some(0.2));
        assert_eq!(median(&[0.1, 0.2, 0.9]), Some(0.2));
    }
}
