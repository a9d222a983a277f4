//! `search`: rank every mesh of the scenario's cluster.

use std::fmt::Write as _;
use std::path::Path;

use planner_core::edges::error_band::{
    band_scenario, builtin_bands, within_band_of_best, BandKind, ErrorBand, WITHIN_BAND_NOTE,
};
use planner_core::input::calibration::CalibrationSummary;
use planner_core::parallel::topology::RankOrder;
use planner_core::search::mesh::{search, SearchResult, SearchSpace};
use planner_core::time::cost::{CostOptions, StepModel};

use crate::error::CliError;
use crate::input::read_scenario;

/// Arguments of `search`.
pub struct Args<'a> {
    pub scenario: &'a Path,
    /// `--hf`: a Hub model in place of the scenario's.
    pub hub: &'a crate::input::HubFlag,
    pub calibration: Option<&'a Path>,
    pub top: usize,
    pub rejected: usize,
    pub rank_order: &'a str,
    /// Every knob setting as its own row instead of each mesh once.
    pub every_knob: bool,
    pub table: bool,
}

/// Reads a calibration summary file.
pub fn read_calibration(path: &Path) -> Result<CalibrationSummary, CliError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{shown}: {e}")))?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let cal: CalibrationSummary = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        CliError::BadInput(format!(
            "{shown}: not a calibration summary: {}: {}",
            e.path(),
            e.inner()
        ))
    })?;
    cal.check()
        .map_err(|e| CliError::BadInput(format!("{shown}: {e}")))?;
    Ok(cal)
}

/// Runs the search and formats its result.
pub fn run(args: &Args) -> Result<String, CliError> {
    let scenario = args.hub.apply(read_scenario(args.scenario)?)?;
    let model = scenario
        .model_spec()
        .map_err(|e| CliError::BadInput(format!("{}: {e}", args.scenario.display())))?;
    let rank_order = RankOrder::parse(args.rank_order).map_err(CliError::BadInput)?;
    let options = CostOptions {
        rank_order,
        ..CostOptions::default()
    };
    // The scenario's own calibration when switched on (as `eval` uses it), then the file's on top.
    let mut step_model = StepModel::for_scenario(&model, &scenario, options);
    if let Some(path) = args.calibration {
        step_model = step_model.with_calibration(&read_calibration(path)?);
    }
    let space = SearchSpace {
        max_results: args.top,
        max_rejected: args.rejected,
        one_row_per_mesh: !args.every_knob,
        ..SearchSpace::default()
    };
    let result = search(&model, &scenario, &space, &step_model);
    let band = builtin_bands(&band_scenario(
        &scenario,
        model.param_breakdown().total() as f64 / 1e9,
    ))
    .into_iter()
    .find(|b| b.kind == BandKind::StepTime);
    if args.table {
        Ok(table(&model.name, &scenario, &result, band.as_ref()))
    } else {
        // The JSON carries it in `stopped`; say it on stderr too, where a person reads it.
        if let Some(stop) = &result.stopped {
            eprintln!("note: {}", stop.message);
        }
        serde_json::to_string_pretty(&result)
            .map_err(|e| CliError::BadInput(format!("result cannot be written as JSON: {e}")))
    }
}

fn table(
    model: &str,
    sc: &planner_core::input::scenario::Scenario,
    r: &SearchResult,
    band: Option<&ErrorBand>,
) -> String {
    let mut out = String::new();
    let steps: Vec<f64> = r.feasible.iter().map(|f| f.step_s).collect();
    let within = band.map_or_else(Vec::new, |b| within_band_of_best(b, &steps));
    let c = &sc.cluster;
    let _ = writeln!(
        out,
        "{model} on {} GPUs ({} × {} {}), seq {}, global batch {} sequences; memory limit {:.1} GB per GPU",
        r.world,
        c.nodes,
        c.gpus_per_node,
        c.gpu.name,
        sc.training.seq_len,
        sc.training.global_batch,
        r.usable_bytes / 1e9
    );
    let rejected = r.candidates - r.feasible_count;
    let _ = writeln!(
        out,
        "{} candidates: {} feasible in {} meshes, {} rejected\n",
        r.candidates, r.feasible_count, r.feasible_meshes, rejected
    );
    if let Some(stop) = &r.stopped {
        let _ = writeln!(out, "Note: {}\n", stop.message);
    }
    if !r.offload.is_none() {
        let _ = writeln!(
            out,
            "Note: nothing fits without offload; every candidate below uses {} (offload={})\n",
            r.offload.label(),
            r.offload.id()
        );
    }
    let _ = writeln!(
        out,
        "{:>4}  {:>3} {:>3} {:>3} {:>5} {:>3} {:>3}  {:<6} {:<9} {:<11} {:>2} {:>3}  {:>8} {:>6} {:>8} {:>8} {:>7} {:>9}  {:<6}  caveat",
        "rank", "tp", "pp", "cp", "dp", "ep", "etp", "zero", "recompute", "schedule", "v", "mb",
        "step_s", "MFU", "comm_s", "bubble_s", "mem_GB", "spare_GB", "split"
    );
    for (i, f) in r.feasible.iter().enumerate() {
        let d = f.dims;
        let k = f.knobs;
        let _ = writeln!(
            out,
            "{:>4}  {:>3} {:>3} {:>3} {:>5} {:>3} {:>3}  {:<6} {:<9} {:<11} {:>2} {:>3}  {:>8.3} {:>5.1}% {:>8.3} {:>8.3} {:>7.1} {:>9.1}  {:<6}  {}",
            i + 1,
            d.tp,
            d.pp,
            d.cp,
            d.dp,
            d.ep,
            d.expert_tp,
            k.zero.label(),
            k.recompute.id(),
            k.schedule.id(),
            k.virtual_stages,
            k.micro_batch,
            f.step_s,
            f.mfu * 100.0,
            f.exposed_comm_s,
            f.bubble_s,
            f.peak_memory_bytes / 1e9,
            f.headroom_bytes / 1e9,
            // Link form: even, fl:F:L (first/last stage layers), ae:1:1 (embedding + loss as layers).
            k.split.stage_split().to_link(),
            if within.get(i).copied().unwrap_or(false) {
                "≈best"
            } else {
                f.caveat.map_or("", |c| c.key())
            }
        );
    }
    if let Some(b) = band {
        let _ = writeln!(out, "error band of step time: {}", b.text);
        if within.iter().any(|w| *w) {
            let _ = writeln!(out, "≈best: {WITHIN_BAND_NOTE}");
        }
    }
    let caveats: std::collections::BTreeSet<_> =
        r.feasible.iter().filter_map(|f| f.caveat).collect();
    for c in caveats {
        let _ = writeln!(out, "caveat {}: {}", c.key(), c.message());
    }
    let _ = writeln!(
        out,
        "\nRejected candidates by reason (one candidate may have several):"
    );
    for rc in &r.rejections {
        let _ = writeln!(out, "  {:<45} {:>10}", rc.reason, rc.candidates);
    }
    let _ = writeln!(
        out,
        "\nThe article's starting points for this cluster size:"
    );
    for h in &r.hints {
        let rank = h
            .best_rank
            .map_or("no feasible candidate follows it".to_string(), |p| {
                format!("best such candidate ranks #{}", p + 1)
            });
        let _ = writeln!(out, "  - {} ({rank})", h.text);
    }
    out.trim_end().to_string()
}
