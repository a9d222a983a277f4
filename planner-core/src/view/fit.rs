//! The fine-tuning section's "Will it fit" and time per epoch: the largest micro-batch and
//! sequence, the fixes cheapest first with their memory and time, each with the scenario it
//! leads to, and one epoch of the dataset the person typed. `meshplan fit` prints the same.

use serde::Serialize;

use crate::base::explain::{display_bytes, fmt_seconds};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::search::fit::will_it_fit;

/// One change a fix makes: the page names its button by it.
pub use crate::search::fit::Change;

/// The search's numbers, which the view's rows are built from.
pub use crate::search::fit::{FitReport, Fix, Priced};

/// A dataset's size as typed (tokens, or examples × mean length).
pub use crate::time::epoch::Dataset;

/// One epoch's steps and time, and what it assumes.
pub use crate::time::epoch::EpochTime;

/// The fine-tuning setup as a person reads it: (label, value) rows, each value from the
/// scenario's own types' labels.
pub fn setup_rows(s: &Scenario, model: &ModelSpec) -> Vec<(&'static str, String)> {
    use crate::input::finetune::FineTuneMode;
    let ft = &s.training.finetune;
    let mut rows = vec![
        ("Model", model.name.clone()),
        ("Method", ft.mode.label().to_string()),
    ];
    if let Some(lora) = ft.adapters() {
        rows.push((
            "Rank / alpha",
            format!("r = {}, α = {}", lora.rank, lora.alpha),
        ));
        rows.push(("Target modules", lora.targets.to_list()));
    }
    let base = match ft.mode {
        FineTuneMode::Qlora => "NF4, double quantization (bitsandbytes)",
        FineTuneMode::Lora
        | FineTuneMode::Full
        | FineTuneMode::Dora
        | FineTuneMode::LoraFa
        | FineTuneMode::Ia3
        | FineTuneMode::PromptTuning => "BF16",
    };
    rows.push(("Base weights", base.to_string()));
    rows.push(("Optimizer", s.precision.recipe.label().to_string()));
    rows.push(("Stack", s.overheads.framework.label().to_string()));
    rows.push((
        "GPUs",
        format!("{} × {}", s.layout.world_size(), s.cluster.gpu.name),
    ));
    rows.push(("Sequence", format!("{} tokens", s.training.seq_len)));
    rows.push((
        "Batch",
        format!(
            "micro-batch {}, {} sequences per step",
            s.layout.micro_batch, s.training.global_batch
        ),
    ));
    let packing = if s.training.packing { "on" } else { "off" };
    rows.push(("Packing", packing.to_string()));
    rows.push(("Recompute", s.layout.recompute.id().to_string()));
    rows
}

/// One epoch as one line: "306 steps × 9.24 s = 2,828 s (0.8 h; packing: ...)".
pub fn epoch_line(e: &EpochTime) -> String {
    format!(
        "{} steps × {} = {} ({:.1} h; {})",
        e.steps,
        fmt_seconds(e.step_s),
        fmt_seconds(e.epoch_s),
        e.epoch_s / 3600.0,
        e.assumption
    )
}

/// One row of the fixes table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FixRow {
    /// The changes, joined: "gradient checkpointing (full recompute) + 8-bit Adam (bitsandbytes)".
    pub label: String,
    /// The change ids joined by "+", stable for tests ("recompute-full+adam-8bit").
    pub id: String,
    /// "15.2 GB of 21.6 GB".
    pub memory: String,
    /// "1.42 s per step (+0.31 s, +28%)"; with more GPUs, also the GPU-seconds.
    pub time: String,
    /// The numbers.
    pub fix: Fix,
    /// The scenario with the fix applied: what the fix's button loads.
    pub scenario: Scenario,
}

/// Everything the "Will it fit" part draws.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FitView {
    /// The search's answer; `None` when the scenario breaks a rule (then `error` says which).
    pub report: Option<FitReport>,
    /// Why nothing was searched.
    pub error: Option<String>,
    /// "18.3 GB of 21.6 GB usable".
    pub current_memory: String,
    /// "fits" or "does not fit".
    pub verdict: &'static str,
    /// "Largest micro-batch at 2048 tokens: 6".
    pub micro_batch_line: String,
    /// "Longest sequence at micro-batch 1: 12602 tokens".
    pub seq_len_line: String,
    /// The fixes, cheapest first.
    pub fixes: Vec<FixRow>,
    /// One epoch of `dataset`, or why it cannot be given (the field to change, the message).
    pub epoch: Option<Result<EpochTime, (String, String)>>,
}

impl FitView {
    /// Nothing searched, and why (an invalid scenario, a model that does not resolve).
    pub fn unavailable(why: &str) -> Self {
        FitView {
            report: None,
            error: Some(why.to_string()),
            current_memory: String::new(),
            verdict: "",
            micro_batch_line: String::new(),
            seq_len_line: String::new(),
            fixes: Vec::new(),
            epoch: None,
        }
    }
}

/// Change ids joined with "+".
fn change_ids(changes: &[Change]) -> String {
    let ids: Vec<String> = changes.iter().map(|c| c.id()).collect();
    ids.join("+")
}

fn fix_row(scenario: &Scenario, current: &Priced, usable_bytes: f64, fix: &Fix) -> FixRow {
    let labels: Vec<String> = fix.changes.iter().map(|c| c.label()).collect();
    let pct = 100.0 * fix.step_delta_s / current.step_s.max(f64::MIN_POSITIVE);
    let sign = if fix.step_delta_s >= 0.0 { "+" } else { "−" };
    let mut time = format!(
        "{} per step ({sign}{}, {sign}{:.0}%)",
        fmt_seconds(fix.after.step_s),
        fmt_seconds(fix.step_delta_s.abs()),
        pct.abs()
    );
    if fix.after.gpus != current.gpus {
        time.push_str(&format!(
            " on {} GPUs: {} of GPU time per step",
            fix.after.gpus,
            fmt_seconds(fix.after.gpu_seconds())
        ));
    }
    FixRow {
        label: labels.join(" + "),
        id: change_ids(&fix.changes),
        memory: format!(
            "{} of {}",
            display_bytes(fix.after.peak_bytes),
            display_bytes(usable_bytes)
        ),
        time,
        fix: fix.clone(),
        scenario: crate::search::fit::applied(scenario, &fix.changes),
    }
}

/// The "Will it fit" view of `scenario` (resolved `model`), with one epoch of `dataset` when given.
pub fn fit_view(scenario: &Scenario, model: &ModelSpec, dataset: Option<Dataset>) -> FitView {
    let Some(report) = will_it_fit(scenario, model) else {
        return FitView::unavailable(
            "the scenario breaks a range or layout rule (see the flags at the controls); fix it first",
        );
    };
    let batch = match report.max_micro_batch {
        Some(b) if report.micro_batch_capped => {
            format!("{b} (the global batch's limit per GPU)")
        }
        Some(b) => b.to_string(),
        None => "none: one sequence does not fit".to_string(),
    };
    let longest = report
        .max_seq_len
        .map_or_else(|| "none".to_string(), |l| format!("{l} tokens"));
    let fixes = report
        .fixes
        .iter()
        .map(|f| fix_row(scenario, &report.current, report.usable_bytes, f))
        .collect();
    let epoch = dataset.map(|d| {
        crate::time::epoch::epoch_time(&scenario.training, d, report.current.step_s)
            .map_err(|e| (e.field.to_string(), e.message))
    });
    FitView {
        current_memory: format!(
            "{} of {} usable",
            display_bytes(report.current.peak_bytes),
            display_bytes(report.usable_bytes)
        ),
        verdict: if report.current.fits {
            "fits"
        } else {
            "does not fit"
        },
        micro_batch_line: format!(
            "Largest micro-batch at {} tokens: {batch}",
            scenario.training.seq_len
        ),
        seq_len_line: format!(
            "Longest sequence at micro-batch {}: {longest}",
            scenario.layout.micro_batch
        ),
        report: Some(report),
        error: None,
        fixes,
        epoch,
    }
}
